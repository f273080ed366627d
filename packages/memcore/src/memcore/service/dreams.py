"""Consolidation ("dream") use cases: start a pass, read its task and actions, apply, undo.

Every task id is checked against the session's tenant before the store acts on it, and
another tenant's task answers exactly like a task that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcore import limits
from memcore.errors import NotFound, StoreNotFound, Unsupported
from memcore.paging import every_item
from memcore.ports import DreamUndo
from memcore.scope import ScopePattern
from memcore.service.session import Session, owned
from memcore.values import DreamAction, DreamTask, Page


class Dreams:
    """One session's dream passes (``MemoryService.dreams``)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def start(
        self,
        *,
        pattern: ScopePattern | None = None,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> DreamTask:
        """Start a consolidation over this tenant (or ``pattern`` inside it)."""
        s = self._session
        s.check_writable()
        return s.store.create_dream_task(
            s.store_name,
            s.within_tenant(pattern),
            apply_mode=apply_mode,
            instructions=instructions,
        )

    def task(self, task_id: str, *, pattern: ScopePattern | None = None) -> DreamTask:
        """A dream task, only when every scope it reads lies in this tenant (or in
        ``pattern`` inside it: a host confined to one agent reaches only that agent's tasks,
        whose actions show and change that agent's memories alone).

        TableStore's Get lists the scopes a task expanded to: none for a tenant with no
        memories. Such a task is this tenant's only when a listing asked with the tenant's
        own pattern shows it reading nothing else. Another tenant's id and a missing id take
        the same path (a Get, then that listing) and answer the same NotFound.
        """
        limits.check_id(task_id, field="task_id")
        missing = NotFound(f"dream task {task_id!r} was not found in this tenant", field="task_id")
        s = self._session
        tenant = s.within_tenant(pattern)
        try:
            found: DreamTask | None = s.store.get_dream_task(s.store_name, task_id)
        except StoreNotFound:
            raise  # the store itself is gone: not an id's answer
        except NotFound:
            found = None
        if found is not None and found.id == task_id and owned(found.scopes, tenant):
            return found
        listed = self._listed(task_id, tenant)
        if found is None or found.id != task_id or found.scopes or listed is None:
            raise missing
        return found

    def _listed(self, task_id: str, tenant: ScopePattern) -> DreamTask | None:
        """``task_id`` as this tenant's own listing shows it, if every scope it names lies in
        the tenant; the store is asked only with the tenant's pattern, up to the id or the end."""
        s = self._session
        listing = every_item(
            lambda token: s.store.list_dream_tasks(
                s.store_name, limit=limits.MAX_PAGE_LIMIT, next_token=token, pattern=tenant
            )
        )
        for task in listing:
            if task.id == task_id:
                return task if owned(task.scopes, tenant) else None
        return None

    def tasks(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        status: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[DreamTask]:
        """This tenant's dream tasks; the store is always asked with the tenant's pattern,
        and a task that reads anything outside the tenant is left out."""
        limits.check_limit(limit)
        limits.check_status(status, dream=True)
        s = self._session
        reach = s.within_tenant(pattern)
        tenant = s.tenant
        page = s.store.list_dream_tasks(
            s.store_name, limit=limit, next_token=next_token, pattern=reach, status=status
        )
        return page.filter(lambda t: owned(t.scopes, tenant))

    def actions(
        self,
        task_id: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[DreamAction]:
        """A page of the actions of one of this tenant's tasks (``pattern``: as :meth:`task`)."""
        limits.check_limit(limit)
        task = self.task(task_id, pattern=pattern)
        s = self._session
        return s.store.list_dream_actions(s.store_name, task.id, limit=limit, next_token=next_token)

    def apply(
        self, task_id: str, action_ids: Sequence[str], *, pattern: ScopePattern | None = None
    ) -> list[DreamAction]:
        """One result per id; an action id the task does not have is ``not_found``
        (``pattern``: as :meth:`task`)."""
        s = self._session
        s.check_writable()
        ids = limits.check_action_ids(action_ids)
        task = self.task(task_id, pattern=pattern)
        return s.store.apply_dream_actions(s.store_name, task.id, ids)

    def undo(
        self, task_id: str, action_id: str, *, pattern: ScopePattern | None = None
    ) -> DreamAction:
        """Take back an applied action (stores that keep undo records: the local one;
        ``pattern``: as :meth:`task`)."""
        s = self._session
        s.check_writable()
        limits.check_id(action_id, field="action_id")
        if not isinstance(s.store, DreamUndo):
            raise Unsupported(
                "this backend cannot undo dream actions; only the local store keeps undo records"
            )
        task = self.task(task_id, pattern=pattern)
        return s.store.undo_dream_action(s.store_name, task.id, action_id)

    def cancel(self, task_id: str, *, pattern: ScopePattern | None = None) -> DreamTask:
        """Stop one of this tenant's tasks (``pattern``: as :meth:`task`)."""
        s = self._session
        s.check_writable()
        task = self.task(task_id, pattern=pattern)
        return s.store.cancel_dream_task(s.store_name, task.id)
