"""The configured memory store, made ready for a command: a read never creates a mistyped one.

A read of a store that is not there says so (:class:`StoreNotFound`, exit 3) instead of
creating it empty and answering "no memories": ``auto_create_store`` means "the first write
creates it". The embedded store still makes its store on a new file's first read, a file
that holds no store yet; a file whose stores have other names was given a mistyped one.
Both hosts (``memcore`` and ``hermes tablestore-mem``) apply this one rule.

The error then names the stores close to the missing one. Store names belong to the backend,
not to a tenant (tenants share a store, each in its own scopes), and ``memcore stores list``
shows every one of them to whoever holds the backend's keys; so naming a close one tells the
caller nothing it could not list, and nothing of any tenant's memories. Only names are read,
never a description.
"""

from __future__ import annotations

import difflib

from memcore.errors import StoreNotFound
from memcore.ports import MemoryStore, ProgressCallback


def ready_for(
    store: MemoryStore,
    name: str,
    *,
    writes: bool,
    auto_create: bool,
    first_read_creates: bool,
    advice: str = "the first write does",
    description: str = "",
    extract_instructions: str | None = None,
    progress: ProgressCallback | None = None,
) -> None:
    """Make ``name`` ready on ``store`` for a command that ``writes`` (or only reads).

    A write creates a missing store when ``auto_create`` allows; a read does only where
    ``first_read_creates`` (the embedded store) and the backend holds no store at all; else
    :class:`StoreNotFound`, whose message ends with ``advice`` (how to create it). The
    backend's stores are listed on a miss only, never by every read."""

    def ensure(create: bool) -> None:
        store.ensure_store(
            name,
            description=description,
            create=create,
            extract_instructions=extract_instructions,
            progress=progress,
        )

    try:
        ensure(auto_create and writes)
    except StoreNotFound as exc:
        if not (first_read_creates and auto_create):
            raise
        if store.list_stores():
            raise StoreNotFound(
                f"memory store {name!r} does not exist (a read does not create it: {advice})",
                field=exc.field,
            ) from None
        ensure(True)


def close_names(store: MemoryStore, wanted: str) -> list[str]:
    """The store names of ``store`` close to ``wanted``, closest first; none when the listing
    fails (the hint is a courtesy, the error it joins is the answer)."""
    try:
        names = [info.name for info in store.list_stores()]
    except Exception:
        return []
    others = [n for n in names if n != wanted]
    close = difflib.get_close_matches(wanted, others, n=3, cutoff=0.6)
    folded = [n for n in others if n.lower() == wanted.lower() and n not in close]
    return folded + close


def did_you_mean(store: MemoryStore, wanted: str) -> str:
    """``"; did you mean 'x'?"`` (or 'x' or 'y'), or ``""`` when no name is close."""
    names = close_names(store, wanted)
    if not names:
        return ""
    return f"; did you mean {' or '.join(repr(n) for n in names)}?"


#: What doctor says of a missing store that has a close name: a typo, which every read refuses.
MISTYPED = "does not exist (reads refuse; the first write creates it)"


def with_close_names(exc: StoreNotFound, store: MemoryStore, name: str) -> StoreNotFound:
    """``exc`` ending with the names close to ``name`` when it is ``name``'s error (the
    configured store), not one about a store a command named itself: its kin are not
    this one's."""
    if not exc.message.startswith(f"memory store {name!r} "):
        return exc
    hint = did_you_mean(store, name)
    if not hint:
        return exc
    return StoreNotFound(f"{exc.message}{hint}", field=exc.field, retryable=exc.retryable)
