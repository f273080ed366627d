"""The user's own OpenAI-compatible model: facts from chat turns, a second look at dream plans.

Configured from the environment (never from a file, so the key stays out of configs):
``MEMCORE_MODEL_BASE_URL`` (e.g. ``http://127.0.0.1:11434/v1``), ``MEMCORE_MODEL`` and,
when the endpoint wants one, ``MEMCORE_MODEL_API_KEY``. Without them nothing calls a model
and everything works as before. A model that fails or answers nonsense is logged and ignored:
the write is stored turn by turn, the plan stays the planner's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from memcore.errors import ConfigError, MemcoreError, Unavailable
from memcore.userinfo import repr_without_userinfo

if TYPE_CHECKING:  # the prompts and the planner load when a model is first asked
    from memcore.dream.planner import Candidate, PlannedAction
    from memcore.ports import ChatModel
    from memcore.values import Message

logger = logging.getLogger(__name__)

BASE_URL_VAR = "MEMCORE_MODEL_BASE_URL"
MODEL_VAR = "MEMCORE_MODEL"
KEY_VAR = "MEMCORE_MODEL_API_KEY"


@attrs.frozen
class ModelSettings:
    #: May hold ``user:password@`` (a proxy's basic auth): sent as a header, never shown.
    base_url: str = attrs.field(repr=repr_without_userinfo)
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    timeout: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ModelSettings | None:
        env = os.environ if environ is None else environ
        base = env.get(BASE_URL_VAR, "").strip()
        if not base:
            return None
        model = env.get(MODEL_VAR, "").strip()
        if not model:
            raise ConfigError(f"{BASE_URL_VAR} is set but {MODEL_VAR} is not", field=MODEL_VAR)
        if not base.startswith(("http://", "https://")):
            raise ConfigError(
                "the model base URL must start with http:// or https://", field=BASE_URL_VAR
            )
        return cls(base.rstrip("/"), model, env.get(KEY_VAR) or None)


class OpenAIChatModel:
    """``POST {base_url}/chat/completions`` with httpx; JSON answers asked for."""

    def __init__(self, settings: ModelSettings) -> None:
        import httpx

        self.settings = settings
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        # The URL's user:password@ goes in the header httpx made of it, and out of the URL
        # itself: httpx logs each request's URL (at INFO), and errors may quote it.
        try:
            url = httpx.URL(settings.base_url)
        except httpx.InvalidURL:
            raise ConfigError("the model base URL is not a valid URL", field=BASE_URL_VAR) from None
        auth = httpx.BasicAuth(url.username, url.password) if url.userinfo else None
        self._base_url = (
            str(url.copy_with(username=None, password=None)) if url.userinfo else settings.base_url
        )
        self._client = httpx.Client(timeout=settings.timeout, headers=headers, auth=auth)

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self._base_url!r}, model={self.settings.model!r})"

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        import httpx

        body = {
            "model": self.settings.model,
            "messages": list(messages),
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        try:
            response = self._client.post(f"{self._base_url}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise Unavailable(f"the model endpoint failed: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise Unavailable(f"the model endpoint answered HTTP {response.status_code}")
        try:
            return str(response.json()["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise Unavailable("the model endpoint answered an unexpected body") from exc

    def close(self) -> None:
        self._client.close()


class ModelExtractor:
    """Facts from a chat turn; None means "store the turn as it is"."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def extract(self, messages: Sequence[Message]) -> list[str] | None:
        from memcore import extraction

        try:
            answer = self.model.complete(extraction.extraction_request(messages))
        except MemcoreError as exc:
            logger.warning("memcore: fact extraction skipped (%s)", exc.code)
            return None
        facts = extraction.parse_facts(answer)
        if facts is None:
            logger.warning("memcore: the model's facts did not parse; the turn is kept as is")
        return facts


class ModelReviewer:
    """Lets the model drop, rescore or reword the planner's actions (never add to them)."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def review(
        self,
        candidates: Sequence[Candidate],
        actions: Sequence[PlannedAction],
        instructions: str | None,
    ) -> list[PlannedAction]:
        if not actions:
            return list(actions)
        from memcore import extraction

        by_id = {c.id: c for c in candidates}
        try:
            answer = self.model.complete(extraction.review_request(by_id, actions, instructions))
        except MemcoreError as exc:
            logger.warning("memcore: dream review skipped (%s)", exc.code)
            return list(actions)
        reviewed = extraction.apply_review(actions, answer)
        return list(actions) if reviewed is None else reviewed


def model_strategies(
    settings: ModelSettings | None,
) -> tuple[ModelExtractor | None, ModelReviewer | None]:
    """The store's fact extractor and dream reviewer on the user's model (None and None
    without settings): pass them to :class:`~memcore_sqlite.store.SqliteMemoryStore`."""
    if settings is None:
        return None, None
    model = OpenAIChatModel(settings)
    return ModelExtractor(model), ModelReviewer(model)
