"""The simulator's controllers without ROS (sim/controlled_world.py): what the sim node plays, in this process."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.control.trajectory_controller import ControllerNames, TrajectoryState
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import ConfigError, RobodojoError
from robodojo.sim.controlled_world import ARM, GRIPPER, ControlledWorld

TASK = "general_pickup"


def names(arm: str) -> ControllerNames:
    return ControllerNames(f"{arm}_arm_controller", f"{arm}_gripper_controller")


@pytest.fixture(scope="module")
def sim():
    world = ControlledWorld("dual_arx_x5", TASK, "standard", 0, names, joint_state_slices=2)
    yield world
    world.close()


def arm_trajectory(sim: ControlledWorld, arm: str, delta_rad: float, points: int) -> TrajectoryCommand:
    joints = sim.robot.arm(arm).joints
    state = dict(zip(*sim.joint_state()[:2], strict=True))
    start = np.array([state[j] for j in joints])
    rows = [tuple(start + delta_rad * (k + 1) / points) for k in range(points)]
    dt = sim.control_dt_s
    return TrajectoryCommand(tuple(joints), tuple(dt * (k + 1) for k in range(points)), tuple(rows), sim.now_s)


def step(sim: ControlledWorld, n: int) -> int:
    slices = 0

    def on_slice() -> None:
        nonlocal slices
        slices += 1

    for _ in range(n):
        assert sim.step(on_slice) is None
    return slices


def test_a_trajectory_plays_one_point_a_step_and_ends_finished_with_its_budget_counted(sim):
    sim.reset(TASK, "standard", 0)
    used0 = sim.episode_state().steps_used
    sim.submit("left", ARM, arm_trajectory(sim, "left", 0.05, 5))
    assert step(sim, 8) == 16  # two joint-state slices a step
    ends = [r for r in sim.reports(holding_too=False) if r.state == TrajectoryState.FINISHED]
    assert [(r.controller, r.points_played, r.points) for r in ends] == [("left_arm_controller", 5, 5)]
    assert sim.episode_state().steps_used - used0 == 5  # steps without a point to play are not counted
    state = dict(zip(*sim.joint_state()[:2], strict=True))
    target = arm_trajectory(sim, "left", 0.0, 1).positions[0]
    assert np.allclose([state[j] for j in sim.robot.arm("left").joints], target, atol=0.02)


def test_a_refused_trajectory_moves_nothing_and_is_reported(sim):
    sim.reset(TASK, "standard", 0)
    before = sim.joint_state()[1]
    bad = arm_trajectory(sim, "right", 3.0, 2)  # far faster than any joint may move
    with pytest.raises(RobodojoError):
        sim.submit("right", ARM, bad)
    with pytest.raises(RobodojoError, match="could not be read"):
        sim.refuse("right", GRIPPER, "the message could not be read")
    step(sim, 3)
    refused = [r for r in sim.reports(holding_too=False) if r.state == TrajectoryState.REFUSED]
    assert {r.controller for r in refused} == {"right_arm_controller", "right_gripper_controller"}
    assert np.allclose(sim.joint_state()[1], before, atol=1e-3)


def test_a_used_up_budget_stops_the_trajectory_and_says_why(sim):
    sim.reset(TASK, "standard", 0)
    limit = sim.episode_state().step_limit
    sim.submit("left", ARM, arm_trajectory(sim, "left", 0.2, limit + 5))
    problems = [sim.step(lambda: None) for _ in range(limit + 1)]
    assert [p.text for p in problems if p is not None] == ["the episode's env steps are used up"]
    assert sim.episode_state().steps_left == 0
    stopped = [r for r in sim.reports(holding_too=False) if r.state == TrajectoryState.STOPPED]
    assert stopped and stopped[0].points_played == limit


def test_a_step_limit_replaces_every_episodes_budget_and_a_negative_one_is_refused():
    """sim_node's step_limit (a calibration session plays more points than a task's budget): every episode, resets
    included, gets it; the budget it sets ends a trajectory as the task's would."""
    world = ControlledWorld("dual_arx_x5", TASK, "standard", 0, names, step_limit=30)
    try:
        assert world.episode_state().step_limit == 30 != world.world.task.step_limit
        world.reset(TASK, "standard", 1)
        assert world.episode_state().step_limit == world.episode_state().steps_left == 30
        world.submit("left", ARM, arm_trajectory(world, "left", 0.05, 40))
        problems = [world.step(lambda: None) for _ in range(31)]
        assert [p.text for p in problems if p is not None] == ["the episode's env steps are used up"]
        stopped = [r for r in world.reports(holding_too=False) if r.state == TrajectoryState.STOPPED]
        assert stopped and stopped[0].points_played == 30
    finally:
        world.close()
    with pytest.raises(RobodojoError, match="step_limit must be >= 0"):
        ControlledWorld("dual_arx_x5", TASK, "standard", 0, names, step_limit=-1)


def test_a_reset_stops_trajectories_and_time_runs_on(sim):
    sim.reset(TASK, "standard", 0)
    sim.submit("left", ARM, arm_trajectory(sim, "left", 0.05, 20))
    step(sim, 2)
    before_s, episode = sim.now_s, sim.episode_id
    sim.reset(TASK, "standard", 1)
    assert sim.now_s > before_s  # a graph clock never runs backwards
    assert sim.episode_id != episode and sim.episode_state().seed == 1
    stopped = [r for r in sim.reports(holding_too=False) if r.state == TrajectoryState.STOPPED]
    assert stopped and stopped[0].reason == "a new episode started"


def test_a_bad_reset_keeps_the_episode_and_bad_slices_are_refused(sim):
    sim.reset(TASK, "standard", 0)
    episode = sim.episode_id
    with pytest.raises(RobodojoError):
        sim.reset("no_such_task", "standard", 0)
    assert sim.episode_id == episode
    with pytest.raises(ConfigError, match="joint_state_slices"):
        ControlledWorld("dual_arx_x5", TASK, "standard", 0, names, joint_state_slices=7)


def test_oversized_messages_are_measured_against_the_point_limit(sim):
    assert sim.max_message_bytes("left", ARM) > sim.max_message_bytes("left", GRIPPER) > 4096
