"""Every topic a robot's RViz config (rviz/<robot>.rviz, robodojo.nodes.rviz_config) shows is published by that
robot's graph: sim_node and motion_server_node as real processes, the publishers counted from this test's node."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")

from robodojo.nodes.rviz_config import ROBOT_DESCRIPTION, rviz_config
from robodojo.robots.config import available_robots, load_robot_config

pytestmark = pytest.mark.ros

START_S = 90.0  # two nodes starting on a loaded 2-core machine


def shown_topics(config: dict) -> set[str]:
    displays = config["Visualization Manager"]["Displays"]
    found = set()
    for display in displays:
        for key in ("Topic", "Description Topic"):
            if isinstance(display.get(key), dict):
                found.add(display[key]["Value"])
    return found


@pytest.mark.parametrize("robot", available_robots())
def test_every_topic_rviz_shows_is_published_by_the_robot_s_graph(graph, robot):
    config = load_robot_config(robot)
    shown = shown_topics(rviz_config(config))
    # /robot_description is robot_state_publisher's, which the launch file starts (it is not on PyPI); its URDF is the
    # robot config's scene_urdf, checked in test_launch_file.py.
    assert ROBOT_DESCRIPTION in shown
    expected = shown - {ROBOT_DESCRIPTION}
    graph.start("sim_node", robot=robot, task=config.default_task)
    graph.start("motion_server_node", robot=robot, use_sim_time=True)

    def unpublished() -> set[str]:
        return {t for t in expected if graph.call(lambda t=t: graph.client.count_publishers(t)) == 0}

    graph.wait(lambda: not unpublished(), START_S, f"publishers of every topic {robot}'s RViz config shows")
    assert len(expected) == len(config.camera_names) + len(config.arm_names) + 1  # cameras, TCPs, the planned path
