"""The user's clock as Hermes keeps it.

Hermes dates its system prompt ("Conversation started: Sunday, December 06") in the time zone
it is configured with (``timezone`` in ``config.yaml``, or ``HERMES_TIMEZONE``). A memory's
day in the recall block, and "yesterday" in a question, are read in that zone too: a fact
said at 11 pm in Honolulu was shown dated the next day, one the model's clock had not reached.
UTC where none is configured, as before.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo


def zone() -> tzinfo:
    """The time zone Hermes is configured with, else UTC (Hermes resolves it once)."""
    try:
        import hermes_time  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - Hermes is the host
        return timezone.utc
    try:
        configured = hermes_time.get_timezone()
    except Exception:  # a broken config: Hermes itself falls back, and so do we
        return timezone.utc
    return configured if isinstance(configured, tzinfo) else timezone.utc


def now() -> datetime:
    """Now, in :func:`zone`: a turn's moment, which time words are read from."""
    return datetime.now(zone())


def asked_at(
    given: object, turn: datetime, *, field: str = "reference_time", label: str | None = None
) -> datetime:
    """When a question is asked: ``given`` (ISO 8601 text from the model or ``--at``), else
    ``turn``; in ``turn``'s zone, the user's. A time without an offset is the user's wall
    clock, as the model reads the dates of its conversation; one with an offset is that
    instant. Read as UTC, the tool shifted every shown ``date`` and "yesterday" by a day
    for a user far from UTC who passed the date the model sees."""
    from memcore import limits

    stamp = limits.parse_reference_time(given, field=field, label=label)
    if stamp is None:
        return turn
    zone = turn.tzinfo or timezone.utc
    if isinstance(given, str) and _without_offset(given):
        stamp = stamp.replace(tzinfo=zone)
        limits.check_reference_time(stamp, field=field, label=label)
    return stamp.astimezone(zone)


def _without_offset(text: str) -> bool:
    """Whether ISO 8601 ``text`` (already read as valid) names no offset."""
    text = text.strip()
    if text[-1:] in ("Z", "z"):
        return False
    return datetime.fromisoformat(text).tzinfo is None
