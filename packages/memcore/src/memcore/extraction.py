"""Turning chat turns into concise facts, and checking dream plans, with the user's own model.

Pure: prompts are built and answers parsed here; the HTTP call is an adapter's
(:class:`memcore.ports.ChatModel`). Every answer is treated as untrusted: anything that does not parse into
the expected shape is ignored, and the caller falls back to working without the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memcore import limits
from memcore.dream.planner import Candidate, PlannedAction
from memcore.errors import MemcoreError
from memcore.values import Message

#: Facts per write and characters per fact the model may return; more is cut.
MAX_FACTS = 10
MAX_FACT_CHARS = 1000

EXTRACT_PROMPT = (
    "You turn chat messages into long-term memories. Write each fact about the user or their "
    "world that is worth remembering in a later conversation as one short, self-contained "
    "sentence in the user's language (name people and things, keep numbers and dates). Skip "
    "greetings, questions and anything only the assistant said. Answer only JSON: "
    '{"facts": ["..."]} (an empty list when nothing is worth keeping).'
)
REVIEW_PROMPT = (
    "You check a plan that consolidates stored memories. Each action has an index, a type "
    "(MERGE: the memories say the same thing; UPDATE: a newer memory supersedes older ones; "
    "DELETE: an older memory is stale) and the texts involved. For each action decide whether "
    "it is right. Answer only JSON: "
    '{"actions": [{"index": 0, "keep": true, "confidence": 0.9, "text": "merged text"}]} '
    "(text only for MERGE, optional)."
)


def _json_object(answer: str) -> Mapping[str, Any] | None:
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def extraction_request(messages: Sequence[Message]) -> list[dict[str, str]]:
    turn = "\n".join(f"{m.role}: {m.content}" for m in messages)
    return [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": turn}]


def parse_facts(answer: str) -> list[str] | None:
    """The facts of a model answer; None when the answer is not the expected JSON."""
    data = _json_object(answer)
    if data is None or not isinstance(data.get("facts"), list):
        return None
    facts: list[str] = []
    for item in data["facts"][:MAX_FACTS]:
        if isinstance(item, str) and item.strip():
            text = item.strip()[:MAX_FACT_CHARS]
            try:
                limits.check_text(text)
            except MemcoreError:
                continue
            if text not in facts:
                facts.append(text)
    return facts


def review_request(
    candidates: Mapping[str, Candidate], actions: Sequence[PlannedAction], instructions: str | None
) -> list[dict[str, str]]:
    lines = []
    for i, a in enumerate(actions):
        texts = " | ".join(candidates[m].text[:500] for m in a.read_ids() if m in candidates)
        lines.append(f"[{i}] {a.action}: {texts}")
    system = REVIEW_PROMPT + (
        f"\nInstructions from the user: {instructions}" if instructions else ""
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def apply_review(actions: Sequence[PlannedAction], answer: str) -> list[PlannedAction] | None:
    """The plan as the model judged it: dropped actions go, confidences and MERGE texts are
    the model's. None when the answer does not parse (keep the plan as it was)."""
    data = _json_object(answer)
    if data is None or not isinstance(data.get("actions"), list):
        return None
    verdicts: dict[int, Mapping[str, Any]] = {}
    for v in data["actions"]:
        if isinstance(v, dict) and isinstance(v.get("index"), int):
            verdicts[v["index"]] = v
    out: list[PlannedAction] = []
    for i, a in enumerate(actions):
        v = verdicts.get(i)
        if v is None:
            out.append(a)
            continue
        if v.get("keep") is False:
            continue
        conf = v.get("confidence")
        if isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0 <= conf <= 1:
            a = attrs.evolve(a, confidence=float(conf), reason=a.reason + "; checked by the model")
        text = v.get("text")
        if a.action == "MERGE" and isinstance(text, str) and not limits.is_blank(text):
            a = attrs.evolve(a, text=text.strip()[:MAX_FACT_CHARS])
        out.append(a)
    return out
