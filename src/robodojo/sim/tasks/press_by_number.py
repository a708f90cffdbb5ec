"""Press by number: several push buttons show a digit each; press the one showing the named number, and only it.

The digits are textures on the caps (robodojo.sim.labels): the instruction names the number, only the cameras show
which button carries it. A cap stays down once pushed (robodojo.sim.objects: a latched button), so a wrong press
cannot be taken back.
"""

from __future__ import annotations

import math

import numpy as np

from robodojo.sim.labels import DIGITS
from robodojo.sim.objects import BUTTON_TRAVEL_M, ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, place_all

CAP_HALF_M = 0.03  # a 6 cm square cap: its digit is about 3 cm tall
CAP_HEIGHT_M = 0.012
CAP_COLOR = "white"  # every cap alike: only the digit tells them apart
BUTTON_COUNTS = (3, 4)
MAX_YAW_RAD = math.radians(20)  # digits read upright from the robot's side, give or take
PRESSED_M = 0.005  # a cap this far below its rest height is pressed (its travel is BUTTON_TRAVEL_M)
TOUCHED_M = 0.002  # a cap moved down this far has been pushed
NEAR_M = 0.05
# Where the buttons stand: the workspace's middle, clear of where the arms park at the table's sides (x = +-0.45), so
# the head camera sees every cap.
BUTTON_REGION = Workspace(x_m=(-0.3, 0.3), y_m=(-0.32, -0.1))


class PressByNumber(Task):
    name = "press_by_number"
    capability = "open"
    step_limit = 400
    instruction_template = "Press the button showing {number}."
    recipe = (
        "Several square push buttons stand on the table, each showing a digit on its cap. Read the digits in the "
        "camera images (the caps' tops; look closer with a wrist camera if the head camera's view is too small) and "
        "find the button showing the number. Close the gripper of the arm on that side, bring it straight above the "
        "cap's centre, then move down until the fingertips push the cap about 8 mm down to its stop. Touch no "
        "other button: a pushed cap stays down."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm above the right button, no other button pushed"),
        (0.5, "the right button is pushed part way (2 mm), no other button pushed"),
        (1.0, "the right button is pressed (5 mm down) and no other button is pushed (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        count = int(rng.choice(BUTTON_COUNTS))
        digits = [str(d) for d in rng.choice(DIGITS, size=count, replace=False)]
        buttons = [
            ObjectSpec(
                **{
                    **self.rest_object(
                        "target" if i == 0 else f"other_{i}",
                        "button",
                        CAP_COLOR,
                        (CAP_HALF_M, CAP_HEIGHT_M),
                        (0, 0),
                        yaw=rng.uniform(-MAX_YAW_RAD, MAX_YAW_RAD),
                        mass=0.03,
                    ).__dict__,
                    "label": digit,
                }
            )
            for i, digit in enumerate(digits)
        ]
        return place_all(self, rng, buttons, region=BUTTON_REGION), {"number": digits[0]}

    @staticmethod
    def _buttons(layout: Layout) -> list[str]:
        return [o.name for o in layout.objects if o.kind == "button"]

    @staticmethod
    def _drop(view: TaskView, name: str) -> float:
        """How far the cap is below its rest height [m]."""
        return float(view.initial_pos(name)[2] - view.object_pos(name)[2])

    def _others_pushed(self, layout: Layout, view: TaskView) -> bool:
        return any(self._drop(view, n) >= TOUCHED_M for n in self._buttons(layout) if n != "target")

    def success(self, layout: Layout, view: TaskView) -> bool:
        return self._drop(view, "target") >= PRESSED_M and not self._others_pushed(layout, view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self._others_pushed(layout, view):
            return 0.0
        drop = self._drop(view, "target")
        if drop >= PRESSED_M:
            return 1.0
        if drop >= TOUCHED_M:
            return 0.5
        cap = view.object_pos("target")
        for arm in view.arm_names:
            tcp = view.tcp_pos(arm)
            if math.dist(tcp[:2], cap[:2]) < CAP_HALF_M and 0 < tcp[2] - cap[2] < NEAR_M:
                return 0.25
        return 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        target = layout.object("target")
        x, y, z = target.pos_m
        half_yaw = target.yaw_rad / 2
        world.set_object_pose("target", (x, y, z - BUTTON_TRAVEL_M), (math.cos(half_yaw), 0, 0, math.sin(half_yaw)))
