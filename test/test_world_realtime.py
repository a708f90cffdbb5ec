"""The embedded world's real-time stepping: uncounted steps (time passing) and sliced steps (state at 100 Hz)."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.errors import InvalidCommandError
from robodojo.sim.world import EpisodeOverError

TASK = "general_pickup"


def _snapshot(world):
    return world.data.qpos.copy(), world.data.ctrl.copy(), world.step_count, world.data.time


def _assert_same(before, after):
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def _nudged_left(world):
    """A valid target for the left arm: a small step from its current command."""
    q = world.data.ctrl[world.arm_ctrl_ids["left"]].copy()
    q[0] += 0.05
    q[5] -= 0.05
    return q


def test_an_uncounted_step_lets_one_period_pass_without_using_the_budget(dual_world):
    dual_world.reset(TASK, seed=0)
    observed = []
    dual_world.step_observers.append(lambda w: observed.append(w.step_count))
    try:
        t0, left = dual_world.data.time, dual_world.steps_left
        for k in range(1, 4):
            dual_world.step(counted=False)
            assert dual_world.data.time == pytest.approx(t0 + k * dual_world.control_dt_s, abs=1e-9)
        assert dual_world.step_count == 0 and dual_world.steps_left == left
        assert observed == []  # observers see control steps, not time passing
        dual_world.step()
        assert dual_world.step_count == 1 and observed == [1]
    finally:
        dual_world.step_observers.clear()


def test_an_uncounted_step_works_after_the_budget_is_spent(dual_world):
    dual_world.reset(TASK, seed=0)
    dual_world.step_count = dual_world.task.step_limit
    with pytest.raises(EpisodeOverError):
        dual_world.step()
    t0 = dual_world.data.time
    dual_world.step(counted=False)
    assert dual_world.data.time == pytest.approx(t0 + dual_world.control_dt_s, abs=1e-9)
    assert dual_world.step_count == dual_world.task.step_limit and dual_world.steps_left == 0


def test_an_uncounted_step_keeps_the_previous_targets(dual_world):
    dual_world.reset(TASK, seed=0)
    target = _nudged_left(dual_world)
    dual_world.step({"left": target}, {"right": 0.5})
    ctrl = dual_world.data.ctrl.copy()
    for _ in range(10):
        dual_world.step(counted=False)
    np.testing.assert_array_equal(dual_world.data.ctrl, ctrl)
    np.testing.assert_allclose(dual_world.arm_state("left").joint_positions_rad, target, atol=2e-3)
    assert dual_world.step_count == 1


@pytest.mark.parametrize(
    "targets",
    [
        {"joint_targets": "nudge"},
        {"gripper_targets": {"left": 0.5}},
        {"joint_targets": "nudge", "gripper_targets": {"right": 0.2}},
    ],
)
def test_an_uncounted_step_with_targets_is_refused_and_changes_nothing(dual_world, targets):
    dual_world.reset(TASK, seed=0)
    if targets.get("joint_targets") == "nudge":
        targets = {**targets, "joint_targets": {"left": _nudged_left(dual_world)}}
    before = _snapshot(dual_world)
    with pytest.raises(InvalidCommandError, match="uncounted step only lets time pass"):
        dual_world.step(**targets, counted=False)
    _assert_same(before, _snapshot(dual_world))


def test_slices_call_on_slice_after_equal_parts_of_the_step(dual_world):
    dual_world.reset(TASK, seed=0)
    t0, dt = dual_world.data.time, dual_world.control_dt_s
    times = []
    dual_world.step({"left": _nudged_left(dual_world)}, slices=5, on_slice=lambda: times.append(dual_world.data.time))
    assert len(times) == 5
    np.testing.assert_allclose(times, t0 + dt * np.arange(1, 6) / 5, rtol=0, atol=1e-9)
    assert dual_world.step_count == 1
    times.clear()
    dual_world.step(counted=False, slices=4, on_slice=lambda: times.append(dual_world.data.time))
    np.testing.assert_allclose(times, t0 + dt + dt * np.arange(1, 5) / 4, rtol=0, atol=1e-9)
    assert dual_world.step_count == 1


def test_on_slice_runs_once_per_unsliced_step(dual_world):
    dual_world.reset(TASK, seed=0)
    calls = []
    dual_world.step(on_slice=lambda: calls.append(dual_world.data.time))
    dual_world.step(counted=False, on_slice=lambda: calls.append(dual_world.data.time))
    assert len(calls) == 2 and calls[1] - calls[0] == pytest.approx(dual_world.control_dt_s)


def _run(world, slices):
    world.reset(TASK, seed=4)
    for k in range(6):
        q = _nudged_left(world)
        world.step({"left": q}, {"left": 0.5 if k % 2 else 0.8}, slices=slices, on_slice=lambda: None)
        world.step(counted=False, slices=slices)
    return world.data.qpos.copy(), world.data.qvel.copy(), world.data.time, world.step_count


def test_a_sliced_step_ends_exactly_where_an_unsliced_one_does(dual_world):
    whole = _run(dual_world, 1)
    sliced = _run(dual_world, 5)
    again = _run(dual_world, 1)
    _assert_same(whole, again)  # the world itself is deterministic from a reset
    _assert_same(whole, sliced)
    assert whole[3] == 6


@pytest.mark.parametrize("slices", [0, -1, 3, 7, 40])
def test_slices_that_do_not_divide_the_substeps_are_refused_and_change_nothing(dual_world, slices):
    assert dual_world.substeps % 3 and dual_world.substeps % 7
    dual_world.reset(TASK, seed=0)
    before = _snapshot(dual_world)
    calls = []
    for counted in (True, False):
        with pytest.raises(InvalidCommandError, match="physics substeps do not split into"):
            dual_world.step(counted=counted, slices=slices, on_slice=lambda: calls.append(1))
    with pytest.raises(InvalidCommandError):
        dual_world.step({"left": _nudged_left(dual_world)}, slices=slices)
    _assert_same(before, _snapshot(dual_world))
    assert calls == []
