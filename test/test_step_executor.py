"""Trajectory executors behind the motion server, and a lost robot backend ending an episode."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodojo.agents.base import EpisodeContext, TurnRecord
from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.errors import BackendLostError
from robodojo.motion.plan import ArmTrajectory, Plan
from robodojo.motion.report import MoveReport, PlayOutcome, StopReason
from robodojo.motion.server import MotionServer, StepExecutor
from robodojo.motion.targets import arm_pose_target

TASK = "general_pickup"


def _snapshot(world):
    return world.data.qpos.copy(), world.data.ctrl.copy(), world.step_count


def _left_move(backend, dz=0.05, gripper=0.0, dx=0.03):
    """A short move of the left grasp point that also closes its gripper (after the arm motion)."""
    s = backend.observe(cameras=()).arm("left")
    return "left", np.array(s.tcp_pos_m) + np.array([dx, 0.0, dz]), s.tcp_quat_wxyz, gripper


class RecordingExecutor:
    """Plays nothing; records what the server handed it and answers with a scripted outcome."""

    def __init__(self, played: int, reason: StopReason) -> None:
        self.result = PlayOutcome(played, reason)
        self.calls: list[tuple[object, int]] = []

    def play(self, plan, points, stop, is_success, on_progress):
        self.calls.append((plan, points))
        return self.result


# -- the default executor -------------------------------------------------------------------------------------


def test_the_step_executor_reports_progress_for_every_point_in_order(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world)
    assert isinstance(server.executor, StepExecutor)
    progress = []
    report = server.move_to(*_left_move(dual_world), on_progress=lambda played, total: progress.append((played, total)))
    assert report.accepted and report.stop_reason is StopReason.COMPLETED and report.waypoints > 3
    total = report.waypoints
    assert progress == [(k, total) for k in range(1, total + 1)]
    assert dual_world.step_count == total == report.steps_used


def test_progress_stops_where_a_truncated_move_stops(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world)
    dual_world.step_count = dual_world.task.step_limit - 4
    progress = []
    report = server.move_to(*_left_move(dual_world), on_progress=lambda played, total: progress.append((played, total)))
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED and report.waypoints > 4
    assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_progress_stops_at_task_success(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world)
    progress = []
    report = server.move_to(
        *_left_move(dual_world),
        is_success=lambda: dual_world.step_count >= 2,
        on_progress=lambda played, total: progress.append(played),
    )
    assert report.stop_reason is StopReason.TASK_SUCCESS and report.steps_used == 2 and progress == [1, 2]


# -- a custom executor ----------------------------------------------------------------------------------------


def test_a_custom_executor_gets_the_plan_and_its_outcome_is_the_report(dual_world):
    dual_world.reset(TASK, seed=3)
    executor = RecordingExecutor(3, StopReason.STOPPED)
    server = MotionServer(dual_world, executor=executor)
    assert server.executor is executor
    before_grip = dict(server.gripper_command)
    before = _snapshot(dual_world)
    target = _left_move(dual_world, dx=0.0, dz=0.0)  # close the gripper in place: it moves from sample 1 on
    # The same plan the server makes for the move (planning is deterministic).
    expected_plan = server.plan(arm_pose_target(dual_world.robot, dual_world.observe(cameras=()).arms, *target))
    report = server.move_to(*target)
    ((plan, points),) = executor.calls
    assert points == plan.waypoints == report.waypoints == expected_plan.waypoints
    np.testing.assert_array_equal(plan.trajectories["left"].gripper, expected_plan.trajectories["left"].gripper)
    assert report.accepted and report.stop_reason is StopReason.STOPPED and report.steps_used == 3
    assert report.arms["left"].stop_reason is StopReason.STOPPED and report.arms["left"].steps_used == 3
    grip = plan.trajectories["left"].gripper
    # The gripper is between its start and its end at sample 3, so the check below tells the samples apart.
    assert grip[0] > grip[3] > grip[-1] and grip[2] != grip[3] != grip[4]
    assert server.gripper_command["left"] == float(grip[3])
    assert server.gripper_command["right"] == before_grip["right"]
    # Nothing was played by the stand-in; a stop holds the (unmoved) arms.
    assert dual_world.step_count == before[2]
    np.testing.assert_array_equal(dual_world.data.qpos, before[0])


def test_a_custom_executor_is_handed_the_budget_not_the_whole_plan(dual_world):
    dual_world.reset(TASK, seed=3)
    dual_world.step_count = dual_world.task.step_limit - 2
    executor = RecordingExecutor(2, StopReason.COMPLETED)
    report = MotionServer(dual_world, executor=executor).move_to(*_left_move(dual_world))
    ((plan, points),) = executor.calls
    assert points == 2 < plan.waypoints
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED and report.steps_used == 2


def test_nothing_played_keeps_the_gripper_command(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world, executor=RecordingExecutor(0, StopReason.BACKEND_LOST))
    before = dict(server.gripper_command)
    report = server.move_to(*_left_move(dual_world))
    assert report.stop_reason is StopReason.BACKEND_LOST and report.steps_used == 0
    assert server.gripper_command == before


def test_backend_lost_from_the_executor_flows_into_the_report(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world, executor=RecordingExecutor(5, StopReason.BACKEND_LOST))
    report = server.move_to(*_left_move(dual_world))
    assert report.accepted and report.stop_reason is StopReason.BACKEND_LOST and report.steps_used == 5
    assert report.arms["left"].stop_reason is StopReason.BACKEND_LOST and not report.arms["left"].reached


def test_a_rejected_move_never_reaches_the_executor(dual_world):
    dual_world.reset(TASK, seed=3)
    executor = RecordingExecutor(1, StopReason.COMPLETED)
    report = MotionServer(dual_world, executor=executor).move_eef({"right_z": 0.72})
    assert not report.accepted and report.stop_reason is StopReason.PLAN_FAILED and executor.calls == []


# -- a lost backend ends the episode --------------------------------------------------------------------------


def _reply() -> ChatReply:
    return ChatReply(
        content=None,
        tool_calls=(ToolCall("call_1", "move_eef", "{}"),),
        usage=Usage(100, 0, 10, 0.001),
        model="scripted",
        finish_reason="tool_calls",
        latency_s=0.01,
        attempts=1,
        raw={"id": "x"},
    )


class Caller:
    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages, tools, *, tool_choice="required"):
        self.calls += 1
        return _reply()


class MoveAgent:
    """Each turn one small move through the episode's motion server (or a scripted report)."""

    name = "mover"

    def __init__(self, report_for_turn=None) -> None:
        self.report_for_turn = report_for_turn or {}

    def begin(self, episode: EpisodeContext) -> None:
        self.ctx = episode

    def turn(self, llm, turn: int) -> TurnRecord:
        request = [{"role": "user", "content": f"turn {turn}"}]
        reply = llm.chat(request, [])
        report = self.report_for_turn.get(turn)
        if report is None:
            report = self.ctx.motion.move_to(*_left_move(self.ctx.backend, dz=0.02 * (-1) ** turn, gripper=None))
        return TurnRecord(turn, request, reply, [report.tool_text], "move_eef", move=report)


class LosingHost(WorldHost):
    """The embedded world, except that the backend is 'lost' once ``lose_after`` checks have passed."""

    def __init__(self, world, lose_after: int) -> None:
        super().__init__(world)
        self.lose_after = lose_after
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if self.checks > self.lose_after:
            raise BackendLostError("no joint states from the simulator for 2.0 s")


def _metrics(folder):
    turns = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    return turns, json.loads((folder / "metrics.json").read_text())


def test_a_backend_lost_between_turns_ends_the_episode(dual_world, tmp_path):
    host = LosingHost(dual_world, lose_after=1)
    result = run_episode(host, MoveAgent(), Caller(), EpisodeSpec(TASK, 3), tmp_path)
    assert result.end_reason is EndReason.BACKEND_LOST and result.llm_calls == 1 and host.checks == 2
    assert result.error == "no joint states from the simulator for 2.0 s"
    assert result.steps_used == dual_world.step_count > 0
    turns, metrics = _metrics(result.folder)
    assert metrics["end_reason"] == "backend_lost" and metrics["error"] == result.error
    assert metrics["llm_calls"] == 1 and metrics["steps_used"] == result.steps_used
    assert turns[0]["action"] == "move_eef"
    assert turns[-1] == {"turn": 2, "action": "error", "error": "BackendLostError: " + result.error}


def test_a_backend_lost_before_the_first_turn_still_records(dual_world, tmp_path):
    result = run_episode(LosingHost(dual_world, lose_after=0), MoveAgent(), Caller(), EpisodeSpec(TASK, 3), tmp_path)
    assert result.end_reason is EndReason.BACKEND_LOST and result.llm_calls == 0
    _, metrics = _metrics(result.folder)
    assert metrics["end_reason"] == "backend_lost" and "no joint states" in metrics["error"]


def _lost_report(accepted: bool) -> MoveReport:
    return MoveReport(
        accepted=accepted,
        tool_text="Accepted: playing 10 waypoints (0.40s)." if accepted else "the motion server is not answering",
        arms={},
        waypoints=10 if accepted else 0,
        steps_used=2 if accepted else 0,
        stop_reason=StopReason.BACKEND_LOST,
    )


@pytest.mark.parametrize(
    ("accepted", "error"),
    [
        (True, "the robot backend stopped answering during a motion (2 of 10 points played)"),
        (False, "the motion server is not answering"),
    ],
)
def test_a_move_that_lost_the_backend_ends_the_episode(dual_world, tmp_path, accepted, error):
    agent = MoveAgent({2: _lost_report(accepted)})
    result = run_episode(WorldHost(dual_world), agent, Caller(), EpisodeSpec(TASK, 3), tmp_path)
    assert result.end_reason is EndReason.BACKEND_LOST and result.llm_calls == 2 and result.error == error
    turns, metrics = _metrics(result.folder)
    assert metrics["end_reason"] == "backend_lost" and metrics["error"] == error and metrics["llm_calls"] == 2
    # The turn itself is recorded (with its report), then the error.
    assert [t["action"] for t in turns] == ["move_eef", "move_eef", "error"]
    assert turns[1]["move"]["stop_reason"] == "backend_lost"
    assert turns[2]["error"] == f"BackendLostError: {error}"


def test_the_executor_losing_the_backend_ends_the_episode_end_to_end(dual_world, tmp_path):
    """A real MotionServer whose executor loses the backend mid-move: the report carries it to the runner."""

    class LosingWorldHost(WorldHost):
        def start(self, spec):
            context = super().start(spec)
            executor = RecordingExecutor(4, StopReason.BACKEND_LOST)
            context.motion.executor = executor
            return context

    result = run_episode(LosingWorldHost(dual_world), MoveAgent(), Caller(), EpisodeSpec(TASK, 3), tmp_path)
    assert result.end_reason is EndReason.BACKEND_LOST and result.llm_calls == 1
    assert "(4 of " in result.error and "points played" in result.error


# -- results that say what happened ---------------------------------------------------------------------------


class SaggingExecutor(StepExecutor):
    """Plays only the first ``fraction`` of the points on the real world and says it played them all: an arm under a
    load that stops short of where its controller's books say it is (the issue's 60 deg pitch goal)."""

    def __init__(self, backend, fraction: float) -> None:
        super().__init__(backend)
        self.fraction = fraction

    def play(self, plan, points, stop, is_success, on_progress):
        super().play(plan, max(1, int(points * self.fraction)), stop, is_success, on_progress)
        return PlayOutcome(points, StopReason.COMPLETED)


def test_a_motion_that_ends_off_target_is_not_completed_and_says_how_far_off(dual_world):
    dual_world.reset(TASK, seed=3)
    arm, xyz, quat, _ = _left_move(dual_world, dz=-0.06, dx=0.04)
    report = MotionServer(dual_world, executor=SaggingExecutor(dual_world, 0.5)).move_to(arm, xyz, quat)
    left = report.arms["left"]
    measured = np.array(dual_world.observe(cameras=()).arm("left").tcp_pos_m)
    assert report.accepted and report.stop_reason is StopReason.OFF_TARGET and not left.reached
    assert left.stop_reason is StopReason.OFF_TARGET
    assert left.pos_error_mm > 10.0
    assert left.pos_error_mm == pytest.approx(float(np.linalg.norm(measured - xyz)) * 1e3, abs=0.5)
    np.testing.assert_allclose(left.final_pos_m, measured, atol=1e-6)  # the reported pose is the measured one
    assert (
        f"left {left.pos_error_mm:.0f} mm" in report.stop_detail and "reached means within 10 mm" in report.stop_detail
    )


def test_a_trajectory_the_robot_refused_is_a_refusal_not_an_accepted_move(dual_world):
    from robodojo.motion.rejection import DriverRefused, rejection_from_json, rejection_to_json

    dual_world.reset(TASK, seed=3)
    why = "the e-stop holds the arm (/hardware/estop called); release it first"
    refusal = PlayOutcome(0, StopReason.REFUSED, f"left_arm_controller refused the trajectory: {why}", True,
                          refusal=f"left_arm_controller: {why}")  # fmt: skip

    class Refusing(RecordingExecutor):
        def __init__(self) -> None:
            super().__init__(0, StopReason.REFUSED)
            self.result = refusal

    before = _snapshot(dual_world)
    report = MotionServer(dual_world, executor=Refusing()).move_to(*_left_move(dual_world))
    assert not report.accepted and report.stop_reason is StopReason.REFUSED and report.steps_used == 0
    assert report.rejection == DriverRefused("left_arm_controller", why)
    assert report.tool_text == f"the robot refused the motion (left_arm_controller: {why}); nothing moved"
    assert rejection_from_json(rejection_to_json(report.rejection)) == report.rejection
    assert not report.arms["left"].planned and not report.arms["left"].reached
    np.testing.assert_array_equal(dual_world.data.qpos, before[0])


def test_points_reached_come_from_the_measured_joints(dual_world):
    dual_world.reset(TASK, seed=3)
    server = MotionServer(dual_world)
    arm, xyz, quat, _ = _left_move(dual_world, dz=-0.06, dx=0.04)
    plan = server.plan(arm_pose_target(server.robot, server._state().arms, arm, xyz, quat, None))
    traj = plan.trajectories["left"]
    right_q = plan.trajectories["right"].positions_rad[0] if "right" in plan.trajectories else None
    joints = {"left": traj.positions_rad[7] + 1e-4, "right": right_q}
    assert plan.points_reached(joints, plan.waypoints) == 7
    assert plan.points_reached({"left": traj.positions_rad[-1], "right": right_q}, 5) == 5  # only the points sent
    assert plan.points_reached({"left": None}, plan.waypoints) is None


def test_points_reached_judge_a_gripper_motion_by_the_gripper_and_leave_out_what_holds_still():
    joints = ("j1", "j2")
    still = np.zeros((13, 2))
    closing = np.linspace(1.0, 0.0, 13)
    moving = np.linspace([0.0, 0.0], [0.6, -0.6], 13)
    gripper_only = Plan(ok=True, trajectories={"right": ArmTrajectory("right", joints, still, closing)}, dt_s=0.04)
    assert gripper_only.points_reached({"right": still[0]}, 12, {"right": closing[5] + 0.01}) == 5
    assert gripper_only.points_reached({"right": still[0]}, 12, {"right": closing[-1]}) == 12
    assert gripper_only.points_reached({"right": still[0]}, 12) == 0  # no opening measured: nothing tells
    both = Plan(
        ok=True,
        trajectories={
            "left": ArmTrajectory("left", joints, moving, np.full(13, 0.5)),  # its gripper holds: the joints tell
            "right": ArmTrajectory("right", joints, still, np.full(13, 1.0)),  # holds still: leaves the count alone
        },
        dt_s=0.04,
    )
    assert both.points_reached({"left": moving[8], "right": still[0]}, 12, {"left": 0.0, "right": 0.0}) == 8
