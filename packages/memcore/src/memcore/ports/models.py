"""The user's own model, and the strategies a store asks of it: fact extraction on writes
and review of dream plans. The prompts and the parsing of answers are in
:mod:`memcore.extraction`; the HTTP call is an adapter's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # for the signatures only: a host that never dreams loads no planner
    from memcore.dream.planner import Candidate, PlannedAction
    from memcore.values import Message


class ChatModel(Protocol):
    """One chat-completions call: messages in, the assistant's text out."""

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str: ...


class FactExtractor(Protocol):
    """The facts worth keeping from a chat turn; None means "store the turn as it is"."""

    def extract(self, messages: Sequence[Message]) -> list[str] | None: ...


class DreamReviewer(Protocol):
    """Checks (or makes) a dream plan. Must return actions over the given candidates only;
    the store drops any action that reads or writes outside the task's scopes."""

    def review(
        self,
        candidates: Sequence[Candidate],
        actions: Sequence[PlannedAction],
        instructions: str | None,
    ) -> list[PlannedAction]: ...
