"""The agent side of the graph: topics as an agent-side RobotBackend, the MoveEef action as Motion, and the
simulator's episode as an EpisodeHost (what agent_node runs an episode with)."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

import numpy as np
from agent_bringup.action import MoveEef
from agent_bringup.msg import EpisodeStatus
from geometry_msgs.msg import PoseStamped
from numpy.typing import ArrayLike
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, Image, JointState
from visualization_msgs.msg import MarkerArray

from robodojo.agents.base import EpisodeContext
from robodojo.episodes.feed import DroppingFeed
from robodojo.episodes.recorder import StepSeen
from robodojo.episodes.spec import EpisodeSpec
from robodojo.errors import BackendLostError, EpisodeInterrupted, InvalidCommandError
from robodojo.motion.path_markers import PathMarker
from robodojo.motion.rejection import Refused, TargetsNotAMapping
from robodojo.motion.report import MoveReport, StopReason
from robodojo.motion.targets import TargetError, arm_pose_target, slowed
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import AgentNodeParams
from robodojo.nodes.runtime import GraphNode, SpunNode, call_in_executor
from robodojo.observation import CameraFrame, Observation
from robodojo.robots.arm_state import arm_state_from_joints
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

WAIT_POLL_S = 0.05  # how often a wait for a future looks at the interruption
# How long a loss of the robot side waits for this node's own stop signal before it counts as a loss: on a terminal's
# Ctrl-C every node of the graph gets the signal at once, and a loaded 2-core machine can run another node's shutdown
# before this process is scheduled to take its own signal.
SHUTDOWN_NOTICE_S = 1.0
#: The record's per-step feed (GraphEpisodeHost.follow_steps): states waiting for the writer before the oldest are
#: dropped (2 s of 100 Hz joint states), how long the episode's end waits for the writer to catch up, and the joint
#: motion below which a state within a step repeats the last one (a holding arm's servo noise is far below it).
STEP_FEED_CAPACITY = 200
STEP_FEED_CLOSE_S = 2.0
STATUS_LAG_STEPS = 5  #: how far ahead of the latest /episode/status a joint state's step is reckoned at most
HELD_JOINT_TOLERANCE = 1e-5


class ShutdownNotice:
    """Whether the agent node is shutting down: from the instant its stop signal arrives (run_node's handler marks the
    node at once) or once close asked for it (a node stopped by other means)."""

    def __init__(self, node: GraphNode) -> None:
        self._node = node
        self._closing = threading.Event()

    def set(self) -> None:
        self._closing.set()

    def is_set(self) -> bool:
        return self._node.stop_signaled or self._closing.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the notice; whether it came."""
        deadline = time.monotonic() + timeout_s
        while not self.is_set():
            remaining_s = deadline - time.monotonic()
            if remaining_s <= 0:
                return False
            self._closing.wait(min(remaining_s, WAIT_POLL_S))
        return True


@contextlib.contextmanager
def losses_after_interruption(interrupted: ShutdownNotice) -> Iterator[None]:
    """A robot side that stops answering as the node shuts down is part of the shutdown (on Ctrl-C in a terminal
    every node of the graph stops at once): BackendLostError then becomes EpisodeInterrupted."""
    try:
        yield
    except BackendLostError as exc:
        if interrupted.wait(SHUTDOWN_NOTICE_S):
            raise EpisodeInterrupted(f"interrupted; the robot side stopped too: {exc}") from exc
        raise


class GraphView:
    """The latest of every topic the agent may see, kept by subscription callbacks."""

    FRAMES_KEPT = 8  # per camera: image, info and pose of one instant arrive separately, images last

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.status: EpisodeStatus | None = None
        self.status_received_s = -math.inf
        self.joints: JointPositions | None = None
        self.joint_stamp_s = -math.inf
        self.joint_received_s = -math.inf
        self.frames: dict[str, dict[float, dict[str, object]]] = {}  # camera -> stamp -> part -> message
        #: called with the lock held after each joint state taken (the record's control-rate feed): must not wait
        self.joint_listeners: list[Callable[[], None]] = []
        #: called with each planned path the motion server draws (its stamp [s] and markers): must not wait
        self.path_listeners: list[Callable[[float, tuple[PathMarker, ...]], None]] = []

    def on_status(self, msg: EpisodeStatus) -> None:
        with self.changed:
            self.status, self.status_received_s = msg, time.monotonic()
            self.changed.notify_all()

    def on_joint_state(self, msg: JointState) -> None:
        with self.changed:
            if self.joints is not None and not self.joints.update(msg.name, msg.position, time.monotonic()).error:
                self.joint_stamp_s = convert.seconds(msg.header.stamp)  # latest: a restarted robot starts over
                self.joint_received_s = time.monotonic()
                for listener in self.joint_listeners:
                    listener()
                self.changed.notify_all()

    def on_planned_path(self, msg: MarkerArray) -> None:
        stamp_s = convert.seconds(msg.markers[0].header.stamp) if msg.markers else -math.inf
        markers = convert.path_markers_from(msg)
        with self.lock:
            for listener in self.path_listeners:
                listener(stamp_s, markers)

    def on_camera(self, camera: str, part: str) -> Callable:
        def callback(msg: Image | CameraInfo | PoseStamped) -> None:
            with self.changed:
                frames = self.frames.setdefault(camera, {})
                frames.setdefault(convert.seconds(msg.header.stamp), {})[part] = msg
                for old in sorted(frames)[: -self.FRAMES_KEPT]:
                    del frames[old]
                self.changed.notify_all()

        return callback

    def frame(self, camera: str, not_before_s: float) -> CameraFrame | None:
        """The camera's newest complete frame (image, info and pose of one stamp) no older than ``not_before_s``."""
        frames = self.frames.get(camera, {})
        for stamp in sorted(frames, reverse=True):
            parts = frames[stamp]
            if stamp < not_before_s - 1e-6:
                return None
            if len(parts) == 3:
                return CameraFrame(
                    name=camera,
                    rgb=convert.image_rgb(parts["image"]),
                    calibration=convert.calibration_from(parts["info"], parts["pose"]),
                )
        return None


class TopicObservationBackend:
    """The agent-side RobotBackend on the graph: observations from topics; it never commands the robot itself."""

    def __init__(
        self, view: GraphView, robot: RobotConfig, params: AgentNodeParams, interrupted: ShutdownNotice
    ) -> None:
        self.view = view
        self.interrupted = interrupted
        self.robot = robot
        self.params = params
        self.kinematics = ArmKinematics(robot)
        self.control_dt_s = robot.control_dt_s

    @property
    def steps_left(self) -> int:
        status = self.view.status
        return int(status.steps_left) if status else 0

    def check_alive(self) -> None:
        with losses_after_interruption(self.interrupted):
            self._check_alive()

    def _check_alive(self) -> None:
        age = time.monotonic() - self.view.status_received_s
        if age > self.params.status_timeout_s:
            raise BackendLostError(
                f"no {topics.EPISODE_STATUS} for {age:.1f} s: the simulator (or driver) stopped answering"
            )
        joint_age = time.monotonic() - self.view.joint_received_s
        if joint_age > self.params.status_timeout_s:
            raise BackendLostError(f"no {topics.JOINT_STATES} for {joint_age:.1f} s: the robot stopped answering")

    def observe(self, cameras: Iterable[str] | None = None) -> Observation:
        """Joint and grasp-point state now, and each camera's first frame taken no earlier than this call."""
        with losses_after_interruption(self.interrupted):
            return self._observe(cameras)

    def _observe(self, cameras: Iterable[str] | None) -> Observation:
        names = self.robot.camera_names if cameras is None else tuple(cameras)
        for name in names:
            self.robot.camera(name)  # unknown names raise before waiting
        self.check_alive()
        view = self.view
        deadline = time.monotonic() + self.params.image_timeout_s
        with view.changed:
            since = view.joint_stamp_s
            frames: dict[str, CameraFrame] = {}
            while True:
                for name in names:
                    if name not in frames and (frame := view.frame(name, since)) is not None:
                        frames[name] = frame
                missing = [n for n in names if n not in frames]
                remaining = deadline - time.monotonic()
                if not missing or remaining <= 0:
                    break
                view.changed.wait(timeout=min(remaining, 0.1))
            if missing:
                raise BackendLostError(
                    f"no frame from camera {', '.join(missing)} within {self.params.image_timeout_s} s"
                )
            arms = {}
            assert view.joints is not None
            for arm in self.robot.arms:
                q, grip = view.joints.arm_q(arm.name), view.joints.position(arm.gripper_joint)
                if q is None or grip is None:
                    raise BackendLostError(f"no joint states for the {arm.name} arm on {topics.JOINT_STATES}")
                arms[arm.name] = arm_state_from_joints(self.kinematics, arm.name, q, grip)
            status = view.status
            assert status is not None
            return Observation(
                step=int(status.steps_used), steps_left=int(status.steps_left), time_s=view.joint_stamp_s,
                arms=arms, cameras={n: frames[n] for n in names},
            )  # fmt: skip

    def step(self, joint_targets: object = None, gripper_targets: object = None) -> None:
        """Let one control period pass (the robo API waits for the fingers this way); commands go through MoveEef."""
        if joint_targets or gripper_targets:
            raise InvalidCommandError("the agent moves the robot only through the MoveEef action")
        with self.view.changed:
            target = self.view.joint_stamp_s + self.control_dt_s - 1e-6
            deadline = time.monotonic() + self.params.image_timeout_s
            while self.view.joint_stamp_s < target and time.monotonic() < deadline:
                self.view.changed.wait(timeout=0.05)
        self.check_alive()

    def hold(self) -> None:
        raise InvalidCommandError("the agent cannot hold the arms itself; the motion server's stop service does")


class AgentGraphNode(SpunNode, Protocol):
    """What the graph's episode host and MoveEef client use of their node (agent_node.AgentNode, an rclpy node that
    knows the episode status and whether it is shutting down)."""

    params: AgentNodeParams
    view: GraphView
    interrupted: ShutdownNotice

    def current_status(self, *, newer_than: str = "") -> EpisodeStatus: ...

    def check_interrupted(self) -> None: ...


class MoveEefClient:
    """The Motion interface over the MoveEef action: the same calls and MoveReports as the in-process server."""

    def __init__(self, node: AgentGraphNode, backend: TopicObservationBackend) -> None:
        self.node = node
        self.backend = backend
        self.robot = backend.robot
        self.client = ActionClient(node, MoveEef, topics.MOVE_EEF, callback_group=MutuallyExclusiveCallbackGroup())
        self._goal_handle = None

    def move_eef(self, targets: object, *, is_success: Callable[[], bool] | None = None, note: str = "") -> MoveReport:
        if not isinstance(targets, Mapping):  # not encodable as a goal: the parser's own rejection, in process
            return MoveReport.rejected(TargetsNotAMapping())
        names = [str(k) for k in targets]
        # Non-numbers travel as NaN: the server then rejects them with the same text as in process.
        values = [_number_or_nan(v) for v in targets.values()]
        return self._send(MoveEef.Goal(mode=MoveEef.Goal.MOVE_EEF, names=names, values=values, note=str(note)))

    def move_to(
        self,
        arm: str,
        xyz: ArrayLike,
        quat_wxyz: ArrayLike | None = None,
        gripper: float | None = None,
        *,
        is_success: Callable[[], bool] | None = None,
        speed_scale: float = 1.0,
    ) -> MoveReport:
        try:  # the library's own validation first: same messages, and only well-formed goals go out
            state = self.backend.observe(cameras=()).arms
            target = slowed(arm_pose_target(self.robot, state, arm, xyz, quat_wxyz, gripper), speed_scale)
        except TargetError as exc:
            return MoveReport.rejected(exc.rejection)
        t = target.arms[arm]
        goal = MoveEef.Goal(mode=MoveEef.Goal.MOVE_TO, arm=arm, use_orientation=quat_wxyz is not None)
        goal.speed_scale = target.speed_scale
        goal.position.x, goal.position.y, goal.position.z = t.pos_m
        goal.orientation.w, goal.orientation.x, goal.orientation.y, goal.orientation.z = t.quat_wxyz
        if t.gripper is not None:
            goal.use_gripper, goal.gripper = True, float(t.gripper)
        return self._send(goal)

    def home(self, *, is_success: Callable[[], bool] | None = None) -> MoveReport:
        return self._send(MoveEef.Goal(mode=MoveEef.Goal.HOME))

    def stop(self) -> None:
        handle = self._goal_handle
        if handle is not None:
            call_in_executor(self.node, handle.cancel_goal_async, self.node.params.status_timeout_s)

    def _send(self, goal: MoveEef.Goal) -> MoveReport:
        self.node.check_interrupted()  # no new motion once the node is shutting down
        with losses_after_interruption(self.node.interrupted):
            report = self._send_goal(goal)
        if report.stop_reason is StopReason.BACKEND_LOST:  # the runner would end the episode as backend_lost
            # On a terminal's Ctrl-C every node stops at once, and the motion server's goal can end lost before this
            # process has taken its own SIGINT: give it that moment, so that the episode ends as interrupted, as it was.
            self.node.interrupted.wait(SHUTDOWN_NOTICE_S)
            self.node.check_interrupted()
        return report

    def _send_goal(self, goal: MoveEef.Goal) -> MoveReport:
        timeout = self.node.params.motion_timeout_s
        if not self.client.wait_for_server(timeout_sec=self.node.params.status_timeout_s):
            raise BackendLostError(f"no MoveEef action server on {topics.MOVE_EEF}: is the motion server running?")
        sent = call_in_executor(self.node, lambda: self.client.send_goal_async(goal), timeout)
        grace = self.node.params.status_timeout_s
        handle = wait_for(
            sent, timeout, "the MoveEef goal to be accepted", interrupted=self.node.interrupted, grace_s=grace
        )
        if not handle.accepted:
            return MoveReport.rejected(Refused("the motion server did not accept the goal"))
        self._goal_handle = handle
        if self.node.interrupted.is_set():  # close looked for a goal to cancel before this one was accepted
            self.stop()
        try:
            result = call_in_executor(self.node, handle.get_result_async, timeout)
            # Interrupted, the goal is cancelled and its result normally follows at once; on Ctrl-C in a terminal the
            # motion server may be shutting down too and never answer.
            response = wait_for(result, timeout, "the MoveEef result", interrupted=self.node.interrupted, grace_s=grace)
        finally:
            self._goal_handle = None
        return convert.move_report(response.result)


class GraphEpisodeHost:
    """An episode run by the simulator node: reset through its service, followed through its status."""

    def __init__(self, node: AgentGraphNode, robot: RobotConfig) -> None:
        self.node = node
        self.view = node.view
        self.robot = robot
        self.backend = TopicObservationBackend(self.view, robot, node.params, node.interrupted)
        self.motion = MoveEefClient(node, self.backend)
        self.episode_id = ""

    def start(self, spec: EpisodeSpec) -> EpisodeContext:
        status = self.node.current_status()
        self.episode_id = status.episode_id
        return EpisodeContext(
            task=status.task, instruction=status.instruction, recipe=status.recipe, robot=self.robot,
            backend=self.backend, motion=self.motion, is_success=self.success, llm_call_budget=spec.llm_call_budget,
        )  # fmt: skip

    def check(self) -> None:
        self.node.check_interrupted()
        self.backend.check_alive()
        status = self.view.status
        if status is not None and status.episode_id != self.episode_id:
            raise BackendLostError(
                f"the simulator started another episode ({status.episode_id}, was {self.episode_id}): "
                "it restarted or was reset"
            )

    def _status(self) -> EpisodeStatus:
        status = self.view.status
        assert status is not None
        return status

    def success(self) -> bool:
        status = self._status()
        return status.episode_id == self.episode_id and bool(status.success)

    def score(self) -> float:
        status = self._status()
        return float(status.score) if status.episode_id == self.episode_id else 0.0

    @property
    def steps_used(self) -> int:
        return int(self._status().steps_used)

    @property
    def steps_left(self) -> int:
        return int(self._status().steps_left)

    @property
    def step_limit(self) -> int:
        return int(self._status().step_limit)

    def state(self) -> Observation:
        return self.backend.observe(cameras=())

    #: The simulator (or the robot) runs on its own clock: a model call's time has passed in it already, and the
    #: episode's clock only adds what its setting asks beyond that (robodojo.episodes.clock).
    time_passes_by_itself = True

    @property
    def world_time_s(self) -> float:
        """The robot's time [s]: the stamp of the latest joint state (simulated time when the simulator runs)."""
        return self.view.joint_stamp_s

    def let_time_pass(self, seconds: float) -> float:
        """Wait until ``seconds`` of the robot's time have passed (by its joint states' stamps), the arms held by
        their controllers as between trajectories; the time that passed [s]. A robot side that stops answering
        raises BackendLostError, a node shutting down EpisodeInterrupted."""
        view = self.view
        start_s = view.joint_stamp_s
        while view.joint_stamp_s < start_s + seconds:
            self.node.check_interrupted()
            self.backend.check_alive()  # outside the view's lock: a loss waits for the node's stop signal
            with view.changed:
                if view.joint_stamp_s < start_s + seconds:
                    view.changed.wait(timeout=WAIT_POLL_S)
        return view.joint_stamp_s - start_s

    def follow_steps(self, seen: StepSeen, camera_every_steps: int = 0) -> Callable[[], None]:
        """``seen`` gets the robot's state from every joint state of this episode that moved a joint (the simulator
        publishes them at the physics rate: several per control step), with the step it belongs to and how far into
        that step it came, and the newest frame of every camera each ``camera_every_steps`` steps (0: never). The
        states reach ``seen`` on a thread of their own, so the record never holds up this node's callbacks: should it
        fall behind by STEP_FEED_CAPACITY states, the oldest are dropped. Call the result to stop.

        The step is reckoned from the joint state's stamp against the latest /episode/status (its steps and the
        simulation time of its last step), not taken from it: the two topics' callbacks run in no set order, and a
        status taken late would label a step's states with the step before. Reckoned ahead by up to STATUS_LAG_STEPS
        while the statuses show a step counted each control period (a motion playing); otherwise (the arms held
        still for a while, no step counted) by one step at most: a motion's first states."""
        view, robot, kinematics = self.view, self.robot, self.backend.kinematics
        dt = robot.control_dt_s
        last: list[dict[str, tuple[np.ndarray, float]]] = []
        statuses: list[tuple[int, float]] = []  # the latest two statuses taken: (steps used, stamp [s])

        def taken() -> None:  # GraphView.on_joint_state, under its lock: copy and hand over, nothing more
            status, joints = view.status, view.joints
            if status is None or joints is None or status.episode_id != self.episode_id:
                return
            positions = {}
            for arm in robot.arms:
                q, grip = joints.arm_q(arm.name), joints.position(arm.gripper_joint)
                if q is None or grip is None:
                    return
                positions[arm.name] = (np.array(q, dtype=float), float(grip))
            if last and not _moved(last[0], positions):
                return  # the arms hold still: the record already has this state
            last[:] = [positions]
            steps, status_s = int(status.steps_used), convert.seconds(status.header.stamp)
            if not statuses or statuses[-1] != (steps, status_s):
                statuses[:] = [*statuses[-1:], (steps, status_s)]
            since_status_s = view.joint_stamp_s - status_s
            ahead = min(math.floor(since_status_s / dt + 1e-9), STATUS_LAG_STEPS)
            (before_steps, before_s), _ = statuses if len(statuses) == 2 else ((-1, -math.inf), None)
            if not (steps == before_steps + 1 and abs(status_s - before_s - dt) < dt / 2):
                ahead = min(ahead, 1)  # steps were not counted one a period (the arms held): the next one at most
            step = max(0, steps + ahead)
            within_s = min(max(0.0, since_status_s - ahead * dt), dt)
            feed.put((step, int(status.steps_left), view.joint_stamp_s, within_s, positions))

        def write(item: tuple[int, int, float, float, dict[str, tuple[np.ndarray, float]]]) -> None:
            step, steps_left, stamp_s, within_s, positions = item
            arms = {name: arm_state_from_joints(kinematics, name, q, grip) for name, (q, grip) in positions.items()}
            cameras: dict[str, CameraFrame] = {}
            if camera_every_steps > 0 and step % camera_every_steps == 0:
                with view.lock:
                    for name in robot.camera_names:
                        if (frame := view.frame(name, -math.inf)) is not None:
                            cameras[name] = frame
            seen(Observation(step, steps_left, stamp_s, arms, cameras), within_s)

        feed: DroppingFeed[tuple[int, int, float, float, dict[str, tuple[np.ndarray, float]]]] = DroppingFeed(
            write, capacity=STEP_FEED_CAPACITY, name="record-steps"
        )
        with view.lock:
            view.joint_listeners.append(taken)

        def stop() -> None:
            with view.lock:
                if taken in view.joint_listeners:
                    view.joint_listeners.remove(taken)
            feed.close(STEP_FEED_CLOSE_S)

        return stop

    def follow_planned_paths(self, seen: Callable[[tuple[PathMarker, ...]], None]) -> Callable[[], None]:
        """``seen`` gets the markers of each motion the motion server plans from now on (its /motion/planned_path,
        latched: the last one drawn before this episode is not this episode's), on the thread of the node's
        callbacks; call the result to stop."""
        view = self.view
        with view.lock:
            since_s = view.joint_stamp_s

        def drawn(stamp_s: float, markers: tuple[PathMarker, ...]) -> None:
            if stamp_s >= since_s:
                seen(markers)

        with view.lock:
            view.path_listeners.append(drawn)

        def stop() -> None:
            with view.lock:
                if drawn in view.path_listeners:
                    view.path_listeners.remove(drawn)

        return stop


def _moved(before: Mapping[str, tuple[np.ndarray, float]], after: Mapping[str, tuple[np.ndarray, float]]) -> bool:
    """Whether any joint moved more than HELD_JOINT_TOLERANCE (rad, or m for a gripper) between two states."""
    return any(
        float(np.max(np.abs(before[arm][0] - q))) > HELD_JOINT_TOLERANCE
        or abs(before[arm][1] - grip) > HELD_JOINT_TOLERANCE
        for arm, (q, grip) in after.items()
    )


def _number_or_nan(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def wait_for(
    future: Future, timeout_s: float, what: str, *, interrupted: ShutdownNotice | None = None, grace_s: float = 0.0
):
    """The future's result, waiting from a thread that is not the executor's; once ``interrupted`` is set, at most
    ``grace_s`` longer (then EpisodeInterrupted)."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    deadline = time.monotonic() + timeout_s
    give_up_s = math.inf
    while not done.wait(timeout=WAIT_POLL_S):
        now = time.monotonic()
        if interrupted is not None and interrupted.is_set() and give_up_s == math.inf:
            give_up_s = now + grace_s
        if now > give_up_s:
            future.cancel()
            raise EpisodeInterrupted(f"interrupted while waiting for {what}")
        if now > deadline:
            future.cancel()
            raise BackendLostError(f"timed out after {timeout_s:.0f} s waiting for {what}")
    return future.result()
