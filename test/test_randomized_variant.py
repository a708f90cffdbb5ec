"""The randomized variant: the standard layout's objects with an appearance drawn per (task, seed) (lights, table,
object colours, camera mounts), and a published calibration that follows the jittered cameras exactly."""

from __future__ import annotations

import colorsys
import copy
import dataclasses
import math

import numpy as np
import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.cli import build_parser
from robodojo.errors import ConfigError
from robodojo.geometry import rotation_angle_between
from robodojo.perception.camera import CameraModel
from robodojo.robots.config import ROBOTS_DIR, load_robot_config
from robodojo.sim.agent_side import AgentSideBackend
from robodojo.sim.appearance import NOMINAL, NOMINAL_LIGHTS, Appearance
from robodojo.sim.objects import COLORS
from robodojo.sim.render import Marker
from robodojo.sim.settings import load_sim_settings, parse_sim_settings
from robodojo.sim.tasks import available_tasks, get_task
from robodojo.sim.tasks.base import VARIANTS
from robodojo.sim.textures import WOOD_SEED

ALL_TASKS = available_tasks()
BOUNDS = load_sim_settings().randomized
GOOD_SIM = yaml.safe_load((ROBOTS_DIR.parent / "sim.yaml").read_text())
REPROJECTION_TOL_PX = 1.0
MARKER_RADIUS_PX = 6.0  # markers are sized to look this big, wherever they are
MARKER_PLANE_ABOVE_TABLE_M = 0.03
MIN_MARKERS_SEEN = 4  # per camera; the others may be hidden by the fingers or an object
CELLS = f"replay:{PACKAGE_ROOT}/examples/cells/{{task}}.py"


# -- layouts and appearances ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", ALL_TASKS)
def test_randomized_layouts_are_the_standard_objects_with_a_seeded_appearance(task):
    t = get_task(task)(0.765)
    layouts = [t.layout(seed, "randomized") for seed in range(6)]
    assert t.layout(5, "randomized") == layouts[5]  # deterministic per (task, seed)
    for seed, layout in enumerate(layouts):
        standard = t.layout(seed, "standard")
        assert layout.objects == standard.objects and layout.slots == standard.slots
        assert standard.appearance == NOMINAL and t.layout(seed, "cluttered").appearance == NOMINAL
        assert set(layout.appearance.object_rgba) == {o.name for o in layout.objects}
        assert set(layout.appearance.camera_offsets) == set(_robot_cameras(task))
    offsets = {tuple(a.appearance.camera_offsets[c].xyz_m for c in _robot_cameras(task)) for a in layouts}
    tints = {a.appearance.table_tint_rgb for a in layouts}
    assert len(offsets) == len(tints) == 6  # different seeds, different looks


def _robot_cameras(task):
    return load_robot_config(get_task(task).robot).camera_names


@pytest.mark.parametrize("task", ["general_pickup", "stack_blocks", "fr3_pick_cube"])
def test_appearances_stay_within_the_configured_bounds(task):
    t = get_task(task)(0.765)
    for seed in range(20):
        layout = t.layout(seed, "randomized")
        a = layout.appearance
        for cam in a.camera_offsets.values():
            assert BOUNDS.camera_translation_m[0] - 1e-12 <= cam.shift_m <= BOUNDS.camera_translation_m[1] + 1e-12
            assert BOUNDS.camera_rotation_deg[0] - 1e-12 <= cam.angle_deg <= BOUNDS.camera_rotation_deg[1] + 1e-12
            assert math.degrees(rotation_angle_between(np.eye(3), cam.rotation())) == pytest.approx(cam.angle_deg)
        for light, nominal in zip(a.lights, NOMINAL_LIGHTS, strict=True):
            turn = math.degrees(_angle(light.dir, nominal.dir))
            assert turn <= BOUNDS.light_direction_max_deg + 1e-9 and light.pos_m == nominal.pos_m
            scale = light.diffuse_rgb[0] / nominal.diffuse_rgb[0]
            assert BOUNDS.light_diffuse_scale[0] - 1e-9 <= scale <= BOUNDS.light_diffuse_scale[1] + 1e-9
        assert a.table_grain_seed in BOUNDS.table_grain_seeds
        assert all(BOUNDS.table_tint[0] <= c <= BOUNDS.table_tint[1] for c in a.table_tint_rgb)
        for obj in layout.objects:
            h0, s0, v0 = colorsys.rgb_to_hsv(*COLORS[obj.color][:3])
            h, s, v = colorsys.rgb_to_hsv(*a.object_rgba[obj.name][:3])
            if s0 > 0.2:  # the hue of a near-grey is not a colour
                hue_turn = abs((h - h0 + 0.5) % 1.0 - 0.5) * 360
                assert hue_turn <= BOUNDS.object_hue_max_deg + 1e-6, (obj.name, obj.color)
            assert s0 * BOUNDS.object_saturation_scale[0] - 1e-6 <= s <= s0 * BOUNDS.object_saturation_scale[1] + 1e-6
            assert v0 * BOUNDS.object_value_scale[0] - 1e-6 <= v <= v0 * BOUNDS.object_value_scale[1] + 1e-6


def _angle(a, b) -> float:
    a, b = np.asarray(a) / np.linalg.norm(a), np.asarray(b) / np.linalg.norm(b)
    return float(np.arccos(np.clip(a @ b, -1.0, 1.0)))


def test_the_nominal_appearance_is_the_scene_as_it_was_designed(dual_world):
    """Standard (and cluttered) scenes are unchanged: the values the scene had before appearances existed."""
    assert Appearance() == NOMINAL
    assert [(li.name, li.pos_m, li.dir, li.diffuse_rgb) for li in NOMINAL.lights] == [
        ("key", (0.4, -0.8, 2.5), (-0.15, 0.4, -1.0), (0.6, 0.6, 0.6)),
        ("fill", (-0.6, 0.6, 2.2), (0.3, -0.3, -1.0), (0.35, 0.35, 0.35)),
    ]
    assert NOMINAL.headlight_ambient_rgb == (0.35,) * 3 and NOMINAL.headlight_diffuse_rgb == (0.25,) * 3
    assert NOMINAL.table_grain_seed == WOOD_SEED and NOMINAL.table_tint_rgb == (1.0, 1.0, 1.0)
    assert not NOMINAL.object_rgba and not NOMINAL.camera_offsets
    # ... and what the standard world compiles from it.
    dual_world.reset("general_pickup", seed=2)
    m = dual_world.model
    for light in NOMINAL.lights:
        np.testing.assert_allclose(m.light(light.name).diffuse, light.diffuse_rgb)
        np.testing.assert_allclose(m.light(light.name).dir, np.array(light.dir) / np.linalg.norm(light.dir), atol=1e-6)
    np.testing.assert_allclose(m.vis.headlight.ambient, 0.35)
    for cam in dual_world.robot.camera_names:
        np.testing.assert_array_equal(m.camera(cam).pos, 0.0)
        np.testing.assert_array_equal(m.camera(cam).quat, (0.0, 1.0, 0.0, 0.0))
    np.testing.assert_array_equal(m.geom("table_visual0").rgba, (1.0, 1.0, 1.0, 1.0))
    for obj in dual_world.layout.objects:
        np.testing.assert_allclose(m.geom(f"{obj.name}_geom").rgba, COLORS[obj.color], atol=1e-7)


def test_a_randomized_scene_renders_the_same_per_seed_and_looks_different_from_standard(dual_world):
    images = {}
    for variant, seed in (("randomized", 3), ("standard", 3), ("randomized", 3), ("randomized", 4)):
        dual_world.reset("general_pickup", seed=seed, variant=variant)
        images.setdefault((variant, seed), []).append(dual_world.render("head").rgb)
    first, again = images[("randomized", 3)]
    np.testing.assert_array_equal(first, again)
    for other in (images[("standard", 3)][0], images[("randomized", 4)][0]):
        assert np.mean(np.abs(first.astype(int) - other).max(axis=-1) > 10) > 0.2  # lights and table differ
    model = dual_world.model  # randomized seed 4: what the appearance says is what was compiled
    a = dual_world.layout.appearance
    np.testing.assert_allclose(model.light("key").diffuse, a.lights[0].diffuse_rgb, atol=1e-6)
    np.testing.assert_allclose(model.geom("table_visual0").rgba[:3], a.table_tint_rgb, atol=1e-6)
    np.testing.assert_allclose(model.geom("target_geom").rgba, a.object_rgba["target"], atol=1e-6)


# -- calibration ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("task", "seeds"), [("general_pickup", (0, 1)), ("fr3_pick_cube", (0,))])
def test_the_published_calibration_follows_the_jittered_cameras_within_a_pixel(dual_world, fr3_world, task, seeds):
    """Markers drawn at known world points land where the calibration agents get projects them (<= 1 px), and
    back-project from the image onto their plane within a millimetre; the nominal calibration misses by more."""
    world = fr3_world if get_task(task).robot == "fr3" else dual_world
    for seed in seeds:
        world.reset(task, seed=seed, variant="standard")
        nominal = {c: CameraModel.from_calibration(c, world.calibration(c)) for c in world.robot.camera_names}
        world.reset(task, seed=seed, variant="randomized")
        published = AgentSideBackend(world).observe()  # what agents (and the sim node, from the same frames) get
        nominal_worst_px = 0.0
        for name, frame in published.cameras.items():
            cam = CameraModel.from_calibration(name, frame.calibration)
            offset = world.layout.appearance.camera_offsets[name]
            assert np.linalg.norm(cam.position_m - nominal[name].position_m) == pytest.approx(offset.shift_m, abs=1e-9)
            seen = _markers_seen(world, name, cam)
            assert len(seen) >= MIN_MARKERS_SEEN, (task, seed, name, len(seen))
            plane_z = world.robot.table.top_z_m + MARKER_PLANE_ABOVE_TABLE_M
            for point, (row, col) in seen:
                assert math.dist(cam.project(point), (row, col)) <= REPROJECTION_TOL_PX, (name, point)
                ray = cam.pixel_ray(row, col)
                hit = ray.origin_m + ray.direction * (plane_z - ray.origin_m[2]) / ray.direction[2]
                assert np.linalg.norm(hit - point) < 0.001, (name, point, hit)
                nominal_worst_px = max(nominal_worst_px, math.dist(nominal[name].project(point), (row, col)))
        assert nominal_worst_px > 2 * REPROJECTION_TOL_PX, "the nominal calibration would have passed too"


def _markers_seen(world, camera: str, cam: CameraModel) -> list[tuple[np.ndarray, tuple[float, float]]]:
    """(world point, centroid (row, col) of its pixels) of markers drawn one at a time on the plane just above the
    table, on a grid of pixels, where nothing nearer (an object, the fingers) could hide part of them; a marker's
    pixels are those where it made the depth image nearer."""
    plane_z = world.robot.table.top_z_m + MARKER_PLANE_ABOVE_TABLE_M
    base = world.render(camera, depth=True).depth_m
    assert base is not None
    seen = []
    for row in np.linspace(0.15, 0.75, 4) * cam.height:
        for col in np.linspace(0.15, 0.85, 4) * cam.width:
            ray = cam.pixel_ray(row, col)
            if ray.direction[2] >= -0.05:
                continue
            point = ray.origin_m + ray.direction * (plane_z - ray.origin_m[2]) / ray.direction[2]
            z = float((cam.T_cam_world @ np.append(point, 1.0))[2])
            radius_m = min(MARKER_RADIUS_PX * z / cam.K[1, 1], MARKER_PLANE_ABOVE_TABLE_M / 2)
            half = int(3 * MARKER_RADIUS_PX)
            window = base[int(row) - half : int(row) + half + 1, int(col) - half : int(col) + half + 1]
            if window.min() < z + radius_m + 0.005:  # something in front could hide part of the marker
                continue
            depth = world.render(camera, depth=True, markers=[Marker(tuple(point), radius_m)]).depth_m
            rows, cols = np.nonzero(depth < base - 0.002)
            assert rows.size > 0.5 * math.pi * MARKER_RADIUS_PX**2, (camera, point)
            seen.append((point, (float(rows.mean()), float(cols.mean()))))
    return seen


def test_the_ros_messages_carry_the_jittered_calibration(dual_world):
    pytest.importorskip("sensor_msgs.msg", reason="the ROS message wheels (ros-jazzy-sensor-msgs) are not installed")
    from robodojo.nodes import convert

    dual_world.reset("stack_blocks", seed=1)
    nominal = {c: dual_world.calibration(c) for c in dual_world.robot.camera_names}
    dual_world.reset("stack_blocks", seed=1, variant="randomized")
    for name in dual_world.robot.camera_names:
        calibration = dual_world.render(name).calibration  # as sim_node publishes it
        info = convert.camera_info_msg(calibration, 1.0, "optical")
        pose = convert.pose_stamped(calibration.T_world_cam, 1.0, "world")
        received = convert.calibration_from(info, pose)  # as agent_node builds it
        np.testing.assert_allclose(received.T_world_cam, calibration.T_world_cam, atol=1e-12)
        np.testing.assert_allclose(received.K, calibration.K)
        shift = np.linalg.norm(received.T_world_cam[:3, 3] - nominal[name].T_world_cam[:3, 3])
        assert shift >= BOUNDS.camera_translation_m[0] - 1e-9


# -- configuration and entry points -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("cameras", "translation_m"), [0.002, 0.01], r"cameras\.translation_m: expected \[low, high\] with 0 <="),
        (("cameras", "rotation_deg"), [0.5, 0.2], r"cameras\.rotation_deg: expected \[low, high\]"),
        (("objects", "hue_max_deg"), 30, r"objects\.hue_max_deg: must be in \[0, 10\], got 30"),
        (("table", "grain_seeds"), [], r"table\.grain_seeds: expected a list of non-negative integers"),
        (("lights", "diffuse_scale"), [0.1, 1.0], r"lights\.diffuse_scale: expected \[low, high\] with 0\.5"),
    ],
)
def test_bad_randomized_bounds_are_rejected(path, value, message):
    data = copy.deepcopy(GOOD_SIM)
    data["randomized"][path[0]][path[1]] = value
    with pytest.raises(ConfigError, match=message):
        parse_sim_settings(data, "sim.yaml")


def test_custom_bounds_reach_the_layout():
    still = dataclasses.replace(BOUNDS, camera_translation_m=(0.0, 0.0), camera_rotation_deg=(0.0, 0.0))
    layout = get_task("general_pickup")(0.765).layout(0, "randomized", bounds=still)
    assert all(o.shift_m == 0.0 and o.angle_deg == 0.0 for o in layout.appearance.camera_offsets.values())


def test_every_entry_point_accepts_the_variant():
    from robodojo.campaigns.spec import campaign_spec_from_dict

    assert "randomized" in VARIANTS
    parser = build_parser()
    for argv in (
        ["run", "--task", "general_pickup", "--llm", "replay:x", "--variant", "randomized"],
        ["compare", "--tasks", "general_pickup", "--variant", "randomized"],
        ["graph", "--variant", "randomized"],
        ["render", "--task", "general_pickup", "--variant", "randomized"],
    ):
        assert parser.parse_args(argv).variant == "randomized"
    base = {"tasks": ["general_pickup"], "agents": ["code_cell"], "llms": {"offline": CELLS}}
    spec = campaign_spec_from_dict({**base, "variants": ["randomized", "standard"]})
    assert spec.variants == ("randomized", "standard")
    assert spec.grid().jobs[0].episode_id == "general_pickup.randomized.seed0.code_cell.offline.zero_shot"
    with pytest.raises(ConfigError, match="unknown variant 'messy'; known: standard, cluttered, randomized"):
        campaign_spec_from_dict({**base, "variants": ["messy"]})
