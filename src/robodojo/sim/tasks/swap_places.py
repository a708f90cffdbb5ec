"""Swap places: two blocks stand on two of three identical black squares; each must end on the square the other
started on (three pick-and-place steps in order, one block set aside while the other moves, and a layout to recall:
once a block is lifted, nothing on the table tells which of the two empty squares it stood on)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BLOCK_M = 0.04
PAD_HALF_M = 0.045
PAD_COLOR = (
    "black"  # every square alike: the squares do not say where a block belongs (dark: no block colour blends in)
)
# The squares stay clear of the table's far sides, where a parked arm hangs over them.
REGION = Workspace(x_m=(-0.35, 0.35), y_m=Task.workspace.y_m)
OFFSET_M = 0.008  # a block stands up to this far off its square's centre at the start
REST_TOLERANCE_M = 0.005


class SwapPlaces(Task):
    name = "swap_places"
    capability = "long_horizon"
    step_limit = 1500
    instruction_template = (
        "Swap the places of the {c1} and {c2} blocks: each must end on the black square the other one stands on now."
    )
    recipe = (
        "Before moving anything, note which black square each of the two blocks stands on (the third square is "
        "empty and belongs to neither). Grasp the first block from above with the arm on its side and set it down "
        "on a free spot of the table off every square. Carry the second block onto the square the first one stood "
        "on, then the first block from its spot onto the square the second one stood on. Each time lower the block "
        "until it rests on the table, open the gripper and lift the hand away."
    )
    score_ladder = (
        (0.25, "a block is held"),
        (0.5, "one block rests on the other's starting square"),
        (1.0, "both blocks rest on each other's starting squares, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, 2)
        pads = place_all(
            self,
            rng,
            [self.rest_object(f"pad_{i}", "pad", PAD_COLOR, (PAD_HALF_M, 0.001), (0, 0)) for i in range(3)],
            region=REGION,
        )
        blocks = []
        for i, color in enumerate(colors):
            x, y, _ = pads[i].pos_m
            dx, dy = rng.uniform(-OFFSET_M, OFFSET_M, size=2)
            yaw = rng.uniform(-math.pi / 4, math.pi / 4)
            blocks.append(self.rest_object(f"block_{i}", "block", color, (BLOCK_M,) * 3, (x + dx, y + dy), yaw=yaw))
        return pads + blocks, {"c1": colors[0], "c2": colors[1]}

    def _on(self, view: TaskView, block: str, pad: str) -> bool:
        """The block rests on the table inside the square, released."""
        pos = view.object_pos(block)
        inside = bool(np.all(np.abs(pos[:2] - view.object_pos(pad)[:2]) < PAD_HALF_M))
        released = not any(view.touching_gripper(block, a) for a in view.arm_names)
        resting = view.touching_table(block) and abs(self.lifted_by(view, block)) < REST_TOLERANCE_M
        return inside and released and resting

    def _swapped(self, view: TaskView) -> int:
        return int(self._on(view, "block_0", "pad_1")) + int(self._on(view, "block_1", "pad_0"))

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._swapped(view) == 2

    def score(self, layout: Layout, view: TaskView) -> float:
        done = self._swapped(view)
        if done == 2:
            return 1.0
        if done == 1:
            return 0.5
        held = any(view.touching_gripper(f"block_{i}", a) for i in range(2) for a in view.arm_names)
        return 0.25 if held else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        for block, pad in (("block_0", "pad_1"), ("block_1", "pad_0")):
            x, y, _ = layout.object(pad).pos_m
            yaw = layout.object(block).yaw_rad
            world.set_object_pose(
                block, (x, y, layout.object(block).pos_m[2]), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2))
            )
