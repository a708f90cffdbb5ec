"""robodojo: the Python library of agent_bringup.

Layers follow the data flow (see README): ``robots`` (URDF models and robot configs), ``sim`` (the embedded MuJoCo
world and its tasks), and above them the motion, perception and agent layers. Nothing here imports rclpy except the
ROS node adapters.
"""

from pathlib import Path

__version__ = "0.1.0"

#: Root of the installed package data (urdf/, config/). In a source checkout this is the repository root.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
