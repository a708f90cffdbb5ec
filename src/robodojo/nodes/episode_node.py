"""The episode of a real robot: what sim_node publishes about an episode, for robots without a simulator.

Publishes /episode/status (latched, on every change and at ``status_rate_hz``) with the task's instruction (or the
``instruction`` parameter), recipe and step budget; counts the steps from the controllers' trajectory_status reports
(points played, as the simulator counts them) and, once the budget is used up, stops every controller with an empty
trajectory; takes success and score from the operator through /episode/judge (``robodojo judge``), and publishes each
verdict on /episode/verdict. Where the task has an observation-only check (``observed_success``), success is also
judged from the robot's own joint states (robodojo.episodes.observed), unless the operator judged first; the operator
can still override it.

/episode/reset starts a new episode: it stops the running motion through the motion server's /motion/stop and homes
the arms through its /motion/home (``home_on_reset``; without it, it stops the controllers itself), then asks the
operator to put the scene back and waits for ``robodojo judge --ready`` (``confirm_reset``, up to
``reset_timeout_s``); the steps of the homing are not the agent's.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time

from agent_bringup.msg import EpisodeStatus, TrajectoryStatus
from agent_bringup.srv import JudgeEpisode, ResetEpisode
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.client import Client
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robodojo.episodes.observed import HeldAndLiftedCheck
from robodojo.episodes.operated import EpisodeText, OperatedEpisode, SceneConfirmation, episode_text
from robodojo.errors import RobodojoError
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import EpisodeNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import LATCHED_QOS, GraphNode, run_node
from robodojo.observation import EpisodeState
from robodojo.robots.config import load_robot_config
from robodojo.sim.tasks import get_task

NODE_NAME = "episode_node"
JUDGE = "/episode/judge"
VERDICT = "/episode/verdict"
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
# /motion/stop and /motion/home: a stop or a home move takes seconds; the motion server answers long before
MOTION_SERVICE_TIMEOUT_S = 120.0
PROMPT_PERIOD_S = 15.0  # while a reset waits, the operator is reminded this often


class EpisodeNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, EpisodeNodeParams)
        self.params = p
        self.robot = load_robot_config(p.robot)
        self.episode = OperatedEpisode(self._text(p.task, p.variant, p.seed))
        self.scene = SceneConfirmation()
        self._budget_stopped = ""  # the episode whose controllers were stopped for its budget
        self._last_state: EpisodeState | None = None
        self._lock = threading.Lock()

        self.status_pub = self.create_publisher(EpisodeStatus, topics.EPISODE_STATUS, LATCHED_QOS)
        self.verdict_pub = self.create_publisher(String, VERDICT, LATCHED_QOS)
        self.stop_pubs = []  # (publisher, the controller's joints): an empty trajectory naming them stops it
        for arm in self.robot.arms:
            for name in (topics.arm_controller_name(arm.name), topics.gripper_controller_name(arm.name)):
                self.create_subscription(TrajectoryStatus, topics.trajectory_status(name), self._on_report, REPORT_QOS)
            for topic, joints in (
                (topics.arm_controller(arm.name), arm.joints),
                (topics.gripper_controller(arm.name), (arm.gripper_joint,)),
            ):
                self.stop_pubs.append((self.create_publisher(JointTrajectory, topic, 10), list(joints)))
        self.check: HeldAndLiftedCheck | None = None
        self._watch_task(p.task)
        if p.observed_success:  # for this task's check and every later one's
            self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state, 10)
            for arm in self.robot.arms:
                self.create_subscription(
                    JointTrajectory,
                    topics.gripper_controller(arm.name),
                    functools.partial(self._on_gripper_command, arm.name),
                    10,
                )
        slow = MutuallyExclusiveCallbackGroup()  # a reset waits for the arms and the operator
        self.create_service(ResetEpisode, topics.EPISODE_RESET, self._on_reset, callback_group=slow)
        self.create_service(JudgeEpisode, JUDGE, self._on_judge)
        motion = MutuallyExclusiveCallbackGroup()
        self.stop_client = self.create_client(Trigger, topics.STOP, callback_group=motion)
        self.home_client = self.create_client(Trigger, topics.HOME, callback_group=motion)
        self.create_timer(1.0 / p.status_rate_hz, lambda: self._publish(force=True))
        self._publish(force=True)
        self.get_logger().info(
            f"{self.robot.name}: episode {self.episode.episode_id} ({p.task}): {self.episode.text.instruction!r}; "
            f"{self.episode.text.step_limit} steps; judge with `robodojo judge --success/--fail/--score S`"
        )

    def _text(self, task: str, variant: str, seed: int) -> EpisodeText:
        return episode_text(self.robot, task, variant, seed, self.params.instruction, self.params.step_limit)

    # -- the task's own check -------------------------------------------------------------------------------------
    def _watch_task(self, task: str) -> None:
        """Check ``task``'s observation-only success from now on (where it has one and ``observed_success``)."""
        spec = get_task(task).observed_success if self.params.observed_success else None
        if spec is None:
            self.check = None
            return
        if self.check is not None and self.check.spec == spec:
            self.check.reset()
            return
        self.check = HeldAndLiftedCheck(spec, self.robot)

    def _on_gripper_command(self, arm: str, msg: JointTrajectory) -> None:
        check = self.check
        if check is not None and check.spec.arm == arm and msg.points and msg.points[-1].positions:
            check.on_gripper_command(float(msg.points[-1].positions[0]))

    def _on_joint_state(self, msg: JointState) -> None:
        check, episode = self.check, self.episode
        if check is None or episode.verdict is not None or self.scene.waiting:
            return
        if not check.on_joint_state(dict(zip(msg.name, msg.position, strict=False))):
            return
        episode.judge(True, math.nan, check.detail)
        text = f"episode {episode.episode_id}: success ({check.detail})"
        self.get_logger().info(f"the task's own check: {text}")
        self.verdict_pub.publish(String(data=text))
        self._publish(force=True)

    # -- steps ----------------------------------------------------------------------------------------------------
    def _on_report(self, msg: TrajectoryStatus) -> None:
        episode = self.episode
        if episode.on_report(msg.controller, convert.seconds(msg.start), int(msg.points_played)):
            if episode.steps_left == 0 and self._budget_stopped != episode.episode_id:
                self._budget_stopped = episode.episode_id
                self.get_logger().warning("the episode's steps are used up: every controller stopped")
                self._stop_controllers()
            self._publish(force=False)

    def _stop_controllers(self) -> None:
        for pub, joints in self.stop_pubs:
            pub.publish(JointTrajectory(joint_names=joints))  # no points: stop (joint_trajectory_controller semantics)

    # -- operator -------------------------------------------------------------------------------------------------
    def _on_judge(self, request: JudgeEpisode.Request, response: JudgeEpisode.Response) -> JudgeEpisode.Response:
        episode = self.episode
        response.episode_id = episode.episode_id
        if request.episode_id and request.episode_id != episode.episode_id:
            response.accepted = False
            response.message = f"episode {request.episode_id} is over; the running one is {episode.episode_id}"
            return response
        if request.kind == JudgeEpisode.Request.READY:
            response.accepted = self.scene.confirm()
            response.message = (
                "the scene is ready: the new episode starts"
                if response.accepted
                else "no reset is waiting for the scene; nothing to confirm"
            )
            return response
        if request.kind != JudgeEpisode.Request.VERDICT:
            response.accepted, response.message = False, f"unknown kind {request.kind}: VERDICT (0) or READY (1)"
            return response
        try:
            verdict = episode.judge(bool(request.success), float(request.score), request.note)
        except RobodojoError as exc:
            response.accepted, response.message = False, str(exc)
            return response
        text = verdict.text(episode.episode_id)
        self.get_logger().info(f"operator's verdict: {text}")
        self.verdict_pub.publish(String(data=text))
        self._publish(force=True)
        response.accepted, response.message = True, text
        return response

    # -- reset ----------------------------------------------------------------------------------------------------
    def _on_reset(self, request: ResetEpisode.Request, response: ResetEpisode.Response) -> ResetEpisode.Response:
        try:
            text = self._text(request.task or self.params.task, request.variant, int(request.seed))
        except RobodojoError as exc:
            response.success, response.message = False, str(exc)
            self.get_logger().error(f"reset refused, the episode goes on: {exc}")
            return response
        if not self.params.home_on_reset:
            self._stop_controllers()
        self.episode = OperatedEpisode(text, counting=False)
        self._watch_task(text.task)
        self._publish(force=True)
        why = (self._stop_motion() or self._home()) if self.params.home_on_reset else ""
        if not why and self.params.confirm_reset:
            why = self._wait_for_operator(text)
        if why:
            response.success, response.message = False, why
            self.get_logger().error(f"reset failed: {why}")
            return response
        self.episode.start_counting()
        self._publish(force=True)
        response.success, response.episode_id, response.instruction = True, self.episode.episode_id, text.instruction
        self.get_logger().info(f"reset: {text.task} -> episode {self.episode.episode_id}")
        return response

    def _stop_motion(self) -> str:
        """Stop whatever moves the arms through the motion server; "" once it has ended, else why not.

        Not with this node's own empty trajectories: those come from other publishers than the homing's, and DDS
        orders samples per publisher only. One delivered late (matched late, or resent on a loaded machine) would
        stop the homing trajectory it was meant to precede.
        """
        return self._call(self.stop_client, topics.STOP, "stopping the running motion failed")

    def _home(self) -> str:
        """Home the arms through the motion server; "" when done, else why not."""
        return self._call(self.home_client, topics.HOME, "homing failed")

    def _call(self, client: Client, service: str, failed: str) -> str:
        """Call the motion server's Trigger ``service``; "" on success, else why not (prefixed ``failed``)."""
        if not client.wait_for_service(timeout_sec=MOTION_SERVICE_TIMEOUT_S / 10):
            return f"no {service} service: is the motion server running?"
        done = threading.Event()
        future = client.call_async(Trigger.Request())
        future.add_done_callback(lambda _: done.set())
        if not done.wait(MOTION_SERVICE_TIMEOUT_S):
            return f"{service} did not answer within {MOTION_SERVICE_TIMEOUT_S:g} s"
        result = future.result()
        if result is None or not result.success:
            return f"{failed}: {result.message if result else 'no answer'}"
        return ""

    def _wait_for_operator(self, text: EpisodeText) -> str:
        """Ask the operator to put the scene back; "" once confirmed, else why not."""

        def prompt() -> None:
            self.get_logger().warning(
                f"operator: set up the scene for {text.task!r} ({text.instruction!r}), then run "
                "`robodojo judge --ready`"
            )

        if self.scene.wait(self.params.reset_timeout_s, prompt, PROMPT_PERIOD_S):
            return ""
        return f"the operator did not confirm the scene within {self.params.reset_timeout_s:g} s"

    # -- status ---------------------------------------------------------------------------------------------------
    def _publish(self, *, force: bool) -> None:
        state = self.episode.state()
        with self._lock:
            if not force and state == self._last_state:
                return
            self._last_state = state
            self.status_pub.publish(convert.episode_status_msg(EpisodeStatus, state, self.robot.name, time.time()))


def main() -> int:
    return run_node(EpisodeNode, NODE_NAME, threads=3)


if __name__ == "__main__":
    sys.exit(main())
