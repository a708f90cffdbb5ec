"""Sort by colour: put each of three blocks on the flat square of its own colour (three pick-and-place steps)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors, place_all

BLOCK_M = 0.04
PAD_HALF_M = 0.05
COUNT = 3
MAX_TRIES = 200
MIN_SEPARATION_M = 0.12  # between a block and its own square at the start: each one has to be carried


class SortByColor(Task):
    name = "sort_by_color"
    capability = "long_horizon"
    step_limit = 1500
    instruction_template = "Put the {c1}, {c2} and {c3} blocks each on the square of its own colour."
    recipe = (
        "Find the three blocks and the three flat coloured squares. One block at a time: grasp it from above with "
        "the arm on its side, lift it, carry it over the square of the same colour, lower it until it rests on the "
        "table inside the square, open the gripper and lift the hand away. A square out of that arm's reach: set "
        "the block down in the middle of the table and take it on with the other arm."
    )
    score_ladder = (
        (0.25, "a block is held"),
        (0.5, "one block rests on its square"),
        (0.75, "two blocks rest on their squares"),
        (1.0, "every block rests on its square, released (success)"),
    )

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

    def _on_pad(self, view: TaskView, i: int) -> bool:
        block, pad = view.object_pos(f"block_{i}"), view.object_pos(f"pad_{i}")
        inside = bool(np.all(np.abs(block[:2] - pad[:2]) < PAD_HALF_M))
        released = not any(view.touching_gripper(f"block_{i}", a) for a in view.arm_names)
        return (
            inside
            and released
            and view.touching_table(f"block_{i}")
            and abs(self.lifted_by(view, f"block_{i}")) < 0.005
        )

    def success(self, layout: Layout, view: TaskView) -> bool:
        return all(self._on_pad(view, i) for i in range(COUNT))

    def score(self, layout: Layout, view: TaskView) -> float:
        done = sum(self._on_pad(view, i) for i in range(COUNT))
        if done == COUNT:
            return 1.0
        if done:
            return (0.5, 0.75)[done - 1]
        held = any(view.touching_gripper(f"block_{i}", a) for i in range(COUNT) for a in view.arm_names)
        return 0.25 if held else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        for i in range(COUNT):
            x, y, _ = layout.object(f"pad_{i}").pos_m
            world.set_object_pose(f"block_{i}", (x, y, layout.object(f"block_{i}").pos_m[2]))
