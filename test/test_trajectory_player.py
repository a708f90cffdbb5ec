"""The joint trajectory player: whole-trajectory validation, tick timing, interpolation and replacement, and refusals
that stay cheap and brief however large or wild the trajectory."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.control.settings import CONFIG_PATH, TrajectoryLimits, load_trajectory_limits, parse_control_settings
from robodojo.control.trajectory_player import (
    JointLimit,
    TrajectoryCommand,
    TrajectoryPlayer,
    _interpolate_many,
)
from robodojo.errors import ConfigError, InvalidCommandError

DT = 0.04
MARGIN = 1.5
NAMES = ("j1", "j2")
LIMITS = {"j1": JointLimit(-1.0, 1.0, 2.0), "j2": JointLimit(-0.5, 2.0, 1.0)}
# Largest step per control period the player accepts for each joint.
MAX_STEP = np.array([MARGIN * LIMITS[j].velocity * DT for j in NAMES])
NOW = 10 * DT  # a tick-aligned "next tick"
HOLD = (0.0, 0.0)


def _player() -> TrajectoryPlayer:
    return TrajectoryPlayer(NAMES, LIMITS, MARGIN)


def _cmd(points, times=None, names=NAMES, start=NOW) -> TrajectoryCommand:
    points = tuple(tuple(p) for p in points)
    times = tuple((k + 1) * DT for k in range(len(points))) if times is None else tuple(times)
    return TrajectoryCommand(joint_names=tuple(names), times_from_start_s=times, positions=points, start_s=start)


def _ramp(n: int, step=(0.05, -0.02), start=HOLD) -> list[tuple[float, float]]:
    return [(start[0] + step[0] * (k + 1), start[1] + step[1] * (k + 1)) for k in range(n)]


def _play(player: TrajectoryPlayer, first_tick: float, ticks: int) -> list:
    return [player.sample(first_tick + i * DT, DT) for i in range(ticks)]


# -- timing ---------------------------------------------------------------------------------------------------


def test_points_every_dt_from_an_aligned_start_play_one_per_tick():
    points = _ramp(6)
    player = _player()
    assert player.submit(_cmd(points), NOW, HOLD, DT) == 6 and player.active
    for k, point in enumerate(points):
        assert player.active
        sample = player.sample(NOW + k * DT, DT)
        np.testing.assert_allclose(sample, point, rtol=0, atol=1e-12)
    assert not player.active  # the last sample ended it
    assert player.sample(NOW + 6 * DT, DT) is None


def test_a_start_in_the_future_waits_for_its_tick():
    points = _ramp(3)
    player = _player()
    player.submit(_cmd(points, start=NOW + 4 * DT), NOW, HOLD, DT)
    assert _play(player, NOW, 4) == [None] * 4
    assert player.active
    np.testing.assert_allclose(player.sample(NOW + 4 * DT, DT), points[0], atol=1e-12)
    np.testing.assert_allclose(player.sample(NOW + 5 * DT, DT), points[1], atol=1e-12)


@pytest.mark.parametrize("start", [0.0, NOW - 3 * DT, NOW - 0.5 * DT, 1e-3])
def test_a_start_of_zero_or_in_the_past_starts_at_the_next_tick(start):
    points = _ramp(3)
    player = _player()
    player.submit(_cmd(points, start=start), NOW, HOLD, DT)
    samples = _play(player, NOW, 3)
    np.testing.assert_allclose(np.array(samples), np.array(points), atol=1e-12)
    assert not player.active


def test_points_two_periods_apart_are_interpolated_linearly():
    commanded = (0.1, 0.3)
    points = [(0.2, 0.25), (0.3, 0.35)]
    player = _player()
    player.submit(_cmd(points, times=(2 * DT, 4 * DT)), NOW, commanded, DT)
    samples = _play(player, NOW, 4)
    expected = [
        (0.15, 0.275),  # halfway from the commanded position to the first point
        points[0],
        (0.25, 0.30),  # halfway between the points
        points[1],
    ]
    np.testing.assert_allclose(np.array(samples), np.array(expected), atol=1e-12)
    assert not player.active


def test_joint_names_in_another_order_are_reordered():
    player = _player()
    player.submit(_cmd([(0.04, 0.02), (0.08, 0.04)], names=("j2", "j1")), NOW, HOLD, DT)
    np.testing.assert_allclose(player.sample(NOW, DT), (0.02, 0.04), atol=1e-12)
    np.testing.assert_allclose(player.sample(NOW + DT, DT), (0.04, 0.08), atol=1e-12)


def test_a_new_trajectory_replaces_the_running_one_and_an_empty_one_stops_it():
    player = _player()
    player.submit(_cmd(_ramp(10)), NOW, HOLD, DT)
    player.sample(NOW, DT)
    replacement = _ramp(2, step=(-0.05, 0.02), start=(0.05, -0.02))
    assert player.submit(_cmd(replacement, start=NOW + DT), NOW + DT, (0.05, -0.02), DT) == 2
    np.testing.assert_allclose(player.sample(NOW + DT, DT), replacement[0], atol=1e-12)
    assert player.submit(_cmd([]), NOW + 2 * DT, replacement[0], DT) == 0
    assert not player.active and player.sample(NOW + 2 * DT, DT) is None


# -- rejection ------------------------------------------------------------------------------------------------

_BAD = [
    pytest.param(_cmd(_ramp(2), names=("j1", "j3")), "do not match", id="wrong-names"),
    pytest.param(_cmd(_ramp(2), names=("j1",)), "do not match", id="too-few-names"),
    pytest.param(_cmd(_ramp(2), names=("j1", "j2", "j3")), "do not match", id="too-many-names"),
    pytest.param(_cmd(_ramp(2), names=("j1", "j1")), "do not match", id="duplicate-names"),
    pytest.param(_cmd([(0.0, 0.0), (0.0,)]), "one position per joint|needs 2 positions", id="ragged"),
    pytest.param(_cmd([(0.0, 0.0, 0.0)]), "needs 2 positions", id="three-per-point"),
    pytest.param(_cmd(_ramp(2), times=(DT,)), "needs 2 positions", id="fewer-times-than-points"),
    pytest.param(_cmd([(math.nan, 0.0)]), "finite", id="nan-position"),
    pytest.param(_cmd([(0.0, math.inf)]), "finite", id="inf-position"),
    pytest.param(_cmd(_ramp(2), times=(DT, math.nan)), "finite", id="nan-time"),
    pytest.param(_cmd(_ramp(3), times=(DT, 3 * DT, 2 * DT)), "strictly increasing", id="times-decreasing"),
    pytest.param(_cmd(_ramp(2), times=(DT, DT)), "strictly increasing", id="times-repeated"),
    pytest.param(_cmd(_ramp(2), times=(0.0, DT)), "positive", id="time-zero"),
    pytest.param(_cmd(_ramp(1), times=(-DT,)), "positive", id="time-negative"),
    pytest.param(_cmd([(0.0, -0.5 - 1e-6)], times=(1.0,)), r"'j2' is -0\.5000, outside \[-0\.5, 2\.0\]", id="below"),
    pytest.param(_cmd([(1.2, 0.0)], times=(1.0,)), r"'j1' is 1\.2000, outside \[-1\.0, 1\.0\]", id="above"),
    pytest.param(
        _cmd([(0.1, 0.0), (0.1 + 0.13, 0.0)]),
        r"moves 'j1' 0\.1300 in one 40 ms control step at 0\.080 s; its velocity limit allows 0\.1200",
        id="fast",
    ),
    pytest.param(
        _cmd([(0.0, 0.07)]), r"moves 'j2' 0\.0700 in one 40 ms control step at 0\.040 s", id="fast-from-commanded"
    ),
    pytest.param(
        _cmd([(0.0, 0.07), (0.0, 0.1)], times=(DT / 2, 2 * DT)),
        r"moves 'j2' 0\.0800 in one 40 ms control step at 0\.040 s",
        id="fast-first-gap-shorter-than-dt",
    ),
]


@pytest.mark.parametrize(("cmd", "message"), _BAD)
def test_every_rejection_raises_and_leaves_the_running_trajectory_untouched(cmd, message):
    running = _cmd(_ramp(8))
    reference, player = _player(), _player()
    reference.submit(running, NOW, HOLD, DT)
    player.submit(running, NOW, HOLD, DT)
    np.testing.assert_array_equal(np.array(_play(player, NOW, 2)), np.array(_play(reference, NOW, 2)))
    with pytest.raises(InvalidCommandError, match=message):
        player.submit(cmd, NOW + 2 * DT, HOLD, DT)
    assert player.active
    rest = np.array(_play(player, NOW + 2 * DT, 6))
    np.testing.assert_array_equal(rest, np.array(_play(reference, NOW + 2 * DT, 6)))
    np.testing.assert_array_equal(rest[-1], running.positions[-1])
    assert not player.active


def test_a_rejected_first_trajectory_leaves_the_player_idle():
    player = _player()
    with pytest.raises(InvalidCommandError):
        player.submit(_cmd([(5.0, 0.0)]), NOW, HOLD, DT)
    assert not player.active and player.sample(NOW, DT) is None


def test_the_velocity_check_allows_the_margin_and_no_more():
    player = _player()
    # Exactly MARGIN x velocity between ticks is allowed; a hair more is not.
    ok = [tuple(MAX_STEP * (k + 1) * 0.999) for k in range(3)]
    assert player.submit(_cmd(ok), NOW, HOLD, DT) == 3
    too_fast = [tuple(MAX_STEP * (k + 1) * 1.01) for k in range(3)]
    with pytest.raises(InvalidCommandError, match="'j1'"):
        player.submit(_cmd(too_fast), NOW, HOLD, DT)


# -- properties -----------------------------------------------------------------------------------------------


@st.composite
def _trajectories(draw):
    """A valid trajectory: points within the limits, gaps of at least one period, steps within the velocity."""
    n = draw(st.integers(1, 12))
    lows = np.array([LIMITS[j].lower for j in NAMES])
    highs = np.array([LIMITS[j].upper for j in NAMES])
    velocity = np.array([LIMITS[j].velocity for j in NAMES])
    unit = st.floats(0.0, 1.0)
    commanded = lows + np.array([draw(unit), draw(unit)]) * (highs - lows)
    # Whole periods, or arbitrary gaps of at least one period.
    gaps = draw(
        st.lists(st.integers(1, 4).map(lambda k: k * DT), min_size=n, max_size=n)
        | st.lists(st.floats(DT, 4 * DT), min_size=n, max_size=n)
    )
    prev, points, t, times = commanded, [], 0.0, []
    for gap in gaps:
        fraction = np.array([draw(st.floats(-1.0, 1.0)), draw(st.floats(-1.0, 1.0))])
        point = np.clip(prev + fraction * velocity * gap * MARGIN * 0.999, lows, highs)
        t += gap
        points.append(tuple(float(v) for v in point))
        times.append(t)
        prev = point
    past = draw(st.booleans())
    start = draw(st.sampled_from([0.0, NOW - 2 * DT])) if past else NOW + draw(st.integers(0, 3)) * DT
    return commanded, _cmd(points, times=times, start=start)


@settings(max_examples=300, deadline=None)
@given(_trajectories())
def test_valid_trajectories_play_within_limits_and_velocity(trajectory):
    commanded, cmd = trajectory
    player = _player()
    assert player.submit(cmd, NOW, tuple(commanded), DT) == len(cmd.positions)
    lows = np.array([LIMITS[j].lower for j in NAMES])
    highs = np.array([LIMITS[j].upper for j in NAMES])
    prev, played = commanded, 0
    for tick in range(200):
        sample = player.sample(NOW + tick * DT, DT)
        if sample is None:
            assert played == 0, "a started trajectory never pauses"
            continue
        played += 1
        assert np.all(sample >= lows - 1e-9) and np.all(sample <= highs + 1e-9)
        assert np.all(np.abs(sample - prev) <= MAX_STEP + 1e-9), (sample, prev)
        prev = sample
        if not player.active:
            break
    assert not player.active
    np.testing.assert_allclose(prev, cmd.positions[-1], atol=1e-12)
    assert played == math.ceil(cmd.times_from_start_s[-1] / DT - 1e-6)


def test_points_closer_than_a_period_cannot_make_a_sample_jump():
    player = _player()
    # Ten points 4 ms apart, each 0.99 of the per-period step further than the last: accepted ...
    points = [(0.0, float(MAX_STEP[1] * 0.99 * (k + 1))) for k in range(10)]
    times = [(k + 1) * DT / 10 for k in range(10)]
    try:
        player.submit(_cmd(points, times=times), NOW, HOLD, DT)
    except InvalidCommandError:
        return  # refusing it would be fine too
    # ... and then the first tick plays all ten: a jump of ~10x the allowed step.
    sample = player.sample(NOW, DT)
    assert abs(sample[1] - HOLD[1]) <= MAX_STEP[1] + 1e-9, sample


def test_a_start_between_ticks_does_not_make_the_first_sample_jump():
    player = _player()
    velocity = LIMITS["j1"].velocity  # no margin used at all
    points = [(velocity * DT * (k + 1), 0.0) for k in range(5)]
    player.submit(_cmd(points, start=NOW + 0.05 * DT), NOW, HOLD, DT)
    prev = np.array(HOLD)
    for sample in _play(player, NOW, 6):
        if sample is not None:
            assert np.all(np.abs(sample - prev) <= MAX_STEP + 1e-9), (sample, prev)
            prev = sample


# -- bounded refusal ------------------------------------------------------------------------------------------

SMALL = TrajectoryLimits(max_duration_s=2.0, max_start_delay_s=1.0)  # 50 points at 25 Hz


def _small_player() -> TrajectoryPlayer:
    return TrajectoryPlayer(NAMES, LIMITS, MARGIN, trajectory_limits=SMALL)


def test_the_default_caps_come_from_the_config_file():
    limits = load_trajectory_limits()
    assert limits == parse_control_settings(yaml.safe_load(CONFIG_PATH.read_text()), "control.yaml")
    assert _player().trajectory_limits == limits and limits.max_points(DT) == round(limits.max_duration_s / DT)
    with pytest.raises(ConfigError, match=r"control.yaml.trajectory.max_duration_s: must be > 0"):
        parse_control_settings({"trajectory": {"max_duration_s": 0, "max_start_delay_s": 1}}, "control.yaml")


def test_more_points_than_the_cap_are_refused_before_they_are_read():
    player = _small_player()
    assert player.submit(_cmd([HOLD] * 50), NOW, HOLD, DT) == 50  # exactly the cap: 2 s at 25 Hz
    with pytest.raises(InvalidCommandError, match=r"has 51 points; at most 50 are accepted \(2 s at 25 Hz\)"):
        player.submit(_cmd([HOLD] * 51), NOW, HOLD, DT)
    # Points that are not even valid numbers are not looked at: the count comes first.
    bad = TrajectoryCommand(NAMES, tuple(range(1, 100_001)), (("not", "numbers"),) * 100_000, NOW)
    with pytest.raises(InvalidCommandError, match="100000 points"):
        player.submit(bad, NOW, HOLD, DT)
    with pytest.raises(InvalidCommandError, match="100000 points"):
        player.check_sizes(NAMES, 100_000, DT)
    with pytest.raises(InvalidCommandError, match="do not match"):
        player.check_sizes(("j1",), 1, DT)
    player.check_sizes(("j2", "j1"), 50, DT)


def test_a_trajectory_longer_than_the_cap_or_starting_too_far_ahead_is_refused():
    player = _small_player()
    with pytest.raises(InvalidCommandError, match=r"trajectory lasts 2\.040 s; at most 2 s is accepted"):
        player.submit(_cmd([HOLD], times=(2.0 + DT,)), NOW, HOLD, DT)
    with pytest.raises(InvalidCommandError, match=r"starts 1\.040 s from now; at most 1 s ahead"):
        player.submit(_cmd([HOLD], start=NOW + 1.0 + DT), NOW, HOLD, DT)
    assert player.submit(_cmd([HOLD], start=NOW + 1.0), NOW, HOLD, DT) == 1
    # A stamp on the wall clock (1.7e9 s) against simulation time: refused, not parked for decades.
    with pytest.raises(InvalidCommandError, match=r"starts 1\.7e\+09 s from now"):
        player.submit(_cmd([HOLD], start=1.7e9), NOW, HOLD, DT)


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        (_cmd([(1e300, 0.0)], times=(1.0,)), r"'j1' is 1e\+300, outside \[-1\.0, 1\.0\]"),
        (_cmd([(0.0, -1e300)], times=(1.0,)), r"'j2' is -1e\+300, outside"),
        (_cmd([(0.0, math.nan)]), r"finite numbers; point 0 has nan for 'j2'"),
        (_cmd(_ramp(2), times=(DT, 1e300)), r"strictly increasing|lasts 1e\+300 s"),
        (_cmd(_ramp(2), times=(DT, -1e300)), r"strictly increasing; point 1 is at -1e\+300 s"),
        (_cmd(_ramp(2), names=("j1", "k" * 10_000)), r"\(unknown 'kkkk"),
        (_cmd(_ramp(2), names=("j1",) * 100_000), r"\(100000 names for 2 joints\)"),
        (_cmd(_ramp(2), names=("j1", "j1")), r"\('j1' twice\)"),
    ],
    ids=["1e300", "-1e300", "nan", "time-1e300", "time-minus-1e300", "long-name", "many-names", "twice"],
)
def test_refusals_quote_what_was_sent_briefly(cmd, message):
    with pytest.raises(InvalidCommandError, match=message) as info:
        _player().submit(cmd, NOW, HOLD, DT)
    assert len(str(info.value)) < 300, str(info.value)


def test_refusing_a_huge_or_far_reaching_trajectory_is_cheap():
    """What a flood sends: each refusal costs a fraction of a control period, whatever the message's size."""
    player = _player()
    most = player.trajectory_limits.max_points(DT)
    floods = [
        _cmd([HOLD] * 10_000),  # 10,000 points (400 s)
        _cmd([*[HOLD] * (most - 1), (0.9, 0.0)]),  # as many as allowed, refused by the tick check at its last tick
        _cmd([HOLD], start=1e300),  # a start at the end of time
        _cmd([(0.0, 0.0)], names=("j" * 10_000_000, "j2")),
        _cmd([(1e300, 0.0)], times=(1.0,)),
    ]
    for cmd in floods:
        costs = []
        for _ in range(3):  # the best of three: the machine is shared
            t0 = time.perf_counter()
            with pytest.raises(InvalidCommandError):
                player.submit(cmd, NOW, HOLD, DT)
            costs.append(time.perf_counter() - t0)
        assert min(costs) < 0.02, (min(costs), cmd.positions[:2])


# -- the vectorised tick check against the tick-by-tick loop it replaced -------------------------------------


def _reference_check_ticks(player, times, points, start_q, delay_s, dt_s):
    """The loop TrajectoryPlayer._check_ticks was before it was vectorised: None, or (joint, step, tau)."""
    previous = start_q
    k = 0
    while True:
        tau = (k + 1) * dt_s - delay_s
        k += 1
        if tau <= 1e-6:
            continue
        q = _reference_interpolate(times, points, start_q, tau)
        for j, (name, limit) in enumerate(zip(player.joint_names, player.limits, strict=True)):
            step = abs(q[j] - previous[j])
            if step > player.velocity_margin * limit.velocity * dt_s + 1e-12:
                return name, step, tau
        previous = q
        if tau >= times[-1] - 1e-6:
            return None


def _reference_interpolate(times, points, start_q, tau):
    if tau >= times[-1] - 1e-6:
        return points[-1].copy()
    k = int(np.searchsorted(times, tau - 1e-6))
    if abs(times[k] - tau) <= 1e-6:
        return points[k].copy()
    t0, p0 = (0.0, start_q) if k == 0 else (times[k - 1], points[k - 1])
    return p0 + (tau - t0) / (times[k] - t0) * (points[k] - p0)


def test_the_vectorised_tick_check_decides_and_words_as_the_loop_did():
    rng = np.random.default_rng(12)
    player = _player()
    velocity = np.array([LIMITS[j].velocity for j in NAMES])
    refused = accepted = 0
    for _ in range(2000):
        n = int(rng.integers(1, 30))
        gaps = rng.choice([DT, 2 * DT, DT / 3, 0.0137, 0.1], size=n) * rng.uniform(0.5, 1.5, size=n)
        times = np.cumsum(gaps)
        if rng.random() < 0.3:
            times = DT * np.arange(1, n + 1)  # tick-aligned points: taus land on them (the exact-point branch)
            gaps = np.full(n, DT)
        start_q = rng.uniform(-0.3, 0.3, size=2)
        # Steps around the velocity limit, so both outcomes are common.
        scale = rng.uniform(0.5, 1.3)
        steps = rng.uniform(-1, 1, size=(n, 2)) * velocity * MARGIN * np.maximum(gaps, DT)[:, None] * scale
        points = start_q + np.cumsum(steps, axis=0)
        delay = float(rng.choice([0.0, DT, 2.5 * DT, 0.05 * DT, 1e-7, 3 * DT - 1e-7]))
        expected = _reference_check_ticks(player, times, points, start_q, delay, DT)
        try:
            player._check_ticks(times, points, start_q, delay, DT)
        except InvalidCommandError as exc:
            assert expected is not None, (times, points, start_q, delay)
            name, step, tau = expected
            assert str(exc).startswith(f"trajectory moves {name!r} {step:.4f} in one 40 ms control step at {tau:.3f} s")
            refused += 1
        else:
            assert expected is None, (expected, times, points, start_q, delay)
            accepted += 1
    assert refused > 200 and accepted > 200, (refused, accepted)


def test_the_vectorised_samples_are_the_loops_samples_bit_for_bit():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 20))
        times = np.cumsum(rng.uniform(0.005, 0.2, size=n))
        points = rng.uniform(-1, 1, size=(n, 3))
        start_q = rng.uniform(-1, 1, size=3)
        taus = np.concatenate((rng.uniform(1e-6, times[-1] + 0.1, size=50), times, times + 5e-7, times - 5e-7))
        many = _interpolate_many(times, points, start_q, taus)
        for tau, row in zip(taus, many, strict=True):
            np.testing.assert_array_equal(row, _reference_interpolate(times, points, start_q, float(tau)))
