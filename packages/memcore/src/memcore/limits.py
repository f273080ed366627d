"""The TableStore Memory Store limits, checked before any backend call.

Every check raises :class:`InvalidInput` naming the field, so nothing over a limit is ever sent,
and nothing is silently truncated.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone

from memcore.errors import InvalidInput
from memcore.graphemes import safe_end
from memcore.scope import Scope, ScopePattern
from memcore.values import DREAM_APPLY_MODES, DREAM_STATUSES, KNOWN_TASK_STATUSES, Message
from memcore.wording import shown

MAX_TEXT_BYTES = 32_000
MAX_MESSAGES_PER_WRITE = 20
MAX_MESSAGES_BYTES = 32_000
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 1_024
#: The whole map, as compact UTF-8 JSON: the service refuses a larger one (16 values of 1,024
#: four-byte characters are past it).
MAX_METADATA_JSON_BYTES = 65_536
MIN_TOP_K = 1
MAX_TOP_K = 50
MAX_QUERY_CHARS = 8_192
MAX_PAGE_LIMIT = 100
STORE_NAME_RE = re.compile(r"[A-Za-z0-9_]{1,32}")
MESSAGE_ROLES = frozenset({"user", "assistant", "system", "tool"})
MAX_DESCRIPTION_BYTES = 1_024
#: Measured in code points (the service counts runes), unlike the description's bytes.
MAX_EXTRACT_INSTRUCTIONS_CHARS = 4_096
MAX_DREAM_SCOPES = 20
#: The dream instructions limit is in UTF-8 bytes.
MAX_DREAM_INSTRUCTIONS_BYTES = 4_000
#: ApplyMemoryDreamActions takes at most this many (distinct) ids per call.
MAX_APPLY_IDS = 100
#: The longest id (of a memory, task or action) a caller may give.
MAX_ID_CHARS = 256
#: The years a search's reference time may fall in: its time words ("999 years ago", "in
#: May") are counted from it, and the calendar stops at years 1 and 9999.
REFERENCE_YEARS = (1000, 9000)
#: How far past the store's clock a message's own time (when it was said) may lie: clocks of
#: two machines disagree by seconds, while a time hours ahead is a mistake (a local time read
#: as UTC) that would date a memory after every question asked today.
MAX_SAID_AHEAD_S = 300.0
#: The longest ISO 8601 reference time a host accepts as text.
MAX_REFERENCE_TIME_CHARS = 64
#: The most turns a search returns each side of a hit (``neighbours``), and the characters
#: of them each hit may carry (``neighbour_chars``): context, not a transcript.
MAX_NEIGHBOURS = 5
DEFAULT_NEIGHBOUR_CHARS = 1_200
MAX_NEIGHBOUR_CHARS = 16_000


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


#: The surrogates a stray byte becomes: Python decodes argv, stdin and file names with
#: ``surrogateescape``, so a byte 0x80-0xFF that is not UTF-8 arrives as U+DC80-U+DCFF.
_ESCAPED_BYTE_LOW, _ESCAPED_BYTE_HIGH = 0xDC80, 0xDCFF


def unicode_problem(value: str) -> str | None:
    """What makes ``value`` unstorable as UTF-8 (None: nothing): a byte that was not UTF-8
    (say, Latin-1 text on the command line), or a lone surrogate (half an emoji)."""
    bad = _SURROGATE_RE.search(value)
    if bad is None:
        return None
    code = ord(bad.group())
    if _ESCAPED_BYTE_LOW <= code <= _ESCAPED_BYTE_HIGH:
        return f"not valid UTF-8 (byte 0x{code - 0xDC00:02x} at character {bad.start()})"
    return f"not valid Unicode: a lone surrogate at character {bad.start()}"


def check_unicode(value: str, *, field: str, label: str | None = None) -> str:
    """Refuse lone surrogates, and the stray bytes that arrive as them: no backend can store
    them as UTF-8. ``label`` names the value in the message (a host's spelling, ``--tenant``)."""
    problem = unicode_problem(value)
    if problem is not None:
        raise InvalidInput(f"{label or field} is {problem}", field=field)
    return value


def repair_unicode(text: str) -> str:
    """Replace lone surrogates with U+FFFD, for automatic captures that must not be lost."""
    return _SURROGATE_RE.sub("\ufffd", text)


#: Text that shows nothing: whitespace, control codes, the invisible format characters
#: (soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width space and joiners,
#: direction marks, embeddings and isolates, word joiner, byte-order mark, interlinear
#: annotation marks) and the other default-ignorable ones (grapheme joiner, Hangul fillers,
#: Khmer inherent vowels, variation selectors, shorthand format controls, musical format
#: controls, tags).
_BLANK_RE = re.compile(
    "[\\s\x00-\x1f\x7f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]*"
)


def plain(value: str) -> str:
    """``value``'s characters as a plain ``str``: the own methods of a subclass (``encode``,
    ``strip``, ``__len__``, ``__hash__``) would otherwise steer the checks made on it and
    the scope it names, and be stored past them."""
    return str.__str__(value)


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing (whitespace and invisible format characters only)."""
    return _BLANK_RE.fullmatch(text) is not None


def check_text(text: object, *, field: str = "text") -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be a string, not {type(text).__name__}", field=field)
    text = plain(text)
    if is_blank(text):
        raise InvalidInput(f"{field} must not be empty", field=field)
    check_unicode(text, field=field)
    size = utf8_len(text)
    if size > MAX_TEXT_BYTES:
        raise InvalidInput(
            f"{field} is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}", field=field
        )
    return text


def check_metadata(metadata: object, *, field: str = "metadata") -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{field} must be an object of strings", field=field)
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInput(
            f"{field} has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}", field=field
        )
    out: dict[str, str] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"{field} keys must be non-empty strings", field=field)
        key = plain(key)
        check_unicode(key, field=field)
        if len(key) > MAX_METADATA_KEY_CHARS:
            raise InvalidInput(
                f"{field} key {shown(key)} is longer than {MAX_METADATA_KEY_CHARS} characters",
                field=f"{field}.{key[:MAX_METADATA_KEY_CHARS]}",
            )
        if not isinstance(value, str):
            raise InvalidInput(f"{field}.{key} must be a string", field=f"{field}.{key}")
        value = plain(value)
        check_unicode(value, field=f"{field}.{key}")
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInput(
                f"{field}.{key} is longer than {MAX_METADATA_VALUE_CHARS} characters",
                field=f"{field}.{key}",
            )
        out[key] = value
    size = metadata_bytes(out)
    if size > MAX_METADATA_JSON_BYTES:
        raise InvalidInput(
            f"{field} is {size} bytes as JSON; the limit is {MAX_METADATA_JSON_BYTES}", field=field
        )
    return out


def metadata_bytes(metadata: Mapping[str, str]) -> int:
    """The size the metadata limit counts: the map as compact JSON, in UTF-8."""
    text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))


def merge_metadata(older: Mapping[str, str], newer: Mapping[str, str]) -> dict[str, str]:
    """The metadata of a memory written again (a repeated text, or a message's own keys over
    its write's): never more than :data:`MAX_METADATA_KEYS` keys.

    The newer map's keys all win; keys only the older map holds fill the room left (keys, and
    :data:`MAX_METADATA_JSON_BYTES`), in ascending key order (code points), so every backend
    keeps the same ones. A repeat is a merge the caller did not ask for, so it is cut to the
    limit rather than refused: a capture must not fail because the same sentence was said twice.
    """
    merged = dict(newer)
    size = metadata_bytes(merged)
    for key in sorted(older.keys() - merged.keys()):
        if len(merged) >= MAX_METADATA_KEYS:
            break
        # What one more pair adds: the key and value as JSON strings, ':' and ',' (or '{}'s).
        more = metadata_bytes({key: older[key]}) - (1 if merged else 2)
        if size + more > MAX_METADATA_JSON_BYTES:
            continue
        merged[key] = older[key]
        size += more
    return merged


#: How an update past the metadata limits makes room: in one update with the CLI, else in two.
_MAKE_ROOM = (
    "remove the keys it no longer needs in the same update, as memcore update --unset KEY "
    "does, or clear them all with {} first"
)


def merge_update_metadata(
    old: Mapping[str, str], patch: Mapping[str, str], *, field: str = "metadata"
) -> dict[str, str]:
    """An update's metadata, merged as on the service: the same key overwrites, other keys stay,
    ``{}`` clears the map. A merge past :data:`MAX_METADATA_KEYS` is refused (nothing changes):
    the caller asked for every one of those keys, so none is dropped behind their back."""
    if not patch:
        return {}
    merged = {**old, **patch}
    if len(merged) > MAX_METADATA_KEYS:
        raise InvalidInput(
            f"{field} would have {len(merged)} keys merged with the memory's {len(old)}; the "
            f"limit is {MAX_METADATA_KEYS} ({_MAKE_ROOM})",
            field=field,
        )
    size = metadata_bytes(merged)
    if size > MAX_METADATA_JSON_BYTES:
        raise InvalidInput(
            f"{field} merged with the memory's would be {size} bytes as JSON; the limit is "
            f"{MAX_METADATA_JSON_BYTES} ({_MAKE_ROOM})",
            field=field,
        )
    return merged


def check_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise InvalidInput("top_k must be a whole number", field="top_k")
    if not MIN_TOP_K <= top_k <= MAX_TOP_K:
        raise InvalidInput(
            f"top_k must be from {MIN_TOP_K} to {MAX_TOP_K}, not {shown(top_k)}", field="top_k"
        )
    return top_k


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise InvalidInput("query must be a string", field="query")
    query = plain(query)
    if is_blank(query):  # as for a text: invisible characters alone ask nothing
        raise InvalidInput("query must not be empty", field="query")
    check_unicode(query, field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}", field="query"
        )
    return query


def is_finite(value: float) -> bool:
    """Whether ``value`` is a finite number: an int too large for a float (what a JSON
    document's long number parses to) is not, rather than an OverflowError."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_min_similarity(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not is_finite(value):
        raise InvalidInput("min_similarity must be a finite number", field="min_similarity")
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInput("min_similarity must be from 0 to 1", field="min_similarity")
    return float(value)


def check_reference_time(
    value: object, *, field: str = "reference_time", label: str | None = None
) -> datetime | None:
    """A search's reference time (the question's date): a datetime; a naive one is UTC.
    ``label`` names it in the message (a host's own spelling, such as ``--at``)."""
    if value is None:
        return None
    name = label or field
    if not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime", field=field)
    low, high = REFERENCE_YEARS
    if not low <= value.year <= high:
        raise InvalidInput(f"{name} must be a date from year {low} to {high}", field=field)
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def parse_reference_time(
    value: object, *, field: str = "reference_time", label: str | None = None
) -> datetime | None:
    """A reference time given as text by a host's user (a tool argument, a command-line
    option): ISO 8601, a date (``2026-05-01``) or a date and time (``2026-05-01T09:30``,
    ``...Z``, ``...+02:00``); without an offset it is UTC. None stays None (now)."""
    if value is None:
        return None
    name = label or field
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be an ISO 8601 date or time string", field=field)
    text = value.strip()
    # Python 3.10's fromisoformat does not read the "Z" suffix.
    text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        if len(text) > MAX_REFERENCE_TIME_CHARS:
            raise ValueError(text)
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"{name} must be an ISO 8601 date or time like 2026-05-01 or "
            f"2026-05-01T09:30:00Z, not {shown(value)}",
            field=field,
        ) from None
    return check_reference_time(stamp, field=field, label=label)


def check_said_time(value: object, *, field: str = "timestamp", now: float | None = None) -> float:
    """A message's own time (when it was said), in seconds since the epoch: it becomes its
    memory's ``created_at``. A finite number, in the years of :data:`REFERENCE_YEARS` (UTC),
    at most :data:`MAX_SAID_AHEAD_S` after ``now`` (the clock's time unless given)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not is_finite(value):
        raise InvalidInput(f"{field} must be a number of seconds since the epoch", field=field)
    low, high = REFERENCE_YEARS
    if not earliest_time() <= value < latest_time():
        raise InvalidInput(f"{field} must be a date from year {low} to {high}", field=field)
    clock = datetime.now(timezone.utc).timestamp() if now is None else now
    if value > clock + MAX_SAID_AHEAD_S:
        raise InvalidInput(
            f"{field} lies {value - clock:.0f} s in the future; a message cannot have been said"
            f" later than now (a local time read as UTC?)",
            field=field,
        )
    return float(value)


def earliest_time() -> float:
    """The first second of the first year of :data:`REFERENCE_YEARS` (UTC): the earliest
    time a message may have been said, and so the earliest time the store keeps."""
    return datetime(REFERENCE_YEARS[0], 1, 1, tzinfo=timezone.utc).timestamp()


def latest_time() -> float:
    """The first second after the last year of :data:`REFERENCE_YEARS` (UTC): no time the
    store keeps lies at or past it, so every stored time can be shown as a date."""
    return datetime(REFERENCE_YEARS[1] + 1, 1, 1, tzinfo=timezone.utc).timestamp()


def check_stored_time(value: object, *, field: str) -> float | None:
    """A stored time given back to the store (an import's ``created_at`` or ``said_at``):
    None, or finite seconds since the epoch in the years of :data:`REFERENCE_YEARS`, the
    bound a message's own time has: a memory said before 1970 is exported with its time and
    must import again, and a time past the last year cannot be shown as a date (it would
    break every listing of its tenant)."""
    if value is None:
        return None
    low, high = REFERENCE_YEARS
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not is_finite(value)
        or not earliest_time() <= value < latest_time()
    ):
        raise InvalidInput(
            f"{field} must be a timestamp in seconds, from year {low} to the end of year {high}",
            field=field,
        )
    return float(value)


#: The longest memory kind (``unit_type``) an import restores: the kinds stores write are
#: short words (``text``, ``message``, ``fact``).
MAX_UNIT_TYPE_CHARS = 64
#: The highest version an import restores (SQLite's INTEGER holds more; no store counts near).
MAX_VERSION = 2**31 - 1


def check_unit_type(value: object, *, field: str = "unit_type") -> str | None:
    """A memory's kind given back to the store (an import's ``unit_type``): None, or a short
    word without control characters."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > MAX_UNIT_TYPE_CHARS
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
        or _SURROGATE_RE.search(value)
    ):
        raise InvalidInput(
            f"{field} must be a non-empty string of at most {MAX_UNIT_TYPE_CHARS} characters",
            field=field,
        )
    return value


def check_version(value: object, *, field: str = "version") -> int | None:
    """A memory's version given back to the store (an import's ``version``): None, or a
    whole number from 1 (how many times it was written)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        raise InvalidInput(f"{field} must be a whole number from 1 to {MAX_VERSION}", field=field)
    return value


def parse_said_time(value: object, *, field: str = "timestamp") -> float | None:
    """A message's time in its JSON form: seconds since the epoch (what ``messages`` prints),
    or ISO 8601 text read as a reference time is (without an offset it is UTC); None: unknown,
    the store stamps it when it lands."""
    if value is None:
        return None
    if isinstance(value, str):
        stamp = parse_reference_time(value, field=field)
        assert stamp is not None
        return check_said_time(stamp.timestamp(), field=field)
    return check_said_time(value, field=field)


def check_neighbours(value: object) -> int:
    """How many turns each side of a hit a search returns (0: none, the default)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("neighbours must be a whole number", field="neighbours")
    if not 0 <= value <= MAX_NEIGHBOURS:
        raise InvalidInput(f"neighbours must be from 0 to {MAX_NEIGHBOURS}", field="neighbours")
    return value


def check_neighbour_chars(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("neighbour_chars must be a whole number", field="neighbour_chars")
    if not 1 <= value <= MAX_NEIGHBOUR_CHARS:
        raise InvalidInput(
            f"neighbour_chars must be from 1 to {MAX_NEIGHBOUR_CHARS}", field="neighbour_chars"
        )
    return value


def check_flag(value: object, *, field: str, optional: bool = False) -> bool | None:
    """A yes/no argument: ``True`` or ``False`` (or None where that means the default), so
    ``"no"`` is refused rather than read as true."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        # Both spellings: a Python caller writes True, a model's JSON arguments true.
        raise InvalidInput(
            f"{field} must be a boolean (true or false), not {shown(value)}", field=field
        )
    return value


def check_optional_name(value: object, *, field: str, default: str) -> str | None:
    """A per-call user, agent or run id: a non-blank string, or None for ``default`` (the
    caller's own). A blank one (an unset variable) or a number would otherwise quietly become
    the default: the shared default tenant, or the session's own scope."""
    if value is not None and (not isinstance(value, str) or not plain(value).strip()):
        raise InvalidInput(
            f"{field} must be a non-empty string (or None for {default})", field=field
        )
    return None if value is None else plain(value)


def check_limit(limit: object, *, field: str = "limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput(f"{field} must be a whole number", field=field)
    if not 1 <= limit <= MAX_PAGE_LIMIT:
        raise InvalidInput(
            f"{field} must be from 1 to {MAX_PAGE_LIMIT}, not {shown(limit)}", field=field
        )
    return limit


def check_operation(value: object) -> str | None:
    """An audit log's operation filter: None (every operation) or an API name such as
    AddMemories. Anything else names no record; one store would answer it with an empty page
    and another refuse it, so every store refuses it."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.isascii() or not value.isalnum():
        raise InvalidInput("operation must be an API name such as AddMemories", field="operation")
    return value


def check_status(value: object, *, dream: bool = False) -> str | None:
    """A listing's status filter: None (every status) or one the service names; a misspelt
    one is refused, as TableStore does, rather than answered with an empty page."""
    allowed = DREAM_STATUSES if dream else KNOWN_TASK_STATUSES
    if value is not None and (not isinstance(value, str) or value not in allowed):
        raise InvalidInput(f"status must be one of {', '.join(allowed)}", field="status")
    return value


def check_store_name(name: object) -> str:
    if not isinstance(name, str) or not STORE_NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"store name {shown(name)} must match [A-Za-z0-9_]{{1,32}}", field="memory_store_name"
        )
    return name


def check_id(value: object, *, field: str = "memory_id") -> str:
    if not isinstance(value, str) or not plain(value).strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    value = plain(value)
    if len(value) > MAX_ID_CHARS or any(ord(c) < 32 for c in value) or _SURROGATE_RE.search(value):
        raise InvalidInput(f"{field} is not a valid id", field=field)
    return value


def check_action_ids(value: object) -> list[str]:
    """1 to :data:`MAX_APPLY_IDS` distinct dream action ids, in order, repeats dropped."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput("action_ids must be a list of ids", field="action_ids")
    ids = list(dict.fromkeys(check_id(a, field="action_ids") for a in value))
    if not 1 <= len(ids) <= MAX_APPLY_IDS:
        raise InvalidInput(
            f"apply takes 1 to {MAX_APPLY_IDS} distinct action ids, not {len(ids)}",
            field="action_ids",
        )
    return ids


def message_from_json(data: object, *, index: int = 0) -> Message:
    """A message from its JSON form, an object with string ``role`` and ``content`` (what the
    library's dict messages and the CLI's messages file hold), an optional ``timestamp``,
    when it was said (:func:`parse_said_time`), and optional ``metadata`` (checked with the
    message, as a `Message`'s is); other keys are the caller's."""
    field = f"messages[{index}]"
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{field} must be an object", field=field)
    role, content = data.get("role"), data.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise InvalidInput(f"{field} needs string 'role' and 'content'", field=field)
    said = parse_said_time(data.get("timestamp"), field=f"{field}.timestamp")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        # Dropped without a word before, though the message said what it was about.
        raise InvalidInput(f"{field}.metadata must be an object", field=f"{field}.metadata")
    return Message(role=plain(role), content=plain(content), timestamp=said, metadata=metadata)


def check_message(message: object, *, index: int = 0) -> Message:
    field = f"messages[{index}]"
    checked = check_message_fields(message, index=index)
    check_text(checked.content, field=f"{field}.content")
    return checked


def _message_with_role(message: object, field: str) -> Message:
    """A `Message` whose role is one the stores keep: the first check of a new and of a
    logged message alike."""
    if not isinstance(message, Message):
        raise InvalidInput(f"{field} must be a Message", field=field)
    if message.role not in MESSAGE_ROLES:
        raise InvalidInput(
            f"{field}.role must be one of {sorted(MESSAGE_ROLES)}, not {shown(message.role)}",
            field=f"{field}.role",
        )
    return message


def check_message_fields(message: object, *, index: int = 0) -> Message:
    """Everything of a message but its text's size (a turn's long message is split into
    several writes): checked for the whole turn before its first write, so a refused turn
    leaves nothing written."""
    field = f"messages[{index}]"
    message = _message_with_role(message, field)
    if message.id is not None and message.id != "":  # none or "": the store makes one
        check_id(message.id, field=f"{field}.id")
    check_metadata(message.metadata, field=f"{field}.metadata")
    if message.timestamp is not None:
        check_said_time(message.timestamp, field=f"{field}.timestamp")
    # remember="no" would be read as yes, and the message kept as a memory.
    check_flag(message.remember, field=f"{field}.remember")
    return message


def check_logged_message(message: object, *, field: str = "message") -> Message:
    """A message of a store's log given back to it (an import's): a role, a text within the
    limits, an id if any, metadata, and a stored time (not compared with the clock, as a
    new message's is: it was said when it was said)."""
    message = _message_with_role(message, field)
    if message.id is not None:
        check_id(message.id, field=f"{field}.id")
    check_text(message.content, field=f"{field}.content")
    check_metadata(message.metadata, field=f"{field}.metadata")
    check_stored_time(message.timestamp, field=f"{field}.timestamp")
    return message


def check_messages(messages: Sequence[Message]) -> list[Message]:
    """Validate one write's messages: count, total size, and each message."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInput("messages must be a list", field="messages")
    if not messages:
        raise InvalidInput("messages must not be empty", field="messages")
    if len(messages) > MAX_MESSAGES_PER_WRITE:
        raise InvalidInput(
            f"{len(messages)} messages in one write; the limit is {MAX_MESSAGES_PER_WRITE}",
            field="messages",
        )
    checked = [check_message(m, index=i) for i, m in enumerate(messages)]
    total = sum(utf8_len(m.content) for m in checked)
    if total > MAX_MESSAGES_BYTES:
        raise InvalidInput(
            f"messages hold {total} UTF-8 bytes; the limit is {MAX_MESSAGES_BYTES}",
            field="messages",
        )
    return checked


def split_text(text: str, max_bytes: int = MAX_TEXT_BYTES) -> list[str]:
    """Split text into pieces of at most ``max_bytes`` UTF-8 bytes, preferring line breaks,
    then sentence ends, then spaces: a word cut in two at the limit was found by no search
    (only text without spaces in the piece's second half, CJK say, is cut anywhere). Put
    together, the pieces are the text, less any piece that would hold only blank space."""
    if utf8_len(text) <= max_bytes:
        return [text]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for ch in text:
        n = utf8_len(ch)
        if size + n > max_bytes:
            chunk = "".join(current)
            cut = max(chunk.rfind("\n"), chunk.rfind(". "))
            if cut <= len(chunk) // 2:
                cut = max(chunk.rfind(" "), chunk.rfind("\t"))
            if cut > len(chunk) // 2:
                pieces.append(chunk[: cut + 1])
                current = [chunk[cut + 1 :]]
                size = utf8_len(current[0])
            else:  # no space to cut at: at the last whole character as a reader sees it
                cut = safe_end(chunk + ch, len(chunk))
                if cut == 0 or utf8_len(chunk[cut:]) + n > max_bytes:
                    cut = len(chunk)
                pieces.append(chunk[:cut])
                current = [chunk[cut:]] if cut < len(chunk) else []
                size = utf8_len(chunk[cut:])
        current.append(ch)
        size += n
    if current:
        pieces.append("".join(current))
    return [p for p in pieces if not is_blank(p)]


def split_messages(messages: Iterable[Message]) -> list[list[Message]]:
    """Split a turn into writes within the limits; a long message becomes several, never cut off."""
    batches: list[list[Message]] = []
    batch: list[Message] = []
    size = 0
    for message in messages:
        if not isinstance(message, Message) or is_blank(message.content):
            continue
        parts = split_text(message.content, MAX_MESSAGES_BYTES)
        for part in parts:
            piece = (
                message
                if len(parts) == 1
                else Message(
                    role=message.role,
                    content=part,
                    id=message.id,
                    timestamp=message.timestamp,
                    metadata=message.metadata,
                    remember=message.remember,
                )
            )
            n = utf8_len(part)
            if batch and (len(batch) >= MAX_MESSAGES_PER_WRITE or size + n > MAX_MESSAGES_BYTES):
                batches.append(batch)
                batch, size = [], 0
            batch.append(piece)
            size += n
    if batch:
        batches.append(batch)
    return batches


def check_description(value: object) -> str:
    checked = _optional_text(value, "description", MAX_DESCRIPTION_BYTES, in_bytes=True)
    if checked is None:
        raise InvalidInput("description must be a string", field="description")
    return checked


def _optional_text(value: object, field: str, limit: int, *, in_bytes: bool) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field)
    check_unicode(value, field=field)
    size = utf8_len(value) if in_bytes else len(value)
    if size > limit:
        unit = "bytes (UTF-8)" if in_bytes else "characters"
        raise InvalidInput(f"{field} is {size:,} {unit}; the limit is {limit:,}", field=field)
    return value


def check_extract_instructions(value: object) -> str | None:
    """Custom extraction instructions for a store; ``""`` clears them on update."""
    return _optional_text(
        value, "extract_instructions", MAX_EXTRACT_INSTRUCTIONS_CHARS, in_bytes=False
    )


def check_context_scope(value: object, pattern: ScopePattern) -> Scope | None:
    """The current conversation: a concrete scope inside the searched pattern."""
    if value is None:
        return None
    if not isinstance(value, Scope):
        raise InvalidInput(
            "context_scope must be a concrete Scope (four levels, no '*')", field="context_scope"
        )
    if not pattern.matches(value):
        raise InvalidInput(
            f"context_scope {value} is outside the searched scope {pattern}",
            field="context_scope",
        )
    return value


def check_message_moves(moves: object) -> list[tuple[Scope, Scope]]:
    """Pairs of concrete scopes (source, target) for a move of message logs: no scope to
    itself, no source twice, and none a source and a target both (a chain would move a log
    twice or not at all, by the order of the pairs)."""
    if isinstance(moves, (str, bytes)) or not isinstance(moves, Sequence):
        raise InvalidInput("moves must be a list of (source, target) scopes", field="moves")
    checked: list[tuple[Scope, Scope]] = []
    for i, pair in enumerate(moves):
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, Scope) for s in pair)
        ):
            raise InvalidInput(f"moves[{i}] must be two concrete Scopes", field=f"moves[{i}]")
        if pair[0] == pair[1]:
            raise InvalidInput(f"moves[{i}] moves a scope to itself", field=f"moves[{i}]")
        checked.append(pair)
    sources = [source for source, _ in checked]
    if len(set(sources)) < len(sources) or set(sources) & {target for _, target in checked}:
        raise InvalidInput("a scope is moved twice, or both from and to", field="moves")
    return checked


def check_dream_scopes(scopes: object) -> tuple[ScopePattern, ...]:
    """1 to 20 scope patterns; one pattern (or a concrete scope) is accepted alone."""
    if isinstance(scopes, (Scope, ScopePattern)):
        scopes = [scopes]
    if isinstance(scopes, str) or not isinstance(scopes, Sequence):
        raise InvalidInput("scopes must be a list of scope patterns", field="scopes")
    out: list[ScopePattern] = []
    for item in scopes:
        if isinstance(item, Scope):
            item = item.pattern()
        if not isinstance(item, ScopePattern):
            raise InvalidInput("scopes must hold ScopePattern values", field="scopes")
        if item not in out:
            out.append(item)
    if not 1 <= len(out) <= MAX_DREAM_SCOPES:
        raise InvalidInput(
            f"a dream task takes 1 to {MAX_DREAM_SCOPES} scopes, not {len(out)}", field="scopes"
        )
    return tuple(out)


def check_apply_mode(value: object) -> str:
    if value not in DREAM_APPLY_MODES:
        raise InvalidInput(
            f"apply_mode must be one of {', '.join(DREAM_APPLY_MODES)}", field="apply_mode"
        )
    return str(value)


def check_dream_instructions(value: object) -> str | None:
    return _optional_text(value, "instructions", MAX_DREAM_INSTRUCTIONS_BYTES, in_bytes=True)


def path_problem(path: str) -> str | None:
    """Why no database file can have the path ``path`` on this system, or None. SQLite names
    its files in UTF-8: a path holding other bytes (a surrogate, from a name that is not
    UTF-8) opens, then fails at the first query, so it is refused here."""
    if "\x00" in path:
        return "it holds a NUL character"
    try:
        os.fsencode(path)
    except UnicodeError:
        return "it holds characters the file system cannot encode"
    if _SURROGATE_RE.search(path):
        return "it holds bytes that are not UTF-8, and SQLite names its files in UTF-8"
    return None
