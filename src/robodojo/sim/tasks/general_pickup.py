"""General pickup: pick the named object among several and lift it 10 cm (RoboDojo's general pickup)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

LIFT_M = 0.10
SHAPES = ("block", "cylinder")


class GeneralPickup(Task):
    name = "general_pickup"
    capability = "open"
    step_limit = 400
    instruction_template = "Pick up the {color} {shape} and lift it 10 cm above the table."
    recipe = (
        "Find the named object among the others. Approach it from above with one gripper open, close the gripper "
        "around it, then lift it straight up at least 10 cm. Use the arm on the object's side of the table."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm of the object"),
        (0.5, "the object is held between the fingers"),
        (0.75, "the object is lifted 3 cm"),
        (1.0, "the object is lifted 10 cm (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, 3)
        shapes = [str(s) for s in rng.choice(SHAPES, size=3)]
        objects = []
        for i, (color, shape) in enumerate(zip(colors, shapes, strict=True)):
            name = "target" if i == 0 else f"other_{i}"
            size = (0.04, 0.04, 0.04) if shape == "block" else (0.02, 0.05)
            objects.append(
                self.rest_object(name, shape, color, size, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4))
            )
        return place_all(self, rng, objects), {"color": colors[0], "shape": shapes[0]}

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self.lifted_by(view, "target") >= LIFT_M

    def score(self, layout: Layout, view: TaskView) -> float:
        lift = self.lifted_by(view, "target")
        arms = view.arm_names
        if lift >= LIFT_M:
            return 1.0
        held = any(view.touching_gripper("target", a) for a in arms)
        if held and lift >= 0.03:
            return 0.75
        if held:
            return 0.5
        if any(np.linalg.norm(view.tcp_pos(a) - view.object_pos("target")) < 0.05 for a in arms):
            return 0.25
        return 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, z = layout.object("target").pos_m
        world.set_object_pose("target", (x, y, z + LIFT_M + 0.02))
