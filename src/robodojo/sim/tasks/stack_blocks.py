"""Stack blocks: put one named block on top of another."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

BLOCK_M = 0.04
XY_TOLERANCE_M = 0.02
Z_TOLERANCE_M = 0.008


class StackBlocks(Task):
    name = "stack_blocks"
    capability = "precise"
    step_limit = 600
    instruction_template = "Stack the {top_color} block on top of the {bottom_color} block."
    recipe = (
        "Grasp the top block from above, lift it higher than the other block, move it over the bottom block, "
        "lower it until it rests there, align the faces, then open the gripper and lift the hand away."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm of the top block"),
        (0.5, "the top block is held"),
        (0.75, "the top block is above the bottom block (within 3 cm sideways)"),
        (1.0, "the top block rests on the bottom block, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        top, bottom = pick_colors(rng, 2)
        size = (BLOCK_M,) * 3
        objects = [
            self.rest_object("top_block", "block", top, size, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)),
            self.rest_object("bottom_block", "block", bottom, size, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)),
        ]
        return place_all(self, rng, objects), {"top_color": top, "bottom_color": bottom}

    def success(self, layout: Layout, view: TaskView) -> bool:
        top, bottom = view.object_pos("top_block"), view.object_pos("bottom_block")
        aligned = math.hypot(*(top[:2] - bottom[:2])) < XY_TOLERANCE_M
        on_top = abs(top[2] - bottom[2] - BLOCK_M) < Z_TOLERANCE_M
        released = not any(view.touching_gripper("top_block", arm) for arm in view.arm_names)
        return aligned and on_top and released and not view.touching_table("top_block")

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        top, bottom = view.object_pos("top_block"), view.object_pos("bottom_block")
        if math.hypot(*(top[:2] - bottom[:2])) < 0.03 and top[2] > bottom[2] + BLOCK_M / 2:
            return 0.75
        if any(view.touching_gripper("top_block", arm) for arm in view.arm_names):
            return 0.5
        near = min(np.linalg.norm(view.tcp_pos(a) - top) for a in view.arm_names)
        return 0.25 if near < 0.05 else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, z = layout.object("bottom_block").pos_m
        yaw = layout.object("bottom_block").yaw_rad
        world.set_object_pose("top_block", (x, y, z + BLOCK_M), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)))
