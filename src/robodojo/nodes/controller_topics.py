"""The motion server's robot on the graph: joint states and episode status in, joint_trajectory_controller topics
out (the MotionServer's backend and trajectory executor on a ROS graph)."""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
from agent_bringup.msg import EpisodeStatus
from sensor_msgs.msg import JointState

from robodojo.errors import BackendLostError, InvalidCommandError
from robodojo.motion.plan import Plan
from robodojo.motion.report import StopReason
from robodojo.motion.server import ProgressCallback, SuccessCheck
from robodojo.nodes import convert, topics
from robodojo.observation import Observation
from robodojo.robots.arm_state import arm_state_from_joints
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

if TYPE_CHECKING:
    from robodojo.nodes.motion_server_node import MotionServerNode

UNLIMITED_STEPS = 2**31 - 1  # no episode status (a real robot outside a benchmark): no step budget
POLL_S = 0.005
START_CHECK_STEPS = 3  # the simulator must have counted a played point this many control steps after the start
START_ATTEMPTS = 2  # sends of one trajectory before the controllers count as gone
ARRIVAL_TOLERANCE_RAD = 0.01  # servo lag at the end of a well-timed trajectory is far below this


class RobotState:
    """What the node knows of the robot: the latest joint positions and their stamp, and the episode status."""

    def __init__(self, robot: RobotConfig, kinematics: ArmKinematics) -> None:
        self.robot = robot
        self.kinematics = kinematics
        self.joints = JointPositions(robot)
        self.stamp_s = -math.inf  # robot time of the latest joint state
        self.received_s = -math.inf  # wall (monotonic) time it arrived
        self.status: EpisodeStatus | None = None
        self.status_received_s = -math.inf
        self.lock = threading.Lock()

    def on_joint_state(self, msg: JointState) -> None:
        with self.lock:
            if not self.joints.update(msg.name, msg.position, time.monotonic()).error:
                self.stamp_s = convert.seconds(msg.header.stamp)  # latest, not max: a restarted robot starts over
                self.received_s = time.monotonic()

    def on_status(self, msg: EpisodeStatus) -> None:
        self.status, self.status_received_s = msg, time.monotonic()

    def status_age_s(self) -> float:
        """Wall time since the last episode status; 0 for a robot that publishes none (no simulator)."""
        return 0.0 if self.status is None else time.monotonic() - self.status_received_s

    def age_s(self) -> float:
        return time.monotonic() - self.received_s

    def observation(self) -> Observation:
        with self.lock:
            arms = {}
            for arm in self.robot.arms:
                q = self.joints.arm_q(arm.name)
                grip = self.joints.position(arm.gripper_joint)
                if q is None or grip is None:
                    raise BackendLostError(f"no joint states for the {arm.name} arm on {topics.JOINT_STATES} yet")
                arms[arm.name] = arm_state_from_joints(self.kinematics, arm.name, q, grip)
            stamp = self.stamp_s
        status = self.status
        return Observation(
            step=status.steps_used if status else 0,
            steps_left=status.steps_left if status else UNLIMITED_STEPS,
            time_s=stamp,
            arms=arms,
        )


class ControllerTopicsBackend:
    """The RobotBackend the MotionServer sees on the graph: state from topics, hold by stopping the controllers."""

    def __init__(self, node: MotionServerNode) -> None:
        self.node = node
        self.robot = node.robot

    @property
    def control_dt_s(self) -> float:
        return self.node.control_dt_s

    @property
    def steps_left(self) -> int:
        status = self.node.state.status
        return status.steps_left if status else UNLIMITED_STEPS

    def observe(self, cameras: object = None) -> Observation:
        if cameras:
            raise InvalidCommandError("the motion server reads joint states only; cameras come from the camera topics")
        return self.node.state.observation()

    def step(self, joint_targets: object = None, gripper_targets: object = None) -> None:
        raise InvalidCommandError("on the graph, plans play through the trajectory controllers, not single steps")

    def hold(self) -> None:
        self.node.send_stop()


class ControllerExecutor:
    """Plays a plan through the joint_trajectory_controller topics and follows it by the joint states' stamps."""

    def __init__(self, node: MotionServerNode) -> None:
        self.node = node

    def play(
        self,
        plan: Plan,
        points: int,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> tuple[int, StopReason]:
        node, state, dt = self.node, self.node.state, plan.dt_s
        status = state.status
        episode = status.episode_id if status else None
        # Steps counted by the simulator tell whether the controllers took the trajectory (a reader of a robot that
        # was killed can stay matched for a while, so a publish may reach nobody); real drivers have no such count.
        steps_at_send = status.steps_used if status else None
        sends = 0
        while True:
            # Start on the controllers' tick grid, far enough ahead that every arm's trajectory arrives in time.
            start = math.ceil((state.stamp_s + node.params.start_lead_s) / dt - 1e-6) * dt
            node.send_plan(plan, points, start)
            sends += 1
            played, reason = self._follow(plan, points, start, episode, steps_at_send, stop, is_success, on_progress)
            if reason is not None:
                return played, reason
            if sends == START_ATTEMPTS:
                node.send_stop()
                return 0, StopReason.BACKEND_LOST
            node.get_logger().warning("the controllers did not start the trajectory; sending it again")

    def _follow(
        self,
        plan: Plan,
        points: int,
        start: float,
        episode: str | None,
        steps_at_send: int | None,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> tuple[int, StopReason | None]:
        """Follow one sent trajectory to its end; reason None means the controllers never started it."""
        node, state, dt = self.node, self.node.state, plan.dt_s
        end = start + points * dt
        started = steps_at_send is None
        while True:
            now = state.stamp_s
            played = min(points, max(0, math.floor((now - start) / dt + 1e-6)))
            if on_progress is not None:
                on_progress(played, points)
            if now >= end - 1e-6 and (self._arrived(plan, points) or now >= end + node.params.arrival_wait_s):
                return points, StopReason.COMPLETED
            if stop.is_set():
                return played, StopReason.STOPPED
            status = state.status
            lost = state.age_s() > node.params.joint_state_timeout_s
            if lost or (episode is not None and (status is None or status.episode_id != episode)):
                why = (
                    f"no joint states for {state.age_s():.2f} s"
                    if lost
                    else f"the episode changed from {episode} to {status.episode_id if status else None}"
                )
                node.get_logger().error(f"motion ended after {played} of {points} points: {why}")
                node.send_stop()
                return played, StopReason.BACKEND_LOST
            if is_success is not None and is_success():
                node.send_stop()
                return played, StopReason.TASK_SUCCESS
            if status is not None and status.steps_left == 0:
                return played, StopReason.BUDGET_EXHAUSTED
            if not started and status is not None and steps_at_send is not None:
                started = status.steps_used > steps_at_send
                if not started and now >= start + START_CHECK_STEPS * dt:
                    return 0, None
            time.sleep(POLL_S)

    def _arrived(self, plan: Plan, points: int) -> bool:
        """Every arm within ARRIVAL_TOLERANCE_RAD of its last point: a trajectory the controller started late (it
        arrived after its start time) is still playing when the planned end time has passed."""
        joints = self.node.state.joints
        with self.node.state.lock:
            for arm, traj in plan.trajectories.items():
                q = joints.arm_q(arm)
                if q is None or np.max(np.abs(q - traj.positions_rad[points])) > ARRIVAL_TOLERANCE_RAD:
                    return False
        return True
