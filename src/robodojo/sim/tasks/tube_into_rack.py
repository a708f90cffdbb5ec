"""Tube into rack: move a test tube from its hole of a tube rack into another, named, empty hole."""

from __future__ import annotations

import math

import numpy as np

from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import RACK_BASE_M, ObjectSpec, rack_hole_centres
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

TUBE_SIZE_M = (0.008, 0.1)  # radius, length: a 16 x 100 mm culture tube
TUBE_MASS_KG = 0.02
HOLES = 5
HOLE_M = 0.022  # 3 mm wider than the tube a side: a tube slid in leans at most ~6 deg
PITCH_M = 0.035  # hole to hole: the fingers (2 cm wide) pass between the tubes standing next to the one they take
RACK_WIDTH_M = 0.05
RACK_HEIGHT_M = 0.05
RACK_SIZE_M = (float(HOLES), HOLE_M, PITCH_M, RACK_WIDTH_M, RACK_HEIGHT_M)
# The rack's centre on one side of the table (which side varies with the seed), where that side's arm reaches every
# hole with a tube held up out of the rack (a top-down grasp point ~13.5 cm above the table).
RACK_REGIONS = (Workspace(x_m=(-0.28, -0.12), y_m=(-0.27, -0.15)), Workspace(x_m=(0.12, 0.28), y_m=(-0.27, -0.15)))
MAX_YAW_RAD = 0.2  # the rack's row runs within this of the table's x axis, so "from the left" is unambiguous
DEPTH_M = 0.03  # success: the tube's bottom at least this far below the rack's top
MAX_TILT_RAD = math.radians(15)
REST_GAP_M = 0.0005  # a tube in the layout stands this far above the rack's base plate (it settles onto it)


class TubeIntoRack(Task):
    name = "tube_into_rack"
    capability = "precise"
    step_limit = 600
    instruction_template = (
        "Move the test tube with the {color} cap into hole {hole} of the {rack_color} rack (holes counted 1 to 5 "
        "from the left)."
    )
    recipe = (
        f"The rack is a row of {HOLES} square holes {PITCH_M * 100:.1f} cm apart, each {HOLE_M * 1000:.0f} mm wide "
        f"(the tubes are {2 * TUBE_SIZE_M[0] * 1000:.0f} mm across and {TUBE_SIZE_M[1] * 100:.0f} cm long), in a "
        f"top plate {RACK_HEIGHT_M * 100:.0f} cm above the table; the tubes stand on its base plate. Measure the "
        "rack's top (its centre is the middle hole's, its long side the row's direction) and the tube's cap while "
        "nothing covers them. Grasp the tube from above by its upper end (the grasp point about 2 cm below the cap's "
        "top, fingers opening across the row so they pass between the neighbouring tubes), lift it straight up until "
        "its bottom clears the rack's top, carry it over the named hole, lower it straight down until it stands on "
        "the base plate and open the gripper. It counts when the tube stands upright in that hole, released."
    )
    score_ladder = (
        (0.25, "a gripper holds the tube"),
        (0.5, "the tube's bottom is out of the rack, above its top"),
        (0.75, "the tube's bottom is over the named hole"),
        (1.0, "the tube stands upright in the named hole, its bottom 3 cm below the rack's top, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, other_color, rack_color = pick_colors(rng, 3)
        rack = self.rest_object(
            "rack", "rack", rack_color, RACK_SIZE_M, (0, 0), yaw=rng.uniform(-MAX_YAW_RAD, MAX_YAW_RAD)
        )
        rack = place_all(self, rng, [rack], region=RACK_REGIONS[int(rng.integers(2))])[0]
        holes = [int(h) for h in rng.permutation(HOLES)]
        # The tube to move and another standing in its own hole (the instruction names the first by its cap).
        tubes = [
            self._tube_in_hole(name, c, rack, hole)
            for name, c, hole in (("tube", color, holes[0]), ("other_tube", other_color, holes[1]))
        ]
        target = holes[len(tubes)]  # an empty hole
        slots = {"color": color, "rack_color": rack_color, "hole": str(target + 1)}
        return [rack, *tubes], slots

    def _tube_in_hole(self, name: str, color: str, rack: ObjectSpec, hole: int) -> ObjectSpec:
        """A tube standing upright in the rack's hole ``hole`` (0 the leftmost), just above the base plate."""
        x, y = hole_xy(rack.pos_m, rack.yaw_rad, hole)
        bottom = rack.pos_m[2] - RACK_HEIGHT_M / 2 + RACK_BASE_M + REST_GAP_M
        return ObjectSpec(
            name=name,
            kind="tube",
            color=color,
            size_m=TUBE_SIZE_M,
            pos_m=(x, y, bottom + TUBE_SIZE_M[1] / 2),
            mass_kg=TUBE_MASS_KG,
        )

    # -- checking ---------------------------------------------------------------------------------------------
    def _target_hole(self, layout: Layout) -> int:
        return int(layout.slots["hole"]) - 1

    def _bottom(self, view: TaskView) -> np.ndarray:
        """The centre of the tube's bottom face, in the world."""
        axis = matrix_from_quat(view.object_quat("tube"))[:, 2]
        return view.object_pos("tube") - axis * TUBE_SIZE_M[1] / 2

    def _rack_top_z(self, view: TaskView) -> float:
        return float(view.object_pos("rack")[2] + RACK_HEIGHT_M / 2)

    def _over_hole(self, layout: Layout, view: TaskView) -> bool:
        """Whether the tube's bottom lies over the named hole (inside its square, in the rack's frame)."""
        R = matrix_from_quat(view.object_quat("rack"))
        local = R.T @ (self._bottom(view) - view.object_pos("rack"))
        hx, hy = rack_hole_centres(RACK_SIZE_M)[self._target_hole(layout)]
        return abs(float(local[0]) - hx) < HOLE_M / 2 and abs(float(local[1]) - hy) < HOLE_M / 2

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("tube", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        upright = matrix_from_quat(view.object_quat("tube"))[2, 2] > math.cos(MAX_TILT_RAD)
        deep = self._bottom(view)[2] < self._rack_top_z(view) - DEPTH_M
        return upright and deep and self._over_hole(layout, view) and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._over_hole(layout, view):
            return 0.75
        if self._bottom(view)[2] > self._rack_top_z(view):
            return 0.5
        return 0.25 if self._held(view) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        rack = layout.object("rack")
        x, y = hole_xy(rack.pos_m, rack.yaw_rad, self._target_hole(layout))
        world.set_object_pose("tube", (x, y, layout.object("tube").pos_m[2]))


def hole_xy(rack_pos_m: tuple[float, float, float], rack_yaw_rad: float, hole: int) -> tuple[float, float]:
    """World (x, y) of the centre of the rack's hole ``hole`` (0 the leftmost, at the rack's -x end)."""
    hx, hy = rack_hole_centres(RACK_SIZE_M)[hole]
    c, s = math.cos(rack_yaw_rad), math.sin(rack_yaw_rad)
    return rack_pos_m[0] + c * hx - s * hy, rack_pos_m[1] + s * hx + c * hy
