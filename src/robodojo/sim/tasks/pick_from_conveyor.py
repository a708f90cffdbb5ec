"""Pick from a conveyor: blocks ride a belt across the table; pick the named one off the moving belt and lift it
(seed 002's pick_from_conveyor: coordinating a grasp with a scene that changes while the robot acts).

The belt runs along x through the workspace and carries what rests on it at its speed (robodojo.sim.dynamics);
blocks start near its upstream end, one behind the other. A block carried past the belt's downstream end falls onto
the table beyond the arms' top-down reach, so waiting too long fails the task as surely as a missed grasp.
"""

from __future__ import annotations

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, pick_colors

BELT_SIZE_M = (1.3, 0.12, 0.02)  # length (x), width (y), height (z): ends 65 cm out, past the arms' reach
BELT_Y_M = (-0.24, -0.18)  # where the belt's middle line runs
BELT_SPEED_M_S = (0.025, 0.035)
BLOCK_M = 0.04
BLOCKS = 3
# The hindmost block's distance from the middle, on the upstream side: every block starts in the head camera's view.
LAST_X_M = (0.30, 0.36)
GAP_M = (0.09, 0.13)  # between successive blocks' centres along the belt (the others are ahead of it)
LIFT_M = 0.05


class PickFromConveyor(Task):
    name = "pick_from_conveyor"
    capability = "dynamic"
    step_limit = 500
    instruction_template = (
        "Blocks ride a conveyor belt towards the {side} side of the table. Pick the {color} block off the moving "
        "belt and lift it 5 cm above the belt."
    )
    recipe = (
        "Look twice, a moment apart, to measure where the named block is and how fast the belt carries it. Choose "
        "a point on the belt ahead of the block, bring the open gripper above that point in time, and go down and "
        "close as the block arrives between the fingers; then lift. Do not wait too long: a block carried off the "
        "belt's far end is out of reach."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm of the named block"),
        (0.5, "the named block is held between the fingers"),
        (0.75, "the named block is lifted 2 cm"),
        (1.0, "the named block is held 5 cm above the belt (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        colors = pick_colors(rng, BLOCKS)
        direction = float(rng.choice([-1.0, 1.0]))  # +1: the belt runs towards +x (the right arm's side)
        speed = float(rng.uniform(*BELT_SPEED_M_S))
        y = float(rng.uniform(*BELT_Y_M))
        belt = self.rest_object("belt", "belt", "black", BELT_SIZE_M, (0.0, y))
        belt = ObjectSpec(**{**belt.__dict__, "velocity_m_s": (direction * speed, 0.0, 0.0)})
        on_belt_z = self.table_z_m + BELT_SIZE_M[2] + BLOCK_M / 2
        x = -direction * float(rng.uniform(*LAST_X_M))
        order = rng.permutation(BLOCKS)  # which colour comes first along the belt
        blocks = []
        for i in range(BLOCKS):
            name = "target" if order[i] == 0 else f"other_{order[i]}"
            yaw = float(rng.uniform(-0.3, 0.3))
            blocks.append(ObjectSpec(name, "block", colors[order[i]], (BLOCK_M,) * 3, (x, y, on_belt_z), yaw))
            x += direction * float(rng.uniform(*GAP_M))
        return [belt, *blocks], {"color": colors[0], "side": "right" if direction > 0 else "left"}

    def _lift(self, layout: Layout, view: TaskView) -> float:
        return float(view.object_pos("target")[2] - layout.object("target").pos_m[2])

    def _held(self, view: TaskView) -> bool:
        return any(view.touching_gripper("target", a) for a in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._lift(layout, view) >= LIFT_M and self._held(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        held, lift = self._held(view), self._lift(layout, view)
        if held and lift >= 0.02:
            return 0.75
        if held:
            return 0.5
        target = view.object_pos("target")
        return 0.25 if any(np.linalg.norm(view.tcp_pos(a) - target) < 0.05 for a in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        """Closes a gripper on the block held up at the gripper's grasp point."""
        arm = "right" if layout.object("belt").velocity_m_s[0] > 0 else "left"
        tcp = world.tcp_pos(arm)
        world.set_object_pose("target", tuple(tcp))
        world.set_gripper_opening(arm, 0.0)
