"""The dream vocabulary of the Memory Store service, and which actions apply on their own.

Names and defaults follow the vendor's typed SDK (``@tablestore/agent-storage``,
``core/models/memory.d.ts``): task statuses, action types, apply modes, skipped reasons and
the confidence thresholds ``add``/``update``/``merge`` (DELETE has none: it never auto-applies).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from memcore.errors import InvalidInput
from memcore.wording import shown

__all__ = [
    "DEFAULT_THRESHOLDS",
    "MANUAL_REASONS",
    "SCOPE_OUTPUT_MODES",
    "SKIPPED_REASONS",
    "Decision",
    "check_thresholds",
    "decide",
]

SCOPE_OUTPUT_MODES = ("preserve_scope", "promote_scope")
SKIPPED_REASONS = (
    "stale_target_memory",
    "task_cancelled",
    "invalid_action",
    "scope_violation",
    "missing_source",
    "delete_requires_manual_apply",
    "promote_requires_manual_apply",
    "confidence_below_threshold",
    "superseded_by_skill",
    "superseded_by_profile",
    "noop_nothing_to_apply",
    "conflicting_action",
)
#: Skipped for a reason a person may overrule by applying the action by hand.
MANUAL_REASONS = frozenset(
    {"delete_requires_manual_apply", "promote_requires_manual_apply", "confidence_below_threshold"}
)
#: The service's defaults (memory.d.ts: "ADD 0.80, UPDATE 0.85, MERGE 0.70").
DEFAULT_THRESHOLDS: Mapping[str, float] = {"add": 0.80, "update": 0.85, "merge": 0.70}


def check_thresholds(raw: Mapping[str, float] | None) -> dict[str, float]:
    """The effective thresholds: defaults overlaid with ``raw`` (keys case-insensitive).

    Only ``add``, ``update`` and ``merge`` exist; ``delete`` is refused like the service does,
    because a DELETE is never applied without a person asking for it.
    """
    out = dict(DEFAULT_THRESHOLDS)
    for key, value in (raw or {}).items():
        name = str(key).lower()
        if name not in DEFAULT_THRESHOLDS:
            raise InvalidInput(
                f"confidence threshold {shown(key)} is not one of add, update, merge"
                + (" (DELETE actions never auto-apply)" if name == "delete" else ""),
                field="confidence_thresholds",
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0.0 <= value <= 1.0
        ):
            raise InvalidInput(
                f"confidence threshold {shown(key)} must be a number in [0, 1]",
                field="confidence_thresholds",
            )
        out[name] = float(value)
    return out


@attrs.frozen
class Decision:
    """What planning leaves an action as: ``apply`` now, or a status and skipped reason."""

    apply: bool
    status: str = "proposed"
    skipped_reason: str | None = None


def decide(
    action: str,
    confidence: float,
    *,
    apply_mode: str,
    thresholds: Mapping[str, float],
    promoted: bool = False,
) -> Decision:
    """``proposal`` proposes everything; ``safe_auto`` applies what clears its threshold."""
    if apply_mode == "proposal":
        return Decision(False)
    if action == "NOOP":
        return Decision(False, "skipped", "noop_nothing_to_apply")
    if action == "DELETE":
        return Decision(False, "skipped", "delete_requires_manual_apply")
    if promoted:
        return Decision(False, "skipped", "promote_requires_manual_apply")
    threshold = thresholds.get(action.lower())
    if threshold is None:
        return Decision(False, "skipped", "invalid_action")
    if confidence < threshold:
        return Decision(False, "skipped", "confidence_below_threshold")
    return Decision(True)
