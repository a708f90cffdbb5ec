"""The RViz 2 configuration of a robot, made from its robot config (config/robots/<robot>.yaml).

It shows what that robot's graph publishes: the robot model (/robot_description) and TF, each arm's grasp-point pose,
the motion server's planned paths, and one image per camera of the robot; the view looks at the robot's table.
``scripts/generate_rviz.py`` writes ``rviz/<robot>.rviz`` from it (``make urdf``), and the launch file loads the one of
``robot:=``; a test keeps the files equal to what this makes.
"""

from __future__ import annotations

from typing import Any

import yaml

from robodojo.nodes import topics
from robodojo.robots.config import RobotConfig

ROBOT_DESCRIPTION = "/robot_description"  # robot_state_publisher's latched URDF
CLICKED_POINT = "/clicked_point"
VIEW_HEIGHT_ABOVE_TABLE_M = 0.035  # the orbit view's focal point: the middle of the table top, a little above
WINDOW = {"Height": 1000, "Width": 1600, "X": 60, "Y": 60}


def _topic(name: str, *, reliable: bool, latched: bool = False) -> dict[str, Any]:
    return {
        "Depth": 5,
        "Durability Policy": "Transient Local" if latched else "Volatile",
        "History Policy": "Keep Last",
        "Reliability Policy": "Reliable" if reliable else "Best Effort",
        "Value": name,
    }


def _title(name: str) -> str:
    return " ".join(word.capitalize() for word in name.replace("_", " ").split())


def camera_display_name(camera: str) -> str:
    """An image display's name (its window's key in the layout too): "Left Wrist Camera"."""
    return f"{_title(camera)} Camera"


def tcp_display_name(arm: str) -> str:
    return f"{_title(arm)} TCP"


def rviz_config(robot: RobotConfig) -> dict[str, Any]:
    """The whole RViz 2 configuration for ``robot`` as the YAML mapping RViz reads."""
    center_x, center_y = robot.table.center_xy_m
    displays: list[dict[str, Any]] = [
        {
            "Alpha": 0.5, "Cell Size": 0.1, "Class": "rviz_default_plugins/Grid", "Color": "160; 160; 164",
            "Enabled": True, "Line Style": {"Line Width": 0.03, "Value": "Lines"}, "Name": "Grid",
            "Normal Cell Count": 0, "Offset": {"X": float(center_x), "Y": float(center_y), "Z": 0.0}, "Plane": "XY",
            "Plane Cell Count": 30, "Reference Frame": "<Fixed Frame>", "Value": True,
        },
        {
            "Alpha": 1, "Class": "rviz_default_plugins/RobotModel", "Collision Enabled": False,
            "Description File": "", "Description Source": "Topic",
            "Description Topic": _topic(ROBOT_DESCRIPTION, reliable=True, latched=True), "Enabled": True,
            "Links": {"All Links Enabled": True, "Expand Joint Details": False, "Expand Link Details": False,
                      "Expand Tree": False, "Link Tree Style": "Links in Alphabetic Order"},
            "Mass Properties": {"Inertia": False, "Mass": False}, "Name": "RobotModel", "TF Prefix": "",
            "Update Interval": 0, "Value": True, "Visual Enabled": True,
        },
        {
            "Class": "rviz_default_plugins/TF", "Enabled": True, "Filter (blacklist)": "", "Filter (whitelist)": "",
            "Frame Timeout": 15, "Frames": {"All Enabled": True}, "Marker Scale": 0.1, "Name": "TF",
            "Show Arrows": False, "Show Axes": True, "Show Names": False, "Tree": {}, "Update Interval": 0,
            "Value": True,
        },
    ]  # fmt: skip
    for arm in robot.arm_names:
        displays.append(
            {
                "Alpha": 1, "Axes Length": 0.1, "Axes Radius": 0.01, "Class": "rviz_default_plugins/Pose",
                "Color": "255; 25; 0", "Enabled": True, "Head Length": 0.3, "Head Radius": 0.1,
                "Name": tcp_display_name(arm), "Shaft Length": 1, "Shaft Radius": 0.05, "Shape": "Axes",
                "Topic": {**_topic(topics.tcp_pose(arm), reliable=False), "Filter size": 10}, "Value": True,
            }
        )  # fmt: skip
    displays.append(
        {
            "Class": "rviz_default_plugins/MarkerArray", "Enabled": True, "Name": "Planned Path", "Namespaces": {},
            "Topic": _topic(topics.PLANNED_PATH, reliable=True), "Value": True,
        }
    )  # fmt: skip
    for camera in robot.camera_names:
        displays.append(
            {
                "Class": "rviz_default_plugins/Image", "Enabled": True, "Max Value": 1, "Median window": 5,
                "Min Value": 0, "Name": camera_display_name(camera), "Normalize Range": True,
                "Topic": _topic(topics.camera_image(camera), reliable=False), "Value": True,
            }
        )  # fmt: skip
    windows = {name: {"collapsed": False} for name in ("Displays", "Selection", "Tool Properties", "Views")}
    windows |= {camera_display_name(c): {"collapsed": False} for c in robot.camera_names}
    return {
        "Panels": [
            {"Class": "rviz_common/Displays", "Help Height": 78, "Name": "Displays",
             "Property Tree Widget": {"Expanded": ["/Global Options1", "/Status1"], "Splitter Ratio": 0.5},
             "Tree Height": 464},
            {"Class": "rviz_common/Selection", "Name": "Selection"},
            {"Class": "rviz_common/Tool Properties", "Expanded": ["/Publish Point1"], "Name": "Tool Properties",
             "Splitter Ratio": 0.59},
            {"Class": "rviz_common/Views", "Expanded": ["/Current View1"], "Name": "Views", "Splitter Ratio": 0.5},
        ],
        "Visualization Manager": {
            "Class": "",
            "Displays": displays,
            "Enabled": True,
            "Global Options": {"Background Color": "48; 48; 48", "Fixed Frame": topics.WORLD_FRAME, "Frame Rate": 30},
            "Name": "root",
            "Tools": [
                {"Class": "rviz_default_plugins/Interact", "Hide Inactive Objects": True},
                {"Class": "rviz_default_plugins/MoveCamera"},
                {"Class": "rviz_default_plugins/Select"},
                {"Class": "rviz_default_plugins/FocusCamera"},
                {"Class": "rviz_default_plugins/Measure", "Line color": "128; 128; 0"},
                {"Class": "rviz_default_plugins/PublishPoint", "Single click": True,
                 "Topic": _topic(CLICKED_POINT, reliable=True)},
            ],
            "Transformation": {"Current": {"Class": "rviz_default_plugins/TF"}},
            "Value": True,
            "Views": {
                "Current": {
                    "Class": "rviz_default_plugins/Orbit", "Distance": 1.8,
                    "Enable Stereo Rendering": {"Stereo Eye Separation": 0.06, "Stereo Focal Distance": 1,
                                                "Swap Stereo Eyes": False, "Value": False},
                    "Focal Point": {"X": float(center_x), "Y": float(center_y),
                                    "Z": round(robot.table.top_z_m + VIEW_HEIGHT_ABOVE_TABLE_M, 4)},
                    "Focal Shape Fixed Size": True, "Focal Shape Size": 0.05, "Invert Z Axis": False,
                    "Name": "Current View", "Near Clip Distance": 0.01, "Pitch": 0.6, "Target Frame": "<Fixed Frame>",
                    "Value": "Orbit (rviz)", "Yaw": 4.4,
                },
                "Saved": None,
            },
        },
        "Window Geometry": {**dict(sorted(windows.items())), "Hide Left Dock": False, "Hide Right Dock": False,
                            **WINDOW},
    }  # fmt: skip


def render(robot: RobotConfig) -> str:
    """``rviz_config(robot)`` as the file's text."""
    header = f"# RViz 2 for robot {robot.name}: made by scripts/generate_rviz.py from config/robots/{robot.name}.yaml\n"
    return header + yaml.safe_dump(rviz_config(robot), sort_keys=False, default_flow_style=False)
