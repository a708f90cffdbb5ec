"""The ROS 2 names of what a robot gives: joint states, camera topics, grasp-point poses, and the world frame.

Defined here, on the foundations floor, so that the node adapters (robodojo.nodes.topics re-exports them) and the
episode record (robodojo.episodes.mcap_record writes them into episode.mcap) name the same data the same way: a bag
recorded on the graph and an episode recorded in one process show the same topics in Foxglove.
"""

from __future__ import annotations

WORLD_FRAME = "world"

JOINT_STATES = "/joint_states"
CLOCK = "/clock"
#: visualization_msgs/MarkerArray: each arm's planned grasp-point path (a line strip) and its target (a sphere)
PLANNED_PATH = "/motion/planned_path"
# Isaac Sim's side of its ROS 2 bridge (scripts/isaac_sim_robodojo.py), under /isaac/: what the simulator itself
# publishes and follows. isaac_bridge_node turns it into the robot's topics above, as a real arm's driver does, and one
# camera_node per camera republishes its images under /cameras/<camera>/; so nothing on /isaac/ is the graph's API.
#: sensor_msgs/JointState position targets for Isaac Sim's articulation (its ROS 2 bridge's joint command subscriber)
ISAAC_JOINT_COMMAND = "/isaac/joint_command"
#: sensor_msgs/JointState of every joint of Isaac Sim's articulation, stamped with simulation time
ISAAC_JOINT_STATES = "/isaac/joint_states"


def isaac_camera_image(camera: str) -> str:
    """sensor_msgs/Image (rgb8) of a camera as Isaac Sim renders it (camera_node's input under sim:=isaac)."""
    return f"/isaac/cameras/{camera}/image_raw"


def isaac_camera_info(camera: str) -> str:
    """sensor_msgs/CameraInfo of a camera as Isaac Sim's render product describes it (for comparison with the
    calibration file, which camera_node publishes on :func:`camera_info`)."""
    return f"/isaac/cameras/{camera}/camera_info"


#: image_transport's suffix for the compressed transport of an image topic (sensor_msgs/CompressedImage)
COMPRESSED_SUFFIX = "/compressed"


def camera_image(camera: str) -> str:
    """sensor_msgs/Image (rgb8) of a camera."""
    return f"/cameras/{camera}/image_raw"


def camera_image_compressed(camera: str) -> str:
    """sensor_msgs/CompressedImage of a camera, where image_transport puts it (beside the raw image topic)."""
    return camera_image(camera) + COMPRESSED_SUFFIX


def camera_info(camera: str) -> str:
    """sensor_msgs/CameraInfo of a camera, stamped like its image."""
    return f"/cameras/{camera}/camera_info"


def camera_pose(camera: str) -> str:
    """geometry_msgs/PoseStamped of the camera's optical frame in the world, stamped like its image."""
    return f"/cameras/{camera}/pose"


def tcp_pose(arm: str) -> str:
    """geometry_msgs/PoseStamped of an arm's grasp point (TCP) in the world frame."""
    return f"/{arm}/tcp_pose"
