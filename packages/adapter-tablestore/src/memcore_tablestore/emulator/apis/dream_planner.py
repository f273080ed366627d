"""The emulator's dream planner: deterministic, so tests know which actions a dream proposes.

``memory`` tasks propose MERGE for memories of one scope whose texts are the same after case
folding and dropping punctuation (confidence 0.95) or share at least 80% of their words
(Jaccard, confidence 0.75); the oldest memory is the target, the others are merged into it.
``skill``/``profile`` tasks emit one EMIT_SKILL/EMIT_PROFILE extract per scope with memories.
The real service plans with a model; only the shapes of its output are emulated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from memcore.scope import Scope
from memcore.values import MemoryRecord

_WORD = re.compile(r"\w+")
EXACT_CONFIDENCE = 0.95
NEAR_CONFIDENCE = 0.75
NEAR_JACCARD = 0.8


@attrs.frozen
class Proposal:
    action: str
    scope: Scope
    target: MemoryRecord | None
    sources: tuple[MemoryRecord, ...]
    confidence: float
    reason: str
    extract: tuple[str, str, str, str] | None = None  # kind, name, description, instructions


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


def keywords(text: str, most: int = 8) -> list[str]:
    """Distinct words of ``text``, longest first (DreamMemorySpec.keywords)."""
    return sorted(set(_words(text)), key=lambda w: (-len(w), w))[:most]


def _similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    if a == b:
        return 1.0
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def merges(memories: Sequence[MemoryRecord]) -> list[Proposal]:
    """MERGE proposals for exact and near duplicates, per scope, oldest memory first."""
    ordered = sorted(memories, key=lambda m: (m.created_at or 0.0, m.id))
    taken: set[str] = set()
    out: list[Proposal] = []
    for i, target in enumerate(ordered):
        if target.id in taken:
            continue
        words = _words(target.text)
        group: list[MemoryRecord] = []
        lowest = 1.0
        for other in ordered[i + 1 :]:
            if other.id in taken or other.scope != target.scope:
                continue
            similarity = _similarity(words, _words(other.text))
            if similarity >= NEAR_JACCARD:
                group.append(other)
                lowest = min(lowest, similarity)
        if not group:
            continue
        taken.update(m.id for m in group)
        exact = lowest == 1.0
        out.append(
            Proposal(
                "MERGE",
                target.scope,
                target,
                (target, *group),
                EXACT_CONFIDENCE if exact else NEAR_CONFIDENCE,
                "the memories state the same fact" if exact else "the memories nearly repeat",
            )
        )
    return out


def extracts(kind: str, memories: Sequence[MemoryRecord]) -> list[Proposal]:
    """One EMIT_SKILL or EMIT_PROFILE per scope that holds memories."""
    by_scope: dict[Scope, list[MemoryRecord]] = {}
    for memory in memories:
        by_scope.setdefault(memory.scope, []).append(memory)
    out: list[Proposal] = []
    for scope, items in by_scope.items():
        lines = "\n".join(f"- {m.text}" for m in items[:20])
        out.append(
            Proposal(
                "EMIT_SKILL" if kind == "skill" else "EMIT_PROFILE",
                scope,
                None,
                tuple(items),
                0.9,
                f"{kind} drawn from {len(items)} memories",
                (kind, f"{kind}-{scope.agent_id}", f"What {len(items)} memories say", lines),
            )
        )
    return out
