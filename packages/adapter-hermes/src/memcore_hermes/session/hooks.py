"""What the provider does on Hermes' optional hooks: compression, delegation, a new turn.

- ``on_pre_compress``: the turns about to be summarised are searched in long-term memory and
  the hits returned (fenced and bounded like a turn's recall), so the compression summary
  keeps what memory holds about them.
- ``on_delegation``: the delegated task and the subagent's result become one memory of the
  parent (spooled like any write: the agent's thread never waits on the backend); a subagent
  that brought no result back leaves none.
- ``on_turn_start``: writes waiting out a backoff after an outage get a try right away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from memcore import limits
from memcore.errors import MemcoreError
from memcore.recall import format_recall

logger = logging.getLogger(__name__)

#: How long compression may wait for the memory search (it is already waiting on a model).
COMPRESS_SEARCH_S = 5.0
#: The most of the discarded turns' text used as the query.
_QUERY_CHARS = 1_000
DELEGATION_SOURCE = "delegation"


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def compression_query(messages: Sequence[Any]) -> str:
    """The user's words in the turns being compressed, newest last, bounded."""
    said = [_text(m) for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    query = " ".join(t.strip() for t in said if t.strip())
    return query[-_QUERY_CHARS:]


def memory_for_compression(runtime: Any, messages: Sequence[Any]) -> str:
    """What memory holds about ``messages``, as text for the summary prompt ("" when nothing)."""
    query = compression_query(messages)
    if not query:
        return ""
    found: list[Any] = []
    asked = runtime.turn_time()

    top_k = runtime.config.top_k
    read = [t.strip() for t in (_text(m) for m in messages if isinstance(m, Mapping)) if t.strip()]

    def search() -> None:
        try:
            service = runtime.service(runtime.handle.ready())
            hits = service.search(
                query,
                top_k=min(limits.MAX_TOP_K, top_k * 4),
                context_scope=False,
                reference_time=asked,
            )
        except MemcoreError as exc:
            logger.info("tablestore-mem: no memory for the compression summary (%s)", exc)
            return
        # The turns being compressed are memories too, which the summary reads already:
        # asked with their own words, they filled every line and pushed out what memory
        # knew besides ("our database is PostgreSQL 15 on db-prod-3").
        found.extend(h for h in hits if not _said_in(h.memory.text, read))

    worker = threading.Thread(target=search, name="tablestore-mem-compress", daemon=True)
    worker.start()
    worker.join(COMPRESS_SEARCH_S)
    if worker.is_alive() or not found:
        return ""
    # Fenced, sanitised, each text once and within a budget, as the recall before a turn.
    block = format_recall(found, top_k=top_k, zone=asked.tzinfo)
    if not block:
        return ""
    return (
        "Long-term memory (tablestore-mem) holds these facts about the user that relate to the "
        "conversation being compressed; keep the ones that still matter:\n" + block
    )


def _said_in(text: str, messages: Sequence[str]) -> bool:
    """``text`` is one of ``messages``, or a piece of one (a long turn is split)."""
    said = text.strip()
    return bool(said) and any(said in m for m in messages)


def delegation_text(task: str, result: str) -> str:
    """One memory for a delegated task and its result, cut to the text limit; half an
    emoji (a lone surrogate) becomes U+FFFD, as in a turn: an automatic capture is kept."""
    task = limits.repair_unicode(task or "").strip()
    result = limits.repair_unicode(result or "").strip()
    text = f"Delegated task: {task}\nResult: {result}"
    if len(text.encode("utf-8")) <= limits.MAX_TEXT_BYTES:
        return text
    return limits.split_text(text)[0]


#: What Hermes hands ``on_delegation`` as the result of a subagent that brought none back
#: (it passes no status): its "(empty)" sentinel, the notice of a turn that ended without a
#: reply, and an interrupted run's text. Such a memory read as a fact ("Result: ⚠️ No reply:
#: the model returned empty content after retries ...").
_NO_RESULT = ("⚠️ No reply:", "⚠ No reply:", "Operation interrupted")


#: How Hermes words a message it sends in the user's place: a background subagent's or
#: process's completion (``tools/process_registry.py``), fed to ``run_conversation`` and so
#: to ``sync_turn`` as what the user said.
_HERMES_NOTICES = (
    "[ASYNC DELEGATION BATCH COMPLETE",
    "[ASYNC DELEGATION COMPLETE",
    "[IMPORTANT: Background process",
)


def no_reply(text: str) -> bool:
    """``text`` is Hermes' word for a turn or subagent that brought back nothing."""
    said = text.strip()
    return not said or said == "(empty)" or said.startswith(_NO_RESULT)


def turn_said(user: str, assistant: str) -> tuple[str, str]:
    """What of a completed turn is worth a memory: a reply that is Hermes' notice of none
    ("⚠️ No reply: the model returned empty content ...") was stored and recalled as an
    authoritative fact of the next turns; a turn Hermes began with a notice of its own (a
    delegation's results, already a memory by ``on_delegation``, and a log path) was stored
    as the user's words. Both come back empty."""
    if isinstance(user, str) and user.lstrip().startswith(_HERMES_NOTICES):
        return "", ""
    if isinstance(assistant, str) and no_reply(assistant):
        assistant = ""
    return user, assistant


def record_delegation(runtime: Any, task: str, result: str, child_session_id: str) -> str | None:
    """Spool the delegation as a memory of the parent; None when there is nothing to keep:
    no task, or no result (a subagent that failed, timed out or was interrupted: Hermes hands
    on an empty result or one of :data:`_NO_RESULT`, and the task alone would read as done)."""
    if not isinstance(task, str) or not task.strip():
        return None
    if not isinstance(result, str) or no_reply(result):
        return None
    metadata = {"source": DELEGATION_SOURCE}
    if isinstance(child_session_id, str) and child_session_id.strip():
        metadata["child_session_id"] = child_session_id.strip()[:128]
    key: str = runtime.remember(delegation_text(task, result), metadata=metadata)
    return key
