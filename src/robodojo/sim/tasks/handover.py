"""Handover: the left arm picks a block and hands it to the right arm (a two-arm task)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BLOCK_M = 0.04
LIFT_M = 0.05


class Handover(Task):
    name = "handover"
    capability = "bimanual"
    step_limit = 900
    instruction_template = "Pick up the {color} block with the left arm and hand it over to the right arm."
    recipe = (
        "Grasp the block with the left gripper and lift it. Bring it to the middle of the table at a comfortable "
        "height, bring the open right gripper to the block from another side, close the right gripper, then open "
        "the left gripper and move the left arm away. The block must end in the right gripper, off the table."
    )
    score_ladder = (
        (0.25, "the left gripper holds the block"),
        (0.5, "the left gripper holds the block 5 cm above the table"),
        (0.75, "both grippers hold the block"),
        (1.0, "only the right gripper holds the block, 5 cm above the table (success)"),
    )
    start_region = Workspace(x_m=(-0.42, -0.15), y_m=(-0.32, -0.1))

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        (color,) = pick_colors(rng, 1)
        block = self.rest_object(
            "block", "block", color, (BLOCK_M,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
        )
        return place_all(self, rng, [block], region=self.start_region), {"color": color}

    def _raised(self, view: TaskView) -> bool:
        return self.lifted_by(view, "block") >= LIFT_M and not view.touching_table("block")

    def success(self, layout: Layout, view: TaskView) -> bool:
        right, left = view.touching_gripper("block", "right"), view.touching_gripper("block", "left")
        return right and not left and self._raised(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        right, left = view.touching_gripper("block", "right"), view.touching_gripper("block", "left")
        if right and not left and self._raised(view):
            return 1.0
        if right and left:
            return 0.75
        if left:
            return 0.5 if self._raised(view) else 0.25
        return 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        tcp = world.tcp_pos("right")
        world.set_object_pose("block", tuple(tcp))
        world.set_gripper_opening("right", 0.0)
