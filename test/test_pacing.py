"""The loops' pacing (control/pacing.py) on a simulated clock: on time, late, far behind, scaled time."""

from __future__ import annotations

import pytest

from robodojo.control.pacing import MAX_LAG_PERIODS, Pacer, RateMeter


class FakeClock:
    """A monotonic clock that moves only when slept on or when a test says work took time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        assert s > 0
        self.slept.append(s)
        self.now += s

    def work(self, s: float) -> None:
        self.now += s


def pacer(clock: FakeClock, period_s: float = 0.04, **kw) -> Pacer:
    return Pacer(period_s, clock=clock, sleep=clock.sleep, **kw)


def test_passes_fall_one_period_apart_whatever_each_pass_costs() -> None:
    clock = FakeClock()
    p = pacer(clock)
    starts = []
    for cost in (0.0, 0.01, 0.03, 0.005):
        starts.append(clock.now)
        clock.work(cost)
        assert p.wait() == 0.0
    gaps = [b - a for a, b in zip(starts, [*starts[1:], clock.now], strict=True)]
    assert gaps == pytest.approx([0.04] * 4)


def test_a_late_pass_is_caught_up_without_a_sleep_and_the_schedule_kept() -> None:
    clock = FakeClock()
    p = pacer(clock)
    clock.work(0.07)  # the first pass overran by 0.03 s: the second starts at once
    assert p.wait() == pytest.approx(0.03)
    assert clock.slept == []
    assert p.wait() == 0.0  # and the third at its own time, 0.08 after the start
    assert clock.now == pytest.approx(100.08)
    assert p.backlogs_dropped == 0


def test_a_loop_far_behind_drops_its_backlog_instead_of_bursting() -> None:
    clock = FakeClock()
    p = pacer(clock)
    clock.work((MAX_LAG_PERIODS + 3) * 0.04)  # a stall of eight periods
    p.wait()
    assert p.backlogs_dropped == 1
    stalled_at = clock.now
    p.wait()  # the next pass is a full period later, not at once
    assert clock.now - stalled_at == pytest.approx(0.04)


def test_loop_time_given_by_the_caller_is_scaled_by_the_real_time_factor() -> None:
    clock = FakeClock()
    p = pacer(clock, start_s=5.0, time_scale=2.0)  # simulated time runs twice as fast as the wall clock
    p.wait(5.04)
    assert clock.now == pytest.approx(100.02)
    p.wait(5.5)  # a reset moved simulated time on by more than a period
    assert clock.now == pytest.approx(100.25)


def test_a_pacer_refuses_a_period_or_scale_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Pacer(0.0)
    with pytest.raises(ValueError, match="positive"):
        Pacer(0.04, time_scale=-1.0)


def test_the_rate_meter_reports_once_per_window() -> None:
    clock = FakeClock()
    meter = RateMeter(1.0, start_s=0.0, clock=clock)
    clock.work(0.5)
    assert meter.update(0.25) is None
    clock.work(0.5)
    assert meter.update(0.5) == pytest.approx(0.5)
    clock.work(1.0)
    assert meter.update(1.5) == pytest.approx(1.0)
