"""Fill a held bowl: one arm holds a bowl up off the table, the other puts a block into it."""

from __future__ import annotations

import math

import numpy as np

from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors, place_all

BOWL_SIZE_M = (0.065, 0.04)  # outer radius, height (objects.py: 6 mm wall, 8 mm base)
BOWL_WALL_M = 0.006
BOWL_BASE_M = 0.008
BOWL_MASS_KG = 0.05  # a light plastic bowl: held by its wall, a heavier one tips far over in the grip
BLOCK_M = 0.03
BLOCK_MASS_KG = 0.02
LIFT_M = 0.05
# The bowl starts on one side of the table and the block on the other (which side is which varies with the seed);
# the bowl no further out than where the head camera still sees all of it.
BOWL_REGIONS = (Workspace(x_m=(-0.29, -0.15), y_m=(-0.3, -0.14)), Workspace(x_m=(0.15, 0.29), y_m=(-0.3, -0.14)))
BLOCK_REGIONS = (Workspace(x_m=(-0.38, -0.16), y_m=(-0.3, -0.14)), Workspace(x_m=(0.16, 0.38), y_m=(-0.3, -0.14)))


class FillHeldBowl(Task):
    name = "fill_held_bowl"
    capability = "bimanual"
    step_limit = 900
    instruction_template = (
        "Hold the {bowl_color} bowl up with one hand and put the {block_color} block into it with the other."
    )
    recipe = (
        "With the arm on the bowl's side, grasp the bowl's wall on its outer side, fingers straddling the wall and "
        "reaching down near its base (it tips less in the grip), lift it about 8 cm (it sags a little) and hold it "
        "still in the middle of the table. With the other arm, pick the block from above, carry it "
        "over the bowl (away from the holding gripper), lower it to just above the rim and open the gripper so it "
        "drops in. The bowl must stay in the first gripper, 5 cm above the table, with the block inside."
    )
    score_ladder = (
        (0.25, "a gripper holds the bowl"),
        (0.5, "a gripper holds the bowl 5 cm above the table"),
        (0.75, "the bowl is held 5 cm up and the block is held above it"),
        (1.0, "the block lies in the bowl, which a gripper holds 5 cm above the table (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        bowl_color, block_color = pick_colors(rng, 2)
        bowl_side = int(rng.integers(2))
        bowl = self.rest_object("bowl", "bowl", bowl_color, BOWL_SIZE_M, (0, 0), mass=BOWL_MASS_KG)
        block = self.rest_object(
            "block",
            "block",
            block_color,
            (BLOCK_M,) * 3,
            (0, 0),
            yaw=rng.uniform(-math.pi / 4, math.pi / 4),
            mass=BLOCK_MASS_KG,
        )
        placed = place_all(self, rng, [bowl], region=BOWL_REGIONS[bowl_side])
        placed += place_all(self, rng, [block], region=BLOCK_REGIONS[1 - bowl_side])
        return placed, {"bowl_color": bowl_color, "block_color": block_color}

    def _bowl_held_up(self, view: TaskView) -> bool:
        held = any(view.touching_gripper("bowl", arm) for arm in view.arm_names)
        return held and self.lifted_by(view, "bowl") >= LIFT_M and not view.touching_table("bowl")

    def _in_bowl_frame(self, view: TaskView) -> np.ndarray:
        """The block's centre in the bowl's frame (origin the centre of its underside, z along its axis)."""
        bowl = view.object_pos("bowl")
        return matrix_from_quat(view.object_quat("bowl")).T @ (view.object_pos("block") - bowl)

    def _block_inside(self, view: TaskView) -> bool:
        p = self._in_bowl_frame(view)
        inside = math.hypot(p[0], p[1]) < BOWL_SIZE_M[0] - BOWL_WALL_M and 0.0 < p[2] < BOWL_SIZE_M[1]
        return inside and not view.touching_table("block")

    def success(self, layout: Layout, view: TaskView) -> bool:
        released = not any(view.touching_gripper("block", arm) for arm in view.arm_names)
        return self._bowl_held_up(view) and self._block_inside(view) and released

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        if self._bowl_held_up(view):
            p = self._in_bowl_frame(view)
            block_held = any(view.touching_gripper("block", arm) for arm in view.arm_names)
            return 0.75 if block_held and math.hypot(p[0], p[1]) < BOWL_SIZE_M[0] and p[2] > 0.0 else 0.5
        return 0.25 if any(view.touching_gripper("bowl", arm) for arm in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        # The left fingers close on the bowl's wall (the ready pose's fingers open along x, 10+ cm above the table):
        # the wall segment at -x runs through the grasp point, 2 cm under the rim.
        tcp = world.tcp_pos("left")
        centre_x = tcp[0] + BOWL_SIZE_M[0] - BOWL_WALL_M / 2
        bottom_z = tcp[2] - (BOWL_SIZE_M[1] - 0.02)
        world.set_object_pose("bowl", (centre_x, tcp[1], bottom_z))
        world.set_object_pose("block", (centre_x, tcp[1], bottom_z + BOWL_BASE_M + BLOCK_M / 2 + 0.001))
        world.set_gripper_opening("left", 0.0)
