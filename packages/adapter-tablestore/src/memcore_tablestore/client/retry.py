"""When and how often a failed call is tried again (the SDK does not retry memory APIs).

Exponential backoff with jitter, and never past the configured timeout: tenacity stops before
a sleep would end after the deadline.
"""

from __future__ import annotations

import random
from typing import Any

import tenacity

from memcore.errors import Conflict
from memcore_tablestore.client.error_map import Failure
from memcore_tablestore.protocol.plans import Call

#: First backoff and its ceiling, in seconds.
INITIAL_WAIT = 0.05
MAX_WAIT = 2.0


def first_backoff() -> float:
    """The pause before the first retry (the first attempt runs outside tenacity)."""
    return INITIAL_WAIT + random.uniform(0, INITIAL_WAIT)


def should_retry(call: Call, failure: Failure) -> bool:
    """Retry only retryable errors, and a write only when resending it cannot do harm."""
    error = failure.error
    if not error.retryable:
        return False
    if isinstance(error, Conflict) and not call.retry_conflict:
        return False
    return call.replay_safe or failure.refused


def retry_arguments(call: Call, timeout: float) -> dict[str, Any]:
    """Keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying`` for one call."""

    def predicate(state: tenacity.RetryCallState) -> bool:
        outcome = state.outcome
        if outcome is None or not outcome.failed:
            return False
        exc = outcome.exception()
        return isinstance(exc, Failure) and should_retry(call, exc)

    return {
        "retry": predicate,
        "stop": tenacity.stop_before_delay(timeout),
        "wait": tenacity.wait_exponential_jitter(
            initial=INITIAL_WAIT, max=MAX_WAIT, jitter=INITIAL_WAIT
        ),
        "reraise": True,
    }
