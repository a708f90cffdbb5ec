"""What agents call to move the robot: the in-process MotionServer, or its ROS client (the MoveEef action)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from numpy.typing import ArrayLike

from robodojo.motion.report import MoveReport


class Motion(Protocol):
    """The motion server's entry points, as both agents use them."""

    def move_eef(self, targets: object, *, is_success: Callable[[], bool] | None = None, note: str = "") -> MoveReport:
        """A move_eef tool call: named dimensions -> validated, planned, executed, reported. ``note`` is the agent's
        reason, for the motion server's log."""
        ...

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
        """One arm's grasp point to ``xyz`` [m], optional orientation (w, x, y, z) and gripper opening; ``speed_scale``
        in (0, 1] slows the motion below the robot's configured speeds."""
        ...

    def home(self, *, is_success: Callable[[], bool] | None = None) -> MoveReport:
        """Every arm to its home joint angles."""
        ...

    def stop(self) -> None:
        """Stop the running motion (from any thread) and hold."""
        ...
