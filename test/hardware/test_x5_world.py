"""The X5 test world's grasp geometry (x5_world.straddled_width_m): where the emulated fingers must stop."""

from __future__ import annotations

import numpy as np
import pytest
from x5_world import ROBOT, straddled_width_m

from robodojo.sim.world import EmbeddedWorld

CUBE_M = 0.04  # general_pickup's blocks: 4 cm cubes


@pytest.fixture(scope="module")
def world():
    w = EmbeddedWorld(ROBOT)
    w.reset("general_pickup", 0, "standard")
    yield w
    w.close()


def between_the_pads(world: EmbeddedWorld, arm: str) -> np.ndarray:
    left, right = world.privileged().finger_pad_geoms(arm)
    return (world.data.geom_xpos[left] + world.data.geom_xpos[right]) / 2


def finger_m(world: EmbeddedWorld, arm: str) -> float:
    return 2.0 * float(world.data.qpos[world.gripper_qpos_adr[arm]])


@pytest.mark.parametrize(
    ("offset_m", "expected_m"),
    [
        ((0.0, 0.0, 0.0), CUBE_M),  # centred between the pads
        ((0.02, 0.0, 0.0), CUBE_M),  # off-centre across the gap: the fingers push it, and stop at its width
        ((0.0, 0.0, 0.005), CUBE_M),  # a little higher: the pads still reach its faces
        ((0.0, 0.0, 0.05), None),  # above the fingers
        ((0.0, 0.08, 0.0), None),  # beside them
    ],
)
def test_an_object_between_the_pads_stops_the_fingers_at_its_width(world, offset_m, expected_m):
    view = world.privileged()
    assert world.model.geom("target_geom").size[0] == pytest.approx(CUBE_M / 2)
    assert finger_m(world, "right") > CUBE_M + 0.03  # open
    view.set_object_pose("target", between_the_pads(world, "right") + np.array(offset_m))
    width = straddled_width_m(world, view, "right", finger_m(world, "right"))
    if expected_m is None:
        assert width is None
    else:
        assert width == pytest.approx(expected_m, abs=5e-4)
    # the other arm's open fingers hold nothing
    assert straddled_width_m(world, view, "left", finger_m(world, "left")) is None
