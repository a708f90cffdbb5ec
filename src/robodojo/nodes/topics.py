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


def arm_controller(arm: str) -> str:
    return f"/{arm}_arm_controller/joint_trajectory"


def gripper_controller(arm: str) -> str:
    return f"/{arm}_gripper_controller/joint_trajectory"
