"""Pick matching picture: a flat card shows a picture; pick up the block whose top shows the same picture.

The pictures are textures (robodojo.sim.labels: a circle, a ring, a triangle, a star, a cross): the instruction names
neither the picture nor the block, so the choice is made from the camera images alone, by comparing the card with
each block's top face (the blocks are turned any way on the table, their pictures with them).
"""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.sim.labels import SYMBOLS
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BLOCK_M = 0.045  # the picture on its top is about 3 cm across
CARD_HALF_M = 0.04  # an 8 cm square card
CARD_HEIGHT_M = 0.002
CARD_COLOR = "white"
CARD_MAX_YAW_RAD = math.radians(20)
BLOCK_COUNT = 3
LIFT_M = 0.10
NEAR_M = 0.05
# The card lies in the middle of the far half of the workspace, the blocks around it, clear of where the arms park
# at the table's sides (x = +-0.45), so the head camera sees them all.
CARD_REGION = Workspace(x_m=(-0.12, 0.12), y_m=(-0.16, -0.1))
BLOCK_REGION = Workspace(x_m=(-0.32, 0.32), y_m=(-0.32, -0.1))
MAX_TRIES = 100


class PickMatchingPicture(Task):
    name = "pick_matching_picture"
    capability = "open"
    step_limit = 400
    instruction_template = "Pick up the block showing the same picture as the {card} card and lift it 10 cm."
    recipe = (
        "A flat card on the table shows a picture; each block shows a picture on its top face. Compare the card's "
        "picture with each block's (the blocks may be turned: compare them turned by quarter turns too) and pick the "
        "block with the same one: grasp it from above with the arm on its side, fingers across two opposite faces, "
        "and lift it straight up at least 10 cm. Leave the other blocks where they are."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm of the matching block"),
        (0.5, "the matching block is held between the fingers"),
        (0.75, "the matching block is lifted 3 cm"),
        (1.0, "the matching block is lifted 10 cm (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        symbols = [str(s) for s in rng.choice(SYMBOLS, size=BLOCK_COUNT, replace=False)]
        colors = pick_colors(rng, BLOCK_COUNT)
        card = self._labelled(
            self.rest_object(
                "card",
                "pad",
                CARD_COLOR,
                (CARD_HALF_M, CARD_HEIGHT_M),
                (0, 0),
                yaw=rng.uniform(-CARD_MAX_YAW_RAD, CARD_MAX_YAW_RAD),
            ),
            symbols[0],
        )
        blocks = [
            self._labelled(
                self.rest_object(
                    "target" if i == 0 else f"other_{i}",
                    "block",
                    color,
                    (BLOCK_M,) * 3,
                    (0, 0),
                    yaw=rng.uniform(-math.pi, math.pi),
                    mass=0.06,
                ),
                symbol,
            )
            for i, (symbol, color) in enumerate(zip(symbols, colors, strict=True))
        ]
        for _ in range(MAX_TRIES):
            try:
                placed_card = place_all(self, rng, [card], region=CARD_REGION)
                placed = place_all(self, rng, blocks, region=BLOCK_REGION)
            except ConfigError:
                continue
            if all(_apart(b, placed_card[0]) for b in placed):
                # The card's colour is the instruction's only slot: the cluttered variant keeps white off the
                # distractors, so the one white flat square stays the card.
                return placed_card + placed, {"card": CARD_COLOR}
        raise ConfigError(f"task {self.name!r}: no room for the blocks around the card")

    @staticmethod
    def _labelled(obj: ObjectSpec, label: str) -> ObjectSpec:
        return ObjectSpec(**{**obj.__dict__, "label": label})

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self.lifted_by(view, "target") >= LIFT_M

    def score(self, layout: Layout, view: TaskView) -> float:
        lift = self.lifted_by(view, "target")
        if lift >= LIFT_M:
            return 1.0
        held = any(view.touching_gripper("target", a) for a in view.arm_names)
        if held and lift >= 0.03:
            return 0.75
        if held:
            return 0.5
        if any(np.linalg.norm(view.tcp_pos(a) - view.object_pos("target")) < NEAR_M for a in view.arm_names):
            return 0.25
        return 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        target = layout.object("target")
        x, y, z = target.pos_m
        half_yaw = target.yaw_rad / 2
        world.set_object_pose("target", (x, y, z + LIFT_M + 0.02), (math.cos(half_yaw), 0, 0, math.sin(half_yaw)))


def _apart(a: ObjectSpec, b: ObjectSpec, gap_m: float = 0.03) -> bool:
    return math.dist(a.pos_m[:2], b.pos_m[:2]) >= a.footprint_radius_m + b.footprint_radius_m + gap_m
