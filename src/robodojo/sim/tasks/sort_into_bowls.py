"""Sort into bowls: put every block in one bowl and every cylinder in the other (sorting by a stated category)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BOWL_SIZE_M = (0.06, 0.04)  # radius, height: two small objects fit side by side inside
BOWL_WALL_M = 0.006  # robodojo.sim.objects builds a bowl's wall this thick
BOWL_BASE_M = 0.008  # and its base this thick
SORTED_KINDS = ("block", "cylinder")  # each has its own bowl, named "<kind>_bowl"
BLOCK_M = 0.04
CYLINDER_SIZE_M = (0.02, 0.055)  # radius, height: taller than a block, so the two kinds also differ in height
# Both arms reach over a bowl centred anywhere in this middle band, fingers down 10 cm above the table (IK map of the
# ARX X5 pair: nearer the robot an arm reaches less far across); the objects lie anywhere in the workspace around.
BOWL_REGION = Workspace(x_m=(-0.075, 0.075), y_m=(-0.31, -0.17))
MAX_TRIES = 200
# Goal-state offsets [m] of the first and second object put into one bowl (side by side along y).
GOAL_OFFSETS_M = ((0.0, -0.024), (0.0, 0.024))


class SortIntoBowls(Task):
    name = "sort_into_bowls"
    capability = "open"
    step_limit = 900
    instruction_template = (
        "Sort the {objects} objects: put every block in the {block_bowl} bowl and every cylinder in the "
        "{cylinder_bowl} bowl."
    )
    recipe = (
        "Find the two bowls by their colours and every object on the table, and tell blocks (square top, flat "
        "faces) from cylinders (round top). One object at a time: grasp it from above with the arm on its side, lift "
        "it above the bowl rims, carry it over its bowl, lower it until it is just above the rim and open the "
        "gripper so it drops in. Leave room beside an object already in a bowl. Every object must end inside its "
        "bowl, released."
    )
    score_ladder = (
        (0.25, "an object is held"),
        (0.5, "one object rests inside its bowl"),
        (0.75, "all but one object rest inside their bowls and the last one is held"),
        (1.0, "every object rests inside its bowl, released (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        n_objects = int(rng.integers(2, 4))
        colors = pick_colors(rng, 2 + n_objects)
        block_bowl, cylinder_bowl = colors[:2]
        kinds = list(SORTED_KINDS) + [str(k) for k in rng.choice(SORTED_KINDS, size=n_objects - 2)]
        kinds = [str(k) for k in rng.permutation(kinds)]
        bowls = [
            self.rest_object("block_bowl", "bowl", block_bowl, BOWL_SIZE_M, (0, 0), mass=0.15),
            self.rest_object("cylinder_bowl", "bowl", cylinder_bowl, BOWL_SIZE_M, (0, 0), mass=0.15),
        ]
        objects = []
        for i, (kind, color) in enumerate(zip(kinds, colors[2:], strict=True)):
            size = (BLOCK_M,) * 3 if kind == "block" else CYLINDER_SIZE_M
            yaw = rng.uniform(-math.pi / 4, math.pi / 4) if kind == "block" else 0.0
            objects.append(self.rest_object(f"{kind}_{i}", kind, color, size, (0, 0), yaw=yaw, mass=0.06))
        placed = _place_bowls_then_objects(self, rng, bowls, objects)
        names = colors[2:]
        slots = {
            "objects": ", ".join(names[:-1]) + " and " + names[-1],
            "block_bowl": block_bowl,
            "cylinder_bowl": cylinder_bowl,
        }
        # Each object's colour is a slot of its own too (unused by the template, shown through {objects}): the
        # cluttered variant keeps its distractors off every slot's colour, so "the red objects" stay the task's own.
        slots |= {f"object_{i}": color for i, color in enumerate(names)}
        return placed, slots

    @staticmethod
    def _items(layout: Layout) -> list[tuple[str, str]]:
        """(object, the bowl it belongs in) for every sorted object of the layout."""
        return [
            (obj.name, f"{obj.kind}_bowl")
            for obj in layout.objects
            if obj.kind in SORTED_KINDS and obj.name.startswith(f"{obj.kind}_") and obj.name != f"{obj.kind}_bowl"
        ]

    def _inside(self, view: TaskView, name: str, bowl: str) -> bool:
        """The object's centre lies within the bowl's inner wall and below its rim, in the bowl's own frame."""
        R = matrix_from_quat(view.object_quat(bowl))
        local = R.T @ (view.object_pos(name) - view.object_pos(bowl))
        radial = math.hypot(local[0], local[1])
        return radial < BOWL_SIZE_M[0] - BOWL_WALL_M and BOWL_BASE_M < local[2] < BOWL_SIZE_M[1]

    def _sorted_count(self, layout: Layout, view: TaskView) -> tuple[int, int]:
        items = self._items(layout)
        released = [not any(view.touching_gripper(n, a) for a in view.arm_names) for n, _ in items]
        inside = sum(self._inside(view, n, b) and free for (n, b), free in zip(items, released, strict=True))
        return inside, len(items)

    def success(self, layout: Layout, view: TaskView) -> bool:
        inside, total = self._sorted_count(layout, view)
        return inside == total

    def score(self, layout: Layout, view: TaskView) -> float:
        inside, total = self._sorted_count(layout, view)
        if inside == total:
            return 1.0
        held = any(view.touching_gripper(n, a) for n, _ in self._items(layout) for a in view.arm_names)
        if inside == total - 1 and held:
            return 0.75
        if inside >= 1:
            return 0.5
        return 0.25 if held else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        used = {"block_bowl": 0, "cylinder_bowl": 0}
        for name, bowl in self._items(layout):
            bx, by, bz = layout.object(bowl).pos_m
            dx, dy = GOAL_OFFSETS_M[used[bowl]]
            used[bowl] += 1
            obj = layout.object(name)
            world.set_object_pose(name, (bx + dx, by + dy, bz + BOWL_BASE_M + obj.height_m / 2 + 0.001))


def _place_bowls_then_objects(
    task: Task, rng: np.random.Generator, bowls: list[ObjectSpec], objects: list[ObjectSpec]
) -> list[ObjectSpec]:
    """Bowls in the middle band both arms reach, then the objects anywhere else in the workspace, not overlapping."""
    for _ in range(MAX_TRIES):
        try:  # the first bowl in the band's middle can leave no room for the second: start again
            placed_bowls = place_all(task, rng, bowls, region=BOWL_REGION)
        except ConfigError:
            continue
        placed = place_all(task, rng, objects)
        if all(_apart(o, b) for o in placed for b in placed_bowls):
            return placed_bowls + placed
    raise ConfigError(f"task {task.name!r}: no room for the objects around the bowls")


def _apart(a: ObjectSpec, b: ObjectSpec, gap_m: float = 0.03) -> bool:
    return math.dist(a.pos_m[:2], b.pos_m[:2]) >= a.footprint_radius_m + b.footprint_radius_m + gap_m
