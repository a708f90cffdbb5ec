"""A command watchdog: while armed, it calls ``on_expire`` once if :meth:`CommandWatchdog.feed` stops coming.

The driver arms it when a trajectory starts playing; whoever commands the arm (a lease, a stream of trajectories)
feeds it. A caller that dies or hangs mid-trajectory stops feeding, and the arm is stopped and held instead of
playing on unattended. It runs on its own thread, so a stuck caller cannot block it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

POLLS_PER_TIMEOUT = 10  # the expiry is noticed within timeout_s / POLLS_PER_TIMEOUT of the deadline


class CommandWatchdog:
    """Calls ``on_expire()`` (on the watchdog's thread) when armed and not fed for ``timeout_s`` [s]."""

    def __init__(self, timeout_s: float, on_expire: Callable[[], None], *, clock: Callable[[], float] = time.monotonic):
        if not timeout_s > 0:
            raise ValueError(f"watchdog timeout must be > 0 s, got {timeout_s!r}")
        self.timeout_s = timeout_s
        self._on_expire = on_expire
        self._clock = clock
        self._lock = threading.Lock()
        self._deadline_s: float | None = None  # None: disarmed
        self._closed = threading.Event()
        self.expirations = 0  #: how many times it fired
        self._thread = threading.Thread(target=self._run, name="command-watchdog", daemon=True)
        self._thread.start()

    def arm(self) -> None:
        """Start watching: the first deadline is one timeout from now."""
        with self._lock:
            self._deadline_s = self._clock() + self.timeout_s

    def feed(self) -> None:
        """The commander is alive: push the deadline one timeout ahead (no effect while disarmed)."""
        with self._lock:
            if self._deadline_s is not None:
                self._deadline_s = self._clock() + self.timeout_s

    def disarm(self) -> None:
        with self._lock:
            self._deadline_s = None

    @property
    def armed(self) -> bool:
        with self._lock:
            return self._deadline_s is not None

    def close(self) -> None:
        """Stop the thread (for good)."""
        self._closed.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._closed.wait(self.timeout_s / POLLS_PER_TIMEOUT):
            with self._lock:
                expired = self._deadline_s is not None and self._clock() >= self._deadline_s
                if expired:
                    self._deadline_s = None  # fire once per arming
            if expired:
                self.expirations += 1
                self._on_expire()
