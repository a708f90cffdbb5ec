"""robodojo: the Python library of agent_bringup.

Layers follow the data flow (see README): ``robots`` (URDF models and robot configs), ``sim`` (the embedded MuJoCo
world and its tasks), and above them the motion, perception and agent layers. Nothing here imports rclpy except the
ROS node adapters.
"""

from __future__ import annotations

import os
from pathlib import Path

__version__ = "0.1.0"

ROS_PACKAGE = "agent_bringup"


def _find_package_root() -> Path:
    """Folder holding config/ and urdf/: ROBODOJO_ROOT if set, the source checkout (pip editable install), or the
    ROS package's share folder when installed by colcon."""
    if "ROBODOJO_ROOT" in os.environ:
        return Path(os.environ["ROBODOJO_ROOT"])
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "config").is_dir():
        return checkout
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        share = Path(prefix) / "share" / ROS_PACKAGE
        if (share / "config").is_dir():
            return share
    return checkout  # missing files then raise ConfigError naming the path looked at


#: Root of the package data (urdf/, config/). In a source checkout this is the repository root.
PACKAGE_ROOT = _find_package_root()
