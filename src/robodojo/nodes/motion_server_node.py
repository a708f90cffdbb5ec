"""The motion server node: the MoveEef action, home and stop services, over the library's MotionServer.

Plans with the same planner as in-process runs, sends each plan to the ros2_control-style trajectory topics of the
arms and grippers, and judges arrival from /joint_states and the URDF. Robot time is the joint states' stamp, so it
works alike against the simulator (simulation time) and real drivers (their clock). The episode status, when a
simulator publishes one, supplies the step budget and the success signal that ends a motion early.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time

from agent_bringup.action import MoveEef
from agent_bringup.msg import ArmArrival, EpisodeStatus, TrajectoryStatus
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from robodojo.errors import BackendLostError
from robodojo.log_limits import RepeatLimiter
from robodojo.motion.gate import MotionGate
from robodojo.motion.planners import make_planner
from robodojo.motion.rejection import BackendLost, Refused
from robodojo.motion.report import SUCCEEDING, MoveReport, StopReason
from robodojo.motion.server import MotionServer, ProgressCallback
from robodojo.nodes import convert, topics
from robodojo.nodes.controller_commands import ControllerCommands
from robodojo.nodes.controller_executor import SHUTDOWN_CONFIRM_S, SHUTDOWN_DETAIL, ControllerExecutor
from robodojo.nodes.controller_topics import ControllerTopicsBackend, RobotState, TrajectoryBoard, run_goal
from robodojo.nodes.parameters import MotionServerParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import CLOSE_DEADLINE_S, LATCHED_QOS, GraphNode, run_node
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics

NODE_NAME = "motion_server_node"
STATUS_STALE_S = 1.5  # three missed heartbeats of the simulator's 2 Hz episode status
STATE_WAIT_S = 4.0  # a goal that finds no fresh joint states waits this long for them (discovery) before refusing
# Goal, cancel and result requests queue this deep: a burst of goals is answered (busy ones aborted with the reason),
# never dropped by a full service queue (rclpy's default keeps 10).
REQUEST_QOS = QoSProfile(depth=1000)
#: close() waits this long for the running goal to end: its stop's confirmation (bounded by SHUTDOWN_CONFIRM_S once
#: shutting down) and its report; with the result's flush it stays within runtime.CLOSE_DEADLINE_S, below the 5 s
#: ros2 launch gives a node between SIGINT and SIGTERM.
SHUTDOWN_IDLE_S = SHUTDOWN_CONFIRM_S + 1.0
#: The goal's execute callback, the stop service, a home move, and one per input (joint states, status, reports).
EXECUTOR_THREADS = 6
RESULT_FLUSH_S = 0.3  # after the last goal's execute callback returns, the executor sends its result: give it time
STOP_ANSWER_MARGIN_S = 2.0  # the stop service waits for the confirmation and this much more (planning, the report)
CANCEL_DETAIL = "the goal was cancelled"
STOP_SERVICE_DETAIL = f"stopped by a call of {topics.STOP}"
BUSY_TEXT = (
    "busy: another MoveEef goal is moving the arms. Goals are not queued or preempted: cancel the running goal "
    "(or call {stop}) and send this one again"
)


class MotionServerNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, MotionServerParams)
        self.params = p
        self.robot = load_robot_config(p.robot)
        self.control_dt_s = self.robot.control_dt_s
        self.state = RobotState(self.robot, ArmKinematics(self.robot))
        self.planner = make_planner(p.planner, self.robot, self.control_dt_s)
        self._server: MotionServer | None = None  # made at the first goal: it reads the grippers' state
        self._episode_id: str | None = None
        self.motion_episode_bound = True  # whether the running motion ends with its episode (see _run)
        self.gate = MotionGate()  # one motion at a time; the stop service and close wait on it
        self.shutdown_started_s = math.inf  # monotonic; set by close()
        self.close_timeout_s = CLOSE_DEADLINE_S
        self.stop_detail = ""  # why the running motion was told to stop (cancel, stop service, shutdown)
        self.trajectory_board = TrajectoryBoard(on_change=self.state.wake)
        self._log_limit = RepeatLimiter()

        # One group per input, each behind its own lock: in a shared mutually exclusive group, rclpy's executor
        # hands the group to the first ready subscription of each wait, so a backlog of joint states (a loaded
        # machine) once held the controllers' reports back past report_timeout_s (docs/ros-graph.md).
        self.create_subscription(
            JointState, topics.JOINT_STATES, self.state.on_joint_state, 50,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )  # fmt: skip
        self.create_subscription(
            EpisodeStatus, topics.EPISODE_STATUS, self.state.on_status, LATCHED_QOS,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )  # fmt: skip
        reports = MutuallyExclusiveCallbackGroup()
        self.commands = ControllerCommands(
            self, self.robot, lease_timeout_s=p.lease_timeout_s, path_markers=p.planned_path_markers
        )
        for arm in self.robot.arm_names:
            for controller in (topics.arm_controller_name(arm), topics.gripper_controller_name(arm)):
                self.create_subscription(
                    TrajectoryStatus, topics.trajectory_status(controller), self.trajectory_board.on_status, 50,
                    callback_group=reports,
                )  # fmt: skip
        actions = ReentrantCallbackGroup()
        # Results are kept for minutes (result_timeout_s), not rclpy's 900 s: each kept goal slows rclpy by ~0.2 ms.
        self.action_server = ActionServer(
            self, MoveEef, topics.MOVE_EEF, self._execute, goal_callback=self._on_goal,
            cancel_callback=self._on_cancel, callback_group=actions, result_timeout=round(p.result_timeout_s),
            goal_service_qos_profile=REQUEST_QOS, result_service_qos_profile=REQUEST_QOS,
            cancel_service_qos_profile=REQUEST_QOS,
        )  # fmt: skip
        self.create_service(Trigger, topics.HOME, self._on_home, callback_group=actions)
        # A stop answers once the motion has ended: calls in a burst wait one at a time, never every thread.
        self.create_service(Trigger, topics.STOP, self._on_stop, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"{self.robot.name}: MoveEef on {topics.MOVE_EEF}, planner {p.planner}")

    def log_motion_error(self, text: str) -> None:
        """An error line about a motion; the same kind repeated in a burst is summarised, not repeated."""
        line = self._log_limit.message(text.split(":", 1)[0], text)
        if line is not None:
            self.get_logger().error(line)

    # -- the action ------------------------------------------------------------------------------------------------
    def _on_goal(self, goal: MoveEef.Goal) -> GoalResponse:
        # Every goal is accepted, so that every client gets a result with a reason: busy or refused ones end ABORTED.
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        # The motion stops in _execute's progress callback: the goal is CANCELING only once this returns, and a motion
        # stopped here could end, and be reported as succeeded, before that.
        return CancelResponse.ACCEPT

    @property
    def server(self) -> MotionServer:
        """The library's motion server, re-synchronised with the grippers when a new episode started."""
        status = self.state.status
        episode = status.episode_id if status else None
        if self._server is None:
            self._server = MotionServer(ControllerTopicsBackend(self), self.planner, executor=ControllerExecutor(self))
        elif episode != self._episode_id:
            self._server.reset()
        self._episode_id = episode
        return self._server

    def _stop(self, detail: str) -> None:
        self.stop_detail = detail
        if self._server is not None:
            self._server.stop()
            self.state.wake()  # the running motion looks at its stop now, not at the next joint state
        else:
            self.commands.send_stop()

    def _run(
        self, goal: MoveEef.Goal, on_progress: ProgressCallback | None, *, episode_bound: bool = True
    ) -> MoveReport:
        """The goal on the library's MotionServer; a missing backend becomes a report, never an exception.
        ``episode_bound``: the motion ends when the episode changes or succeeds (False: it ignores the episode)."""
        self.stop_detail = ""  # a stop's reason from before this motion is not its own
        timeout = self.params.joint_state_timeout_s
        # none yet, or a robot that restarted: allow for discovery (a few seconds)
        self.state.wait_fresh(timeout, STATUS_STALE_S, STATE_WAIT_S, give_up=lambda: self.shutting_down)
        success = self.state.success_check() if episode_bound else None
        self.motion_episode_bound = episode_bound  # read by ControllerExecutor.play; one motion at a time (gate)
        try:
            self.state.require_fresh(timeout)
            return run_goal(self.server, goal, success, on_progress)
        except BackendLostError as exc:
            return MoveReport.rejected(BackendLost(str(exc)))

    @property
    def shutting_down(self) -> bool:
        """close() has begun: no new motion starts, the running one stops (ControllerExecutor reads it too)."""
        return self.gate.closed

    def _execute(self, goal_handle) -> MoveEef.Result:
        if not self.gate.try_enter():
            text = SHUTDOWN_DETAIL if self.shutting_down else BUSY_TEXT.format(stop=topics.STOP)
            result = MoveEef.Result()
            convert.fill_move_result(result, MoveReport.rejected(Refused(text)), self.control_dt_s, ArmArrival)
            goal_handle.abort()
            self.get_logger().warning(f"MoveEef goal refused: {text}", throttle_duration_sec=1.0)
            return result
        try:
            feedback = MoveEef.Feedback()
            t0 = time.monotonic()

            def progress(played: int, points: int) -> None:
                if goal_handle.is_cancel_requested and not self.stop_detail:
                    self._stop(CANCEL_DETAIL)
                if played != feedback.waypoints_played or feedback.waypoints != points:
                    feedback.waypoints_played, feedback.waypoints = played, points
                    feedback.elapsed_s = time.monotonic() - t0
                    goal_handle.publish_feedback(feedback)

            report = self._run(goal_handle.request, progress)
            if (
                report.stop_reason is StopReason.STOPPED
                and self.shutting_down
                and SHUTDOWN_DETAIL not in (report.stop_detail)
            ):  # a cancel or a stop call came first: the shutdown is why it ended all the same (and the hold notes)
                detail = "; ".join(d for d in (SHUTDOWN_DETAIL, report.stop_detail) if d)
                report = dataclasses.replace(report, stop_detail=detail)
            result = MoveEef.Result()
            convert.fill_move_result(result, report, self.control_dt_s, ArmArrival)
            if goal_handle.is_cancel_requested and report.stop_reason is StopReason.STOPPED:
                goal_handle.canceled()
            elif report.accepted and report.stop_reason in SUCCEEDING:
                goal_handle.succeed()
            else:
                goal_handle.abort()
            detail = f"; {report.stop_detail}" if report.stop_detail else ""
            self.get_logger().info(f"MoveEef {report.log_text(goal_handle.request.note)}{detail}")
            return result
        finally:
            self.gate.leave()

    # -- services ----------------------------------------------------------------------------------------------
    def _on_home(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if not self.gate.try_enter():
            response.success, response.message = False, "another motion is running; call stop first"
            if self.shutting_down:
                response.message = SHUTDOWN_DETAIL
            return response
        try:
            # The service is the operator's and the episode node's reset's: it belongs to no episode. A reset publishes
            # the new episode's status and then calls it, and the status may arrive here after the call: bound to the
            # episode it started in, the homing would end "the episode changed" (or "task_success" of the last one).
            report = self._run(MoveEef.Goal(mode=MoveEef.Goal.HOME), None, episode_bound=False)
        finally:
            self.gate.leave()
        response.success = report.accepted and report.stop_reason is StopReason.COMPLETED
        detail = f"; {report.stop_detail}" if report.stop_detail else ""
        self.get_logger().info(f"home {report.log_text()}{detail}")
        # The caller (an operator, a reset that failed) needs why it ended, not only where the arms stand.
        response.message = report.log_text() + detail
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Stop the running motion and answer once it has ended (its goal answered, the arms confirmed holding), so
        that a motion sent after the answer is never cut by this stop."""
        self._stop(STOP_SERVICE_DETAIL)
        # A wait on the motion's end (a condition, no polling): it ends within the stop's confirmation, and at once
        # once the node shuts down (SHUTDOWN_CONFIRM_S), so the executor's shutdown never waits long for this.
        ended = self.gate.wait_idle(self.params.stop_confirm_timeout_s + STOP_ANSWER_MARGIN_S)
        response.success = ended
        response.message = (
            "stopped: every controller holds its position"
            if ended
            else f"stop sent, but the running motion did not end within {self.params.stop_confirm_timeout_s:g} s"
        )
        return response

    def close(self) -> None:
        """Finish the running goal before the node goes: stop, confirm the arms hold (at most SHUTDOWN_CONFIRM_S),
        send its result (ABORTED). Within :data:`SHUTDOWN_IDLE_S` plus the result's flush, whatever the robot does."""
        self.shutdown_started_s = time.monotonic()
        self.gate.close()
        self.state.wake()  # a goal waiting for joint states gives up now
        if self.gate.busy:
            self._stop(SHUTDOWN_DETAIL)
            if self.gate.wait_idle(SHUTDOWN_IDLE_S):
                time.sleep(RESULT_FLUSH_S)
            else:
                self.get_logger().error(f"the running goal did not end within {SHUTDOWN_IDLE_S:g} s of the shutdown")


def main() -> int:
    return run_node(MotionServerNode, NODE_NAME, threads=EXECUTOR_THREADS)


if __name__ == "__main__":
    sys.exit(main())
