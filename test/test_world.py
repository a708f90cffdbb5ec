"""The embedded world: layouts, resting objects, the agent-side view, and rejection of bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robodojo.errors import InvalidCommandError, UnknownNameError
from robodojo.observation import Observation
from robodojo.sim.tasks import available_tasks, get_task
from robodojo.sim.variants import VARIANTS
from robodojo.sim.world import EmbeddedWorld, EpisodeOverError

ALL_TASKS = [(t, get_task(t).robot) for t in available_tasks()]


@pytest.fixture(scope="module")
def worlds(dual_world, fr3_world):
    return {"dual_arx_x5": dual_world, "fr3": fr3_world}


@pytest.mark.parametrize(("task", "robot"), ALL_TASKS)
@pytest.mark.parametrize("variant", ["standard", "cluttered"])
def test_layouts_are_deterministic_per_seed_and_differ_across_seeds(task, robot, variant):
    cls = get_task(task)
    t = cls(0.765)
    assert t.layout(5, variant) == t.layout(5, variant)
    positions = {tuple(np.round([o.pos_m for o in t.layout(s, variant).objects], 6).ravel()) for s in range(6)}
    assert len(positions) == 6


@pytest.mark.parametrize(("task", "robot"), ALL_TASKS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_objects_at_rest_stay_within_1mm_over_10s(worlds, task, robot, variant):
    """Every object not set in motion (a rolling ball, what rides a belt), also once the layout's changes are made."""
    world = worlds[robot]
    world.reset(task, seed=11, variant=variant)
    truth = world.privileged()
    for _ in range(max((c.at_step for c in world.layout.changes), default=0)):
        world.step()
    assert truth.changes_made == len(world.layout.changes)
    belts = [o for o in world.layout.objects if o.kind == "belt"]
    riding = {o.name for o in world.layout.objects for b in belts if abs(o.pos_m[1] - b.pos_m[1]) < b.size_m[1] / 2}
    launched = {o.name for o in world.layout.objects if o.moving and o.movable}
    still = [o.name for o in world.layout.objects if o.name not in launched | riding]
    start = {name: truth.object_pos(name) for name in still}
    steps = round(10.0 * 1 / world.control_dt_s)
    for _ in range(steps):
        world.step()
    moved = {name: float(np.linalg.norm(truth.object_pos(name) - p)) for name, p in start.items()}
    assert max(moved.values(), default=0.0) < 0.001, moved
    # MuJoCo's own warnings (contact buffer full, bad inertia, unstable simulation) count as failures too.
    warnings = {i: w.number for i, w in enumerate(world.data.warning) if w.number}
    assert not warnings, warnings


def test_cluttered_layouts_have_at_least_ten_distractors():
    for task, _ in ALL_TASKS:
        layout = get_task(task)(0.765).layout(0, "cluttered")
        assert sum(o.name.startswith("distractor_") for o in layout.objects) >= 10, task


def test_observation_is_the_agent_side_view(dual_world):
    obs = dual_world.reset("general_pickup", seed=0)
    assert isinstance(obs, Observation)
    assert set(obs.arms) == {"left", "right"} and set(obs.cameras) == {"head", "left_wrist", "right_wrist"}
    assert obs.steps_left == get_task("general_pickup").step_limit and obs.step == 0
    for arm in obs.arms.values():
        assert len(arm.joint_positions_rad) == 6 and arm.gripper_opening == pytest.approx(1.0, abs=0.01)
        assert np.linalg.norm(arm.tcp_quat_wxyz) == pytest.approx(1.0)
    for frame in obs.cameras.values():
        assert frame.rgb.shape == (480, 640, 3) and frame.rgb.dtype == np.uint8
        assert frame.rgb.std() > 5  # a real picture, not a blank buffer
    # No task ground truth leaks into the agent-side types.
    assert not hasattr(obs, "objects") and "target" not in repr(obs.arms)
    state_only = dual_world.observe(cameras=())
    assert state_only.cameras == {} and state_only.arms.keys() == obs.arms.keys()


def test_joint_targets_move_the_arm_and_steps_count_down(dual_world):
    dual_world.reset("general_pickup", seed=0)
    home = np.array(dual_world.robot.arm("left").home_joints_rad)
    target = home + np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.1])
    for _ in range(10):
        dual_world.step({"left": target}, {"left": 0.5})
    obs = dual_world.observe(cameras=())
    np.testing.assert_allclose(obs.arm("left").joint_positions_rad, target, atol=2e-3)
    np.testing.assert_allclose(obs.arm("right").joint_positions_rad, home, atol=2e-3)
    assert obs.arm("left").gripper_opening == pytest.approx(0.5, abs=0.02)
    assert obs.step == 10 and obs.steps_left == get_task("general_pickup").step_limit - 10
    assert obs.time_s == pytest.approx((10 + dual_world.settings.settle_steps) * 0.04)


def _snapshot(world: EmbeddedWorld):
    return world.data.qpos.copy(), world.data.ctrl.copy(), world.step_count, world.data.time


@pytest.mark.parametrize(
    ("joint_targets", "gripper_targets", "message"),
    [
        ({"left": [math.nan, 1.5, 1.44, -1.51, 0, 0]}, None, "'left_joint1' must be a finite number"),
        ({"left": [0, 1.5, 1.44, -1.51, 0, 2.5]}, None, r"'left_joint6' is 2.5000 rad, outside \[-2.0, 2.0\]"),
        ({"left": [0.5, 1.5, 1.44, -1.51, 0, 0]}, None, "'left_joint1' jumps 0.500 rad in one 40 ms step"),
        ({"left": [0, 1.5, 1.44]}, None, "left joint targets must be 6 numbers, got 3"),
        ({"left": "home"}, None, "left joint targets must be 6 numbers"),
        ({"middle": [0] * 6}, None, "unknown arm 'middle'; available: left, right"),
        (None, {"right": 1.5}, r"right gripper target 1.5 is outside \[0, 1\]"),
        (None, {"right": math.inf}, "right gripper target must be a finite number"),
        (None, {"right": "open"}, "right gripper target must be a finite number"),
        # A valid arm next to an invalid one: nothing at all is applied.
        ({"right": [0.01, 1.5, 1.44, -1.51, 0, 0]}, {"left": -0.1}, r"left gripper target -0.1 is outside"),
    ],
)
def test_bad_commands_are_rejected_and_change_nothing(dual_world, joint_targets, gripper_targets, message):
    dual_world.reset("general_pickup", seed=0)
    before = _snapshot(dual_world)
    with pytest.raises((InvalidCommandError, UnknownNameError), match=message):
        dual_world.step(joint_targets, gripper_targets)
    after = _snapshot(dual_world)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_unknown_names_list_the_alternatives(dual_world):
    with pytest.raises(UnknownNameError, match=r"unknown task 'pick_everything'; available: .*bowl_on_plate, "):
        dual_world.reset("pick_everything")
    with pytest.raises(UnknownNameError, match="unknown robot 'ur5'; available: dual_arx_x5, fr3"):
        EmbeddedWorld("ur5")
    with pytest.raises(UnknownNameError, match="unknown camera 'top'; available: head, left_wrist, right_wrist"):
        dual_world.observe(cameras=["top"])
    with pytest.raises(UnknownNameError, match="unknown camera 'top'"):
        dual_world.calibration("top")
    with pytest.raises(UnknownNameError, match="unknown variant 'messy'; available: cluttered, randomized, standard"):
        dual_world.reset("general_pickup", variant="messy")
    with pytest.raises(InvalidCommandError, match="task 'fr3_pick_cube' runs on robot 'fr3'"):
        dual_world.reset("fr3_pick_cube")


def test_step_budget_ends_the_episode(dual_world):
    dual_world.reset("general_pickup", seed=0)
    dual_world.step_count = dual_world.task.step_limit - 1  # fast-forward the counter, not the physics
    dual_world.step()
    assert dual_world.steps_left == 0
    with pytest.raises(EpisodeOverError, match="400 env steps are used up"):
        dual_world.step()


def test_the_head_camera_is_framed_like_robodojos(dual_world):
    """Both grasp points at home, the shared workspace and the table's far corners are in the head image, and a pixel
    covers 2-3 mm of the table at the workspace's centre (RoboDojo's head camera: 2-3 mm)."""
    obs = dual_world.reset("general_pickup", seed=0)
    calibration = obs.camera("head").calibration
    T_cam_world = np.linalg.inv(calibration.T_world_cam)
    table = dual_world.robot.table

    def pixel(p):
        x, y, z = (T_cam_world @ np.array([*p, 1.0]))[:3]
        u, v, _ = calibration.K @ np.array([x / z, y / z, 1.0])
        return u, v, z

    far_y = table.center_xy_m[1] + table.size_xy_m[1] / 2
    points = {
        **{f"{arm} TCP": obs.arm(arm).tcp_pos_m for arm in ("left", "right")},
        **{f"workspace {x:+.2f} {y:+.2f}": (x, y, table.top_z_m) for x in (-0.45, 0.45) for y in (-0.35, 0.05)},
        **{f"far corner {x:+.2f}": (x, far_y, table.top_z_m) for x in (-0.7, 0.7)},
    }
    for name, p in points.items():
        u, v, z = pixel(p)
        assert z > 0 and 0 <= u < calibration.width and 0 <= v < calibration.height, (name, u, v)
    u0, v0, _ = pixel((0.0, -0.2, table.top_z_m))
    u1, v1, _ = pixel((0.01, -0.2, table.top_z_m))
    u2, v2, _ = pixel((0.0, -0.19, table.top_z_m))
    mm_per_px = [10.0 / math.hypot(u1 - u0, v1 - v0), 10.0 / math.hypot(u2 - u0, v2 - v0)]
    assert all(1.8 <= f <= 3.0 for f in mm_per_px), mm_per_px
