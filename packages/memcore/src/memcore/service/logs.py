"""The message log and the version links: what a backup, an import and a move carry
besides the memories themselves.

Only the embedded store keeps either; elsewhere each use case says so (``Unsupported``)
rather than carrying less than it was asked to. Every scope and link named is checked to
lie in the session's tenant before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from memcore import limits
from memcore.errors import InvalidInput, Unsupported
from memcore.paging import every_item
from memcore.ports import BulkAdd, MessageLog, MessageMove, VersionHistory
from memcore.scope import Scope
from memcore.service.inputs import check_list
from memcore.service.session import Session, refuse_outside
from memcore.values import LoggedMessage, VersionLink


class Logs:
    """One session's message log and version links (``MemoryService.logs``)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def moves(self) -> bool:
        """Whether the store's message log can follow memories to another tenant
        (:class:`~memcore.ports.MessageMove`: the embedded store)."""
        return isinstance(self._session.store, MessageMove)

    @property
    def keeps_messages(self) -> bool:
        """Whether the store's message log can be listed for a backup and restored from one
        (:class:`~memcore.ports.MessageLog`: the embedded store)."""
        return isinstance(self._session.store, MessageLog)

    @property
    def keeps_history(self) -> bool:
        """Whether a restore keeps ids and times and :meth:`restore_links` gives back which
        version replaced which (the embedded store): an import then restores the versions
        a dream replaced too, and the store recalls and ranks as the original."""
        store = self._session.store
        return isinstance(store, BulkAdd) and isinstance(store, VersionHistory)

    def counts(self) -> dict[Scope, int]:
        """How many messages each scope of this tenant logs (scopes with none left out)."""
        s = self._session
        tenant = s.tenant
        counts = self._mover().message_counts(s.store_name, tenant)
        return {scope: n for scope, n in counts.items() if tenant.matches(scope)}

    def move(self, scopes: Iterable[Scope], to: Logs) -> int:
        """Move the message log of each of this tenant's ``scopes`` to the same agent and run
        in ``to``'s tenant, all in one transaction; how many messages moved. What a move of
        their memories there leaves behind: the turns around each, which follow (each links
        to the target's memory of its text). Both sessions must use one store."""
        if not isinstance(to, Logs):
            raise InvalidInput("to must be another session's logs", field="to")
        here, there = self._session, to._session
        here.check_writable()
        there.check_writable()
        store = self._mover()
        if there.store is not here.store or there.store_name != here.store_name:
            raise InvalidInput("messages move only within one memory store", field="store")
        source, target = here.tenant, there.tenant
        if source == target:
            raise InvalidInput("the messages are in that tenant already", field="tenant_id")
        check_list(scopes, field="scopes")
        moves: dict[Scope, Scope] = {}
        for i, scope in enumerate(scopes):
            refuse_outside(source, scope, what=f"scopes[{i}]", field=f"scopes[{i}]")
            moves[scope] = Scope(
                there.scope.app_id, there.scope.tenant_id, scope.agent_id, scope.run_id
            )
        return store.move_messages(here.store_name, list(moves.items())) if moves else 0

    def every_message(self, *, page_size: int = limits.MAX_PAGE_LIMIT) -> Iterator[LoggedMessage]:
        """Every message of the log in reach (what ``MemoryService.every_memory`` covers), in
        the order logged, with the memory each became; nothing where the store cannot list
        its log."""
        s = self._session
        store = s.store
        if not isinstance(store, MessageLog):
            return iter(())
        tenant = s.tenant
        pattern = s.profile_pattern
        listing = every_item(
            lambda token: store.list_logged_messages(
                s.store_name, pattern, limit=page_size, next_token=token
            )
        )
        return (
            m for m in listing if m.message.scope is not None and tenant.matches(m.message.scope)
        )

    def restore_messages(self, messages: Sequence[LoggedMessage]) -> int:
        """Log what an import restores, each message in its own scope, which must lie in this
        session's tenant, all or none; how many were added (one already logged is skipped).
        A message links to a memory of its own scope only."""
        s = self._session
        s.check_writable()
        check_list(messages, field="messages")
        tenant = s.tenant
        for i, logged in enumerate(messages):  # every message, before anything is written
            scope = logged.message.scope if isinstance(logged, LoggedMessage) else None
            refuse_outside(tenant, scope, what=f"messages[{i}].scope", field=f"messages[{i}].scope")
        store = s.store
        if not isinstance(store, MessageLog):
            raise Unsupported(
                "this backend cannot restore a message log; only the embedded store can",
                field="messages",
            )
        return store.restore_messages(s.store_name, list(messages))

    def restore_links(self, links: Sequence[VersionLink], *, adding: bool = False) -> None:
        """Give back what an import restored its supersession links, every memory in this
        session's tenant, all or none (a link to a memory of another tenant is dropped).
        ``adding``: each link joins what its memory has now instead of replacing it
        (:meth:`~memcore.ports.VersionHistory.add_version_links`), so an import keeps what a
        dream or an edit linked after it listed the memories."""
        store = self._history(links)
        if adding:
            store.add_version_links(self._session.store_name, list(links))
        else:
            store.link_versions(self._session.store_name, list(links))

    def unlink(self, links: Sequence[VersionLink]) -> None:
        """Take ``links`` back out of what their memories have now, all or none
        (:meth:`~memcore.ports.VersionHistory.drop_version_links`): a stopped import's
        rollback undoes only what it linked, not what a dream or an edit linked since."""
        self._history(links).drop_version_links(self._session.store_name, list(links))

    def _history(self, links: Sequence[VersionLink]) -> VersionHistory:
        """The store, once ``links`` are checked to be in this session's tenant."""
        s = self._session
        s.check_writable()
        check_list(links, field="links")
        tenant = s.tenant
        for i, link in enumerate(links):  # every link, before anything is written
            scope = link.scope if isinstance(link, VersionLink) else None
            refuse_outside(tenant, scope, what=f"links[{i}].scope", field=f"links[{i}].scope")
        store = s.store
        if not isinstance(store, VersionHistory):
            raise Unsupported(
                "this backend keeps no version history; only the embedded store does",
                field="links",
            )
        return store

    def _mover(self) -> MessageMove:
        store = self._session.store
        if not isinstance(store, MessageMove):
            raise Unsupported(
                "this backend cannot move a message log to another tenant; only the embedded "
                "store can",
                field="messages",
            )
        return store
