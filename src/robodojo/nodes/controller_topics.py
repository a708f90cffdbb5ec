"""The motion server's robot on the graph: joint states and episode status in, joint_trajectory_controller topics
out (the MotionServer's backend and trajectory executor on a ROS graph)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np
from agent_bringup.action import MoveEef
from agent_bringup.msg import EpisodeStatus, TrajectoryStatus
from rclpy.impl.rcutils_logger import RcutilsLogger
from sensor_msgs.msg import JointState

from robodojo.control.trajectory_controller import TrajectoryState, trajectory_key
from robodojo.errors import BackendLostError, InvalidCommandError
from robodojo.motion.rejection import Refused
from robodojo.motion.report import MoveReport
from robodojo.motion.server import MotionServer, ProgressCallback, SuccessCheck
from robodojo.nodes import convert, topics
from robodojo.nodes.controller_commands import ControllerCommands
from robodojo.nodes.parameters import MotionServerParams
from robodojo.observation import Observation
from robodojo.robots.arm_state import arm_state_from_joints, gripper_opening
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_speed import JointSpeedWindow
from robodojo.robots.joint_state import JointPositions

UNLIMITED_STEPS = 2**31 - 1  # no episode status (a real robot outside a benchmark): no step budget


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
        self._speeds: dict[str, JointSpeedWindow] = {}  # how the server sees that the arms hold still
        self.lock = threading.Lock()
        #: Notified on every joint state, episode status and controller report (and by :meth:`wake`): wait on it,
        #: never sleep-poll.
        self.changed = threading.Condition()
        self._news = 0  # how many notifications: a wait from a mark taken before a look never misses what came between

    def wake(self) -> None:
        """Wake whoever waits on :attr:`changed` (news arrived, a stop, a shutdown: a wait's predicate may now hold)."""
        with self.changed:
            self._news += 1
            self.changed.notify_all()

    def news_mark(self) -> int:
        """A mark for :meth:`wait_for_news`: take it before looking at the state."""
        with self.changed:
            return self._news

    def wait_for_news(self, mark: int, timeout_s: float) -> None:
        """Wait until something was notified after ``mark`` was taken, or ``timeout_s`` [s] passed."""
        with self.changed:
            self.changed.wait_for(lambda: self._news != mark, timeout=timeout_s)

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] until ``predicate()`` holds, looking at each joint state and status as it
        arrives; whether it holds."""
        with self.changed:
            return self.changed.wait_for(predicate, timeout=timeout_s)

    def on_joint_state(self, msg: JointState) -> None:
        self._on_joint_state(msg)
        self.wake()

    def _on_joint_state(self, msg: JointState) -> None:
        with self.lock:
            update = self.joints.update(msg.name, msg.position, time.monotonic())
            if update.error:
                return
            stamp = convert.seconds(msg.header.stamp)
            self.stamp_s = stamp  # latest, not max: a restarted robot starts over
            self.received_s = time.monotonic()
            for arm in update.arms:
                q = self.joints.arm_q(arm)
                if q is None:
                    continue
                self._speeds.setdefault(arm, JointSpeedWindow()).add(stamp, q)

    def speed_of_rad_s(self, arms: Iterable[str]) -> float:
        """The fastest joint of ``arms`` over the last speed window (robots.joint_speed; inf until each arm's joint
        states span one; 0 for no arm)."""
        with self.lock:
            return max(
                (w.speed_rad_s if (w := self._speeds.get(arm)) is not None else math.inf for arm in arms), default=0.0
            )

    def arm_q(self, arm: str) -> np.ndarray | None:
        """``arm``'s latest joint angles (None before the first)."""
        with self.lock:
            return self.joints.arm_q(arm)

    def gripper_opening(self, arm: str) -> float | None:
        """``arm``'s latest measured gripper opening, 0..1 (None before the first)."""
        config = self.robot.arm(arm)
        with self.lock:
            position_m = self.joints.position(config.gripper_joint)
        return None if position_m is None else gripper_opening(config, position_m)

    def on_status(self, msg: EpisodeStatus) -> None:
        self.status, self.status_received_s = msg, time.monotonic()
        self.wake()

    def status_age_s(self) -> float:
        """Wall time since the last episode status; 0 for a robot that publishes none (no simulator)."""
        return 0.0 if self.status is None else time.monotonic() - self.status_received_s

    def arm_ages_s(self) -> dict[str, float]:
        """Wall time since each arm's joints last arrived (its least recent joint; inf before the first)."""
        now = time.monotonic()
        with self.lock:
            return {arm: self.joints.arm_age_s(arm, now) for arm in self.robot.arm_names}

    def age_s(self) -> float:
        """Wall time since the joints of the least recently heard arm arrived. Per arm, not per message: a driver
        leaves out an arm whose state it does not know (a silent motor), and that arm's last joints go stale while
        the other arm's keep coming; a plan from them would start where the arm no longer stands."""
        return max(self.arm_ages_s().values())

    def wait_fresh(self, timeout_s: float, status_stale_s: float, wait_s: float, give_up: Callable[[], bool]) -> None:
        """Wait up to ``wait_s`` [s] for joint states newer than ``timeout_s`` and an episode status newer than
        ``status_stale_s`` (none yet, or a robot that restarted: discovery takes a few seconds), or ``give_up()``."""

        def stale() -> bool:
            return self.age_s() > timeout_s or self.status_age_s() > status_stale_s

        if stale():
            self.wait_until(lambda: not stale() or give_up(), wait_s)

    def require_fresh(self, timeout_s: float) -> None:
        """Raise BackendLostError, with what is missing, unless every arm's joints are newer than ``timeout_s``."""
        if self.age_s() > timeout_s:
            raise BackendLostError(
                f"no joint states on {topics.JOINT_STATES} for {self.stale_text(timeout_s)}: is the robot (simulator "
                "node or driver) running, and every arm answering?"
            )

    def success_check(self) -> SuccessCheck:
        """Whether the episode running now has succeeded; where no status has reached this server yet (the latched
        status can follow the joint states by a discovery round), the first episode whose status comes. Never, for a
        robot that publishes none."""
        episode = self.status.episode_id if self.status is not None else None

        def succeeded() -> bool:
            nonlocal episode
            status = self.status
            if status is None:
                return False
            if episode is None:
                episode = status.episode_id
            return status.episode_id == episode and bool(status.success)

        return succeeded

    def stale_text(self, timeout_s: float) -> str:
        """What is older than ``timeout_s``, for a message: ``1.30 s (the left arm's)``; a one-arm robot's without
        the arm's name (the FR3's arm is called "arm")."""
        ages = self.arm_ages_s()
        oldest = f"{max(ages.values()):.2f} s"
        if len(ages) == 1:
            return oldest
        whose = " and ".join(f"the {arm} arm's" for arm, age in ages.items() if age > timeout_s)
        return f"{oldest} ({whose})"

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


def run_goal(
    server: MotionServer, goal: MoveEef.Goal, success: SuccessCheck | None, on_progress: ProgressCallback | None
) -> MoveReport:
    """A MoveEef goal (its mode and fields) as a call of the library's MotionServer."""
    speed = 1.0 if goal.speed_scale == 0.0 else goal.speed_scale  # unset; anything else is the server's to check
    if goal.mode == MoveEef.Goal.MOVE_EEF:
        return server.move_eef_pairs(
            goal.names, goal.values, is_success=success, on_progress=on_progress, speed_scale=speed
        )
    if goal.mode == MoveEef.Goal.MOVE_TO:
        p, q = goal.position, goal.orientation
        return server.move_to(
            goal.arm, (p.x, p.y, p.z), (q.w, q.x, q.y, q.z) if goal.use_orientation else None,
            goal.gripper if goal.use_gripper else None, is_success=success, on_progress=on_progress,
            speed_scale=speed,
        )  # fmt: skip
    if goal.mode == MoveEef.Goal.HOME:
        return server.home(is_success=success, on_progress=on_progress, speed_scale=speed)
    return MoveReport.rejected(Refused(f"unknown mode {goal.mode}; use MOVE_EEF (0), MOVE_TO (1) or HOME (2)"))


class MotionNode(Protocol):
    """What the motion server's backend and executor use of their node (motion_server_node.MotionServerNode)."""

    robot: RobotConfig
    control_dt_s: float
    params: MotionServerParams
    state: RobotState
    trajectory_board: TrajectoryBoard
    commands: ControllerCommands
    motion_episode_bound: bool  #: whether the running motion ends with its episode
    stop_detail: str  #: why the running motion was told to stop
    shutdown_started_s: float  #: monotonic; inf until the node shuts down

    @property
    def shutting_down(self) -> bool: ...

    def log_motion_error(self, text: str) -> None: ...

    def get_logger(self) -> RcutilsLogger: ...


class ControllerTopicsBackend:
    """The RobotBackend the MotionServer sees on the graph: state from topics, hold by stopping the controllers."""

    def __init__(self, node: MotionNode) -> None:
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
        self.node.commands.send_stop()


class TrajectoryBoard:
    """The controllers' latest report on each trajectory, by controller and trajectory start (TrajectoryStatus.msg)."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._on_change = on_change  # called after each report: whoever follows a trajectory looks again
        self._reports: dict[tuple[str, int], TrajectoryStatus] = {}
        self._holding: dict[str, tuple[bool, float]] = {}  # controller -> (holding, wall time received)
        self.lock = threading.Lock()

    def on_status(self, msg: TrajectoryStatus) -> None:
        key = (msg.controller, trajectory_key(convert.seconds(msg.start)))
        with self.lock:
            if len(self._reports) > 256:  # bounded: only the running goal's trajectories matter
                self._reports.clear()
            latest = self._reports.get(key)
            # an end is final: a late progress report never turns it back into PLAYING
            if latest is None or latest.state == TrajectoryState.PLAYING:
                self._reports[key] = msg
            self._holding[msg.controller] = (msg.holding, time.monotonic())
        self._on_change()

    def reports(self, controllers: list[str], start_s: float) -> dict[str, TrajectoryStatus]:
        key = trajectory_key(start_s)
        with self.lock:
            return {c: self._reports[(c, key)] for c in controllers if (c, key) in self._reports}

    def holding_since(self, controllers: list[str], since_s: float) -> bool:
        """Every controller reported holding in a message received after ``since_s`` (monotonic)."""
        with self.lock:
            return all(
                (entry := self._holding.get(c)) is not None and entry[0] and entry[1] > since_s for c in controllers
            )
