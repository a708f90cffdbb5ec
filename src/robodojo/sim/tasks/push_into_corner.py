"""Push into corner: slide a block along the table, without grasping it, into the corner of an L-shaped fence."""

from __future__ import annotations

import math

import numpy as np

from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors

BLOCK_M = 0.04
WALL_M = 0.015
FENCE_ARM_M = 0.12  # each wall's length along the outside
FENCE_HEIGHT_M = 0.04
FENCE_SIZE_M = (FENCE_ARM_M, FENCE_ARM_M, FENCE_ARM_M - WALL_M, FENCE_ARM_M - WALL_M, FENCE_HEIGHT_M)
# The block's centre counts as against a wall within this of the wall's face: half the block, turned up to about
# 25 deg to the wall, plus a few millimetres.
AGAINST_M = BLOCK_M / 2 + 0.008
MOVED_M = 0.03
NEAR_M = 0.06
MAX_BLOCK_YAW_RAD = 0.4
MAX_FENCE_YAW_RAD = 0.2
# The inner corner's region per side of the table (x, y): the walls stand on the far side and the side towards the
# table's middle, the open side faces the robot and the table's edge, where that side's arm pushes from.
CORNER_REGIONS = (((-0.12, -0.04), (-0.17, -0.13)), ((0.04, 0.12), (-0.17, -0.13)))
# The fence's yaw per side: its -y wall to the far side and its -x wall towards the middle.
SIDE_YAW_RAD = (math.pi, -math.pi / 2)
BLOCK_OFFSET_M = (0.055, 0.1)  # the block's centre from the inner corner, along each wall (in the fence's frame)


def _rot(yaw: float) -> np.ndarray:
    return np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])


class PushIntoCorner(Task):
    name = "push_into_corner"
    capability = "dynamic"
    step_limit = 600
    instruction_template = "Push the {color} block into the corner of the {fence_color} fence without picking it up."
    recipe = (
        "The fence is an L of two walls; its corner is where they meet. Measure the block and the fence while "
        "nothing covers them. Close the gripper and lower it to about 2 cm above the table behind the block, on "
        "the side away from the corner, then move it straight towards the corner so the block slides along the "
        "table until it stops against the walls. Lift the gripper, look again, and push again from where the "
        "block is if it does not touch both walls. It counts when the block rests on the table against both "
        "walls, the gripper away from it."
    )
    score_ladder = (
        (0.25, "a gripper is within 6 cm of the block"),
        (0.5, "the block has moved 3 cm closer to the corner"),
        (0.75, "the block is against one of the walls"),
        (1.0, "the block rests against both walls, the gripper away from it (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, fence_color = pick_colors(rng, 2)
        side = int(rng.integers(2))
        (x0, x1), (y0, y1) = CORNER_REGIONS[side]
        corner = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
        yaw = SIDE_YAW_RAD[side] + rng.uniform(-MAX_FENCE_YAW_RAD, MAX_FENCE_YAW_RAD)
        R = _rot(yaw)
        inner = np.array([-FENCE_SIZE_M[0] / 2 + WALL_M, -FENCE_SIZE_M[1] / 2 + WALL_M])
        centre = corner - R @ inner
        offset = rng.uniform(*BLOCK_OFFSET_M, size=2)
        block_xy = corner + R @ offset
        fence = self.rest_object("fence", "corner_fixture", fence_color, FENCE_SIZE_M, centre.tolist(), yaw=yaw)
        block = self.rest_object(
            "block",
            "block",
            color,
            (BLOCK_M,) * 3,
            block_xy.tolist(),
            yaw=yaw + rng.uniform(-MAX_BLOCK_YAW_RAD, MAX_BLOCK_YAW_RAD),
        )
        return [block, fence], {"color": color, "fence_color": fence_color}

    @staticmethod
    def _from_corner(view: TaskView, pos: np.ndarray) -> np.ndarray:
        """(along the -y wall, along the -x wall) [m]: a point's distances from the two walls' inner faces."""
        R = matrix_from_quat(view.object_quat("fence"))
        local = R.T @ (pos - view.object_pos("fence"))
        return np.array([local[0] + FENCE_SIZE_M[0] / 2 - WALL_M, local[1] + FENCE_SIZE_M[1] / 2 - WALL_M])

    def _walls_touched(self, view: TaskView) -> int:
        u, v = self._from_corner(view, view.object_pos("block"))
        return int(u < AGAINST_M) + int(v < AGAINST_M)

    def _resting(self, view: TaskView) -> bool:
        return view.touching_table("block") and abs(self.lifted_by(view, "block")) < 0.005

    def _touched(self, view: TaskView) -> bool:
        return any(view.touching_gripper("block", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._walls_touched(view) == 2 and self._resting(view) and not self._touched(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._walls_touched(view) >= 1:
            return 0.75
        block = view.object_pos("block")
        now = float(np.linalg.norm(self._from_corner(view, block)))
        start = float(np.linalg.norm(self._from_corner(view, view.initial_pos("block"))))
        if start - now >= MOVED_M:
            return 0.5
        near = min(np.linalg.norm(view.tcp_pos(a) - block) for a in view.arm_names)
        return 0.25 if near < NEAR_M else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        fence = layout.object("fence")
        R = _rot(fence.yaw_rad)
        local = np.array([-FENCE_SIZE_M[0] / 2 + WALL_M, -FENCE_SIZE_M[1] / 2 + WALL_M]) + BLOCK_M / 2 + 0.001
        x, y = np.array(fence.pos_m[:2]) + R @ local
        yaw = fence.yaw_rad
        z = layout.object("block").pos_m[2]
        world.set_object_pose("block", (x, y, z), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)))
