"""The port a model-backed reviewer implements: it may rewrite, drop or add planned actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memcore.dream.planner import Candidate, PlannedAction


class DreamReviewer(Protocol):
    """Checks (or makes) a dream plan. Must return actions over the given candidates only;
    the store drops any action that reads or writes outside the task's scopes."""

    def review(
        self,
        candidates: Sequence[Candidate],
        actions: Sequence[PlannedAction],
        instructions: str | None,
    ) -> list[PlannedAction]: ...
