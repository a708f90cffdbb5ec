"""Loops held to the wall clock: the simulator's control loop, the arm drivers' state and control loops.

A :class:`Pacer` sleeps each pass of a loop until its time is due on the monotonic clock. A loop that falls far behind
(a loaded machine, a stalled SDK call) drops its backlog and keeps its period from now on: a controller that bursts
to catch up would send a robot several periods of commands at once. :class:`RateMeter` measures how fast a loop's
own time runs against the wall clock (the simulator's real-time factor on /diagnostics).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Periods a loop may lag before it drops the backlog instead of catching up (a short hiccup is absorbed).
MAX_LAG_PERIODS = 5.0


class Pacer:
    """Sleeps until a loop's next pass is due: loop time ``t`` falls due at ``wall0 + (t - t0) / time_scale``.

    Loops on a period call :meth:`wait` with no argument (one period per pass); the simulator passes its simulated
    time, which a reset may move on by other than a period, and ``time_scale`` is its real-time factor.
    """

    def __init__(
        self,
        period_s: float,
        *,
        start_s: float = 0.0,
        time_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if period_s <= 0 or time_scale <= 0:
            raise ValueError(f"a pacer needs a positive period and time scale, got {period_s} and {time_scale}")
        self.period_s = period_s
        self.time_scale = time_scale
        self._clock, self._sleep = clock, sleep
        self._loop_s = start_s
        self._wall0, self._loop0 = clock(), start_s
        #: How many times the loop was far behind and restarted its schedule from the present.
        self.backlogs_dropped = 0

    def wait(self, loop_s: float | None = None) -> float:
        """Sleep until loop time ``loop_s`` (default: one period after the last) is due; return how late it already
        was, in wall seconds (0 when the pass was early or on time)."""
        self._loop_s = self._loop_s + self.period_s if loop_s is None else loop_s
        late_s = self._clock() - (self._wall0 + (self._loop_s - self._loop0) / self.time_scale)
        if late_s < 0:
            self._sleep(-late_s)
            return 0.0
        if late_s > MAX_LAG_PERIODS * self.period_s / self.time_scale:
            self._wall0, self._loop0 = self._clock(), self._loop_s
            self.backlogs_dropped += 1
        return late_s


class RateMeter:
    """How fast a loop's own time ran against the wall clock, over windows of ``window_s`` wall seconds."""

    def __init__(self, window_s: float, start_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._clock = clock
        self._wall0, self._loop0 = clock(), start_s

    def update(self, loop_s: float) -> float | None:
        """The ratio of loop time to wall time over the window that just closed, or None while it is still open."""
        elapsed = self._clock() - self._wall0
        if elapsed < self.window_s:
            return None
        ratio = (loop_s - self._loop0) / elapsed
        self._wall0, self._loop0 = self._clock(), loop_s
        return ratio
