"""Lab ware built from primitives (robodojo.sim.objects): a mug, a test tube and a tube rack are few, cheap shapes of
realistic size that the ARX X5's gripper can take, and behave as such in the world (a tube dropped over a hole ends
standing in it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robodojo.geometry import matrix_from_quat
from robodojo.robots.config import load_robot_config
from robodojo.sim.objects import (
    COLORS,
    MUG_HANDLE_REACH_M,
    RACK_PLATE_M,
    TUBE_BODY_RGBA,
    ObjectSpec,
    object_parts,
    object_rest_z,
    rack_boxes,
    rack_hole_centres,
)
from robodojo.sim.tasks.mug_on_coaster import MUG_SIZE_M
from robodojo.sim.tasks.tube_into_rack import HOLE_M, RACK_HEIGHT_M, RACK_SIZE_M, TUBE_SIZE_M, hole_xy

MAX_GEOMS = 15  # a lab object stays a handful of primitives: cheap to render on a software renderer
TABLE_Z = 0.765


def _spec(kind: str, size: tuple[float, ...], color: str = "red") -> ObjectSpec:
    return ObjectSpec("thing", kind, color, size, (0.0, -0.2, object_rest_z(kind, size, TABLE_Z)), mass_kg=0.1)


def _inside(point: np.ndarray, boxes) -> bool:
    return any(all(abs(point[i] - c[i]) <= h[i] + 1e-9 for i in range(3)) for h, c in boxes)


@pytest.mark.parametrize(
    ("kind", "size"), [("mug", MUG_SIZE_M), ("tube", TUBE_SIZE_M), ("rack", RACK_SIZE_M)], ids=["mug", "tube", "rack"]
)
def test_lab_ware_is_a_handful_of_shapes(kind, size):
    (part,) = object_parts(_spec(kind, size))
    assert len(part.shapes) <= MAX_GEOMS
    assert part.movable == (kind != "rack")  # a rack stands clamped like a fixture; mugs and tubes are picked up
    assert (part.mass_kg > 0) == part.movable


def test_the_gripper_closes_across_a_mug_and_a_tube():
    opening_m = 2 * load_robot_config("dual_arx_x5").arms[0].gripper_max_m
    assert 2 * MUG_SIZE_M[0] < opening_m - 0.01  # at least 5 mm to spare a side over the body
    assert 2 * TUBE_SIZE_M[0] > 0.01  # the fingers stop well short of closing: the grasp registers as holding


def test_a_mug_is_an_open_cylinder_with_its_handle_on_plus_x():
    (mug,) = object_parts(_spec("mug", MUG_SIZE_M))
    radius, height = MUG_SIZE_M
    walls = [s for s in mug.shapes if "_wall" in s.name]
    handle = [s for s in mug.shapes if "_handle" in s.name]
    assert len(walls) >= 8 and len(handle) == 3
    # The wall's outer faces lie on the mug's radius, its top at the mug's height; nothing above the rim.
    for wall in walls:
        assert math.hypot(*wall.pos_m[:2]) + wall.size_m[0] / 2 == pytest.approx(radius)
        assert wall.pos_m[2] + wall.size_m[2] / 2 == pytest.approx(height)
    assert max(s.pos_m[2] + s.half_extents_m[2] for s in mug.shapes) == pytest.approx(height)
    # The handle stands out of the wall on +x only, below the rim.
    outer = max(s.pos_m[0] + s.half_extents_m[0] for s in handle)
    assert outer == pytest.approx(radius + MUG_HANDLE_REACH_M)
    assert all(abs(s.pos_m[1]) + s.half_extents_m[1] < 0.01 for s in handle)
    assert max(s.pos_m[2] + s.half_extents_m[2] for s in handle) < height - 0.005


def test_a_tube_is_a_clear_body_under_a_cap_of_its_colour():
    (tube,) = object_parts(_spec("tube", TUBE_SIZE_M, "blue"))
    body, cap = tube.shapes
    radius, length = TUBE_SIZE_M
    assert body.rgba == TUBE_BODY_RGBA and cap.rgba == COLORS["blue"]
    assert body.pos_m[2] - body.size_m[1] / 2 == pytest.approx(-length / 2)  # bottom to top: the tube's length
    assert cap.pos_m[2] + cap.size_m[1] / 2 == pytest.approx(length / 2)
    assert cap.size_m[0] > body.size_m[0] == radius


def test_every_rack_hole_is_open_and_framed_by_the_top_plate():
    boxes = rack_boxes(RACK_SIZE_M)
    top_z = RACK_HEIGHT_M / 2 - RACK_PLATE_M / 2
    centres = rack_hole_centres(RACK_SIZE_M)
    assert len(centres) == int(RACK_SIZE_M[0])
    for hx, hy in centres:
        # A tube's whole cross-section passes the plate; the plate is solid just beyond the hole on every side.
        for dx, dy in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            inner = np.array([hx + dx * TUBE_SIZE_M[0], hy + dy * TUBE_SIZE_M[0], top_z])
            outer = np.array([hx + dx * (HOLE_M / 2 + 0.002), hy + dy * (HOLE_M / 2 + 0.002), top_z])
            assert not _inside(inner, boxes), (hx, dx, dy)
            if (dx, dy) != (0, 0):
                assert _inside(outer, boxes), (hx, dx, dy)
        assert _inside(np.array([hx, hy, -RACK_HEIGHT_M / 2 + 0.001]), boxes)  # the base plate under the hole


def test_a_rack_with_a_fraction_of_a_hole_is_refused():
    with pytest.raises(ValueError, match="whole number of holes"):
        object_parts(_spec("rack", (4.5, *RACK_SIZE_M[1:])))


def test_a_tube_dropped_over_a_hole_ends_standing_in_it(dual_world):
    dual_world.reset("tube_into_rack", seed=3)
    layout, truth = dual_world.layout, dual_world.privileged()
    rack = layout.object("rack")
    hole = int(layout.slots["hole"]) - 1
    x, y = hole_xy(rack.pos_m, rack.yaw_rad, hole)
    rim_z = rack.pos_m[2] + RACK_HEIGHT_M / 2
    # 2 mm off the hole's centre and 1 cm above the rim, tilted 3 degrees: the tube slides down the hole's side.
    tilt = math.radians(3) / 2
    truth.set_object_pose(
        "tube", (x + 0.002, y, rim_z + 0.01 + TUBE_SIZE_M[1] / 2), (math.cos(tilt), math.sin(tilt), 0, 0)
    )
    for _ in range(round(2.0 / dual_world.control_dt_s)):
        dual_world.step()
    pos = truth.object_pos("tube")
    assert math.hypot(pos[0] - x, pos[1] - y) < HOLE_M
    assert matrix_from_quat(truth.object_quat("tube"))[2, 2] > math.cos(math.radians(10))
    assert truth.object_speed("tube") < 0.005
    assert truth.success()
