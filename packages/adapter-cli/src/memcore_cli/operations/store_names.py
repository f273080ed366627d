"""A mistyped memory store name, answered with the names close to it that the backend holds.

Store names belong to the backend, not to a tenant (tenants share a store, each in its own
scopes), and ``memcore stores list`` shows every one of them to whoever holds the backend's
keys; so naming a close one tells the caller nothing it could not list, and nothing of any
tenant's memories. Only names are read, never a description.
"""

from __future__ import annotations

import difflib
from typing import Any


def close_names(store: Any, wanted: str) -> list[str]:
    """The store names of ``store`` (a :class:`memcore.ports.MemoryStore`) close to
    ``wanted``, closest first; none when the listing fails (the hint is a courtesy, the
    error it joins is the answer)."""
    try:
        names = [info.name for info in store.list_stores()]
    except Exception:
        return []
    others = [n for n in names if n != wanted]
    close = difflib.get_close_matches(wanted, others, n=3, cutoff=0.6)
    folded = [n for n in others if n.lower() == wanted.lower() and n not in close]
    return folded + close


def did_you_mean(store: Any, wanted: str) -> str:
    """``"; did you mean 'x'?"`` (or 'x' or 'y'), or ``""`` when no name is close."""
    names = close_names(store, wanted)
    if not names:
        return ""
    return f"; did you mean {' or '.join(repr(n) for n in names)}?"
