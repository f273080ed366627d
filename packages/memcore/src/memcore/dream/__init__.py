"""Local consolidation ("dream"): plan MERGE / UPDATE / DELETE actions over stored memories.

Pure: the planner sees plain values (texts, times, scopes, similarities) and returns actions;
a store loads the inputs and applies the actions. Nothing here does I/O. It may import
only the pure rules below it (scopes, errors, speakers, and :mod:`memcore.segments`, how
search too cuts text without spaces into words); the ports (the reviewer a store passes a plan to) import it.
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
    DEFAULT_THRESHOLDS,
    MANUAL_REASONS,
    SCOPE_OUTPUT_MODES,
    SKIPPED_REASONS,
    Decision,
    check_thresholds,
    decide,
)
from memcore.dream.scopes import action_in_scopes, promoted_scope

__all__ = [
    "Candidate",
    "DEFAULT_THRESHOLDS",
    "Decision",
    "Lexicon",
    "MANUAL_REASONS",
    "Neighbour",
    "PlannedAction",
    "PlannerSettings",
    "SCOPE_OUTPUT_MODES",
    "SKIPPED_REASONS",
    "action_in_scopes",
    "check_thresholds",
    "decide",
    "neighbours_by_cosine",
    "plan",
    "promoted_scope",
    "salient_tokens",
]
