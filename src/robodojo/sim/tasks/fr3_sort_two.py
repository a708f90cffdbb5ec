"""FR3 sort two: the single-arm Franka puts each of two blocks on the flat square of its own colour (two
pick-and-place steps in a row)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BLOCK_M = 0.04
PAD_HALF_M = 0.05
COUNT = 2
MAX_TRIES = 200
MIN_SEPARATION_M = 0.12  # between a block and its own square at the start: each one has to be carried
REST_TOLERANCE_M = 0.005  # a block resting on the table is within this of its starting height


class Fr3SortTwo(Task):
    name = "fr3_sort_two"
    capability = "long_horizon"
    robot = "fr3"
    step_limit = 900
    instruction_template = "Put the {c1} and {c2} blocks each on the square of its own colour."
    recipe = (
        "Find the two blocks and the two flat coloured squares (measure the squares while nothing covers them). One "
        "block at a time: grasp it from above, lift it clear of the other block, carry it over the square of the "
        "same colour, lower it until it rests on the table inside the square, open the gripper and lift the hand "
        "away. Then look again and move any block that is not inside its square. It counts when both blocks rest "
        "on the table inside their squares, released."
    )
    score_ladder = (
        (0.25, "a block is held"),
        (0.5, "one block rests on its square"),
        (0.75, "one block rests on its square and the other is held"),
        (1.0, "both blocks rest on their squares, released (success)"),
    )
    workspace = Workspace(x_m=(-0.28, 0.28), y_m=(-0.16, 0.08))  # top-down grasps reachable (fr3_pick_cube's, inset)

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, COUNT)
        objects = [self.rest_object(f"pad_{i}", "pad", c, (PAD_HALF_M, 0.001), (0, 0)) for i, c in enumerate(colors)]
        objects += [
            self.rest_object(
                f"block_{i}", "block", c, (BLOCK_M,) * 3, (0, 0), yaw=rng.uniform(-math.pi / 4, math.pi / 4)
            )
            for i, c in enumerate(colors)
        ]
        for _ in range(MAX_TRIES):
            placed = place_all(self, rng, objects)
            pads, blocks = placed[:COUNT], placed[COUNT:]
            if all(math.dist(p.pos_m[:2], b.pos_m[:2]) >= MIN_SEPARATION_M for p, b in zip(pads, blocks, strict=True)):
                return placed, {f"c{i + 1}": c for i, c in enumerate(colors)}
        raise ConfigError(f"task {self.name!r}: could not place the squares {MIN_SEPARATION_M} m from their blocks")

    def _held(self, view: TaskView, i: int) -> bool:
        return any(view.touching_gripper(f"block_{i}", a) for a in view.arm_names)

    def _on_pad(self, view: TaskView, i: int) -> bool:
        block, pad = view.object_pos(f"block_{i}"), view.object_pos(f"pad_{i}")
        inside = bool(np.all(np.abs(block[:2] - pad[:2]) < PAD_HALF_M))
        resting = view.touching_table(f"block_{i}") and abs(self.lifted_by(view, f"block_{i}")) < REST_TOLERANCE_M
        return inside and resting and not self._held(view, i)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return all(self._on_pad(view, i) for i in range(COUNT))

    def score(self, layout: Layout, view: TaskView) -> float:
        done = [self._on_pad(view, i) for i in range(COUNT)]
        if all(done):
            return 1.0
        held = [self._held(view, i) for i in range(COUNT)]
        if any(done[i] and held[1 - i] for i in range(COUNT)):
            return 0.75
        if any(done):
            return 0.5
        return 0.25 if any(held) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        for i in range(COUNT):
            x, y, _ = layout.object(f"pad_{i}").pos_m
            world.set_object_pose(f"block_{i}", (x, y, layout.object(f"block_{i}").pos_m[2]))
