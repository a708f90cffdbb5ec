"""A trajectory controller as a robot runs it: a TrajectoryPlayer, the commander's lease, and reports of what played.

The simulator node runs one per arm and per gripper, and the hardware drivers will run the same. Three rules make
"stopped" mean stopped on a real arm:

- A trajectory is known by its start stamp (``TrajectoryCommand.start_s``, the message's header.stamp). A commander
  that leases it (TrajectoryLease.msg) must keep renewing the lease: when it lapses, by the time the last lease
  arrived or by the time it was sent, the controller drops the trajectory and holds. A stalled, dead or late
  commander can never leave an arm playing its last trajectory.
- A trajectory that ended (stopped, replaced, expired) never plays again: a re-sent copy with the same start is refused.
- Every end is reported with the points actually played (:class:`TrajectoryReport`), so a commander counts steps and
  judges outcomes from what the robot did, not from the clock.

Trajectories stamped 0 ("start now", as third parties send them) carry no identity: they play as sent, unleased.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NoReturn

import numpy as np
from numpy.typing import NDArray

from robodojo.control.trajectory_player import TrajectoryCommand, TrajectoryPlayer
from robodojo.errors import InvalidCommandError

#: Leases and ended trajectories remembered per controller: enough for a commander's resends, bounded for floods.
_REMEMBERED = 32


#: A STOPPED report whose reason starts with this ended because the robot stopped answering (a real arm's driver lost
#: contact): its commander reports the motion as lost, not as cut short.
LOST_CONTACT = "lost contact"
#: ... or with this, because the robot faulted (a motor's error flag or silence, a reflex, a joint that did not
#: follow): it holds and takes nothing until an operator releases it, so the motion is lost as well.
ARM_FAULT = "arm fault"


def lost_contact_reason(why: str) -> str:
    """``why`` as a lost-contact reason (:data:`LOST_CONTACT` first)."""
    return why if why.startswith(LOST_CONTACT) else f"{LOST_CONTACT}: {why}"


def arm_fault_reason(why: str) -> str:
    """``why`` as an arm-fault reason (:data:`ARM_FAULT` first)."""
    return why if why.startswith(ARM_FAULT) else f"{ARM_FAULT}: {why}"


def ends_the_robot(state: int, reason: str) -> bool:
    """Whether a report (its state and reason) says the robot is lost to its commander: stopped or refused for lost
    contact or a fault that needs the operator, not a motion cut short or a wrong trajectory."""
    return state in (TrajectoryState.STOPPED, TrajectoryState.REFUSED) and reason.startswith((LOST_CONTACT, ARM_FAULT))


@dataclass(frozen=True)
class ControllerNames:
    """The two controllers of an arm, as named on the graph (nodes.topics): they name its reports."""

    arm: str
    gripper: str


class TrajectoryState(IntEnum):
    """A trajectory's fate; the values are TrajectoryStatus.msg's constants."""

    PLAYING = 0
    FINISHED = 1
    STOPPED = 2
    REPLACED = 3
    EXPIRED = 4
    REFUSED = 5
    IDLE = 6


@dataclass(frozen=True)
class TrajectoryReport:
    """What a controller says about one trajectory (TrajectoryStatus.msg)."""

    controller: str
    start_s: float  # the trajectory's id: its start stamp as sent (0: none)
    state: TrajectoryState
    points_played: int
    points: int
    holding: bool
    reason: str = ""


@dataclass(frozen=True)
class Lease:
    """A commander's promise that it still follows the trajectory starting at ``start_s`` (TrajectoryLease.msg)."""

    start_s: float
    sent_wall_s: float  # the commander's system clock when sent
    timeout_s: float


def trajectory_key(start_s: float) -> int:
    """A start stamp as an exact key (microseconds): stamps round-trip through builtin_interfaces/Time."""
    return round(start_s * 1e6)


class TrajectoryController:
    """One controller (an arm's joints or a gripper) of a robot that plays trajectories one control tick at a time.

    Call :meth:`submit` for each trajectory message, :meth:`renew` for each lease, :meth:`sample` once per control
    tick (it returns the position target, or None to hold), and :meth:`take_reports` to publish what happened.
    """

    def __init__(
        self,
        name: str,
        player: TrajectoryPlayer,
        *,
        wall_clock: Callable[[], float] = time.time,
        monotonic_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.player = player
        self._wall = wall_clock
        self._monotonic = monotonic_clock
        self._start_s = 0.0  # id of the current (or latest) trajectory
        self._state = TrajectoryState.IDLE
        self._leases: collections.OrderedDict[int, tuple[Lease, float]] = collections.OrderedDict()
        self._ended: collections.OrderedDict[int, TrajectoryState] = collections.OrderedDict()
        self._reports: list[TrajectoryReport] = []

    @property
    def playing(self) -> bool:
        return self.player.active

    def status(self) -> TrajectoryReport:
        """The current (or latest) trajectory's report."""
        return self._report(self._state)

    def take_reports(self) -> list[TrajectoryReport]:
        """Reports of the ends and refusals since the last call (the caller publishes them)."""
        reports, self._reports = self._reports, []
        return reports

    # -- commands -------------------------------------------------------------------------------------------------
    def submit(self, cmd: TrajectoryCommand, now_s: float, commanded: Sequence[float], dt_s: float) -> None:
        """Take a trajectory: an empty one stops the running one; a valid one replaces it; an invalid one is
        refused (reported, and raised as InvalidCommandError) and the running one goes on."""
        if not cmd.positions:
            self.stop(TrajectoryState.STOPPED, "stopped by an empty trajectory")
            return
        key = trajectory_key(cmd.start_s)
        if cmd.start_s > 0.0 and key in self._ended:
            self._refuse(cmd, f"the trajectory starting at {cmd.start_s:.3f} s already ended; it never plays again")
        if cmd.start_s > 0.0 and self.player.active and key == trajectory_key(self._start_s):
            self._refuse(cmd, f"the trajectory starting at {cmd.start_s:.3f} s is already playing")
        replaced = self._end_report(TrajectoryState.REPLACED, f"replaced by the trajectory from {cmd.start_s:.3f} s")
        try:
            self.player.submit(cmd, now_s, commanded, dt_s)
        except InvalidCommandError as exc:
            self._refuse(cmd, str(exc))
        if replaced is not None:
            self._end(replaced)
        self._start_s, self._state = cmd.start_s, TrajectoryState.PLAYING

    def check_sizes(self, joint_names: Sequence[str], points: int, dt_s: float, start_s: float) -> None:
        """The player's cheapest checks (:meth:`TrajectoryPlayer.check_sizes`) before a message is converted; a
        failure is reported like any refusal."""
        try:
            self.player.check_sizes(joint_names, points, dt_s)
        except InvalidCommandError as exc:
            self._refuse_with(start_s, points, str(exc))

    def renew(self, lease: Lease) -> None:
        """Record a lease; a lease for a trajectory that already ended changes nothing."""
        if lease.start_s <= 0.0 or not np.isfinite(lease.timeout_s) or lease.timeout_s <= 0.0:
            return
        key = trajectory_key(lease.start_s)
        self._leases[key] = (lease, self._monotonic())
        self._leases.move_to_end(key)
        while len(self._leases) > _REMEMBERED:
            self._leases.popitem(last=False)

    def stop(self, state: TrajectoryState, reason: str) -> None:
        """End the running trajectory (if any) with ``state``; the caller holds the joints."""
        report = self._end_report(state, reason)
        if report is not None:
            self.player.stop()
            self._end(report)

    # -- the control tick -----------------------------------------------------------------------------------------
    def sample(self, tick_s: float, dt_s: float) -> NDArray[np.float64] | None:
        """The position target for the tick starting at ``tick_s``, or None to hold (idle, not started, expired)."""
        if not self.player.active:
            return None
        expired = self._lease_lapsed()
        if expired:
            self.stop(TrajectoryState.EXPIRED, expired)
            return None
        q = self.player.sample(tick_s, dt_s)
        if not self.player.active:
            self._end(self._report(TrajectoryState.FINISHED))
        return q

    def _lease_lapsed(self) -> str:
        """Why the running trajectory's lease lapsed, or "" (unleased trajectories never lapse)."""
        entry = self._leases.get(trajectory_key(self._start_s)) if self._start_s > 0.0 else None
        if entry is None:
            return ""
        lease, received = entry
        since_received = self._monotonic() - received
        since_sent = self._wall() - lease.sent_wall_s
        if since_received > lease.timeout_s:
            return f"no lease from its commander for {since_received:.2f} s (timeout {lease.timeout_s:.2f} s)"
        if since_sent > lease.timeout_s:
            return (
                f"the newest lease was sent {since_sent:.2f} s ago (timeout {lease.timeout_s:.2f} s): a late lease, "
                "or clocks out of sync"
            )
        return ""

    def refuse(self, start_s: float, points: int, reason: str) -> None:
        """Report a trajectory refused before it could be submitted (too large, malformed); nothing changes."""
        self._reports.append(
            TrajectoryReport(self.name, start_s, TrajectoryState.REFUSED, 0, points, not self.playing, reason)
        )

    # -- reports --------------------------------------------------------------------------------------------------
    def _refuse(self, cmd: TrajectoryCommand, reason: str) -> NoReturn:
        self._refuse_with(cmd.start_s, len(cmd.positions), reason)

    def _refuse_with(self, start_s: float, points: int, reason: str) -> NoReturn:
        self.refuse(start_s, points, reason)
        raise InvalidCommandError(reason)

    def _end_report(self, state: TrajectoryState, reason: str) -> TrajectoryReport | None:
        """The report that would end the running trajectory now; None when nothing plays."""
        if not self.player.active:
            return None
        return TrajectoryReport(self.name, self._start_s, state, self.player.played, self.player.points, True, reason)

    def _end(self, report: TrajectoryReport) -> None:
        """Record an end: reported, and its id never plays again."""
        self._state = report.state
        self._reports.append(report)
        if report.start_s > 0.0:
            self._ended[trajectory_key(report.start_s)] = report.state
            while len(self._ended) > _REMEMBERED:
                self._ended.popitem(last=False)

    def _report(self, state: TrajectoryState) -> TrajectoryReport:
        return TrajectoryReport(
            self.name, self._start_s, state, self.player.played, self.player.points, not self.player.active
        )
