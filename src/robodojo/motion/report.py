"""What the motion server reports: the move_eef tool text before execution, and per-arm outcomes after."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from robodojo.motion.rejection import BackendLost, DriverRefused, Rejection, render_rejection
from robodojo.text import quote


class StopReason(str, Enum):
    COMPLETED = "completed"  # every point played and every moving arm's grasp point within the reached tolerance
    # every point played, but a grasp point stopped outside the tolerance (blocked, a load, the workspace's edge):
    # the arms' reports say how far off
    OFF_TARGET = "off_target"
    TASK_SUCCESS = "task_success"  # the benchmark's own success signal ended the episode mid-move
    BUDGET_EXHAUSTED = "budget_exhausted"  # the env step budget ran out (the plan was truncated)
    PLAN_FAILED = "plan_failed"  # rejected before anything moved
    REFUSED = "refused"  # the robot's controllers (a real arm's driver) refused the trajectory: nothing played
    STOPPED = "stopped"  # stop() was called during execution
    ABORTED = "aborted"  # the controllers cut the trajectory (replaced, refused, lease expired; ROS graph)
    # The robot backend stopped answering mid-move (ROS: no joint states; a real arm's driver lost contact), or a real
    # arm faulted and holds until an operator releases it.
    BACKEND_LOST = "backend_lost"


#: The goal's end for a Ros action: these reasons mean the goal was achieved (SUCCEEDED); every other one did not
#: achieve it (a cut by the step budget, an arm off target, a stop, a loss), whatever moved.
SUCCEEDING = frozenset({StopReason.COMPLETED, StopReason.TASK_SUCCESS})


@dataclass(frozen=True)
class PlayOutcome:
    """What an executor reports after playing a plan: points played, why it ended, and whether the arms were seen
    holding still afterwards (in-process backends hold by construction; on a graph the joint states confirm it;
    None: unknown, the robot stopped answering before it could be seen)."""

    played: int
    reason: StopReason
    detail: str = ""  # why it ended early, in words (which controller, what happened)
    holding: bool | None = True
    #: REFUSED: who refused and why, as the driver said it ("left_arm_controller: the e-stop holds the arm ...")
    refusal: str = ""


ACCEPTED_TEXT = (
    "Accepted: playing {n} waypoints ({s:.2f}s).{truncated} The next observation reports how close the grasp point "
    "landed."
)
TRUNCATED_TEXT = " The env step budget allows only these of the {total} planned."
MAX_LOGGED_NOTE_CHARS = 200  # a move's note is logged up to this long; the episode record keeps it (text_limits)


@dataclass(frozen=True)
class ArmReport:
    """One arm after a move. Errors compare the measured grasp point with the target."""

    arm: str
    planned: bool
    reached: bool
    pos_error_mm: float
    rot_error_deg: float
    final_pos_m: tuple[float, float, float]
    final_quat_wxyz: tuple[float, float, float, float]
    waypoints: int
    steps_used: int
    stop_reason: StopReason

    @property
    def arrival_text(self) -> str:
        return f"{self.arm} {self.pos_error_mm:.0f} mm and {self.rot_error_deg:.1f} deg away"


@dataclass(frozen=True)
class MoveReport:
    """The outcome of one move: the tool text sent before execution and, per moving arm, what happened.

    A move that was not accepted carries its ``rejection`` (the facts; ``tool_text`` is their text in the world frame);
    build it with :meth:`rejected`.
    """

    accepted: bool
    tool_text: str
    arms: Mapping[str, ArmReport]
    waypoints: int
    steps_used: int
    stop_reason: StopReason
    rejection: Rejection | None = None
    stop_detail: str = ""  # why the motion ended early (PlayOutcome.detail)
    #: the arms were seen holding still when the report was made; None: unknown (the robot stopped answering)
    holding: bool | None = True

    @classmethod
    def rejected(cls, rejection: Rejection, arms: Mapping[str, ArmReport] | None = None) -> MoveReport:
        """A move refused before it started (or cut off by a lost backend): ``arms`` are the per-arm distances to
        the target when it is known."""
        lost = isinstance(rejection, BackendLost)
        reason = StopReason.REFUSED if isinstance(rejection, DriverRefused) else StopReason.PLAN_FAILED
        return cls(
            accepted=False,
            tool_text=render_rejection(rejection),
            arms=arms or {},
            waypoints=0,
            steps_used=0,
            stop_reason=StopReason.BACKEND_LOST if lost else reason,
            rejection=rejection,
            holding=None if lost else True,
        )

    @property
    def holding_text(self) -> str:
        """Whether the arms hold, in words, for a result's text: "" when they were seen holding."""
        if self.holding is None:
            return "whether the arms hold still is unknown: the robot stopped answering"
        return "" if self.holding else "the arms were not seen holding still"

    @property
    def arrival_text(self) -> str:
        """The arrival check for the next observation, e.g. ``left 20 mm and 0.0 deg away``."""
        return "; ".join(r.arrival_text for r in self.arms.values())

    def log_text(self, note: str = "") -> str:
        """One line for a server's log: accepted or rejected, why it ended, points played, the arrival check or the
        rejection, and the agent's ``note`` quoted and cut to :data:`MAX_LOGGED_NOTE_CHARS`, e.g.
        ``accepted: completed, 12/12 points; left 3 mm and 0.2 deg away (note: 'above the cube')``."""
        outcome = self.arrival_text if self.accepted else self.tool_text
        line = (
            f"{'accepted' if self.accepted else 'rejected'}: {self.stop_reason.value}, "
            f"{self.steps_used}/{self.waypoints} points; {outcome}"
        )
        if note:
            cut = f", {len(note)} characters" if len(note) > MAX_LOGGED_NOTE_CHARS else ""
            line += f" (note: {quote(note, MAX_LOGGED_NOTE_CHARS)}{cut})"
        return line
