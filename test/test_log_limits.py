"""The repeat limiter for log lines (robodojo.log_limits), on an injected clock."""

from __future__ import annotations

import threading

import pytest

from robodojo.log_limits import LogDecision, RefusalLog, RepeatLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_logs_repeats_in_the_window_are_counted_and_the_next_line_says_how_many():
    clock = Clock()
    limiter = RepeatLimiter(5.0, clock=clock)
    assert limiter.check("bad") == LogDecision(True, 0, 0.0) and limiter.check("bad").suffix == ""
    for _ in range(36):
        clock.now += 0.01
        assert not limiter.check("bad").log
    clock.now = 105.0  # 5 s after the first line: the window is over
    decision = limiter.check("bad")
    assert decision.log and decision.suppressed == 37
    assert decision.suffix == " (37 more like this in the last 5.0 s)"
    clock.now += 1.0  # a new window started at the line just logged
    assert not limiter.check("bad").log


def test_keys_are_limited_independently_and_a_lone_repeat_after_the_window_has_no_suffix():
    clock = Clock()
    limiter = RepeatLimiter(2.0, clock=clock)
    assert limiter.message(("/left", "nan"), "nan") == "nan"
    assert limiter.message(("/left", "limits"), "limits") == "limits"  # another kind logs at once
    assert limiter.message(("/right", "nan"), "nan") == "nan"  # another topic too
    assert limiter.message(("/left", "nan"), "nan") is None
    clock.now += 10.0
    assert limiter.message(("/left", "limits"), "limits") == "limits"  # nothing was held back
    assert limiter.message(("/left", "nan"), "nan") == "nan (1 more like this in the last 10.0 s)"


def test_due_reports_repeats_that_no_later_line_reported():
    clock = Clock()
    limiter = RepeatLimiter(5.0, clock=clock)
    limiter.check("a")
    limiter.check("a")
    limiter.check("a")
    limiter.check("b")  # no repeats: nothing due
    clock.now += 4.9
    assert limiter.due() == []
    clock.now += 0.2
    [(key, decision)] = limiter.due()
    assert key == "a" and decision.suppressed == 2 and decision.suffix == " (2 more like this in the last 5.1 s)"
    assert limiter.due() == []  # reported once
    assert not limiter.check("a").log  # and the report opened a new window


def test_memory_is_bounded_by_forgetting_the_least_recently_logged_kind():
    clock = Clock()
    limiter = RepeatLimiter(5.0, clock=clock, max_keys=3)
    for key in ("a", "b", "c", "d"):
        assert limiter.check(key).log
    assert len(limiter._kinds) == 3
    assert limiter.check("a").log  # forgotten, so logged again
    assert not limiter.check("d").log


def test_the_window_and_key_count_are_validated():
    with pytest.raises(ValueError, match="window_s must be > 0"):
        RepeatLimiter(0.0)
    with pytest.raises(ValueError, match="max_keys"):
        RepeatLimiter(1.0, max_keys=0)


def test_threads_sharing_a_limiter_lose_no_count():
    clock = Clock()
    limiter = RepeatLimiter(5.0, clock=clock)
    limiter.check("k")

    def hammer() -> None:
        for _ in range(1000):
            limiter.check("k")

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clock.now += 5.0
    assert limiter.check("k").suppressed == 4000


def test_refusals_differing_only_in_their_numbers_are_one_kind_and_summarised_once_the_flood_stops():
    clock = Clock()
    log = RefusalLog("nothing moves", RepeatLimiter(window_s=5.0, clock=clock))
    first = log.refused("left arm", "joint 3 at 2.5 rad is beyond its limit 2.0")
    assert first == "left arm trajectory refused, nothing moves: joint 3 at 2.5 rad is beyond its limit 2.0"
    assert log.refused("left arm", "joint 3 at 2.7 rad is beyond its limit 2.0") is None  # a repeat, counted
    assert log.refused("left arm", "the message could not be read") is not None  # another kind
    assert log.refused("right arm", "joint 3 at 2.5 rad is beyond its limit 2.0") is not None  # another controller
    assert log.summaries() == []
    clock.now += 6.0
    assert log.summaries() == [
        "left arm: 1 more trajectories refused in the last 6.0 s "
        "(each with its reason on the controller's trajectory_status topic)"
    ]
    assert log.summaries() == []
