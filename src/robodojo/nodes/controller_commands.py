"""What the motion server sends the robot's controllers: each moving arm's and gripper's trajectory on its
joint_trajectory_controller topic, the lease that keeps them playing (TrajectoryLease.msg), the stop (an empty
trajectory), and the planned grasp-point paths for RViz."""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np
from agent_bringup.msg import TrajectoryLease
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from robodojo.motion.path_markers import planned_path_markers
from robodojo.motion.plan import Plan
from robodojo.nodes import convert, topics
from robodojo.nodes.runtime import LATCHED_QOS
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics


class ControllerCommands:
    """The publishers of one node towards every arm's and gripper's controller, and what it sends on them."""

    def __init__(self, node: Node, robot: RobotConfig, *, lease_timeout_s: float, path_markers: bool) -> None:
        self.robot = robot
        self.lease_timeout_s = lease_timeout_s
        self.arm_pubs = {
            a: node.create_publisher(JointTrajectory, topics.arm_controller(a), 10) for a in robot.arm_names
        }
        self.gripper_pubs = {
            a: node.create_publisher(JointTrajectory, topics.gripper_controller(a), 10) for a in robot.arm_names
        }
        self.lease_pub = node.create_publisher(TrajectoryLease, topics.MOTION_LEASE, 10)
        self.path_pub = node.create_publisher(MarkerArray, topics.PLANNED_PATH, LATCHED_QOS) if path_markers else None
        self._kinematics = ArmKinematics(robot)  # the sending thread's own (MjData is not thread-safe)

    def unmatched(self, arms: Iterable[str]) -> list[str]:
        """The controller topics of ``arms`` that no subscriber has matched yet (discovery still running, or no
        robot): a trajectory published there now would be lost."""
        pubs = [p for arm in arms for p in (self.arm_pubs[arm], self.gripper_pubs[arm])]
        return [p.topic_name for p in pubs if p.get_subscription_count() == 0]

    def send_plan(self, plan: Plan, points: int, start_s: float) -> None:
        """Publish the first ``points`` points of each moving arm's and gripper's trajectory, to start at
        ``start_s`` (robot time; the trajectories' identity), and the paths for RViz."""
        for arm, traj in plan.trajectories.items():
            config = self.robot.arm(arm)
            self.arm_pubs[arm].publish(
                convert.joint_trajectory_msg(traj.joint_names, traj.positions_rad[1 : points + 1], plan.dt_s, start_s)
            )
            grip_m = traj.gripper[1 : points + 1, None] * config.gripper_max_m
            self.gripper_pubs[arm].publish(
                convert.joint_trajectory_msg((config.gripper_joint,), grip_m, plan.dt_s, start_s)
            )
        if self.path_pub is not None:
            self.path_pub.publish(self._path_markers(plan, points, start_s))

    def send_lease(self, start_s: float) -> None:
        """Renew the lease of the trajectories starting at ``start_s`` (robot time), sent now (wall clock)."""
        self.lease_pub.publish(
            TrajectoryLease(
                sent=convert.time_msg(time.time()), start=convert.time_msg(start_s), timeout_s=self.lease_timeout_s
            )
        )

    def send_stop(self) -> None:
        """An empty trajectory on every controller: they stop and hold where they are."""
        for arm in self.robot.arms:
            self.arm_pubs[arm.name].publish(convert.joint_trajectory_msg(arm.joints, np.zeros((0, 0)), 0.0, 0.0))
            self.gripper_pubs[arm.name].publish(
                convert.joint_trajectory_msg((arm.gripper_joint,), np.zeros((0, 0)), 0.0, 0.0)
            )

    def _path_markers(self, plan: Plan, points: int, start_s: float) -> MarkerArray:
        markers = planned_path_markers(plan, self._kinematics, points)
        return convert.marker_array_msg(markers, start_s, topics.WORLD_FRAME)
