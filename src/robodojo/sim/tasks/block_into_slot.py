"""Block into slot: set a block down into a tray's pocket only a few millimetres larger than the block."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import SLOT_FLOOR_M, ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BLOCK_SIZE_M = (0.03, 0.06, 0.035)  # x (the fingers close across it), y (long), height
CLEARANCE_M = 0.004  # the pocket is this much wider and longer than the block: 2 mm a side
WALL_M = 0.012
TRAY_HEIGHT_M = 0.03  # the rim's height above the table: the pocket is 2.5 cm deep, the block 3.5 cm tall
TRAY_SIZE_M = (
    BLOCK_SIZE_M[0] + CLEARANCE_M + 2 * WALL_M,
    BLOCK_SIZE_M[1] + CLEARANCE_M + 2 * WALL_M,
    BLOCK_SIZE_M[0] + CLEARANCE_M,
    BLOCK_SIZE_M[1] + CLEARANCE_M,
    TRAY_HEIGHT_M,
)
MAX_YAW_RAD = 0.5  # both lie with their x axis within this of the table's, where the wrist turns to them easily
NEAR_M = 0.03
MIN_DISTANCE_M = 0.14  # between the block's and the tray's centres: the open fingers clear the tray at the pick
MAX_TRIES = 100
# Both objects on one side of the table (which side varies with the seed), where that side's arm reaches them both
# and the head camera sees them whole.
SIDE_REGIONS = (Workspace(x_m=(-0.3, -0.02), y_m=(-0.31, -0.13)), Workspace(x_m=(0.02, 0.3), y_m=(-0.31, -0.13)))


def in_opening(view: TaskView, name: str, fixture: str, opening_xy_m: tuple[float, float]) -> bool:
    """Whether the object's centre lies over the fixture's opening (in the fixture's frame: |x|, |y| within half
    the opening's sides)."""
    R = matrix_from_quat(view.object_quat(fixture))
    local = R.T @ (view.object_pos(name) - view.object_pos(fixture))
    return abs(float(local[0])) < opening_xy_m[0] / 2 and abs(float(local[1])) < opening_xy_m[1] / 2


class BlockIntoSlot(Task):
    name = "block_into_slot"
    capability = "precise"
    step_limit = 600
    instruction_template = "Put the {color} block into the slot of the {tray_color} tray."
    recipe = (
        "The tray's pocket is only 4 mm longer and wider than the block, with a notch in the middle of each long "
        "side for the fingers. Measure the tray (its centre and the direction of its long side) and the block while "
        "nothing covers them. Grasp the block from above, fingers closing across its narrow side, with the grasp "
        "point about 3 cm above its underside (the fingertips 1 cm above it). Lift it, turn it so its long side "
        "runs along the pocket's, carry it over the pocket's centre (the fingers over the notches), lower it into "
        "the pocket until it rests on the pocket's floor and open the gripper. It counts when the block's centre "
        "lies over the pocket and below its rim, released."
    )
    score_ladder = (
        (0.25, "a gripper holds the block"),
        (0.5, "a gripper holds the block with its centre within 3 cm (sideways) of the pocket's centre"),
        (0.75, "the block's centre lies over the pocket (at any height)"),
        (1.0, "the block lies in the pocket, its centre below the rim, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, tray_color = pick_colors(rng, 2)
        region = SIDE_REGIONS[int(rng.integers(2))]
        block = self.rest_object(
            "block", "block", color, BLOCK_SIZE_M, (0, 0), yaw=rng.uniform(-MAX_YAW_RAD, MAX_YAW_RAD)
        )
        tray = self.rest_object(
            "tray", "slot_fixture", tray_color, TRAY_SIZE_M, (0, 0), yaw=rng.uniform(-MAX_YAW_RAD, MAX_YAW_RAD)
        )
        for _ in range(MAX_TRIES):
            placed = place_all(self, rng, [block, tray], region=region)
            if math.dist(placed[0].pos_m[:2], placed[1].pos_m[:2]) >= MIN_DISTANCE_M:
                return placed, {"color": color, "tray_color": tray_color}
        raise ConfigError(f"task {self.name!r}: could not place the tray {MIN_DISTANCE_M} m from the block")

    def _over_pocket(self, view: TaskView) -> bool:
        return in_opening(view, "block", "tray", (TRAY_SIZE_M[2], TRAY_SIZE_M[3]))

    def _below_rim(self, view: TaskView) -> bool:
        rim_z = view.object_pos("tray")[2] + TRAY_HEIGHT_M / 2
        return bool(view.object_pos("block")[2] < rim_z)

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("block", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._over_pocket(view) and self._below_rim(view) and not self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._over_pocket(view):
            return 0.75
        held = self._held(view)
        near = math.dist(view.object_pos("block")[:2], view.object_pos("tray")[:2]) < NEAR_M
        if held and near:
            return 0.5
        return 0.25 if held else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        tray = layout.object("tray")
        x, y, z = tray.pos_m
        floor_z = z - TRAY_HEIGHT_M / 2 + SLOT_FLOOR_M
        yaw = tray.yaw_rad
        world.set_object_pose(
            "block", (x, y, floor_z + BLOCK_SIZE_M[2] / 2), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2))
        )
