"""Each tenant's prefix in the ``tbody`` column: a number of its own, as twelve digits.

Prefixed terms have posting lists of one tenant only, so a tenant's search never walks other
tenants' postings. Until schema 17 the prefix was a digest of the store, app and tenant, and
two tenants could share one: then a common term's FTS5 cut could fill with the other's rows,
which the scope check drops, so a tenant lost its own hits (and a tenant string chosen for it
could do that to another). Now ``tenant_prefixes`` gives each (store, app, tenant) a number
in the write transaction that first indexes a row of it; SQLite runs one writer at a time and
AUTOINCREMENT never hands out a number twice, even after its row is deleted, so two tenants of
a file never share a prefix.

Twelve digits, as the digest was: digits are consonants to the porter stemmer, so a word is
stemmed as if it began with a consonant, the same in every tenant, but not always as in
``body``. Tokens under three characters are not stemmed there, and a vowel-initial word's
conditions change: in ``body`` "use" and the pronoun "us" share the stem ``us``, in ``tbody``
they don't.
"""

from __future__ import annotations

import sqlite3

from memcore.errors import Unavailable
from memcore.scope import ScopePattern

#: The registry (schema 17). A store's rows go with the store; its numbers are not reused.
TABLE = (
    "CREATE TABLE IF NOT EXISTS tenant_prefixes (number INTEGER PRIMARY KEY AUTOINCREMENT,"
    " store_id INTEGER NOT NULL, app_id TEXT NOT NULL, tenant_id TEXT NOT NULL,"
    " UNIQUE (store_id, app_id, tenant_id))"
)

#: Digits in a prefix: a number from 1 to 10**12 - 1.
DIGITS = 12

#: The prefix of a tenant without a number: it has no rows, and no row holds this prefix
#: (numbers start at 1), so its prefixed terms match nothing.
UNNUMBERED = "0" * DIGITS

_LOOKUP = "SELECT number FROM tenant_prefixes WHERE store_id = ? AND app_id = ? AND tenant_id = ?"


def written(number: int) -> str:
    """A tenant's number as its prefix."""
    return f"{number:0{DIGITS}d}"


def lookup(conn: sqlite3.Connection, store_id: int, app_id: str, tenant_id: str) -> str:
    """The tenant's prefix in ``conn``'s snapshot, or :data:`UNNUMBERED`. Not cached: a
    number is read where it is used (one indexed lookup), so a cache can never hold one
    from a transaction that was rolled back or a store that was deleted since."""
    row = conn.execute(_LOOKUP, (store_id, app_id, tenant_id)).fetchone()
    return UNNUMBERED if row is None else written(int(row[0]))


def assign(conn: sqlite3.Connection, store_id: int, app_id: str, tenant_id: str) -> str:
    """Inside a write transaction: the tenant's prefix, numbered now if it had none."""
    row = conn.execute(_LOOKUP, (store_id, app_id, tenant_id)).fetchone()
    if row is not None:
        return written(int(row[0]))
    number = conn.execute(
        "INSERT INTO tenant_prefixes (store_id, app_id, tenant_id) VALUES (?, ?, ?)",
        (store_id, app_id, tenant_id),
    ).lastrowid
    if number is None or not 0 < number < 10**DIGITS:
        raise Unavailable(
            f"this file has numbered {10**DIGITS - 1} tenants, all its full-text index can tell"
            " apart; copy the stores still in use to a new file",
            retryable=False,
        )
    return written(number)


def pattern_prefix(conn: sqlite3.Connection, store_id: int, pattern: ScopePattern) -> str | None:
    """The tenant's prefix when the pattern names one tenant, else None (use ``body``)."""
    if pattern.app_id == "*" or pattern.tenant_id == "*":
        return None
    return lookup(conn, store_id, pattern.app_id, pattern.tenant_id)
