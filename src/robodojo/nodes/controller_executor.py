"""How the motion server plays a plan on the graph: leased trajectories on the joint_trajectory_controller topics,
followed by the controllers' reports and the joint states, and, whatever ends a motion early, the arms seen holding
before the goal is answered (TrajectoryStatus.msg, TrajectoryLease.msg)."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Iterable

import numpy as np

from robodojo.control.trajectory_controller import TrajectoryState, ends_the_robot
from robodojo.errors import BackendLostError
from robodojo.motion.plan import Plan
from robodojo.motion.report import PlayOutcome, StopReason
from robodojo.motion.server import ProgressCallback, SuccessCheck
from robodojo.nodes import topics
from robodojo.nodes.controller_topics import MotionNode

SHUTDOWN_DETAIL = "the motion server is shutting down"
CONTROLLER_WAIT_S = 3.0  # how long a goal waits for discovery to match a (re)started controller's subscription
START_ATTEMPTS = 2  # sends of one trajectory before the controllers count as gone
STOP_RESEND_S = 0.25  # while a stop is unconfirmed, it is sent again this often (wall clock)
#: An arm whose joint states stopped this much longer than joint_state_timeout_s is not waited for: its holding is
#: unknown, and the goal is answered (with the default 0.5 s timeout: 0.8 s after its last joint state, within the
#: 1 s an agent waits at most for a lost arm's answer). A pause shorter than this is still confirmed.
SILENT_GRACE_S = 0.3
#: Once the node shuts down, a stop's confirmation waits at most this long (ros2 launch's SIGTERM comes 5 s after its
#: SIGINT, and the node has more to do on its way out).
SHUTDOWN_CONFIRM_S = 1.5
UNREPORTED_DETAIL = "the controllers' reports of this trajectory never came; followed on the joint states"
ARRIVAL_TOLERANCE_RAD = 0.01  # servo lag at the end of a well-timed trajectory is far below this
#: motions ended so that the controllers' reports may not have caught up with the arms
_BOOKS_MAY_LAG = frozenset({StopReason.BACKEND_LOST, StopReason.TASK_SUCCESS, StopReason.BUDGET_EXHAUSTED})
#: An arm at rest past a trajectory's end this close to its last point has played it, when no report says so (the
#: simulator's servo settles up to 0.016 rad short); one cut short stands further back but in its last few points,
#: and the result's per-arm errors say how far the grasp point is from the target either way.
SETTLED_TOLERANCE_RAD = 0.05


def _controllers_of(arms: Iterable[str]) -> list[str]:
    """Each arm's arm and gripper controllers."""
    return [c for arm in arms for c in (topics.arm_controller_name(arm), topics.gripper_controller_name(arm))]


_ENDED_WORDS = {
    TrajectoryState.STOPPED: "stopped",
    TrajectoryState.REPLACED: "replaced",
    TrajectoryState.EXPIRED: "dropped",  # its lease lapsed: the reason says how
    TrajectoryState.REFUSED: "refused",
}


class ControllerExecutor:
    """Plays a plan through the joint_trajectory_controller topics, leased, and follows it by the controllers'
    reports of what they played; whatever ends it early, the arms are seen holding before it returns."""

    def __init__(self, node: MotionNode) -> None:
        self.node = node

    def play(
        self,
        plan: Plan,
        points: int,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> PlayOutcome:
        node, state, dt = self.node, self.node.state, plan.dt_s
        status = state.status
        episode = status.episode_id if status and node.motion_episode_bound else None
        controllers = _controllers_of(plan.trajectories)
        self._wait_for_controllers(list(plan.trajectories))
        outcome: PlayOutcome | None = None
        for attempt in range(1, START_ATTEMPTS + 1):
            # Start on the controllers' tick grid, far enough ahead that every arm's trajectory arrives in time.
            start = math.ceil((state.stamp_s + node.params.start_lead_s) / dt - 1e-6) * dt
            node.commands.send_lease(start)  # before the trajectories: a controller knows it is leased before it plays
            node.commands.send_plan(plan, points, start)
            sent_s = time.monotonic()
            outcome = self._follow(plan, points, start, sent_s, controllers, episode, stop, is_success, on_progress)
            if outcome is not None and outcome.refusal and attempt > 1:
                # The unreported first send may have played (its reports lost): not "nothing moved", a cut motion
                outcome = PlayOutcome(0, StopReason.ABORTED, f"sent again unreported, {outcome.detail}", holding=False)
            if outcome is not None:
                break
            # in order behind the lost trajectory on each topic: should it still arrive, it stops
            node.commands.send_stop()
            if attempt < START_ATTEMPTS:
                node.get_logger().warning("the controllers did not report the trajectory; sending it again")
        if outcome is None:
            outcome = PlayOutcome(0, StopReason.BACKEND_LOST, "the controllers never reported the trajectory")
        if outcome.reason is not StopReason.COMPLETED:
            outcome = self._hold(outcome, self._answering(controllers, start), list(plan.trajectories))
        # Lost reports, a resend, or an end the episode called (success, the budget): its signal may overtake the
        # controllers' reports of the points played up to it
        books_unsure = outcome.reason in _BOOKS_MAY_LAG or attempt > 1
        if books_unsure and not outcome.refusal:  # the books may have stopped short of the robot
            outcome = self._measured_progress(plan, points, outcome)
        return outcome

    def _wait_for_controllers(self, arms: list[str]) -> None:
        """Wait until every controller of ``arms`` has a matched subscription: a trajectory published before
        discovery matched a (re)started robot's controller would be lost, and the arm would not move. Looked at again
        with each joint state (the controllers' process publishes them); past CONTROLLER_WAIT_S the goal is refused
        with the reason."""
        node = self.node
        node.state.wait_until(lambda: node.shutting_down or not node.commands.unmatched(arms), CONTROLLER_WAIT_S)
        if node.shutting_down:
            raise BackendLostError(SHUTDOWN_DETAIL)
        if silent := node.commands.unmatched(arms):
            raise BackendLostError(f"no controller subscribes to {', '.join(silent)}: is the robot running?")

    def _points_measured(self, plan: Plan, points: int) -> int | None:
        """The points of ``plan`` the measured joints and grippers show played (Plan.points_reached)."""
        state = self.node.state
        return plan.points_reached(
            {arm: state.arm_q(arm) for arm in plan.trajectories},
            points,
            {arm: state.gripper_opening(arm) for arm in plan.trajectories},
        )

    def _measured_progress(self, plan: Plan, points: int, outcome: PlayOutcome) -> PlayOutcome:
        """A motion's books may be behind the robot (its reports stopped with the joint states, came late, or were
        overtaken by the episode's end): the points played are then those the measured joints show, and the detail
        says so. Not for a motion that something else cut (a third party's trajectory moves the arm along another
        path)."""
        measured = self._points_measured(plan, points)
        if measured is None or measured <= outcome.played:
            return outcome
        note = (
            f"the measured joints show {measured} of {points} points played (the controllers reported {outcome.played})"
        )
        detail = f"{outcome.detail}; {note}" if outcome.detail else note
        return dataclasses.replace(outcome, played=measured, detail=detail)

    def _answering(self, controllers: list[str], start: float) -> list[str]:
        """``controllers`` less those of arms whose driver ended the trajectory for the robot (a fault, lost
        contact): that driver stops or has lost the arm itself, and will not report it holding."""
        reports = self.node.trajectory_board.reports(controllers, start)
        gone = [
            arm
            for arm in self.node.robot.arm_names
            if (r := reports.get(topics.arm_controller_name(arm))) is not None and ends_the_robot(r.state, r.reason)
        ]
        dropped = set(_controllers_of(gone))
        return [c for c in controllers if c not in dropped]

    def _follow(
        self,
        plan: Plan,
        points: int,
        start: float,
        sent_s: float,
        controllers: list[str],
        episode: str | None,
        stop: threading.Event,
        is_success: SuccessCheck | None,
        on_progress: ProgressCallback | None,
    ) -> PlayOutcome | None:
        """Follow one sent trajectory (sent at ``sent_s``, monotonic) to its end, renewing its lease; None: no
        controller reported it within report_timeout_s. ``episode``: the one the motion belongs to (None: none known
        yet, or a motion that ignores its episode); a motion bound to its episode that began before any episode status
        reached this server (the latched status can follow the joint states by a discovery round) belongs to the
        first one that comes.

        That window is wall clock from the send, not robot time from the start: on a loaded machine this server's
        joint states lag the robot by tenths of a second, so the start lies in the robot's past when it arrives
        (the controllers start it at once), and at real_time_factor 3 three control steps were 40 ms of wall clock.
        Neither is a lost trajectory."""
        node, state = self.node, self.node.state
        board = node.trajectory_board
        arms = [topics.arm_controller_name(arm) for arm in plan.trajectories]
        # the robot time the controllers were first seen finished: a trajectory that arrived after its start played
        # later than planned, and the arms' servo lag is waited for from its real end
        finished_at = math.inf
        leased_at = time.monotonic()
        looked_at = time.monotonic()
        frozen_s, judge_after = 0.0, -math.inf
        while True:
            mark = state.news_mark()
            if episode is None and node.motion_episode_bound and (first := state.status) is not None:
                episode = first.episode_id
            # This loop is the lease's heartbeat: a gap in it longer than the lease's timeout means this process was
            # frozen (SIGSTOP, a swapped-out machine), and the controllers dropped the trajectory for that. The joint
            # states queued meanwhile are read first: silence is judged only from what arrives after the wake-up.
            gap = time.monotonic() - looked_at
            looked_at = time.monotonic()
            if gap > node.params.lease_timeout_s:
                frozen_s = max(frozen_s, gap)
                judge_after = looked_at + node.params.joint_state_timeout_s
            if time.monotonic() - leased_at >= node.params.lease_period_s:
                node.commands.send_lease(start)
                leased_at = time.monotonic()
            now = state.stamp_s
            reports = board.reports(controllers, start)
            played = min((reports[a].points_played if a in reports else 0) for a in arms)
            if on_progress is not None:
                on_progress(played, points)
            ended = [r for r in reports.values() if r.state not in (TrajectoryState.PLAYING, TrajectoryState.FINISHED)]
            frozen = f"; the motion server itself was frozen for {frozen_s:.2f} s" if frozen_s else ""
            if ended:
                r = ended[0]
                status = state.status
                if r.state == TrajectoryState.STOPPED and episode is not None and status and status.steps_left == 0:
                    return PlayOutcome(played, StopReason.BUDGET_EXHAUSTED, r.reason)
                refused = r.state == TrajectoryState.REFUSED and not any(x.points_played for x in reports.values())
                if refused:  # nothing played: the robot said no; lost to its commander if for contact or a fault
                    node.log_motion_error(f"motion refused: {r.controller}: {r.reason}")
                    reason = StopReason.BACKEND_LOST if ends_the_robot(r.state, r.reason) else StopReason.REFUSED
                    return PlayOutcome(
                        0, reason, f"{r.controller} refused the trajectory: {r.reason}", holding=False,
                        refusal=f"{r.controller}: {r.reason}",
                    )  # fmt: skip
                if ends_the_robot(r.state, r.reason):  # a real arm's driver: lost contact or a fault
                    why = f"{r.controller} after {r.points_played} of {r.points} points: {r.reason}{frozen}"
                    node.log_motion_error(f"motion ended: {why}")
                    return PlayOutcome(played, StopReason.BACKEND_LOST, why, holding=False)
                why = (
                    f"{r.controller} {_ENDED_WORDS.get(TrajectoryState(r.state), 'ended')} the trajectory after "
                    f"{r.points_played} of {r.points} points: {r.reason}{frozen}"
                )
                node.log_motion_error(f"motion aborted: {why}")
                return PlayOutcome(played, StopReason.ABORTED, why, holding=False)
            finished = len(reports) == len(controllers) and all(
                r.state == TrajectoryState.FINISHED for r in reports.values()
            )
            finished_at = min(finished_at, now) if finished else finished_at
            if finished and (self._arrived(plan, points) or now >= finished_at + node.params.arrival_wait_s):
                return PlayOutcome(points, StopReason.COMPLETED)
            if stop.is_set() or node.shutting_down:  # shutting down: also a stop that came before this motion began
                return PlayOutcome(played, StopReason.STOPPED, node.stop_detail, holding=False)
            status = state.status
            within = time.monotonic() - looked_at  # a freeze in the middle of this pass (publishing feedback, say)
            if within > node.params.lease_timeout_s:
                frozen_s = max(frozen_s, within)
                judge_after = time.monotonic() + node.params.joint_state_timeout_s
            lost = state.age_s() > node.params.joint_state_timeout_s and time.monotonic() > judge_after
            if lost or (episode is not None and (status is None or status.episode_id != episode)):
                why = (
                    f"no joint states for {state.stale_text(node.params.joint_state_timeout_s)}"
                    if lost
                    else f"the episode changed from {episode} to {status.episode_id if status else None}"
                )
                node.log_motion_error(f"motion ended after {played} of {points} points: {why}")
                return PlayOutcome(played, StopReason.BACKEND_LOST, why, holding=False)
            if is_success is not None and is_success():
                return PlayOutcome(played, StopReason.TASK_SUCCESS, holding=False)
            if episode is not None and status is not None and status.steps_left == 0:  # unbound: no budget
                return PlayOutcome(played, StopReason.BUDGET_EXHAUSTED, holding=False)
            unreported = not reports and now >= start and looked_at > judge_after  # after a freeze: reports queued
            if unreported and time.monotonic() - sent_s >= node.params.report_timeout_s:
                # Sent again only if nothing of it played: a trajectory that plays with its reports lost (or late)
                # must not be sent twice (the second, from a moving arm, is refused or replaces it); it is followed
                # on the joint states instead, to its end.
                measured = self._points_measured(plan, points)
                if not measured:
                    return None
                if on_progress is not None:
                    on_progress(measured, points)
                # At its end by what moves (a gripper-only motion's arm is "there" from the start: its gripper
                # tells), or else judged by the clock below (a gripper closed on an object stops short of its end)
                if measured == points and self._arrived(plan, points):
                    return PlayOutcome(points, StopReason.COMPLETED, UNREPORTED_DETAIL)
                # Past its end (it may have started late: the send is not seen played), judged once the arms are
                # still, or at twice its length whatever they do.
                end = start + points * plan.dt_s + node.params.arrival_wait_s
                still = state.speed_of_rad_s(list(plan.trajectories)) <= node.params.hold_speed_rad_s
                if now >= end and still and self._arrived(plan, points, SETTLED_TOLERANCE_RAD):
                    return PlayOutcome(points, StopReason.COMPLETED, UNREPORTED_DETAIL)
                if (now >= end and still) or now >= end + points * plan.dt_s:
                    why = f"{UNREPORTED_DETAIL}; the arms did not reach its end ({measured} of {points} points)"
                    node.log_motion_error(f"motion aborted: {why}")
                    return PlayOutcome(measured, StopReason.ABORTED, why, holding=False)
            # Looks again at the next joint state, report or status, a stop or a shutdown (all wake the state), and
            # at the lease's period when nothing comes.
            state.wait_for_news(mark, node.params.lease_period_s)

    def _hold(self, outcome: PlayOutcome, controllers: list[str], arms: list[str]) -> PlayOutcome:
        """Command the stop until ``controllers`` report holding and the joint states show ``arms`` still; the outcome
        says whether that was seen (None: unknown).

        Unknown, answered without waiting for the confirmation timeout: an arm whose driver ended the motion for the
        robot (lost contact, a fault: no controller of it left in ``controllers``), and an arm whose joint states
        stopped for longer than joint_state_timeout_s plus :data:`SILENT_GRACE_S` (a killed driver, a silent
        motor). The others are still confirmed; a stop that is not seen within stop_confirm_timeout_s (or
        :data:`SHUTDOWN_CONFIRM_S` once the node shuts down) is reported as not confirmed.
        """
        node, state = self.node, self.node.state
        params = node.params
        confirming = [arm for arm in arms if any(c in controllers for c in _controllers_of([arm]))]
        unknown = [arm for arm in arms if arm not in confirming]
        first_sent = time.monotonic()
        deadline = first_sent + params.stop_confirm_timeout_s
        silent_after_s = params.joint_state_timeout_s + SILENT_GRACE_S
        sent_at = -math.inf
        while True:
            mark = state.news_mark()
            now = time.monotonic()
            if node.shutting_down:
                deadline = min(deadline, node.shutdown_started_s + SHUTDOWN_CONFIRM_S)
            if now - sent_at >= STOP_RESEND_S:
                node.commands.send_stop()
                sent_at = now
            ages = state.arm_ages_s()
            silent = [arm for arm in confirming if ages[arm] > silent_after_s]
            live = [arm for arm in confirming if arm not in silent]
            confirmed = (
                node.trajectory_board.holding_since(_controllers_of(live), first_sent)
                and all(ages[arm] < now - first_sent for arm in live)  # joint states from after the stop
                and state.speed_of_rad_s(live) <= params.hold_speed_rad_s
            )
            if confirmed or not live or now >= deadline:
                break
            state.wait_for_news(mark, max(0.0, min(sent_at + STOP_RESEND_S, deadline) - time.monotonic()))
        unknown += silent
        notes = []
        if unknown:
            ages = state.arm_ages_s()
            notes.append(
                "whether the " + " and ".join(f"{arm} arm" for arm in unknown) + " holds is unknown: "
                + "; ".join(
                    f"no joint states from the {arm} arm for {ages[arm]:.2f} s" if ages[arm] > silent_after_s
                    else "its driver ended the motion for the robot" for arm in unknown
                )
            )  # fmt: skip
        if live and not confirmed:
            why = (
                f"stop not confirmed within {min(params.stop_confirm_timeout_s, now - first_sent):.1f} s: the robot "
                "does not answer"
            )
            node.log_motion_error(why)
            notes.append(why)
        holding: bool | None = None if unknown else confirmed
        detail = "; ".join([outcome.detail, *notes]) if outcome.detail else "; ".join(notes)
        return dataclasses.replace(outcome, detail=detail, holding=holding)

    def _arrived(self, plan: Plan, points: int, tolerance_rad: float = ARRIVAL_TOLERANCE_RAD) -> bool:
        """Every arm within ``tolerance_rad`` of its last point: servo lag after the last point played."""
        joints = self.node.state.joints
        with self.node.state.lock:
            for arm, traj in plan.trajectories.items():
                q = joints.arm_q(arm)
                if q is None or np.max(np.abs(q - traj.positions_rad[points])) > tolerance_rad:
                    return False
        return True
