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
