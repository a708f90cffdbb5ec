"""Build tower: stack four named blocks in a given order, bottom to top (several pick-and-place steps in order)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

# 3 cm blocks: the finished tower is 12 cm tall, and an ARX X5 holds a block top-down over it only up to about 16 cm
# above the table in the middle (IK map of the pair); 4 cm blocks would need 19 cm for the last one.
BLOCK_M = 0.03
LEVELS = 4
XY_TOLERANCE_M = 0.015  # between a block and the one under it: half a block, its centre of mass still supported
Z_TOLERANCE_M = 0.006


class BuildTower(Task):
    name = "build_tower"
    capability = "long_horizon"
    step_limit = 1200
    instruction_template = "Build a tower: {c1} at the bottom, then {c2}, {c3}, {c4} on top."
    recipe = (
        "Choose a spot both arms reach (the middle of the table) and bring the bottom block there. Then, in the "
        "stated order, grasp the next block from above with the arm on its side, lift it higher than the tower, "
        "carry it over the tower turned to the faces below, lower it until it rests on top, open the gripper and lift "
        "the hand away. The finished tower must stand on its own, every block on the one named before it."
    )
    score_ladder = (
        (0.25, "a block is held"),
        (0.5, "the second block rests on the bottom block"),
        (0.75, "three blocks stand in order"),
        (1.0, "all four blocks stand in order, aligned and released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, LEVELS)
        objects = [
            self.rest_object(
                f"block_{i}", "block", color, (BLOCK_M,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
            )
            for i, color in enumerate(colors)
        ]
        return place_all(self, rng, objects), {f"c{i + 1}": color for i, color in enumerate(colors)}

    def _levels_in_order(self, view: TaskView) -> int:
        """How many blocks stand in order from block_0 on the table upwards (0 if block_0 is not on the table)."""
        if not view.touching_table("block_0") or abs(self.lifted_by(view, "block_0")) > 0.005:
            return 0
        levels = 1
        for i in range(1, LEVELS):
            upper, lower = view.object_pos(f"block_{i}"), view.object_pos(f"block_{i - 1}")
            aligned = math.hypot(*(upper[:2] - lower[:2])) < XY_TOLERANCE_M
            on_top = abs(upper[2] - lower[2] - BLOCK_M) < Z_TOLERANCE_M
            if not (aligned and on_top and not view.touching_table(f"block_{i}")):
                break
            levels += 1
        return levels

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper(f"block_{i}", a) for i in range(LEVELS) for a in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._levels_in_order(view) == LEVELS and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        levels = self._levels_in_order(view)
        if levels >= 3:
            return 0.75
        if levels == 2:
            return 0.5
        return 0.25 if self._held(view) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        base = layout.object("block_0")
        x, y = self._free_spot(layout, world)
        quat = (math.cos(base.yaw_rad / 2), 0, 0, math.sin(base.yaw_rad / 2))
        for i in range(LEVELS):
            world.set_object_pose(f"block_{i}", (x, y, base.pos_m[2] + i * BLOCK_M), quat)

    def _free_spot(self, layout: Layout, world: GoalWriter) -> tuple[float, float]:
        """The point of the workspace farthest from the other objects and from under the grasp points (at home the
        fingers hang lower than a finished tower's top)."""
        others = [o.pos_m[:2] for o in layout.objects if not o.name.startswith("block_")]
        others += [tuple(world.tcp_pos(arm)[:2]) for arm in ("left", "right")]
        ws = self.workspace
        grid = [(gx, gy) for gx in np.linspace(*ws.x_m, 22) for gy in np.linspace(*ws.y_m, 7)]
        return max(grid, key=lambda p: min(math.dist(p, o) for o in others))
