"""Push to pad: slide a block along the table onto a flat coloured target pad (RoboDojo's push family)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

BLOCK_M = 0.05
PAD_HALF_M = 0.06
MIN_DISTANCE_M = 0.15
MAX_TRIES = 100


class PushToPad(Task):
    name = "push_to_pad"
    capability = "dynamic"
    step_limit = 600
    instruction_template = "Push the {color} block onto the {pad_color} target square."
    recipe = (
        "Close the gripper and lower it to about 2 cm above the table on the far side of the block from the "
        "square, then move it in short straight strokes towards the square so the block slides along the table. "
        "Re-approach from a new side to correct the direction. The block must end flat on the table inside the square."
    )
    score_ladder = (
        (0.25, "a gripper is within 6 cm of the block"),
        (0.5, "the block has moved 3 cm closer to the square"),
        (0.75, "the block's centre is within 8 cm of the square's centre"),
        (1.0, "the block's centre is inside the square, resting on the table (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, pad_color = pick_colors(rng, 2)
        block = self.rest_object(
            "block", "block", color, (BLOCK_M,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
        )
        pad = self.rest_object("pad", "pad", pad_color, (PAD_HALF_M, 0.001), (0, 0))
        for _ in range(MAX_TRIES):
            placed = place_all(self, rng, [block, pad])
            if math.dist(placed[0].pos_m[:2], placed[1].pos_m[:2]) >= MIN_DISTANCE_M:
                return placed, {"color": color, "pad_color": pad_color}
        raise ConfigError(f"task {self.name!r}: could not place the pad {MIN_DISTANCE_M} m from the block")

    def _distance(self, view: TaskView, pos: np.ndarray) -> float:
        return float(math.dist(pos[:2], view.object_pos("pad")[:2]))

    def success(self, layout: Layout, view: TaskView) -> bool:
        block, pad = view.object_pos("block"), view.object_pos("pad")
        inside = bool(np.all(np.abs(block[:2] - pad[:2]) < PAD_HALF_M))
        return inside and view.touching_table("block") and abs(self.lifted_by(view, "block")) < 0.005

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        block = view.object_pos("block")
        now = self._distance(view, block)
        if now < 0.08:
            return 0.75
        if self._distance(view, view.initial_pos("block")) - now >= 0.03:
            return 0.5
        near = min(np.linalg.norm(view.tcp_pos(a) - block) for a in view.arm_names)
        return 0.25 if near < 0.06 else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, _ = layout.object("pad").pos_m
        world.set_object_pose("block", (x, y, layout.object("block").pos_m[2]))
