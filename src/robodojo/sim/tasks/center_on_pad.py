"""Centre on pad: stand a cylinder on a small flat target square with its centre within a centimetre of the square's."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

CYLINDER_SIZE_M = (0.02, 0.05)  # radius, height
PAD_HALF_M = 0.03  # a 6 cm square: 1 cm of it shows around the cylinder's 4 cm footprint
CENTRE_TOLERANCE_M = 0.01
NEAR_M = 0.03
MAX_TILT_DEG = 10.0
MIN_DISTANCE_M = 0.12
MAX_TRIES = 100
# Both objects on one side of the table (which side varies with the seed), where that side's arm reaches them both.
SIDE_REGIONS = (Workspace(x_m=(-0.4, 0.0), y_m=(-0.32, -0.12)), Workspace(x_m=(0.0, 0.4), y_m=(-0.32, -0.12)))


class CenterOnPad(Task):
    name = "center_on_pad"
    capability = "precise"
    step_limit = 600
    instruction_template = "Place the {color} cylinder exactly on the centre of the {pad_color} square."
    recipe = (
        "Measure the square's centre while nothing covers it. Grasp the cylinder from above, lift it, carry it over "
        "the square's centre, lower it until it stands on the table and open the gripper. Then measure the cylinder "
        "and the square again and, if the centres are more than about 5 mm apart, grasp it again and shift it by the "
        "difference. It counts when the cylinder stands upright on the square, released, with its centre within "
        "1 cm of the square's centre."
    )
    score_ladder = (
        (0.25, "a gripper holds the cylinder"),
        (0.5, "a gripper holds the cylinder with its centre within 3 cm (sideways) of the square's centre"),
        (0.75, "the cylinder stands upright on the table within 3 cm of the square's centre"),
        (1.0, "the cylinder stands upright on the square within 1 cm of its centre, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, pad_color = pick_colors(rng, 2)
        region = SIDE_REGIONS[int(rng.integers(2))]
        cylinder = self.rest_object("cylinder", "cylinder", color, CYLINDER_SIZE_M, (0, 0))
        pad = self.rest_object("pad", "pad", pad_color, (PAD_HALF_M, 0.001), (0, 0))
        for _ in range(MAX_TRIES):
            placed = place_all(self, rng, [cylinder, pad], region=region)
            if math.dist(placed[0].pos_m[:2], placed[1].pos_m[:2]) >= MIN_DISTANCE_M:
                return placed, {"color": color, "pad_color": pad_color}
        raise ConfigError(f"task {self.name!r}: could not place the square {MIN_DISTANCE_M} m from the cylinder")

    def _offset_m(self, view: TaskView) -> float:
        return math.dist(view.object_pos("cylinder")[:2], view.object_pos("pad")[:2])

    def _standing(self, view: TaskView) -> bool:
        """Upright and resting on the table, where it started (height)."""
        axis = matrix_from_quat(view.object_quat("cylinder"))[:, 2]
        upright = float(axis[2]) > math.cos(math.radians(MAX_TILT_DEG))
        return upright and view.touching_table("cylinder") and abs(self.lifted_by(view, "cylinder")) < 0.005

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("cylinder", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        centred = self._offset_m(view) < CENTRE_TOLERANCE_M
        return centred and self._standing(view) and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        near = self._offset_m(view) < NEAR_M
        if near and self._standing(view):
            return 0.75
        held = self._held(view)
        if near and held:
            return 0.5
        return 0.25 if held else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, _ = layout.object("pad").pos_m
        # Settled as at the start: the cylinder sinks a fraction of a millimetre into the table (its contact).
        world.set_object_pose("cylinder", (x, y, layout.object("cylinder").pos_m[2] - 0.0002))
