"""FR3 stack two: the single-arm Franka puts one named block on top of another.

The objects, instruction, score ladder and checkers are stack_blocks' (this is a subclass); what differs is the
robot, its recipe and the region the blocks are placed in.
"""

from __future__ import annotations

from robodojo.sim.tasks.base import Workspace
from robodojo.sim.tasks.stack_blocks import StackBlocks


class Fr3StackTwo(StackBlocks):
    name = "fr3_stack_two"
    capability = "precise"
    robot = "fr3"
    step_limit = 500
    recipe = (
        "Find both blocks. Grasp the top block from above with the fingers across two of its faces, lift it higher "
        "than the other block, carry it over the bottom block's top-face centre with its faces turned to the bottom "
        "block's, lower it until it is a few millimetres above the bottom block, open the gripper and lift the hand "
        "away. It counts when the top block rests on the bottom block, centred within 2 cm, released."
    )
    workspace = Workspace(x_m=(-0.28, 0.28), y_m=(-0.16, 0.08))  # top-down grasps reachable (fr3_pick_cube's, inset)
