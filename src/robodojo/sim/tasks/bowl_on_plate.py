"""Bowl on plate: place the bowl on the plate (RoboDojo's place-A-on-B family)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

BOWL_SIZE_M = (0.055, 0.045)  # radius, height
PLATE_SIZE_M = (0.085, 0.012)
CENTER_TOLERANCE_M = 0.04


class BowlOnPlate(Task):
    name = "bowl_on_plate"
    capability = "precise"
    step_limit = 600
    instruction_template = "Place the {bowl_color} bowl on the {plate_color} plate."
    recipe = (
        "Grasp the bowl by its rim with the nearer arm (fingers straddling the wall), lift it a few centimetres, "
        "carry it over the plate, lower it until it rests on the plate, open the gripper and move away."
    )
    score_ladder = (
        (0.25, "a gripper is within 8 cm of the bowl"),
        (0.5, "the bowl is held"),
        (0.75, "the bowl is held 2 cm above the table"),
        (1.0, "the bowl rests on the plate within 4 cm of its centre, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        bowl_color, plate_color = pick_colors(rng, 2)
        objects = [
            self.rest_object("bowl", "bowl", bowl_color, BOWL_SIZE_M, (0, 0), mass=0.12),
            self.rest_object("plate", "plate", plate_color, PLATE_SIZE_M, (0, 0), mass=0.3),
        ]
        return place_all(self, rng, objects), {"bowl_color": bowl_color, "plate_color": plate_color}

    def _plate_top_z(self, view: TaskView) -> float:
        return float(view.object_pos("plate")[2] + PLATE_SIZE_M[1] / 2)

    def success(self, layout: Layout, view: TaskView) -> bool:
        bowl, plate = view.object_pos("bowl"), view.object_pos("plate")
        centred = math.hypot(*(bowl[:2] - plate[:2])) < CENTER_TOLERANCE_M
        resting = abs(bowl[2] - self._plate_top_z(view)) < 0.01
        released = not any(view.touching_gripper("bowl", arm) for arm in view.arm_names)
        return centred and resting and released

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        held = any(view.touching_gripper("bowl", arm) for arm in view.arm_names)
        if held and self.lifted_by(view, "bowl") > 0.02:
            return 0.75
        if held:
            return 0.5
        near = min(np.linalg.norm(view.tcp_pos(a) - view.object_pos("bowl")) for a in view.arm_names)
        return 0.25 if near < BOWL_SIZE_M[0] + 0.08 else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, z = layout.object("plate").pos_m
        world.set_object_pose("bowl", (x, y, z + PLATE_SIZE_M[1] / 2))
