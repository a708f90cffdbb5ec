"""The agent node: runs a move_eef or code-cell agent on the graph, with the same runner and record as in-process.

The agent sees what it sees in process, built from topics: camera images with CameraInfo and optical-frame poses,
joint states (TCP poses by forward kinematics on the URDF, as the motion server judges them), and the episode
status (instruction, steps, the benchmark's success signal). It acts only through the MoveEef action. When the
simulator or driver stops answering, or restarts, the episode ends with end_reason backend_lost.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_bringup.action import MoveEef
from agent_bringup.msg import EpisodeStatus
from agent_bringup.srv import ResetEpisode
from geometry_msgs.msg import PoseStamped
from numpy.typing import ArrayLike
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, Image, JointState

from robodojo.agents.base import EpisodeContext
from robodojo.agents.episode import EndReason, EpisodeSpec, run_episode
from robodojo.agents.factory import make_agent
from robodojo.agents.llm.client import open_llm
from robodojo.errors import BackendLostError, ConfigError, InvalidCommandError, RobodojoError
from robodojo.motion.report import MoveReport, StopReason
from robodojo.motion.targets import TargetError, arm_pose_target, parse_move_eef
from robodojo.nodes import convert, topics
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, call_in_executor, run_node
from robodojo.observation import CameraFrame, Observation
from robodojo.robots.arm_state import arm_state_from_joints
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "agent_node"
LATCHED_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
CONTROL_DT_S = 0.04  # 25 Hz: one trajectory point per env step (DESIGN.md section 5)


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

    def on_status(self, msg: EpisodeStatus) -> None:
        with self.changed:
            self.status, self.status_received_s = msg, time.monotonic()
            self.changed.notify_all()

    def on_joint_state(self, msg: JointState) -> None:
        with self.changed:
            if self.joints is not None and not self.joints.update(msg.name, msg.position, time.monotonic()).error:
                self.joint_stamp_s = convert.seconds(msg.header.stamp)  # latest: a restarted robot starts over
                self.joint_received_s = time.monotonic()
                self.changed.notify_all()

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
                    rgb=convert.image_rgb(parts["image"]),  # type: ignore[arg-type]
                    calibration=convert.calibration_from(parts["info"], parts["pose"]),  # type: ignore[arg-type]
                )
        return None


class TopicObservationBackend:
    """The agent-side RobotBackend on the graph: observations from topics; it never commands the robot itself."""

    def __init__(self, view: GraphView, robot: RobotConfig, params: dict) -> None:
        self.view = view
        self.robot = robot
        self.params = params
        self.kinematics = ArmKinematics(robot)
        self.control_dt_s = CONTROL_DT_S

    @property
    def steps_left(self) -> int:
        status = self.view.status
        return int(status.steps_left) if status else 0

    def check_alive(self) -> None:
        age = time.monotonic() - self.view.status_received_s
        if age > self.params["status_timeout_s"]:
            raise BackendLostError(
                f"no {topics.EPISODE_STATUS} for {age:.1f} s: the simulator (or driver) stopped answering"
            )
        joint_age = time.monotonic() - self.view.joint_received_s
        if joint_age > self.params["status_timeout_s"]:
            raise BackendLostError(f"no {topics.JOINT_STATES} for {joint_age:.1f} s: the robot stopped answering")

    def observe(self, cameras: Sequence[str] | None = None) -> Observation:
        """Joint and grasp-point state now, and each camera's first frame taken no earlier than this call."""
        names = self.robot.camera_names if cameras is None else tuple(cameras)
        for name in names:
            self.robot.camera(name)  # unknown names raise before waiting
        self.check_alive()
        view = self.view
        deadline = time.monotonic() + self.params["image_timeout_s"]
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
                    f"no frame from camera {', '.join(missing)} within {self.params['image_timeout_s']} s"
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
            deadline = time.monotonic() + self.params["image_timeout_s"]
            while self.view.joint_stamp_s < target and time.monotonic() < deadline:
                self.view.changed.wait(timeout=0.05)
        self.check_alive()

    def hold(self) -> None:
        raise InvalidCommandError("the agent cannot hold the arms itself; the motion server's stop service does")


class MoveEefClient:
    """The Motion interface over the MoveEef action: the same calls and MoveReports as the in-process server."""

    def __init__(self, node: AgentNode, backend: TopicObservationBackend) -> None:
        self.node = node
        self.backend = backend
        self.robot = backend.robot
        self.client = ActionClient(node, MoveEef, topics.MOVE_EEF, callback_group=MutuallyExclusiveCallbackGroup())
        self._goal_handle = None

    def move_eef(self, targets: object, *, is_success: Callable[[], bool] | None = None) -> MoveReport:
        if not isinstance(targets, Mapping):
            try:  # not encodable as a goal: the library's parser gives the in-process text
                parse_move_eef(targets, self.robot, {})
            except TargetError as exc:
                return self._rejected(str(exc))
        names = [str(k) for k in targets]  # type: ignore[union-attr]
        # Non-numbers travel as NaN: the server then rejects them with the same text as in process.
        values = [_number_or_nan(v) for v in targets.values()]  # type: ignore[union-attr]
        return self._send(MoveEef.Goal(mode=MoveEef.Goal.MOVE_EEF, names=names, values=values))

    def move_to(
        self,
        arm: str,
        xyz: ArrayLike,
        quat_wxyz: ArrayLike | None = None,
        gripper: float | None = None,
        *,
        is_success: Callable[[], bool] | None = None,
    ) -> MoveReport:
        try:  # the library's own validation first: same messages, and only well-formed goals go out
            target = arm_pose_target(self.robot, self.backend.observe(cameras=()).arms, arm, xyz, quat_wxyz, gripper)
        except TargetError as exc:
            return self._rejected(str(exc))
        t = target.arms[arm]
        goal = MoveEef.Goal(mode=MoveEef.Goal.MOVE_TO, arm=arm, use_orientation=quat_wxyz is not None)
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
            call_in_executor(self.node, handle.cancel_goal_async, self.node.params["status_timeout_s"])

    def _send(self, goal: MoveEef.Goal) -> MoveReport:
        timeout = self.node.params["motion_timeout_s"]
        if not self.client.wait_for_server(timeout_sec=self.node.params["status_timeout_s"]):
            raise BackendLostError(f"no MoveEef action server on {topics.MOVE_EEF}: is the motion server running?")
        sent = call_in_executor(self.node, lambda: self.client.send_goal_async(goal), timeout)
        handle = _wait(sent, timeout, "the MoveEef goal to be accepted")
        if not handle.accepted:
            return self._rejected("the motion server refused the goal: another motion is running")
        self._goal_handle = handle
        try:
            result = call_in_executor(self.node, handle.get_result_async, timeout)
            response = _wait(result, timeout, "the MoveEef result")
        finally:
            self._goal_handle = None
        return convert.move_report(response.result)

    @staticmethod
    def _rejected(text: str) -> MoveReport:
        return MoveReport(
            accepted=False, tool_text=text, arms={}, waypoints=0, steps_used=0, stop_reason=StopReason.PLAN_FAILED
        )


class GraphEpisodeHost:
    """An episode run by the simulator node: reset through its service, followed through its status."""

    def __init__(self, node: AgentNode, robot: RobotConfig) -> None:
        self.node = node
        self.view = node.view
        self.robot = robot
        self.backend = TopicObservationBackend(self.view, robot, node.params)
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


class AgentNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, NODE_NAME)
        for key in ("status_timeout_s", "image_timeout_s", "motion_timeout_s"):
            if p[key] <= 0:
                raise ConfigError(f"parameter {key!r} must be > 0, got {p[key]}")
        self.params = p
        self.spec = EpisodeSpec(p["task"], p["seed"], p["variant"] or "standard", p["llm_call_budget"])
        make_agent(p["agent"])  # an unknown agent name fails here, before anything runs
        self.view = GraphView()
        inputs = MutuallyExclusiveCallbackGroup()
        self.create_subscription(
            EpisodeStatus, topics.EPISODE_STATUS, self.view.on_status, LATCHED_QOS, callback_group=inputs
        )
        self.create_subscription(JointState, topics.JOINT_STATES, self.view.on_joint_state, 50, callback_group=inputs)
        self._camera_subscriptions: set[str] = set()
        self.reset_client = self.create_client(ResetEpisode, topics.EPISODE_RESET)
        self.result: EndReason | None = None
        self._hosts: list[GraphEpisodeHost] = []
        self._worker = threading.Thread(target=self._work, name="episode", daemon=True)
        self._worker.start()

    def _subscribe_robot(self, robot: RobotConfig) -> None:
        self.view.joints = JointPositions(robot)
        group = MutuallyExclusiveCallbackGroup()
        for cam in robot.camera_names:
            if cam in self._camera_subscriptions:
                continue
            self._camera_subscriptions.add(cam)
            for msg_type, topic, part in (
                (Image, topics.camera_image(cam), "image"),
                (CameraInfo, topics.camera_info(cam), "info"),
                (PoseStamped, topics.camera_pose(cam), "pose"),
            ):
                self.create_subscription(msg_type, topic, self.view.on_camera(cam, part), 5, callback_group=group)

    def current_status(self, *, newer_than: str = "") -> EpisodeStatus:
        """The latest episode status (one with another episode id than ``newer_than``), waiting for it."""
        deadline = time.monotonic() + self.params["status_timeout_s"] * 10
        with self.view.changed:
            while (status := self.view.status) is None or status.episode_id == newer_than:
                if time.monotonic() > deadline:
                    raise BackendLostError(f"no episode status on {topics.EPISODE_STATUS}: is the simulator running?")
                self.view.changed.wait(timeout=0.1)
            return status

    def close(self) -> None:
        self._worker.join(timeout=1.0)
        for host in self._hosts:
            host.motion.client.destroy()

    def _wait_for_robot(self, robot: RobotConfig) -> None:
        """Wait until every arm's joints and every camera's first frame arrived (new subscriptions need discovery)."""
        timeout = self.params["status_timeout_s"] * 5
        deadline = time.monotonic() + timeout
        joints = self.view.joints
        assert joints is not None
        with self.view.changed:
            while True:
                missing = [f"{a} arm joints" for a in robot.arm_names if joints.arm_q(a) is None]
                missing += [f"camera {c}" for c in robot.camera_names if self.view.frame(c, -math.inf) is None]
                if not missing:
                    return
                if time.monotonic() > deadline:
                    raise BackendLostError(f"nothing received within {timeout:.0f} s for: {', '.join(missing)}")
                self.view.changed.wait(timeout=0.1)

    def _reset(self) -> None:
        timeout = self.params["status_timeout_s"] * 10
        if not self.reset_client.wait_for_service(timeout_sec=timeout):
            raise BackendLostError(f"no {topics.EPISODE_RESET} service: is the simulator running?")
        old = self.view.status.episode_id if self.view.status else ""
        request = ResetEpisode.Request(task=self.spec.task, variant=self.spec.variant, seed=self.spec.seed)
        response = _wait(self.reset_client.call_async(request), timeout, "the episode reset")
        if not response.success:
            raise ConfigError(f"the simulator refused the reset: {response.message}")
        self.current_status(newer_than=old)

    def _work(self) -> None:
        code = 1
        try:
            if self.params["reset"]:
                self._reset()
            status = self.current_status()
            # The record names the episode the simulator runs (without a reset it may not be the one in the params).
            spec = EpisodeSpec(status.task, status.seed, status.variant, self.params["llm_call_budget"])
            robot = load_robot_config(status.robot)
            self._subscribe_robot(robot)
            self._wait_for_robot(robot)
            host = GraphEpisodeHost(self, robot)
            self._hosts.append(host)
            agent = make_agent(self.params["agent"])
            with open_llm(self.params["llm"], base_url=self.params["base_url"] or None) as llm:
                try:
                    result = run_episode(host, agent, llm, spec, Path(self.params["out"]), model=llm.model)
                finally:
                    getattr(agent, "close", lambda: None)()
            self.result = result.end_reason
            self.get_logger().info(
                f"episode {status.task} seed {status.seed}: {'success' if result.success else 'no success'}, "
                f"score {result.score:.2f}, ended by {result.end_reason.value}, {result.llm_calls} LLM calls, "
                f"{result.steps_used} steps; record in {result.folder}"
            )
            code = 0 if result.end_reason not in (EndReason.CRASHED, EndReason.BACKEND_LOST) else 3
        except RobodojoError as exc:
            self.get_logger().error(f"episode not run: {exc}")
        except Exception:
            self.get_logger().error(f"episode crashed:\n{traceback.format_exc()}")
        if self.params["exit_when_done"]:
            self.finish(code)


def _number_or_nan(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _wait(future: Future, timeout_s: float, what: str):
    """The future's result, waiting from a thread that is not the executor's."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise BackendLostError(f"timed out after {timeout_s:.0f} s waiting for {what}")
    return future.result()


def main() -> int:
    # One executor thread: the action client must send from it (call_in_executor); the episode has its own thread.
    return run_node(AgentNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
