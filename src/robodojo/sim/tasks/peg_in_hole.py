"""Peg in hole: insert a square peg at least 2 cm deep into a square hole only a few millimetres wider."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all
from robodojo.sim.tasks.block_into_slot import SIDE_REGIONS, in_opening

PEG_SIZE_M = (0.025, 0.025, 0.08)
PEG_MASS_KG = 0.05
CLEARANCE_M = 0.004  # the hole is this much wider than the peg: 2 mm a side
HOLE_M = PEG_SIZE_M[0] + CLEARANCE_M
BLOCK_SIDE_M = 0.08
BLOCK_HEIGHT_M = 0.03  # the hole goes through it, down to the table
FIXTURE_SIZE_M = (BLOCK_SIDE_M, BLOCK_SIDE_M, HOLE_M, HOLE_M, BLOCK_HEIGHT_M)
DEPTH_M = 0.02  # how deep the peg's underside must be below the rim
NEAR_M = 0.01
MIN_DISTANCE_M = 0.15  # between the peg's and the block's centres: the open fingers clear the block at the pick
MAX_TRIES = 100


class PegInHole(Task):
    name = "peg_in_hole"
    capability = "precise"
    step_limit = 600
    instruction_template = "Insert the {color} peg into the square hole of the {block_color} block, at least 2 cm deep."
    recipe = (
        "The hole goes through the block and is only 4 mm wider than the square peg (2 mm a side), so the peg "
        "must arrive upright, centred and turned square to the hole. Measure the block (its centre is the hole's, "
        "and the direction of its sides) and the peg while nothing covers them. Grasp the peg from above near its "
        "top (fingers closing across two faces, the grasp point about 1.5 cm below its top, so most of the peg "
        "hangs below the fingertips), lift it until its underside clears the block, turn it square to the hole, "
        "carry it over the hole's centre and lower it straight down into the hole. If it stops on the rim, lift "
        "it a little and try again a millimetre or two to the side. It counts when the peg's underside is at "
        "least 2 cm below the block's top, inside the hole."
    )
    score_ladder = (
        (0.25, "a gripper holds the peg"),
        (0.5, "the peg's centre is within 1 cm (sideways) of the hole's centre"),
        (0.75, "the peg's tip is in the hole (its centre over the hole, its underside below the rim)"),
        (1.0, "the peg's underside is at least 2 cm below the rim, inside the hole (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        color, block_color = pick_colors(rng, 2)
        region = SIDE_REGIONS[int(rng.integers(2))]
        quarter = math.pi / 4
        peg = self.rest_object(
            "peg", "block", color, PEG_SIZE_M, (0, 0), yaw=rng.uniform(-quarter, quarter), mass=PEG_MASS_KG
        )
        block = self.rest_object(
            "hole_block", "hole_fixture", block_color, FIXTURE_SIZE_M, (0, 0), yaw=rng.uniform(-quarter, quarter)
        )
        for _ in range(MAX_TRIES):
            placed = place_all(self, rng, [peg, block], region=region)
            if math.dist(placed[0].pos_m[:2], placed[1].pos_m[:2]) >= MIN_DISTANCE_M:
                return placed, {"color": color, "block_color": block_color}
        raise ConfigError(f"task {self.name!r}: could not place the block {MIN_DISTANCE_M} m from the peg")

    def _depth_m(self, view: TaskView) -> float:
        """How far the peg's underside is below the rim (negative above it)."""
        rim_z = view.object_pos("hole_block")[2] + BLOCK_HEIGHT_M / 2
        return float(rim_z - (view.object_pos("peg")[2] - PEG_SIZE_M[2] / 2))

    def _over_hole(self, view: TaskView) -> bool:
        return in_opening(view, "peg", "hole_block", (HOLE_M, HOLE_M))

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._over_hole(view) and self._depth_m(view) >= DEPTH_M

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._over_hole(view) and self._depth_m(view) > 0:
            return 0.75
        if math.dist(view.object_pos("peg")[:2], view.object_pos("hole_block")[:2]) < NEAR_M:
            return 0.5
        return 0.25 if any(view.touching_gripper("peg", arm) for arm in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        block = layout.object("hole_block")
        x, y, z = block.pos_m
        yaw = block.yaw_rad
        # Down the hole to the table, as a released peg ends.
        world.set_object_pose(
            "peg", (x, y, z - BLOCK_HEIGHT_M / 2 + PEG_SIZE_M[2] / 2), (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2))
        )
