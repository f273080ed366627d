"""The stable JSON shapes the CLI prints and exports.

Field names are a public contract for scripts: a memory is always
``id, text, score, scope{app_id,tenant_id,agent_id,run_id}, metadata, created_at`` plus the
optional service fields. Timestamps are seconds since the epoch, as the store keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from memcore.scope import Scope, ScopePattern
from memcore.transfer import memory_record
from memcore.values import MemoryRecord, Message, SearchHit, TurnContext

__all__ = ["hit_record", "memory_record", "neighbours_record", "to_record"]


def hit_record(hit: SearchHit) -> dict[str, Any]:
    """A memory record plus how it was found: ``similarity`` (raw cosine, informational),
    ``source`` and, when asked for, ``evidence`` (the supporting messages) and
    ``neighbours`` (the turns of its session around it)."""
    out = memory_record(hit.memory, hit.score)
    out["similarity"] = hit.similarity
    out["source"] = hit.source
    if hit.ranking_score is not None:
        out["ranking_score"] = hit.ranking_score
    if hit.evidence:
        out["evidence"] = [dict(e) for e in hit.evidence]
    if hit.neighbours is not None:
        out["neighbours"] = neighbours_record(hit.neighbours)
    return out


def neighbours_record(context: TurnContext) -> dict[str, list[dict[str, Any]]]:
    """``{"before": [...], "after": [...]}``, each side in the order said, each turn
    ``{"role", "content", "timestamp"}`` (seconds since the epoch, or null)."""
    return {
        "before": [_turn(m) for m in context.before],
        "after": [_turn(m) for m in context.after],
    }


def _turn(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": message.content, "timestamp": message.timestamp}


def to_record(value: Any) -> Any:
    """Any core value as JSON-safe data (attrs classes become objects, extras are kept)."""
    if isinstance(value, MemoryRecord):
        return memory_record(value)
    if isinstance(value, SearchHit):
        return hit_record(value)
    if isinstance(value, (Scope, ScopePattern)):
        return value.as_dict()
    if attrs.has(type(value)):
        return {
            field.name: to_record(getattr(value, field.name)) for field in attrs.fields(type(value))
        }
    if isinstance(value, Mapping):
        return {str(k): to_record(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_record(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
