"""One motion at a time, and waiting for it to end without polling: what a motion server's entry points share.

The ROS motion server node lets one goal (or homing) move the arms; a second is refused at once (busy). Its stop
service answers once the running motion has ended, and its shutdown waits for that too, each bounded: both block on
a condition that the motion's end signals, never on a sleep loop.
"""

from __future__ import annotations

import threading


class MotionGate:
    """Admits one motion at a time; :meth:`wait_idle` wakes as soon as it ends. Thread-safe."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._closed = False

    @property
    def busy(self) -> bool:
        """A motion is running."""
        return self._busy

    @property
    def closed(self) -> bool:
        """:meth:`close` was called: no motion is admitted any more."""
        return self._closed

    def try_enter(self) -> bool:
        """Admit a motion, or False when one is running or the gate is closed; admitted, call :meth:`leave`."""
        with self._changed:
            if self._busy or self._closed:
                return False
            self._busy = True
            return True

    def leave(self) -> None:
        """The admitted motion has ended (its result is made): wake everyone waiting."""
        with self._changed:
            self._busy = False
            self._changed.notify_all()

    def close(self) -> None:
        """Admit no more motions (the server shuts down); the running one, if any, still ends as usual."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] for the running motion (if any) to end; whether none is running."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._busy, timeout=timeout_s)
