"""The motion server's inputs are never held back behind each other: each kind in a callback group of its own."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy", reason="needs rclpy (the ROS wheels or a sourced ROS 2 install)")


def test_joint_states_status_and_reports_do_not_share_a_mutually_exclusive_group(ros_install):
    """A shared mutually exclusive group goes to the first ready subscription of each executor wait: a backlog of
    joint states then starves the controllers' reports (a goal once ended backend_lost on a loaded machine)."""
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

    from robodojo.nodes import topics
    from robodojo.nodes.motion_server_node import MotionServerNode

    rclpy.init()  # the default context (the graph fixture's clients have their own); the node publishes nothing here
    try:
        node = MotionServerNode()
        try:
            groups = {sub.topic_name: sub.callback_group for sub in node.subscriptions}
            inputs = [topics.JOINT_STATES, topics.EPISODE_STATUS]
            reports = [t for t in groups if t.endswith("/trajectory_status")]
            assert reports and all(t in groups for t in inputs), sorted(groups)
            kinds = [[groups[t] for t in inputs[:1]], [groups[t] for t in inputs[1:]], [groups[t] for t in reports]]
            for i, kind in enumerate(kinds):
                for other in kinds[i + 1 :]:
                    shared = [g for g in kind if any(g is o for o in other)]
                    assert not any(isinstance(g, MutuallyExclusiveCallbackGroup) for g in shared)
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
