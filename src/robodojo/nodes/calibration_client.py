"""`robodojo calibrate` on the running graph: camera frames, joint states and the MoveEef action, sim or real alike.

A short-lived rclpy node in the command's own process, spun in a thread. It sees the graph as the agent does
(robodojo.nodes.agent_graph: /cameras/<c>/{image_raw,camera_info,pose}, /joint_states, /episode/status) and moves
the arm only through the motion server's MoveEef action, so every limit, lease and stop of the graph applies.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from agent_bringup.msg import EpisodeStatus
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from sensor_msgs.msg import CameraInfo, Image, JointState

from robodojo.errors import BackendLostError, EpisodeInterrupted
from robodojo.geometry import quat_from_matrix
from robodojo.motion.report import MoveReport
from robodojo.nodes import topics
from robodojo.nodes.agent_graph import GraphView, MoveEefClient, ShutdownNotice, TopicObservationBackend
from robodojo.nodes.parameters import AgentNodeParams, build_params
from robodojo.nodes.runtime import LATCHED_QOS, GraphNode
from robodojo.observation import CameraFrame
from robodojo.perception.calibrate.settings import CaptureSettings
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "robodojo_calibrate"
SPIN_TIMEOUT_S = 0.05
JOIN_TIMEOUT_S = 5.0
REST_WINDOW_S = 0.5  # joint positions compared this far apart to tell rest from motion


@dataclass(frozen=True)
class Snapshot:
    """A frame taken while the robot was at rest, and the robot's state then."""

    frame: CameraFrame
    stamp_s: float
    joints_rad: dict[str, float]
    T_world_tcp: dict[str, NDArray[np.float64]]


class CalibrationNode(GraphNode):
    """The node MoveEefClient sends through (agent_graph.AgentGraphNode): parameters, the view, the shutdown notice."""

    def __init__(self, context: rclpy.Context, timeout_s: float) -> None:
        super().__init__(NODE_NAME, context=context)
        # A frame may take the whole timeout: new subscriptions, and drivers at a few frames a second under load.
        self.params = build_params(AgentNodeParams, {"image_timeout_s": timeout_s})
        self.view = GraphView()
        self.interrupted = ShutdownNotice(self)
        self.create_subscription(EpisodeStatus, topics.EPISODE_STATUS, self.view.on_status, LATCHED_QOS)

    def check_interrupted(self) -> None:
        if self.interrupted.is_set():
            raise EpisodeInterrupted("calibration interrupted")

    def current_status(self, *, newer_than: str = "") -> EpisodeStatus:
        with self.view.lock:
            status = self.view.status
        if status is None or status.episode_id == newer_than:
            raise BackendLostError(f"no episode status on {topics.EPISODE_STATUS}: is the graph running?")
        return status

    def subscribe_robot(self, robot: RobotConfig) -> None:
        self.view.joints = JointPositions(robot)
        self.create_subscription(JointState, topics.JOINT_STATES, self.view.on_joint_state, 50)
        for cam in robot.camera_names:
            for msg_type, topic, part in (
                (Image, topics.camera_image(cam), "image"),
                (CameraInfo, topics.camera_info(cam), "info"),
                (PoseStamped, topics.camera_pose(cam), "pose"),
            ):
                self.create_subscription(msg_type, topic, self.view.on_camera(cam, part), 5)


class CalibrationGraph:
    """The graph as `robodojo calibrate` uses it. Use as a context manager: it ends its node and context."""

    def __init__(self, settings: CaptureSettings, *, speed_scale: float = 1.0, timeout_s: float = 20.0) -> None:
        self.settings = settings
        self.speed_scale = speed_scale  # of every calibration motion (motions.speed_scale)
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = CalibrationNode(self.context, timeout_s)
        self.view = self.node.view
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="calibrate_spin", daemon=True)
        self._thread.start()
        self.robot = self._robot(timeout_s)
        self.node.subscribe_robot(self.robot)
        self._wait_for_joints(timeout_s)
        self.backend = TopicObservationBackend(self.view, self.robot, self.node.params, self.node.interrupted)
        self.motion = MoveEefClient(self.node, self.backend)

    # -- life
    def _spin(self) -> None:
        try:
            while self.context.ok() and not self._stop.is_set():
                self.executor.spin_once(timeout_sec=SPIN_TIMEOUT_S)
        except (ExternalShutdownException, RuntimeError):
            pass

    def __enter__(self) -> CalibrationGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Cancel a running motion, then executor, node and context (in that order: ROS_ON_PYPI.md)."""
        self.node.interrupted.set()
        self.motion.stop()
        self._stop.set()
        self._thread.join(timeout=JOIN_TIMEOUT_S)
        self.executor.shutdown()
        self.motion.client.destroy()
        self.node.destroy_node()
        self.context.try_shutdown()

    def _robot(self, timeout_s: float) -> RobotConfig:
        """The robot the graph runs, from its episode status."""
        deadline = time.monotonic() + timeout_s
        with self.view.changed:
            while self.view.status is None:
                if time.monotonic() > deadline:
                    raise BackendLostError(f"no {topics.EPISODE_STATUS} within {timeout_s:g} s: is the graph running?")
                self.view.changed.wait(timeout=0.1)
            return load_robot_config(self.view.status.robot)

    def _wait_for_joints(self, timeout_s: float) -> None:
        """Until every arm's joint states arrived (a new subscription needs discovery first)."""
        joints = self.view.joints
        assert joints is not None
        deadline = time.monotonic() + timeout_s
        with self.view.changed:
            while missing := [a for a in self.robot.arm_names if joints.arm_q(a) is None]:
                if time.monotonic() > deadline:
                    raise BackendLostError(f"no joint states for the {', '.join(missing)} arm within {timeout_s:g} s")
                self.view.changed.wait(timeout=0.1)

    # -- the robot
    def joints_now(self) -> dict[str, float]:
        joints = self.view.joints
        assert joints is not None
        with self.view.lock:
            out = {}
            for arm in self.robot.arms:
                q = joints.arm_q(arm.name)
                if q is None:
                    raise BackendLostError(f"no joint states for the {arm.name} arm on {topics.JOINT_STATES}")
                out.update(dict(zip(arm.joints, (float(v) for v in q), strict=True)))
            return out

    def wait_at_rest(self) -> None:
        """Until no joint moves faster than the rest speed (measured over REST_WINDOW_S); BackendLostError past
        the rest timeout."""
        deadline = time.monotonic() + self.settings.rest_timeout_s
        before = self.joints_now()
        while True:
            time.sleep(REST_WINDOW_S)
            now = self.joints_now()
            speed = max(abs(now[k] - before[k]) for k in now) / REST_WINDOW_S
            if speed < self.settings.rest_speed_rad_s:
                return
            if time.monotonic() > deadline:
                raise BackendLostError(f"the arms did not come to rest within {self.settings.rest_timeout_s:g} s")
            before = now

    def snapshot(self, camera: str) -> Snapshot:
        """A frame of ``camera`` taken while the arms were at rest, with the joint angles and TCP poses then.

        At rest before the frame and still there after it (the joints moved less than the rest speed allows over
        the rest window), or it is taken again: a settling arm would pair a frame with a pose it had already left.
        """
        self.robot.camera(camera)
        deadline = time.monotonic() + self.settings.rest_timeout_s
        while True:
            self.wait_at_rest()
            before = self.joints_now()
            observation = self.backend.observe([camera])  # its frames are no older than the latest joint state
            joints = self.joints_now()
            drift = max(abs(joints[k] - before[k]) for k in joints)
            if drift <= self.settings.rest_speed_rad_s * REST_WINDOW_S or time.monotonic() > deadline:
                break
        tcp = {name: arm.T_world_tcp for name, arm in observation.arms.items()}
        return Snapshot(observation.cameras[camera], observation.time_s, joints, tcp)

    def move_tcp(self, arm: str, T_world_tcp: NDArray[np.float64]) -> MoveReport:
        """One arm's TCP to a pose through the motion server (its limits, planner and stop apply), at the
        calibration's speed scale."""
        return self.motion.move_to(
            arm, T_world_tcp[:3, 3], quat_from_matrix(T_world_tcp[:3, :3]), speed_scale=self.speed_scale
        )
