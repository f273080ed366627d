"""The built-in memory's mirror: Hermes' MEMORY.md / USER.md entries kept as tagged memories.

A store that keeps one memory per text in a scope merges a write of the same text into one
memory, so a mirror and a memory of the user's own must never share one: a built-in remove
would delete what the user asked to remember.
"""

from __future__ import annotations

from collections.abc import Mapping

from memcore import limits
from memcore.errors import MemcoreError
from memcore.scope import ScopePattern
from memcore.service.session import Session
from memcore.values import MemoryRecord, WriteReceipt

BUILTIN_SOURCE = "builtin_memory"


def claim_from_mirror(session: Session, receipt: WriteReceipt, meta: dict[str, str]) -> None:
    """A store that keeps one memory per text in a scope merges a write into a mirrored
    built-in entry of the same text, and the entry's tags stay: a later built-in remove
    would then delete what the user asked to remember. Such a memory is the user's now,
    its tags cleared. The write has landed: a failure here leaves the tags, never fails it.
    """
    store, name, scope = session.store, session.store_name, session.write_scope
    for memory_id in receipt.memory_ids:
        try:
            found = store.get_memory(name, scope, memory_id)
            if found.metadata.get("source") != BUILTIN_SOURCE:
                continue
            store.update_memory(name, scope, memory_id, metadata={})
            if meta:
                store.update_memory(name, scope, memory_id, metadata=meta)
        except MemcoreError:
            return


def held_as_memory(session: Session, content: str) -> bool:
    """Whether the write scope holds ``content`` as a memory of its own (not a mirror): a
    store that keeps one memory per text would merge the mirror into it and tag it, and a
    later built-in remove would delete what the user asked to remember. Nothing is mirrored
    then; the text is recalled as the user's memory."""
    wanted = content.strip()
    return any(
        m.text.strip() == wanted and m.metadata.get("source") != BUILTIN_SOURCE
        for m in _found_by_text(session, session.write_scope.pattern(), content)
    )


def _found_by_text(
    session: Session,
    pattern: ScopePattern,
    content: str,
    filters: Mapping[str, str] | None = None,
) -> list[MemoryRecord]:
    """The memories a search for ``content`` finds first (as many as one search gives),
    for the callers that then look for the text itself among them."""
    hits = session.store.search(
        session.store_name,
        pattern,
        content[: limits.MAX_QUERY_CHARS],
        top_k=limits.MAX_TOP_K,
        enable_rerank=False,
        filters=filters,
    )
    return [h.memory for h in hits]


def remove_mirrored(session: Session, target: str, content: str, *, keep: str | None) -> None:
    """Delete the mirrored copies of the one entry ``content`` names: those with exactly
    that text, else those containing it when they all hold one text. Copies of several
    texts contain it (a stale copy, another profile's entry): none is guessed at."""
    if not isinstance(content, str) or limits.is_blank(content):  # no query: nothing to match
        return
    wanted = content.strip()
    kept = keep.strip() if isinstance(keep, str) else None
    mirrors = _found_by_text(
        session,
        session.search_pattern,
        content,
        {"source": BUILTIN_SOURCE, "target": target[:1024]},
    )
    found = [m for m in mirrors if wanted in m.text and m.text.strip() != kept]
    exact = [m for m in found if m.text.strip() == wanted]
    doomed = exact or (found if len({m.text.strip() for m in found}) == 1 else [])
    for memory in doomed:
        session.store.delete_memory(session.store_name, memory.scope, memory.id)
