"""Waiting for a new instance to become usable: its DNS name, then its data endpoint.

A freshly bought instance's hostname takes a while to appear in public DNS, and its first
data-plane calls may fail transiently. Both waits are bounded and use an injected clock and
sleep, so tests run them instantly.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TypeVar

from memcore.errors import MemcoreError, Unavailable

T = TypeVar("T")

#: How long a call is tried again when nothing answers at the address (refused, no such
#: host, connect timeout), as the data plane's client does: that is a wrong address or a
#: network that is down, not a busy service, and retrying it for the whole control timeout
#: (a minute) kept the user from hearing so.
UNREACHABLE_PATIENCE = 3.0

Resolver = Callable[[str], object]
Clock = Callable[[], float]
Sleep = Callable[[float], None]


def system_resolver(host: str) -> object:
    """Resolve ``host`` with the system resolver; raises :class:`OSError` when it cannot."""
    return socket.getaddrinfo(host, None)


def backoff(attempt: int, *, first: float = 0.5, cap: float = 10.0) -> float:
    """Exponential delay before retry number ``attempt`` (1-based), capped.

    The exponent stops growing long before the float would overflow: a wait may run for
    thousands of attempts (hours of ``--dns-timeout``), each at the cap.
    """
    return float(min(cap, first * (2.0 ** min(attempt - 1, 64))))


def wait_for_dns(
    host: str,
    *,
    resolver: Resolver,
    timeout: float,
    clock: Clock,
    sleep: Sleep,
    on_retry: Callable[[int, float], None] | None = None,
) -> int:
    """Resolve ``host`` until it works or ``timeout`` seconds pass; returns the attempts used."""
    deadline = clock() + timeout
    attempt = 0
    while True:
        attempt += 1
        try:
            resolver(host)
            return attempt
        except OSError:
            remaining = deadline - clock()
            if remaining <= 0:
                raise Unavailable(
                    f"the data endpoint host {host} does not resolve yet after {timeout:.0f} s; "
                    "new instances can take a few minutes to appear in DNS, run again later",
                    field="endpoint",
                ) from None
            delay = min(backoff(attempt), remaining)
            if on_retry is not None:
                on_retry(attempt, delay)
            sleep(delay)


def retry_transient(
    call: Callable[[], T],
    *,
    timeout: float,
    clock: Clock,
    sleep: Sleep,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
    warming: Callable[[BaseException], bool] | None = None,
    warm_until: float | None = None,
    unreachable: Callable[[BaseException], bool] | None = None,
) -> T:
    """Run ``call`` until it succeeds, retrying retryable memcore errors and OS errors.

    Only calls that are safe to repeat are passed here (reads, and idempotent updates).
    ``warming`` picks further errors that are expected while a new instance warms up (an
    ``OTSAuthFailed`` for "instance not running"); those are retried until ``warm_until`` on
    ``clock``, and then raised as they are. ``unreachable`` picks the errors that mean nothing
    answered at all: those are retried for :data:`UNREACHABLE_PATIENCE` seconds at most.
    """
    started = clock()
    deadline = started + timeout
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except (MemcoreError, OSError) as exc:
            warm = (
                warming is not None
                and warm_until is not None
                and clock() < warm_until
                and warming(exc)
            )
            if isinstance(exc, MemcoreError) and not exc.retryable and not warm:
                raise
            limit = max(deadline, warm_until) if warm and warm_until is not None else deadline
            if unreachable is not None and unreachable(exc):
                limit = min(limit, started + UNREACHABLE_PATIENCE)
            remaining = limit - clock()
            if remaining <= 0:
                if isinstance(exc, MemcoreError):
                    raise
                raise Unavailable(
                    f"gave up after {attempt} attempts: {type(exc).__name__}"
                ) from None
            delay = min(backoff(attempt), remaining)
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            sleep(delay)


__all__ = [
    "UNREACHABLE_PATIENCE",
    "Clock",
    "Resolver",
    "Sleep",
    "backoff",
    "retry_transient",
    "system_resolver",
    "wait_for_dns",
]
