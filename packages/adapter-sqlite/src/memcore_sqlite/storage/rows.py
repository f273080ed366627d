"""How memory rows are read and addressed: columns, scope clauses, content hashes, checks."""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from memcore.errors import InvalidInput
from memcore.scope import Scope, ScopePattern
from memcore.values import Memory

MEMORY_COLUMNS = (
    "seq, id, app_id, tenant_id, agent_id, run_id, text, metadata, unit_type, "
    "created_at, updated_at, version"
)


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


def content_hash(scope: Scope, text: str) -> bytes:
    return hashlib.sha256(f"{scope}\x00{text.strip()}".encode("utf-8", "surrogatepass")).digest()


def pattern_sql(pattern: ScopePattern, prefix: str = "") -> tuple[str, list[str]]:
    """`` AND level = ?`` clauses for the pattern's fixed levels, and their parameters."""
    clauses: list[str] = []
    params: list[str] = []
    for name, value in pattern.levels():
        if value != "*":
            clauses.append(f"{prefix}{name} = ?")
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


def memory_from_row(row: Sequence[Any]) -> Memory:
    """A :class:`Memory` from a row selected with :data:`MEMORY_COLUMNS`; most rows have no
    metadata, whose ``{}`` needs no JSON parser."""
    meta = row[7]
    return Memory(
        id=row[1],
        text=row[6],
        scope=scope_of(row[2], row[3], row[4], row[5]),
        metadata={} if meta == "{}" else json.loads(meta),
        created_at=row[9],
        updated_at=row[10],
        unit_type=row[8],
        version=row[11],
    )


def check_scope(scope: object) -> None:
    if not isinstance(scope, Scope):
        raise InvalidInput("scope must be a concrete Scope", field="scope")


def check_pattern(pattern: object) -> None:
    if not isinstance(pattern, ScopePattern):
        raise InvalidInput("pattern must be a ScopePattern", field="scope")
