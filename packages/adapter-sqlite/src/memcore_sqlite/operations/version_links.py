"""Supersession links given back by a restore (:class:`~memcore.ports.VersionHistory`): the
versions a dream replaced are stored again with what replaced them, so recall prefers the
current truth, and ranks, as it did in the store the backup came from.

An import adds its links to what each memory has, and its rollback takes back only those,
each read and written in one transaction: a dream or an edit that linked the same memory
since keeps its own links."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence

from memcore import limits
from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.values import SUPERSESSION_KINDS, VersionLink
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.storage.rows import check_scope, tenant_holds

#: A memory's links: whom it was superseded by, how, and the versions it supersedes.
_Links = tuple[str | None, str | None, list[str]]


class VersionLinks:
    """Writes a restore's supersession links, one transaction for all of them."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def link_versions(self, store: str, links: Sequence[VersionLink]) -> None:
        def replace(conn: sqlite3.Connection, sid: int, link: VersionLink, _: _Links) -> _Links:
            tenant, by = link.scope, link.superseded_by
            if by is not None and not tenant_holds(conn, sid, tenant, by):
                by = None
            kept = [i for i in dict.fromkeys(link.supersedes) if tenant_holds(conn, sid, tenant, i)]
            return by, link.superseded_how, kept

        self._change(store, links, replace)

    def add_version_links(self, store: str, links: Sequence[VersionLink]) -> None:
        def add(conn: sqlite3.Connection, sid: int, link: VersionLink, now: _Links) -> _Links:
            by, how, had = now
            tenant, successor = link.scope, link.superseded_by
            if by is None and successor and tenant_holds(conn, sid, tenant, successor):
                by, how = successor, link.superseded_how
            new = [
                i
                for i in dict.fromkeys(link.supersedes)
                if i not in had and tenant_holds(conn, sid, tenant, i)
            ]
            return by, how, [*had, *new]

        self._change(store, links, add)

    def drop_version_links(self, store: str, links: Sequence[VersionLink]) -> None:
        def drop(conn: sqlite3.Connection, sid: int, link: VersionLink, now: _Links) -> _Links:
            by, how, had = now
            if by is not None and by == link.superseded_by:
                by, how = None, None
            return by, how, [i for i in had if i not in link.supersedes]

        self._change(store, links, drop)

    def _change(
        self,
        store: str,
        links: Sequence[VersionLink],
        change: Callable[[sqlite3.Connection, int, VersionLink, _Links], _Links],
    ) -> None:
        """Each link's memory gets ``change`` of the links it has now, all in one transaction
        (a memory its scope does not hold, gone or another tenant's id, is left alone)."""
        started = time.perf_counter()
        if not _checked(links):
            return
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            for link in links:
                now = _row(conn, sid, link)
                if now is not None:
                    _write(conn, sid, link, *change(conn, sid, link, now))
            self._tx.audit(conn, sid, "LinkVersions", started, scope=links[0].scope)
            self._tx.after_write(sid, gen, ())


def _checked(links: object) -> bool:
    """Whether there are links to write; every one checked before anything is written."""
    if isinstance(links, (str, bytes)) or not isinstance(links, Sequence):
        raise InvalidInput("links must be a list", field="links")
    for i, link in enumerate(links):
        _check(link, f"links[{i}]")
    return bool(links)


def _row(conn: sqlite3.Connection, sid: int, link: VersionLink) -> _Links | None:
    """The links ``link``'s memory has now (superseded_by, how, supersedes); None if its
    scope holds no such memory."""
    row = conn.execute(
        "SELECT superseded_by, superseded_how, supersedes FROM memories WHERE id = ?"
        " AND store_id = ? AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?",
        (link.memory_id, sid, *link.scope.as_tuple()),
    ).fetchone()
    if row is None:
        return None
    had = json.loads(row[2]) if row[2] else []
    return (row[0] or None), (row[1] or None), [str(i) for i in had]


def _write(
    conn: sqlite3.Connection,
    sid: int,
    link: VersionLink,
    by: str | None,
    how: str | None,
    supersedes: list[str],
) -> None:
    conn.execute(
        "UPDATE memories SET superseded_by = ?, superseded_how = ?, supersedes = ?"
        " WHERE id = ? AND store_id = ? AND app_id = ? AND tenant_id = ?"
        " AND agent_id = ? AND run_id = ?",
        (
            by,
            None if by is None else how,
            json.dumps(supersedes),
            link.memory_id,
            sid,
            *link.scope.as_tuple(),
        ),
    )


def _check(link: object, field: str) -> None:
    if not isinstance(link, VersionLink):
        raise InvalidInput(f"{field} must be a VersionLink", field=field)
    check_scope(link.scope)
    limits.check_id(link.memory_id, field=f"{field}.memory_id")
    if link.superseded_by is not None:
        limits.check_id(link.superseded_by, field=f"{field}.superseded_by")
    if link.superseded_how is not None and link.superseded_how not in SUPERSESSION_KINDS:
        raise InvalidInput(
            f"{field}.superseded_how must be one of {list(SUPERSESSION_KINDS)}",
            field=f"{field}.superseded_how",
        )
    if not isinstance(link.supersedes, tuple):
        raise InvalidInput(
            f"{field}.supersedes must be a tuple of ids", field=f"{field}.supersedes"
        )
    for memory_id in link.supersedes:
        limits.check_id(memory_id, field=f"{field}.supersedes")


def made_current(conn: sqlite3.Connection, sid: int, scope: Scope, seq: int) -> None:
    """The memory ``seq`` (of ``scope``), whose text an edit just replaced, is current: the
    new text is the newest thing said, which no dream pass has seen, so it no longer gives
    way to the memory that superseded its old text, and that memory no longer lists it as a
    version of its own. Before, an update of a merged-away id (the id ``add`` gave) landed,
    answered success and was shown nowhere: neither listed nor found."""
    row = conn.execute("SELECT id, superseded_by FROM memories WHERE seq = ?", (seq,)).fetchone()
    if row is None or row[1] is None:
        return
    memory_id, successor = str(row[0]), str(row[1])
    conn.execute(
        "UPDATE memories SET superseded_by = NULL, superseded_how = NULL WHERE seq = ?", (seq,)
    )
    tenant = (sid, scope.app_id, scope.tenant_id)
    found = conn.execute(
        "SELECT seq, supersedes FROM memories WHERE id = ? AND store_id = ? AND app_id = ?"
        " AND tenant_id = ?",
        (successor, *tenant),
    ).fetchone()
    if found is None:
        return
    had = [str(i) for i in json.loads(found[1] or "[]")]
    if memory_id in had:
        kept = [i for i in had if i != memory_id]
        conn.execute(
            "UPDATE memories SET supersedes = ? WHERE seq = ?", (json.dumps(kept), found[0])
        )
