"""Local consolidation ("dream"): plan MERGE / UPDATE / DELETE actions over stored memories.

Pure: the planner sees plain values (texts, times, scopes, similarities) and returns actions;
a store loads the inputs and applies the actions. Nothing here does I/O.
"""

from memcore.dream.lexicon import Lexicon, salient_tokens
from memcore.dream.planner import (
    Candidate,
    Neighbour,
    PlannedAction,
    PlannerSettings,
    neighbours_by_cosine,
    plan,
)
from memcore.dream.policy import (
    ACTION_TYPES,
    APPLY_MODES,
    DEFAULT_THRESHOLDS,
    SKIPPED_REASONS,
    TASK_STATUSES,
    Decision,
    check_thresholds,
    decide,
)
from memcore.dream.scopes import action_in_scopes, promoted_scope

__all__ = [
    "ACTION_TYPES",
    "APPLY_MODES",
    "Candidate",
    "DEFAULT_THRESHOLDS",
    "Decision",
    "Lexicon",
    "Neighbour",
    "PlannedAction",
    "PlannerSettings",
    "SKIPPED_REASONS",
    "TASK_STATUSES",
    "action_in_scopes",
    "check_thresholds",
    "decide",
    "neighbours_by_cosine",
    "plan",
    "promoted_scope",
    "salient_tokens",
]
