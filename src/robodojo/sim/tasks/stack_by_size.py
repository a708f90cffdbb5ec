"""Stack by size: three cubes of different sizes, stacked largest at the bottom and smallest on top (three blocks
to compare, then two pick-and-place steps in the order the comparison gives)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

# Largest first (block_0 belongs at the bottom). 1 cm apart, so a camera tells them apart; the finished tower is
# 10.5 cm tall, within the ~16 cm an ARX X5 holds a block top-down over the middle of the table.
SIZES_M = (0.045, 0.035, 0.025)
XY_TOLERANCE_M = 0.012  # between a cube and the one under it: its centre of mass well inside the face below
Z_TOLERANCE_M = 0.006


class StackBySize(Task):
    name = "stack_by_size"
    capability = "long_horizon"
    step_limit = 1200
    instruction_template = (
        "Stack the {c1}, {c2} and {c3} blocks into one tower by size: the largest at the bottom, the smallest on top."
    )
    recipe = (
        "Measure the three blocks and rank them by size. Leave the largest where it stands (or bring it to a spot "
        "in the middle of the table both arms reach). Grasp the middle-sized block from above with the arm on its "
        "side, lift it higher than the largest, carry it over the largest turned to its faces, lower it until it "
        "rests on top, open the gripper and lift the hand away. Then the smallest the same way onto the "
        "middle-sized one. The tower must stand on its own."
    )
    score_ladder = (
        (0.25, "a block is held"),
        (0.5, "the middle-sized block rests on the largest"),
        (1.0, "all three stand largest to smallest, aligned and released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, len(SIZES_M))
        objects = [
            self.rest_object(
                f"block_{i}", "block", color, (size,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
            )
            for i, (color, size) in enumerate(zip(colors, SIZES_M, strict=True))
        ]
        named = [str(c) for c in rng.permutation(colors)]  # the instruction lists them in no particular order
        return place_all(self, rng, objects), {f"c{i + 1}": color for i, color in enumerate(named)}

    def _levels_in_order(self, view: TaskView) -> int:
        """How many cubes stand in order from block_0 on the table upwards (0 if block_0 is not on the table)."""
        if not view.touching_table("block_0") or abs(self.lifted_by(view, "block_0")) > 0.005:
            return 0
        levels = 1
        for i in range(1, len(SIZES_M)):
            upper, lower = view.object_pos(f"block_{i}"), view.object_pos(f"block_{i - 1}")
            aligned = math.hypot(*(upper[:2] - lower[:2])) < XY_TOLERANCE_M
            on_top = abs(upper[2] - lower[2] - (SIZES_M[i] + SIZES_M[i - 1]) / 2) < Z_TOLERANCE_M
            if not (aligned and on_top and not view.touching_table(f"block_{i}")):
                break
            levels += 1
        return levels

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper(f"block_{i}", a) for i in range(len(SIZES_M)) for a in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._levels_in_order(view) == len(SIZES_M) and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._levels_in_order(view) >= 2:
            return 0.5
        return 0.25 if self._held(view) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        base = layout.object("block_0")
        x, y = self._free_spot(layout, world)
        z = base.pos_m[2]
        quat = (math.cos(base.yaw_rad / 2), 0, 0, math.sin(base.yaw_rad / 2))
        for i in range(len(SIZES_M)):
            if i:
                z += (SIZES_M[i - 1] + SIZES_M[i]) / 2
            world.set_object_pose(f"block_{i}", (x, y, z), quat)

    def _free_spot(self, layout: Layout, world: GoalWriter) -> tuple[float, float]:
        """The point of the workspace farthest from the other objects and from under the grasp points (at home the
        fingers hang lower than a finished tower's top)."""
        others = [o.pos_m[:2] for o in layout.objects if not o.name.startswith("block_")]
        others += [tuple(world.tcp_pos(arm)[:2]) for arm in ("left", "right")]
        ws = self.workspace
        grid = [(gx, gy) for gx in np.linspace(*ws.x_m, 22) for gy in np.linspace(*ws.y_m, 7)]
        return max(grid, key=lambda p: min(math.dist(p, o) for o in others))
