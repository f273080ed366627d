"""The lane's own timer: a delivery pass that fails unexpectedly is run again later, without
waiting for the next write to ask for one."""

from __future__ import annotations

import itertools
import threading
import time

from memcore.errors import Unavailable
from memcore_hermes.outbox.delivery import RetryPolicy
from memcore_hermes.outbox.lane import Lane


def test_a_pass_that_raises_on_the_lanes_timer_is_run_again() -> None:
    """Before, a pass that raised (a spool error while dead-lettering, say) cleared the
    lane's wake time: writes left in the spool waited for the session's next write."""
    passes: list[float] = []
    again = threading.Event()

    def drain(force: bool) -> float | None:
        passes.append(time.monotonic())
        if len(passes) == 1:
            return 0.01  # due again soon: the next pass comes from the timer
        if len(passes) == 2:
            raise Unavailable("spool error: disk I/O error")
        again.set()
        return None

    lane = Lane("timer", drain)
    try:
        lane.request_drain()
        assert again.wait(5), passes
    finally:
        lane.stop(5)


def test_passes_that_keep_raising_are_spaced_out() -> None:
    """A pass that raises every time is logged each time: it backs off, never spins."""
    passes: list[float] = []

    def drain(force: bool) -> float | None:
        passes.append(time.monotonic())
        raise Unavailable("spool error: disk I/O error")

    lane = Lane("spaced", drain)
    try:
        lane.request_drain()
        time.sleep(4.5)
    finally:
        lane.stop(5)
    gaps = [b - a for a, b in itertools.pairwise(passes)]
    assert len(passes) == 3, gaps  # at 0, 1 and 3 seconds
    assert gaps[1] > gaps[0] * 1.5


def test_a_lane_failing_for_a_day_still_runs_its_next_pass() -> None:
    """After 1,024 failed passes in a row (17 hours at the one-minute cap) the doubling
    overflowed (``2.0 ** 1024``) before the pass ran: the lane logged it and slept until
    the next write. The delay stays at its cap however long the failures last."""
    ran = threading.Event()

    def drain(force: bool) -> float | None:
        ran.set()
        return None

    lane = Lane("day", drain)
    try:
        lane._failed_passes = 5000  # as after a long outage
        lane.request_drain()
        assert ran.wait(5)
    finally:
        lane.stop(5)


def test_a_backend_down_for_a_day_keeps_its_delay_at_the_cap() -> None:
    """The delivery's backoff overflowed at its 1,025th try in a row (``2.0 ** 1024``), and
    the pass that asked for it failed instead of waiting a minute."""
    policy = RetryPolicy(base_s=1.0, cap_s=60.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 7, 1025, 10**6)] == [1.0, 2.0, 60.0, 60.0, 60.0]
