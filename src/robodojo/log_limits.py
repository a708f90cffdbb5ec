"""A repeat limiter for log lines: the first of a kind is logged, its repeats in a window are counted, not logged.

A client that sends the same bad message at 100 Hz would otherwise get 100 log lines a second out of a node, and the
logging (formatting, the console, the log file) costs the node more than refusing the message does. With a limiter,
a node logs the first refusal of each kind (a key such as ``(topic, error kind)``), counts the repeats for
``window_s`` seconds after it, and the next line of that kind says how many it stands for::

    left arm trajectory refused, nothing moves: ... (37 more like this in the last 5.0 s)

Pure Python (no rclpy), so the node adapters and the library share it; the clock is injectable for tests. Thread
safe: callbacks of a multi-threaded executor may share one limiter.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

DEFAULT_WINDOW_S = 5.0  # repeats of one kind within this long after a logged line are counted, not logged
MAX_KEYS = 1024  # kinds remembered; the least recently logged is forgotten first (its count is lost)


@dataclass(frozen=True)
class LogDecision:
    """Whether to log one occurrence now, and how many repeats of its kind the line stands for."""

    log: bool  #: log this occurrence
    suppressed: int  #: repeats of this kind not logged since its last logged line (0 when there were none)
    since_s: float  #: time since that last logged line [s] (0.0 for the first of a kind)

    @property
    def suffix(self) -> str:
        """' (37 more like this in the last 5.0 s)' to append to the logged line, or '' when nothing was held back."""
        if not self.log or not self.suppressed:
            return ""
        return f" ({self.suppressed} more like this in the last {self.since_s:.1f} s)"


@dataclass
class _Kind:
    logged_s: float  # when its last line was logged
    suppressed: int = 0


class RepeatLimiter:
    """Decides per key whether a line is logged: the first is, repeats within ``window_s`` after it are counted.

    Usage in a node::

        self._log_limit = RepeatLimiter(window_s=5.0)
        ...
        decision = self._log_limit.check((topic, "refused"))
        if decision.log:
            self.get_logger().error(f"{what} trajectory refused, nothing moves: {exc}{decision.suffix}")

    Repeats that no later line reports (the flood stopped) can be reported with :meth:`due`, e.g. from a timer.
    """

    def __init__(
        self,
        window_s: float = DEFAULT_WINDOW_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        """``window_s`` [s] after a logged line its repeats are counted; ``clock`` returns monotonic seconds."""
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, got {max_keys!r}")
        self.window_s = float(window_s)
        self.max_keys = max_keys
        self._clock = clock
        self._kinds: OrderedDict[Hashable, _Kind] = OrderedDict()  # least recently logged first
        self._lock = threading.Lock()

    def check(self, key: Hashable) -> LogDecision:
        """One occurrence of ``key``: log it (the first, or the first after the window) or count it."""
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None:
                self._remember(key, now)
                return LogDecision(True, 0, 0.0)
            since = now - kind.logged_s
            if since < self.window_s:
                kind.suppressed += 1
                return LogDecision(False, kind.suppressed, since)
            decision = LogDecision(True, kind.suppressed, since)
            kind.logged_s, kind.suppressed = now, 0
            self._kinds.move_to_end(key)
            return decision

    def message(self, key: Hashable, text: str) -> str | None:
        """``text`` with the count of repeats it stands for when it is to be logged now; None when it is a repeat."""
        decision = self.check(key)
        return text + decision.suffix if decision.log else None

    def due(self) -> list[tuple[Hashable, LogDecision]]:
        """Kinds whose window has passed with repeats that no line reported yet, as decisions to log now (a summary
        such as "37 more like this in the last 5.0 s"); their counts start again from zero."""
        now = self._clock()
        out = []
        with self._lock:
            for key, kind in self._kinds.items():
                since = now - kind.logged_s
                if kind.suppressed and since >= self.window_s:
                    out.append((key, LogDecision(True, kind.suppressed, since)))
                    kind.logged_s, kind.suppressed = now, 0
            for key, _ in out:
                self._kinds.move_to_end(key)
        return out

    def _remember(self, key: Hashable, now: float) -> None:
        self._kinds[key] = _Kind(logged_s=now)
        while len(self._kinds) > self.max_keys:
            self._kinds.popitem(last=False)


#: Refusals whose reasons agree this far (numbers aside) are one kind: a flood's repeats differ in their numbers only.
REFUSAL_KIND_CHARS = 80
_NUMBER = re.compile(r"[-+]?\d[\d.]*(?:e[-+]?\d+)?")


class RefusalLog:
    """The log lines of a controller's refused trajectories: one line per kind of refusal per window, and a summary
    of the repeats held back once a flood stops (``consequence``, e.g. "nothing moves", ends each line)."""

    def __init__(self, consequence: str, limiter: RepeatLimiter | None = None) -> None:
        self.consequence = consequence
        self.limiter = limiter or RepeatLimiter()

    def refused(self, what: str, reason: object) -> str | None:
        """The line to log for one refusal of ``what`` ("left arm"), or None when it is a repeat being counted."""
        kind = _NUMBER.sub("#", str(reason))[:REFUSAL_KIND_CHARS]
        return self.limiter.message((what, kind), f"{what} trajectory refused, {self.consequence}: {reason}")

    def summaries(self) -> list[str]:
        """A line for each kind whose repeats no later line reported (the flood stopped)."""
        lines = []
        for key, decision in self.limiter.due():
            what = key[0] if isinstance(key, tuple) else key
            lines.append(
                f"{what}: {decision.suppressed} more trajectories refused in the last {decision.since_s:.1f} s "
                "(each with its reason on the controller's trajectory_status topic)"
            )
        return lines
