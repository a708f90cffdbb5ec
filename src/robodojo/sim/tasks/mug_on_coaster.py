"""Mug on coaster: set a mug down, upright, on the coaster of the named colour (one of two)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

# Outer radius, height: a 300 ml mug, 7.7 cm across, narrow enough for the ARX X5's fingers (8.8 cm apart when
# open) to close across it. A grip across the body holds it firmly; a grip on its 5 mm wall would hold it weakly (the
# fingers' position servo presses with a force that grows with how far they are kept from closing).
MUG_SIZE_M = (0.0385, 0.09)
MUG_MASS_KG = 0.25
COASTER_SIZE_M = (0.05, 0.006)  # radius, thickness: a 10 cm cork or rubber coaster
COASTER_MASS_KG = 0.04
CENTER_TOLERANCE_M = 0.03
REST_TOLERANCE_M = 0.01
MAX_TILT_RAD = math.radians(10)
NEAR_M = 0.08
# The mug in the middle, where both arms reach it; a coaster on each side, so the named one decides the arm.
MUG_REGION = Workspace(x_m=(-0.06, 0.06), y_m=(-0.3, -0.14))
COASTER_REGIONS = (Workspace(x_m=(-0.36, -0.2), y_m=(-0.3, -0.12)), Workspace(x_m=(0.2, 0.36), y_m=(-0.3, -0.12)))


class MugOnCoaster(Task):
    name = "mug_on_coaster"
    capability = "open"
    step_limit = 600
    instruction_template = "Put the {mug_color} mug on the {coaster_color} coaster."
    recipe = (
        "Two coasters lie on the table, one on each side; the instruction names one by its colour. The mug is "
        f"{2 * MUG_SIZE_M[0] * 100:.1f} cm across and {MUG_SIZE_M[1] * 100:.0f} cm tall, with a handle on one side. "
        "Find the mug (its rim's centre and the handle's direction) and the named coaster while nothing covers "
        "them. Grasp the mug across its body with the arm on the coaster's side: the gripper fully open and "
        "centred over the mug, the fingers opening at right angles to the handle so they pass beside it, lowered "
        "until the grasp point is about 3 cm below the rim, then closed. Lift it, carry it over the coaster's "
        "centre, lower it until it rests on the coaster, open the gripper and move away. It counts when the mug "
        "stands upright on the coaster within 3 cm of its centre, released."
    )
    score_ladder = (
        (0.25, "a gripper is within 8 cm of the mug"),
        (0.5, "the mug is held"),
        (0.75, "the mug is held 2 cm above the table"),
        (1.0, "the mug stands upright on the named coaster within 3 cm of its centre, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        mug_color, coaster_color, other_color = pick_colors(rng, 3)
        mug = self.rest_object(
            "mug", "mug", mug_color, MUG_SIZE_M, (0, 0), yaw=rng.uniform(-math.pi, math.pi), mass=MUG_MASS_KG
        )
        named_side = int(rng.integers(2))
        coasters = [
            self.rest_object(name, "plate", c, COASTER_SIZE_M, (0, 0), mass=COASTER_MASS_KG)
            for name, c in (("coaster", coaster_color), ("other_coaster", other_color))
        ]
        placed = [
            *place_all(self, rng, [mug], region=MUG_REGION),
            *place_all(self, rng, [coasters[0]], region=COASTER_REGIONS[named_side]),
            *place_all(self, rng, [coasters[1]], region=COASTER_REGIONS[1 - named_side]),
        ]
        return placed, {"mug_color": mug_color, "coaster_color": coaster_color}

    def _coaster_top_z(self, view: TaskView) -> float:
        return float(view.object_pos("coaster")[2] + COASTER_SIZE_M[1] / 2)

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("mug", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        mug, coaster = view.object_pos("mug"), view.object_pos("coaster")
        centred = math.hypot(*(mug[:2] - coaster[:2])) < CENTER_TOLERANCE_M
        resting = abs(mug[2] - self._coaster_top_z(view)) < REST_TOLERANCE_M
        upright = matrix_from_quat(view.object_quat("mug"))[2, 2] > math.cos(MAX_TILT_RAD)
        return centred and resting and upright and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        held = self._held(view)
        if held and self.lifted_by(view, "mug") > 0.02:
            return 0.75
        if held:
            return 0.5
        near = min(np.linalg.norm(view.tcp_pos(a) - view.object_pos("mug")) for a in view.arm_names)
        return 0.25 if near < MUG_SIZE_M[0] + NEAR_M else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, z = layout.object("coaster").pos_m
        yaw = layout.object("mug").yaw_rad
        world.set_object_pose("mug", (x, y, z + COASTER_SIZE_M[1] / 2), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)))
