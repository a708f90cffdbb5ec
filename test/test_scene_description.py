"""The simulator-neutral scene description: what the tasks' layouts resolve into and the MuJoCo world is built from.

A scene described from a running world and built again (in a second world) is the same MuJoCo scene: the same geoms
with the same sizes, colours and contact settings, the same joint state, the same camera poses. Bad descriptions
fail with a message naming the part.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest

from robodojo.errors import UnknownNameError
from robodojo.robots.config import load_robot_config
from robodojo.sim.describe import describe_layout
from robodojo.sim.description import Shape
from robodojo.sim.objects import ObjectSpec, object_parts
from robodojo.sim.settings import load_sim_settings
from robodojo.sim.world import EmbeddedWorld

# Every object kind between them (buttons with labels, bowls, fixtures, a belt, a ball, lab ware), both robots.
ROUND_TRIPS = [
    ("press_by_number", 1, "randomized"),
    ("sort_into_bowls", 0, "cluttered"),
    ("block_into_slot", 2, "standard"),
    ("pick_from_conveyor", 0, "standard"),
    ("stop_rolling_ball", 3, "randomized"),
    ("pick_matching_picture", 0, "standard"),
    ("fr3_push_to_pad", 1, "randomized"),
    ("tube_into_rack", 1, "randomized"),
    ("mug_on_coaster", 0, "cluttered"),
]
GEOM_FIELDS = ("type", "size", "rgba", "friction", "condim", "priority", "contype", "conaffinity", "group", "matid")


@pytest.fixture(scope="module")
def second_worlds():
    worlds = {robot: EmbeddedWorld(robot) for robot in ("dual_arx_x5", "fr3")}
    yield worlds
    for world in worlds.values():
        world.close()


def _world_for(request, task: str) -> EmbeddedWorld:
    return request.getfixturevalue("fr3_world" if task.startswith("fr3_") else "dual_world")


@pytest.mark.parametrize(("task", "seed", "variant"), ROUND_TRIPS)
def test_build_describe_build_gives_the_same_mujoco_scene(request, second_worlds, task, seed, variant):
    world = _world_for(request, task)
    world.reset(task, seed=seed, variant=variant)
    for _ in range(5):  # objects in motion (a ball rolling, blocks on a belt) and a gripper closing
        world.step(gripper_targets={world.robot.arm_names[0]: 0.3})
    scene = world.describe()
    copy = second_worlds[world.robot.name]
    copy.load_scene(scene)
    a, b = world.model, copy.model
    assert (a.ngeom, a.nbody, a.njnt, a.ncam, a.nlight, a.nmat, a.ntex) == (
        b.ngeom, b.nbody, b.njnt, b.ncam, b.nlight, b.nmat, b.ntex
    )  # fmt: skip
    for i in range(a.ngeom):
        ga, gb = a.geom(i), b.geom(i)
        assert ga.name == gb.name
        for field in GEOM_FIELDS:
            np.testing.assert_array_equal(getattr(ga, field), getattr(gb, field), err_msg=f"{ga.name}.{field}")
    np.testing.assert_allclose(b.body_mass, a.body_mass, rtol=1e-12)
    np.testing.assert_allclose(copy.data.qpos, world.data.qpos, atol=1e-12)
    mujoco.mj_forward(a, world.data)  # body poses of the state (mj_step leaves them a physics step behind)
    np.testing.assert_allclose(copy.data.xpos, world.data.xpos, atol=1e-9)
    np.testing.assert_allclose(copy.data.cam_xpos, world.data.cam_xpos, atol=1e-9)
    np.testing.assert_allclose(copy.data.cam_xmat, world.data.cam_xmat, atol=1e-9)
    np.testing.assert_allclose(b.light_dir, a.light_dir, atol=1e-12)
    np.testing.assert_allclose(b.vis.headlight.ambient, a.vis.headlight.ambient)
    # Described again, the copy gives the same description (to rounding).
    again = copy.describe()
    for obj, obj_again in zip(scene.objects, again.objects, strict=True):
        assert obj_again.shapes == obj.shapes
        np.testing.assert_allclose(obj_again.pos_m, obj.pos_m, atol=1e-12)
    for cam, cam_again in zip(scene.cameras, again.cameras, strict=True):
        np.testing.assert_allclose(cam_again.pose, cam.pose, atol=1e-9)


def test_a_described_layout_is_what_the_world_builds(dual_world):
    """describe_layout (what every builder starts from) has the world's objects, cameras and lights, at home."""
    dual_world.reset("press_by_number", seed=4, variant="randomized")
    robot, layout = dual_world.robot, dual_world.layout
    scene = describe_layout(robot, layout, dual_world.settings)
    assert (scene.task, scene.seed, scene.variant) == ("press_by_number", 4, "randomized")
    names = [o.name for o in layout.objects]
    # a button is its cap and a fixed housing
    assert [o.name for o in scene.objects] == [p for n in names for p in (n, f"{n}_housing")]
    cap = scene.object(names[0])
    assert cap.movable and cap.latch_force_n > 0 and cap.shapes[1].label == layout.object(names[0]).label
    for cam in scene.cameras:  # the randomized variant's jittered mounts, as the world renders them
        np.testing.assert_allclose(cam.K, dual_world.calibration(cam.name).K, atol=1e-9)
        np.testing.assert_allclose(cam.pose, dual_world.calibration(cam.name).T_world_cam, atol=1e-9)
    assert [light.dir for light in scene.lights] == [light.dir for light in layout.appearance.lights]
    with pytest.raises(UnknownNameError, match="unknown camera 'top'; available: head, left_wrist, right_wrist"):
        scene.camera("top")


def test_an_empty_scene_is_the_robot_and_table():
    robot = load_robot_config("fr3")
    scene = describe_layout(robot, None, load_sim_settings())
    assert scene.objects == () and scene.task == ""
    assert scene.table.top_z_m == robot.table.top_z_m and scene.table.size_xy_m == robot.table.size_xy_m
    assert set(scene.robot.joint_positions_rad) >= set(robot.arms[0].joints)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "cone", "size_m": (0.1,)}, "shape 'part': unknown kind 'cone'; available: box, cylinder, sphere"),
        ({"kind": "box", "size_m": (0.1, 0.1)}, r"shape 'part': a box needs 3 positive sizes, got \(0.1, 0.1\)"),
        ({"kind": "sphere", "size_m": (-0.1,)}, r"a sphere needs 1 positive sizes, got \(-0.1,\)"),
        ({"kind": "box", "size_m": (0.1, 0.1, 0.1), "contact": "sticky"}, "unknown contact 'sticky'"),
    ],
)
def test_a_bad_shape_is_refused_with_its_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Shape(name="part", rgba=(1.0, 0.0, 0.0, 1.0), **kwargs)


def test_object_parts_refuse_what_cannot_be_built():
    block = ObjectSpec("b", "block", "red", (0.04, 0.04, 0.04), (0.0, 0.0, 0.8))
    with pytest.raises(ValueError, match="unknown object kind 'blob'"):
        object_parts(replace(block, kind="blob"))
    with pytest.raises(ValueError, match="a bowl cannot show a label"):
        object_parts(replace(block, kind="bowl", size_m=(0.06, 0.04), label="7"))
    (part,) = object_parts(block, (0.1, 0.2, 0.3, 1.0))
    assert part.shapes[0].rgba == (0.1, 0.2, 0.3, 1.0) and part.mass_kg == pytest.approx(block.mass_kg)
