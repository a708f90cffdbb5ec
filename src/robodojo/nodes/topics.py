"""Names of the graph's topics, services and actions (importable without ROS, for tests and tools).

Controllers follow the ros2_control joint_trajectory_controller topic interface, so a real controller manager can
take the simulator's place.
"""

from __future__ import annotations

WORLD_FRAME = "world"

JOINT_STATES = "/joint_states"
EPISODE_STATUS = "/episode/status"
EPISODE_RESET = "/episode/reset"
MOVE_EEF = "/move_eef"
HOME = "/motion/home"
STOP = "/motion/stop"
PLANNED_PATH = "/motion/planned_path"  # visualization_msgs/MarkerArray: the planned grasp-point paths
MOTION_LEASE = "/motion/lease"  # agent_bringup/TrajectoryLease: the motion server's heartbeat for its trajectories
DIAGNOSTICS = "/diagnostics"  # diagnostic_msgs/DiagnosticArray: e.g. the simulator's real-time factor


def camera_image(camera: str) -> str:
    return f"/cameras/{camera}/image_raw"


def camera_info(camera: str) -> str:
    return f"/cameras/{camera}/camera_info"


def camera_pose(camera: str) -> str:
    """geometry_msgs/PoseStamped of the camera's optical frame in the world, stamped like its image."""
    return f"/cameras/{camera}/pose"


def tcp_pose(arm: str) -> str:
    """geometry_msgs/PoseStamped of an arm's grasp point (TCP) in the world frame."""
    return f"/{arm}/tcp_pose"


def arm_controller_name(arm: str) -> str:
    return f"{arm}_arm_controller"


def gripper_controller_name(arm: str) -> str:
    return f"{arm}_gripper_controller"


def arm_controller(arm: str) -> str:
    """trajectory_msgs/JointTrajectory in: the arm's joint_trajectory_controller command topic."""
    return f"/{arm_controller_name(arm)}/joint_trajectory"


def gripper_controller(arm: str) -> str:
    return f"/{gripper_controller_name(arm)}/joint_trajectory"


def trajectory_status(controller: str) -> str:
    """agent_bringup/TrajectoryStatus out: what the controller did with each trajectory (points played, ends)."""
    return f"/{controller}/trajectory_status"
