"""Match tile: the opponent has laid a white tile showing a picture; put your tile with the same picture next to it.

The pictures are textures (robodojo.sim.labels), on the white tile (flat, fixed) and on the top of each of your
tiles (tall coloured tiles, turned any way): the instruction names no picture, so the choice is made from the
camera images alone, and the chosen tile is then placed beside the white one.
"""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat
from robodojo.sim.labels import SYMBOLS
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

TILE_M = (0.045, 0.045, 0.035)  # a player's tile: its picture about 3 cm across, tall enough to grasp
OPPONENT_HALF_M = 0.035  # the white tile: a 7 cm square, flat on the table
OPPONENT_HEIGHT_M = 0.002
OPPONENT_COLOR = "white"
OPPONENT_MAX_YAW_RAD = math.radians(20)
TILE_COUNT = 3
# "Next to": the tile's centre between these distances from the white tile's centre (beside it, not over it).
NEXT_TO_M = (OPPONENT_HALF_M + 0.01, 0.1)
START_AWAY_M = 0.13  # every tile starts at least this far from the white tile's centre
MAX_TILT_DEG = 10.0
# The white tile lies in the middle of the far half of the workspace, where both arms reach around it; the player's
# tiles lie around it, clear of where the arms park at the table's sides (x = +-0.45).
OPPONENT_REGION = Workspace(x_m=(-0.08, 0.08), y_m=(-0.17, -0.11))
TILE_REGION = Workspace(x_m=(-0.32, 0.32), y_m=(-0.32, -0.1))
GOAL_OFFSET_M = (0.0, -0.075)  # where put_in_goal_state lays the tile: just in front of the white one
MAX_TRIES = 200


class MatchTile(Task):
    name = "match_tile"
    capability = "open"
    step_limit = 500
    instruction_template = "Place your tile that shows the same picture as the {opponent} tile right next to it."
    recipe = (
        "The flat white tile shows a picture; each of your coloured tiles shows one on its top face. Compare the "
        "white tile's picture with each of yours (turned by quarter turns too: the tiles lie turned any way) and "
        "take the one with the same picture: grasp it from above with the arm on its side, lift it, carry it to a "
        "free spot beside the white tile (its centre 5 to 10 cm from the white tile's, not over it), lower it until "
        "it stands on the table and open the gripper. Leave the other tiles where they are."
    )
    score_ladder = (
        (0.25, "the matching tile is held between the fingers"),
        (0.5, "the matching tile is held and lifted 3 cm"),
        (0.75, "the matching tile is within 10 cm of the white tile's centre"),
        (
            1.0,
            "the matching tile stands on the table beside the white tile, released, no other tile next to it (success)",
        ),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        symbols = [str(s) for s in rng.choice(SYMBOLS, size=TILE_COUNT, replace=False)]
        colors = pick_colors(rng, TILE_COUNT)
        opponent = _labelled(
            self.rest_object(
                "opponent",
                "pad",
                OPPONENT_COLOR,
                (OPPONENT_HALF_M, OPPONENT_HEIGHT_M),
                (0, 0),
                yaw=rng.uniform(-OPPONENT_MAX_YAW_RAD, OPPONENT_MAX_YAW_RAD),
            ),
            symbols[0],
        )
        tiles = [
            _labelled(
                self.rest_object(
                    "target" if i == 0 else f"other_{i}",
                    "block",
                    color,
                    TILE_M,
                    (0, 0),
                    yaw=rng.uniform(-math.pi, math.pi),
                    mass=0.05,
                ),
                symbol,
            )
            for i, (symbol, color) in enumerate(zip(symbols, colors, strict=True))
        ]
        for _ in range(MAX_TRIES):
            try:
                placed_opponent = place_all(self, rng, [opponent], region=OPPONENT_REGION)
                placed = place_all(self, rng, tiles, region=TILE_REGION)
            except ConfigError:
                continue
            centre = placed_opponent[0].pos_m[:2]
            if all(math.dist(t.pos_m[:2], centre) >= START_AWAY_M for t in placed):
                # The white tile's colour is the instruction's only slot: the cluttered variant keeps white off the
                # distractors, so the one white flat square stays the opponent's tile.
                return placed_opponent + placed, {"opponent": OPPONENT_COLOR}
        raise ConfigError(f"task {self.name!r}: no room for the tiles around the white tile")

    @staticmethod
    def _tiles(layout: Layout) -> list[str]:
        return [o.name for o in layout.objects if o.kind == "block" and o.name != "opponent" and o.label is not None]

    @staticmethod
    def _distance(view: TaskView, name: str) -> float:
        return math.dist(view.object_pos(name)[:2], view.object_pos("opponent")[:2])

    def _next_to(self, view: TaskView, name: str) -> bool:
        return NEXT_TO_M[0] <= self._distance(view, name) <= NEXT_TO_M[1]

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("target", arm) for arm in view.arm_names)

    def _standing(self, view: TaskView) -> bool:
        axis = matrix_from_quat(view.object_quat("target"))[:, 2]
        upright = float(axis[2]) > math.cos(math.radians(MAX_TILT_DEG))
        return upright and view.touching_table("target")

    def success(self, layout: Layout, view: TaskView) -> bool:
        others_away = not any(self._next_to(view, n) for n in self._tiles(layout) if n != "target")
        placed = self._next_to(view, "target") and self._standing(view) and not self._held(view)
        return placed and others_away

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._distance(view, "target") <= NEXT_TO_M[1]:
            return 0.75
        if self._held(view):
            return 0.5 if self.lifted_by(view, "target") >= 0.03 else 0.25
        return 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        x, y, _ = layout.object("opponent").pos_m
        target = layout.object("target")
        half_yaw = target.yaw_rad / 2
        # Settled as at the start: the tile sinks a fraction of a millimetre into the table (its contact).
        world.set_object_pose(
            "target",
            (x + GOAL_OFFSET_M[0], y + GOAL_OFFSET_M[1], target.pos_m[2] - 0.0002),
            (math.cos(half_yaw), 0, 0, math.sin(half_yaw)),
        )


def _labelled(obj: ObjectSpec, label: str) -> ObjectSpec:
    return ObjectSpec(**{**obj.__dict__, "label": label})
