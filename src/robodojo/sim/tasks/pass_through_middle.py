"""Pass through the middle: a block at one end of the table goes onto a pad at the other end; each arm reaches only a
little past the middle, so one arm brings it to the middle and the other takes it on (a two-arm relay)."""

from __future__ import annotations

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors

BLOCK_M = 0.04
PAD_HALF_M = 0.05
# |x| of the block's and the pad's centres: far out on opposite ends, each out of reach of the arm on the other side.
BLOCK_X_M = (0.30, 0.40)
PAD_X_M = (0.28, 0.37)
Y_M = (-0.29, -0.13)
REST_TOLERANCE_M = 0.005


class PassThroughMiddle(Task):
    name = "pass_through_middle"
    capability = "bimanual"
    step_limit = 900
    instruction_template = "Put the {color} block on the {pad_color} pad at the other end of the table."
    recipe = (
        "The block and the pad lie at opposite ends of the table, and each arm reaches only a little past the "
        "middle: grasp the block from above with the arm on its side, carry it to the middle of the table and set "
        "it down there (or hand it over in the air), move that arm aside, then grasp it with the other arm, carry it "
        "over the pad, lower it until it rests on the pad, open the gripper and lift the hand away. It counts when "
        "the block's centre is over the pad, the block resting on it, released."
    )
    score_ladder = (
        (0.25, "a gripper holds the block"),
        (0.5, "the block is in the pad's half of the table (it crossed the middle)"),
        (0.75, "the arm on the pad's side holds the block"),
        (1.0, "the block rests on the pad, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, pad_color = pick_colors(rng, 2)
        side = float(rng.choice([-1.0, 1.0]))  # the block's end of the table (-1 left, 1 right)
        pad_xy = (-side * rng.uniform(*PAD_X_M), rng.uniform(*Y_M))
        block_xy = (side * rng.uniform(*BLOCK_X_M), rng.uniform(*Y_M))
        pad = self.rest_object("pad", "pad", pad_color, (PAD_HALF_M, 0.001), pad_xy)
        block = self.rest_object(
            "block", "block", color, (BLOCK_M,) * 3, block_xy, yaw=rng.uniform(-np.pi / 4, np.pi / 4), mass=0.06
        )
        return [pad, block], {"color": color, "pad_color": pad_color}

    @staticmethod
    def _pad_arm(layout: Layout) -> str:
        return "left" if layout.object("pad").pos_m[0] < 0 else "right"

    def _on_pad(self, view: TaskView) -> bool:
        block, pad = view.object_pos("block"), view.object_pos("pad")
        inside = bool(np.all(np.abs(block[:2] - pad[:2]) < PAD_HALF_M))
        released = not any(view.touching_gripper("block", a) for a in view.arm_names)
        resting = view.touching_table("block") and abs(self.lifted_by(view, "block")) < REST_TOLERANCE_M
        return inside and released and resting

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._on_pad(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self._on_pad(view):
            return 1.0
        pad_arm = self._pad_arm(layout)
        if view.touching_gripper("block", pad_arm):
            return 0.75
        pad_x = layout.object("pad").pos_m[0]
        if float(view.object_pos("block")[0]) * pad_x > 0:
            return 0.5
        return 0.25 if any(view.touching_gripper("block", a) for a in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, _ = layout.object("pad").pos_m
        world.set_object_pose("block", (x, y, layout.object("block").pos_m[2]))
