"""FR3 push to pad: the single-arm Franka slides a block along the table onto a flat target square, without a grasp.

The objects, instruction, score ladder and checkers are push_to_pad's (this is a subclass); what differs is the
robot, its recipe and the region the objects are placed in.
"""

from __future__ import annotations

from robodojo.sim.tasks.base import Workspace
from robodojo.sim.tasks.push_to_pad import PushToPad


class Fr3PushToPad(PushToPad):
    name = "fr3_push_to_pad"
    capability = "dynamic"
    robot = "fr3"
    step_limit = 600
    recipe = (
        "Find the block and the square. Close the gripper most of the way (the two fingertips side by side make a "
        "pusher about 5 cm wide), turn it so the fingers stand across the line from the block to the square, lower "
        "it to about 1.5 cm above the table just behind the block on the far side from the square, and move it "
        "straight towards the square's centre so the block slides along the table. Lift the hand out of the way, "
        "look again, and push again from behind the block to correct the direction. The block must end flat on "
        "the table with its centre inside the square."
    )
    # Both objects where the hand reaches 1.5 cm above the table from 7 cm behind them in every direction (the
    # top-down grasp region of fr3_pick_cube, shrunk by a push's run-up).
    workspace = Workspace(x_m=(-0.24, 0.24), y_m=(-0.12, 0.06))
