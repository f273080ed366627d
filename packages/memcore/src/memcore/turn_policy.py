"""What a completed turn stores as memories, by design.

User messages are memories. Assistant messages always reach the message log, and become
memories only when they carry something worth recalling (``store_assistant``: ``auto``, the
default; ``always``; ``never``). System and tool messages reach the log only: a system
prompt is the app's instructions and a tool's output is what a tool returned, neither
something the user said (stored as memories, a prompt outranked the user's own facts). Not worth it: an acknowledgement ("Noted!", "Got it, I'll
remember that") and an echo of tool output or of recalled memories ("Based on memory:
{...}"); both came back in later recalls and crowded out what the user said.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from memcore import limits
from memcore.errors import InvalidInput
from memcore.recall import strip_recall
from memcore.values import Message
from memcore.wording import shown

STORE_ASSISTANT = ("auto", "always", "never")
#: Roles whose messages reach the message log and never become memories.
LOG_ONLY = frozenset({"system", "tool"})

#: Fewer words than this, all of them chatter, make an acknowledgement.
_ACK_MAX_WORDS = 16
_ACK_WORDS = frozenset(
    {
        "ok",
        "okay",
        "sure",
        "noted",
        "got",
        "it",
        "i",
        "ill",
        "i'll",
        "will",
        "we",
        "well",
        "remember",
        "remembered",
        "that",
        "this",
        "thanks",
        "thank",
        "you",
        "your",
        "youre",
        "you're",
        "for",
        "the",
        "a",
        "an",
        "and",
        "of",
        "to",
        "in",
        "note",
        "keep",
        "kept",
        "mind",
        "understood",
        "absolutely",
        "great",
        "glad",
        "happy",
        "help",
        "helping",
        "welcome",
        "no",
        "problem",
        "course",
        "certainly",
        "sounds",
        "good",
        "perfect",
        "alright",
        "all",
        "right",
        "yes",
        "yep",
        "done",
        "saved",
        "stored",
        "memory",
        "memorized",
        "have",
        "made",
        "added",
        "me",
        "let",
        "know",
        "anything",
        "else",
        "can",
        "do",
        "here",
        "hi",
        "hello",
        "hey",
        "there",
        "cool",
        "nice",
        "awesome",
        # Acknowledging phrases ("Thanks for letting me know!", "Okay, I've saved that to
        # memory.", "I'll make sure to keep that in mind from now on.").
        "letting",
        "sharing",
        "telling",
        "i've",
        "ive",
        "i'm",
        "im",
        "it's",
        "its",
        "appreciate",
        "be",
        "make",
        "from",
        "now",
        "on",
        "forward",
        "future",
        "reference",
        "so",
        "much",
        "very",
        "definitely",
    }
)
_WORD_RE = re.compile(r"[\w']+")
_ECHO_PREFIX_RE = re.compile(
    r"^\s*(based on (my |the |your )?(memory|memories|stored memories|search results?)|"
    r"(memory|search|tool) (result|output)s?\s*:|according to (my |the )?memory)",
    re.I,
)
_JSON_RE = re.compile(r"[\[{]\s*\"[^\"]+\"\s*:")


def is_acknowledgement(text: str) -> bool:
    words = [w.strip("'") for w in _WORD_RE.findall(text.casefold())]
    return len(words) < _ACK_MAX_WORDS and all(w in _ACK_WORDS for w in words)


def is_tool_echo(text: str) -> bool:
    """An answer that restates tool output or recalled memories instead of saying something."""
    stripped = text.strip()
    if _ECHO_PREFIX_RE.match(stripped):
        return True
    match = _JSON_RE.search(stripped)
    # Mostly a JSON dump: the object starts early and takes most of the message.
    return (
        match is not None
        and match.start() < 80
        and len(stripped) - match.start() > 0.6 * len(stripped)
    )


def worth_recalling(text: str) -> bool:
    """Whether an assistant message carries something to recall later."""
    return bool(text.strip()) and not is_acknowledgement(text) and not is_tool_echo(text)


def check_store_assistant(value: str) -> str:
    if value not in STORE_ASSISTANT:
        raise InvalidInput(
            f"store_assistant must be one of {', '.join(STORE_ASSISTANT)}, not {shown(value)}",
            field="store_assistant",
        )
    return value


def plan_memories(messages: Sequence[Message], store_assistant: str = "auto") -> list[Message]:
    """The turn's messages with recall blocks cut out, each marked whether it becomes a
    memory (``remember``); messages left empty are dropped."""
    check_store_assistant(store_assistant)
    planned: list[Message] = []
    for m in messages:
        content = strip_recall(m.content)
        if limits.is_blank(content):  # as check_text reads it: nothing shows
            continue
        remember = m.remember and m.role not in LOG_ONLY
        if m.role == "assistant" and store_assistant != "always":
            # What is left of a reply that showed recalled memories is its framing, not news.
            echoed = content != m.content and len(_WORD_RE.findall(content)) < _ACK_MAX_WORDS
            remember = (
                remember and store_assistant == "auto" and worth_recalling(content) and not echoed
            )
        if content != m.content or remember != m.remember:
            m = attrs.evolve(m, content=content, remember=remember)
        planned.append(m)
    return planned
