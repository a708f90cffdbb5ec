"""Names of the graph's topics, services and actions (importable without ROS, for tests and tools).

Controllers follow the ros2_control joint_trajectory_controller topic interface, so a real controller manager can
take the simulator's place.
"""

from __future__ import annotations

from robodojo.control.trajectory_controller import ControllerNames

# What a robot gives is named once, on the foundations floor, where the episode record (episode.mcap) uses it too.
from robodojo.robots.topic_names import CLOCK as CLOCK
from robodojo.robots.topic_names import ISAAC_JOINT_COMMAND as ISAAC_JOINT_COMMAND
from robodojo.robots.topic_names import ISAAC_JOINT_STATES as ISAAC_JOINT_STATES
from robodojo.robots.topic_names import JOINT_STATES as JOINT_STATES
from robodojo.robots.topic_names import PLANNED_PATH as PLANNED_PATH
from robodojo.robots.topic_names import WORLD_FRAME as WORLD_FRAME
from robodojo.robots.topic_names import camera_image as camera_image
from robodojo.robots.topic_names import camera_image_compressed as camera_image_compressed
from robodojo.robots.topic_names import camera_info as camera_info
from robodojo.robots.topic_names import camera_pose as camera_pose
from robodojo.robots.topic_names import isaac_camera_image as isaac_camera_image
from robodojo.robots.topic_names import isaac_camera_info as isaac_camera_info
from robodojo.robots.topic_names import tcp_pose as tcp_pose

EPISODE_STATUS = "/episode/status"
EPISODE_RESET = "/episode/reset"
MOVE_EEF = "/move_eef"
HOME = "/motion/home"
STOP = "/motion/stop"
MOTION_LEASE = "/motion/lease"  # agent_bringup/TrajectoryLease: the motion server's heartbeat for its trajectories
DIAGNOSTICS = "/diagnostics"  # diagnostic_msgs/DiagnosticArray: e.g. the simulator's real-time factor


def arm_controller_name(arm: str) -> str:
    return f"{arm}_arm_controller"


def gripper_controller_name(arm: str) -> str:
    return f"{arm}_gripper_controller"


def controller_names(arm: str) -> ControllerNames:
    """``arm``'s two controllers as named on the graph (they name its trajectory reports)."""
    return ControllerNames(arm_controller_name(arm), gripper_controller_name(arm))


def arm_controller(arm: str) -> str:
    """trajectory_msgs/JointTrajectory in: the arm's joint_trajectory_controller command topic."""
    return f"/{arm_controller_name(arm)}/joint_trajectory"


def gripper_controller(arm: str) -> str:
    return f"/{gripper_controller_name(arm)}/joint_trajectory"


def trajectory_status(controller: str) -> str:
    """agent_bringup/TrajectoryStatus out: what the controller did with each trajectory (points played, ends)."""
    return f"/{controller}/trajectory_status"
