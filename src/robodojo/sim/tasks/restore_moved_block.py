"""Restore a moved block: three blocks stand on the table; as soon as the robot starts moving, one of them is moved
elsewhere (a layout change the world makes at the first env step, as a person tidying up would), and it must be put
back where it stood. The only record of where that was is the first look (seed 002's memory tasks: the layout is
shown, then changed)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import (
    GoalWriter,
    Layout,
    LayoutChange,
    Task,
    TaskView,
    Workspace,
    free_spot,
    pick_colors,
    place_all,
)

BLOCK_M = 0.04
BLOCKS = 3
# Blocks and the moved block's new spot stay clear of the table's far sides, where a parked arm hangs over them.
REGION = Workspace(x_m=(-0.35, 0.35), y_m=Task.workspace.y_m)
CHANGE_AT_STEP = 1  # the first env step the robot uses: whatever it does, it has seen the layout before the change
MIN_MOVE_M = 0.12  # the new spot is at least this far from where the block stood
BACK_WITHIN_M = 0.025  # success: the block's centre this close (x, y) to where it stood
OTHERS_WITHIN_M = 0.03  # and every other block still this close to where it stands
REST_TOLERANCE_M = 0.005


class RestoreMovedBlock(Task):
    name = "restore_moved_block"
    capability = "long_horizon"
    step_limit = 600
    instruction_template = (
        "Note where the {c0}, {c1} and {c2} blocks stand now. As soon as the robot moves, someone moves one of "
        "them elsewhere: put that block back exactly where it stood."
    )
    recipe = (
        "Before moving, measure where each block stands and write it down: after the first motion one block is "
        "somewhere else and nothing on the table shows where it was. Look again to find which block moved, grasp "
        "it from above with the arm on its side, carry it back to its noted place, lower it until it rests on the "
        "table, open the gripper and lift the hand away. Leave the other blocks where they are."
    )
    score_ladder = (
        (0.25, "the moved block is held"),
        (0.5, "the moved block is within 8 cm of where it stood"),
        (1.0, "the moved block rests, released, within 2.5 cm of where it stood; the others stay (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, BLOCKS)
        blocks = [
            self.rest_object(
                f"block_{i}", "block", color, (BLOCK_M,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
            )
            for i, color in enumerate(colors)
        ]
        return place_all(self, rng, blocks, region=REGION), {f"c{i}": c for i, c in enumerate(colors)}

    def sample_changes(self, rng: np.random.Generator, placed: Sequence[ObjectSpec]) -> tuple[LayoutChange, ...]:
        moved = placed[int(rng.integers(BLOCKS))]
        others = [o for o in placed if o.name != moved.name]
        # A spot far enough from where the block stood; its old footprint stays free, so it can go back.
        keep_free = ObjectSpec(**{**moved.__dict__, "size_m": (MIN_MOVE_M,) * 3})
        x, y = free_spot(self, rng, [*others, keep_free], moved.footprint_radius_m, REGION)
        yaw = float(rng.uniform(-math.pi / 4, math.pi / 4))
        return (LayoutChange(CHANGE_AT_STEP, moved.name, (x, y, moved.pos_m[2]), yaw),)

    @staticmethod
    def _moved(layout: Layout) -> str:
        return layout.changes[0].name

    def _resting(self, layout: Layout, view: TaskView, name: str) -> bool:
        return view.touching_table(name) and abs(view.object_pos(name)[2] - layout.object(name).pos_m[2]) < (
            REST_TOLERANCE_M
        )

    def _off(self, layout: Layout, view: TaskView, name: str) -> float:
        return float(math.dist(view.object_pos(name)[:2], layout.object(name).pos_m[:2]))

    def success(self, layout: Layout, view: TaskView) -> bool:
        moved = self._moved(layout)
        blocks = [o.name for o in layout.objects if o.name.startswith("block_")]
        return (
            view.changes_made >= 1
            and self._off(layout, view, moved) <= BACK_WITHIN_M
            and self._resting(layout, view, moved)
            and not any(view.touching_gripper(moved, a) for a in view.arm_names)
            and all(self._off(layout, view, b) <= OTHERS_WITHIN_M for b in blocks if b != moved)
        )

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        moved = self._moved(layout)
        if view.changes_made >= 1 and self._off(layout, view, moved) <= 0.08:
            return 0.5
        return 0.25 if any(view.touching_gripper(moved, a) for a in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        world.make_changes()
        moved = layout.object(self._moved(layout))
        half_yaw = moved.yaw_rad / 2
        world.set_object_pose(moved.name, moved.pos_m, (math.cos(half_yaw), 0, 0, math.sin(half_yaw)))
