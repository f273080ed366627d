"""How memory rows are read and addressed: columns, scope clauses, content hashes, checks."""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from memcore.errors import InvalidInput
from memcore.scope import Scope, ScopePattern
from memcore.values import MemoryRecord


class MemoryRow(NamedTuple):
    """A memory row as :data:`MEMORY_COLUMNS` selects it: the one list of its columns."""

    seq: int
    id: str
    app_id: str
    tenant_id: str
    agent_id: str
    run_id: str
    text: str
    metadata: str
    unit_type: str
    created_at: float
    updated_at: float
    version: int
    #: When the text was last said (schema 10; NULL in rows written before it).
    said_at: float | None


def columns(row_type: Any) -> str:
    """The ``SELECT`` list of a row type (a ``NamedTuple``): its fields, in order."""
    return ", ".join(row_type._fields)


MEMORY_COLUMNS = columns(MemoryRow)
#: How many leading values of a row are the memory's (a statement may select more after them).
MEMORY_WIDTH = len(MemoryRow._fields)
#: Where a memory row holds its seq, for the search's hit loop, which reads only that by
#: position (a MemoryRow per candidate would cost more than the rest of the loop).
MEMORY_SEQ = MemoryRow._fields.index("seq")


def memory_row(row: Sequence[Any]) -> MemoryRow:
    """The memory part of a row selected with :data:`MEMORY_COLUMNS` first, by name."""
    return MemoryRow._make(row[:MEMORY_WIDTH])


#: Values per ``IN (...)`` list: SQLite's smallest limit on parameters is 999.
IN_CHUNK = 500


def rows_in(
    conn: sqlite3.Connection,
    sql: str,
    values: Sequence[Any],
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
) -> Iterator[Any]:
    """The rows of ``sql`` with its ``{}`` as an ``IN`` list of ``values``, a statement per
    :data:`IN_CHUNK` of them; ``before`` and ``after`` are the parameters around the list."""
    for start in range(0, len(values), IN_CHUNK):
        part = values[start : start + IN_CHUNK]
        yield from conn.execute(sql.format(",".join("?" * len(part))), (*before, *part, *after))


#: Bytes of the SHA-256 digest kept (schema 9; 32 before): the row and its index hold it,
#: and a match is confirmed against the text itself, so a shorter digest loses no write.
HASH_BYTES = 16


def content_hash(scope: Scope, text: str) -> bytes:
    """The digest the repeat lookup finds a memory by (its scope and its stripped text)."""
    raw = f"{scope}\x00{text.strip()}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).digest()[:HASH_BYTES]


def pattern_sql(
    pattern: ScopePattern, prefix: str = "", *, level: str = "{prefix}{name}"
) -> tuple[str, list[str]]:
    """`` AND level = ?`` clauses for the pattern's fixed levels, and their parameters.
    ``level`` spells a level's expression: a column by default, or e.g. a JSON field
    (``"json_extract(scope, '$.{name}')"``); names are the fixed LEVELS, never input."""
    clauses: list[str] = []
    params: list[str] = []
    for name, value in pattern.levels():
        if value != "*":
            clauses.append(f"{level.format(prefix=prefix, name=name)} = ?")
            params.append(value)
    return "".join(f" AND {c}" for c in clauses), params


@functools.lru_cache(maxsize=4096)
def scope_of(app_id: str, tenant_id: str, agent_id: str, run_id: str) -> Scope:
    """The :class:`Scope` of a row's four levels, validated the first time they are seen.

    A search builds ten memories, mostly of a few scopes, and each new ``Scope`` checks every
    character of its four segments (24,000 checks per 600 searches). A scope is immutable, so
    one validated value serves every row of that scope; an invalid one (a row written by
    hand or by an older version) raises here each time it is read, as it is never cached.
    """
    return Scope(app_id, tenant_id, agent_id, run_id)


def memory_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A :class:`MemoryRecord` from a row selected with :data:`MEMORY_COLUMNS`; most rows have no
    metadata, whose ``{}`` needs no JSON parser."""
    r = memory_row(row)
    meta = r.metadata
    return MemoryRecord(
        id=r.id,
        text=r.text,
        scope=scope_of(r.app_id, r.tenant_id, r.agent_id, r.run_id),
        metadata={} if meta == "{}" else json.loads(meta),
        created_at=r.created_at,
        updated_at=r.updated_at,
        unit_type=r.unit_type,
        version=r.version,
        said_at=r.said_at,
    )


def check_scope(scope: object) -> None:
    if not isinstance(scope, Scope):
        raise InvalidInput("scope must be a concrete Scope", field="scope")


def check_pattern(pattern: object) -> None:
    if not isinstance(pattern, ScopePattern):
        raise InvalidInput("pattern must be a ScopePattern", field="scope")


def tenant_holds(conn: sqlite3.Connection, store_id: int, scope: Scope, memory_id: str) -> bool:
    """Whether a memory of ``scope``'s tenant holds ``memory_id``: ids are unique per tenant
    (schema 16), so a write's own id and a link's ends are looked for there, never file-wide."""
    return (
        conn.execute(
            "SELECT 1 FROM memories WHERE id = ? AND store_id = ? AND app_id = ? AND tenant_id = ?",
            (memory_id, store_id, scope.app_id, scope.tenant_id),
        ).fetchone()
        is not None
    )
