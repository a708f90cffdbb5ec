"""The motion server: validate, plan, execute one 25 Hz point per env step, report. It never decides.

Used in-process by both agents (move_eef tool calls and the robo API) and wrapped by the ROS MoveEef action node.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from robodojo.geometry import matrix_from_quat, rotation_angle_between
from robodojo.motion.backend import RobotBackend
from robodojo.motion.plan import Plan
from robodojo.motion.planner import NativePlanner, Planner
from robodojo.motion.rejection import BackendLost, DriverRefused, Rejection
from robodojo.motion.report import ACCEPTED_TEXT, TRUNCATED_TEXT, ArmReport, MoveReport, PlayOutcome, StopReason
from robodojo.motion.settings import MotionSettings, load_motion_settings
from robodojo.motion.targets import (
    MoveTarget,
    TargetError,
    arm_pose_target,
    check_speed_scale,
    parse_move_eef,
    parse_move_eef_pairs,
    slowed,
)
from robodojo.observation import Observation

SuccessCheck = Callable[[], bool]
ProgressCallback = Callable[[int, int], None]  # (points played so far, points to play)


class TrajectoryExecutor(Protocol):
    """Plays the first ``points`` points of a plan on the robot and says how many played and why it ended."""

    def play(
        self,
        plan: Plan,
        points: int,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> PlayOutcome: ...


class StepExecutor:
    """Plays a plan through ``backend.step``: one point per call, as the in-process backends run."""

    def __init__(self, backend: RobotBackend) -> None:
        self.backend = backend

    def play(
        self,
        plan: Plan,
        points: int,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> PlayOutcome:
        played = 0
        for k in range(1, points + 1):
            if stop.is_set():
                return PlayOutcome(played, StopReason.STOPPED)
            self.backend.step(
                {a: t.positions_rad[k] for a, t in plan.trajectories.items()},
                {a: float(t.gripper[k]) for a, t in plan.trajectories.items()},
            )
            played = k
            if on_progress is not None:
                on_progress(played, points)
            if is_success is not None and is_success():
                return PlayOutcome(played, StopReason.TASK_SUCCESS)
        return PlayOutcome(points, StopReason.COMPLETED)


class MotionServer:
    """Moves a backend's arms to Cartesian targets along validated 25 Hz trajectories."""

    def __init__(
        self,
        backend: RobotBackend,
        planner: Planner | None = None,
        settings: MotionSettings | None = None,
        executor: TrajectoryExecutor | None = None,
    ) -> None:
        """``executor`` plays plans on the robot; by default one ``backend.step`` per point."""
        self.backend = backend
        self.executor: TrajectoryExecutor = executor or StepExecutor(backend)
        self.robot = backend.robot
        self.settings = settings or load_motion_settings()
        self.planner: Planner = planner or NativePlanner(self.robot, backend.control_dt_s, self.settings)
        self._stop_requested = threading.Event()
        #: called with each plan and the points of it about to be played (the episode record draws its paths)
        self.plan_observers: list[Callable[[Plan, int], None]] = []
        self.reset()

    def reset(self) -> None:
        """Re-read the gripper state after the backend was reset (a new episode)."""
        obs = self._state()
        # Commands start at the measured openings; from then on the server remembers what it commanded.
        self.gripper_command = {a: obs.arm(a).gripper_opening for a in self.robot.arm_names}

    # -- entry points ------------------------------------------------------------------------------------------
    def move_eef(
        self,
        targets: object,
        *,
        is_success: SuccessCheck | None = None,
        on_progress: ProgressCallback | None = None,
        note: str = "",
        speed_scale: float = 1.0,
    ) -> MoveReport:
        """A move_eef tool call: named dimensions -> validated, planned, executed, reported.

        ``note`` (the agent's reason) is for logs; the in-process server keeps none, the episode record has it.
        ``speed_scale`` in (0, 1] slows the motion (every entry point takes it; robodojo calibrate moves slowly).
        """
        try:
            target = slowed(parse_move_eef(targets, self.robot, self._state().arms), speed_scale)
        except TargetError as exc:
            return MoveReport.rejected(exc.rejection)
        return self.execute(self.plan(target), is_success=is_success, on_progress=on_progress)

    def move_eef_pairs(
        self,
        names: Sequence[object],
        values: Sequence[object],
        *,
        is_success: SuccessCheck | None = None,
        on_progress: ProgressCallback | None = None,
        note: str = "",
        speed_scale: float = 1.0,
    ) -> MoveReport:
        """:meth:`move_eef` with the targets as two lists (the MoveEef action's ``names`` and ``values``): a name
        given twice, or lists of different lengths, are rejected (nothing moves) rather than the last value winning.

        ``note`` as for :meth:`move_eef`; log it with :meth:`MoveReport.log_text`, which cuts it.
        """
        try:
            target = slowed(parse_move_eef_pairs(names, values, self.robot, self._state().arms), speed_scale)
        except TargetError as exc:
            return MoveReport.rejected(exc.rejection)
        return self.execute(self.plan(target), is_success=is_success, on_progress=on_progress)

    def move_to(
        self,
        arm: str,
        xyz: ArrayLike,
        quat_wxyz: ArrayLike | None = None,
        gripper: float | None = None,
        *,
        is_success: SuccessCheck | None = None,
        on_progress: ProgressCallback | None = None,
        speed_scale: float = 1.0,
    ) -> MoveReport:
        """The robo API form: one arm's grasp point to ``xyz`` [m], optional orientation (w, x, y, z) and gripper."""
        try:
            target = slowed(arm_pose_target(self.robot, self._state().arms, arm, xyz, quat_wxyz, gripper), speed_scale)
        except TargetError as exc:
            return MoveReport.rejected(exc.rejection)
        return self.execute(self.plan(target), is_success=is_success, on_progress=on_progress)

    def plan(self, target: MoveTarget) -> Plan:
        """Plan from the current state without moving."""
        obs = self._state()
        joints = {a: obs.arm(a).joint_positions_rad for a in self.robot.arm_names}
        return self.planner.plan(target, joints, self.gripper_command)

    def home(
        self,
        *,
        is_success: SuccessCheck | None = None,
        on_progress: ProgressCallback | None = None,
        speed_scale: float = 1.0,
    ) -> MoveReport:
        """Move every arm to its home joint angles (from the robot config); grippers keep their command."""
        try:
            speed_scale = check_speed_scale(speed_scale)
        except TargetError as exc:
            return MoveReport.rejected(exc.rejection)
        obs = self._state()
        joints = {a: obs.arm(a).joint_positions_rad for a in self.robot.arm_names}
        goal = {a.name: a.home_joints_rad for a in self.robot.arms}
        plan = self.planner.plan_joints(goal, joints, self.gripper_command, speed_scale)
        return self.execute(plan, is_success=is_success, on_progress=on_progress)

    def stop(self) -> None:
        """Stop any execution in progress (from another thread) and hold the current position."""
        self._stop_requested.set()
        self.backend.hold()

    # -- execution ---------------------------------------------------------------------------------------------
    def execute(
        self, plan: Plan, *, is_success: SuccessCheck | None = None, on_progress: ProgressCallback | None = None
    ) -> MoveReport:
        """Play ``plan`` one point per env step; a failed plan moves nothing and reports why."""
        if not plan.ok:
            return self._rejected(plan)
        self._stop_requested.clear()
        budget = self.backend.steps_left
        to_play = min(plan.waypoints, budget)
        truncated = TRUNCATED_TEXT.format(total=plan.waypoints) if to_play < plan.waypoints else ""
        tool_text = ACCEPTED_TEXT.format(n=to_play, s=to_play * plan.dt_s, truncated=truncated)
        if to_play == 0:  # already there, or no step left: nothing to send (an empty trajectory means "stop")
            outcome = PlayOutcome(0, StopReason.COMPLETED)
        else:
            for observer in self.plan_observers:
                observer(plan, to_play)
            outcome = self.executor.play(plan, to_play, self._stop_requested, is_success, on_progress)
        played, reason = outcome.played, outcome.reason
        if outcome.refusal and not played:  # nothing played: a refusal, not an accepted motion
            return self._rejected_by_robot(plan, outcome)
        if reason is StopReason.COMPLETED and truncated:
            reason = StopReason.BUDGET_EXHAUSTED
        if played:
            self.gripper_command.update({a: float(t.gripper[played]) for a, t in plan.trajectories.items()})
        if reason is StopReason.STOPPED:
            self.backend.hold()
        return self._report(plan, tool_text, played, reason, outcome)

    # -- reporting ---------------------------------------------------------------------------------------------
    def _state(self) -> Observation:
        return self.backend.observe(cameras=())

    @staticmethod
    def _goal_poses(target: MoveTarget | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        if target is None:
            return {}
        return {a: (np.array(t.pos_m), matrix_from_quat(t.quat_wxyz)) for a, t in target.arms.items()}

    def _arm_report(
        self,
        arm: str,
        goal: tuple[np.ndarray, np.ndarray],
        obs: Observation,
        *,
        planned: bool,
        waypoints: int,
        steps_used: int,
        stop_reason: StopReason,
    ) -> ArmReport:
        state = obs.arm(arm)
        pos_err = float(np.linalg.norm(np.array(state.tcp_pos_m) - goal[0])) * 1e3
        rot_err = math.degrees(rotation_angle_between(matrix_from_quat(state.tcp_quat_wxyz), goal[1]))
        within = (
            pos_err <= self.settings.reached_pos_tolerance_mm and rot_err <= self.settings.reached_rot_tolerance_deg
        )
        return ArmReport(
            arm=arm,
            planned=planned,
            reached=planned and within,
            pos_error_mm=pos_err,
            rot_error_deg=rot_err,
            final_pos_m=state.tcp_pos_m,
            final_quat_wxyz=state.tcp_quat_wxyz,
            waypoints=waypoints,
            steps_used=steps_used,
            stop_reason=stop_reason,
        )

    def _report(self, plan: Plan, tool_text: str, played: int, reason: StopReason, outcome: PlayOutcome) -> MoveReport:
        """The report of a plan that played: each arm measured where it stopped. "completed" only when every arm got
        within the reached tolerance; otherwise "off_target", with how far off in the detail."""
        obs = self._state()
        goals = self._goal_poses(plan.target)
        reports = {
            arm: self._arm_report(arm, goal, obs, planned=True, waypoints=plan.waypoints, steps_used=played,
                                  stop_reason=reason)
            for arm, goal in goals.items()
        }  # fmt: skip
        detail = outcome.detail
        missed = [r for r in reports.values() if not r.reached]
        if reason is StopReason.COMPLETED and missed:
            reason = StopReason.OFF_TARGET
            detail = self._off_target_text(missed)
            reports = {a: dataclasses.replace(r, stop_reason=reason) for a, r in reports.items()}
        return MoveReport(
            accepted=True,
            tool_text=tool_text,
            arms=reports,
            waypoints=plan.waypoints,
            steps_used=played,
            stop_reason=reason,
            stop_detail=detail,
            holding=outcome.holding,
        )

    def _off_target_text(self, missed: Sequence[ArmReport]) -> str:
        """Why a played plan is not "completed": ``every point played but left 32 mm and 5.5 deg away (reached
        means within 10 mm and 5 deg)``."""
        tolerance = f"{self.settings.reached_pos_tolerance_mm:g} mm and {self.settings.reached_rot_tolerance_deg:g} deg"
        away = "; ".join(r.arrival_text for r in missed)
        return f"every point played but {away} (reached means within {tolerance})"

    def _rejected_by_robot(self, plan: Plan, outcome: PlayOutcome) -> MoveReport:
        """A plan the robot's controllers refused before a point played: not accepted, with the driver's reason
        (BackendLost when the driver refused it for lost contact or a fault: the robot is lost to its commander)."""
        controller, _, reason = outcome.refusal.partition(": ")
        rejection: Rejection = DriverRefused(controller, reason or outcome.detail)
        if outcome.reason is StopReason.BACKEND_LOST:
            rejection = BackendLost(f"the robot refused the motion ({outcome.refusal})")
        obs = self._state()
        arms = {
            arm: self._arm_report(
                arm, goal, obs, planned=False, waypoints=0, steps_used=0, stop_reason=StopReason.REFUSED
            )
            for arm, goal in self._goal_poses(plan.target).items()
        }
        report = MoveReport.rejected(rejection, arms)
        return dataclasses.replace(report, stop_detail=outcome.detail, holding=outcome.holding)

    def _rejected(self, plan: Plan) -> MoveReport:
        """A failed plan's report, with each arm's distance to the target it was not moved to."""
        assert plan.rejection is not None
        obs = self._state()
        arms = {
            arm: self._arm_report(
                arm, goal, obs, planned=False, waypoints=0, steps_used=0, stop_reason=StopReason.PLAN_FAILED
            )
            for arm, goal in self._goal_poses(plan.target).items()
        }
        return MoveReport.rejected(plan.rejection, arms)
