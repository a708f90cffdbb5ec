"""The cell protocol, parent side: one cell sent to the kernel, its robo calls answered, its limits watched.

The parent sends ``("run", code)``; until the kernel answers ``("done", fields)`` it may send ``("call", name, args,
kwargs)``, each answered with ``("ok", value)``, ``("error", base, type_name, message)`` or ``("episode_over",
message)``. Every message from the kernel is unpickled with the allow-list (:mod:`.kernel_unpickle`); anything else
(a forged message, an unknown name, a reply too large) is a protocol violation and the kernel is killed. While it
waits the parent checks the cell's wall-clock time (time inside robo calls not counted) and the kernel's CPU time;
after the cell it restarts a kernel the cell broke or left threads in. :class:`CellResult` is what the caller gets.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import signal
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from robodojo.agents.code_cell.kernel_process import CLOSE_TIMEOUT_S, KernelProcess
from robodojo.agents.code_cell.kernel_unpickle import loads_from_child
from robodojo.errors import RobodojoError
from robodojo.text import trim_text

log = logging.getLogger(__name__)

TASK_SETTLE_S = 0.2  # after a cell, the kernel's task count may take this long to fall back (threads exiting)
MAX_REPORTED_NAMES = 10  # leftover threads and health problems named in a reset notice

Handler = Callable[[str, tuple, dict], Any]
LimitName = Literal["wall_time", "cpu_time", "memory", "output", "crashed", "threads", "broken"]


class EpisodeOver(RobodojoError):
    """Raise from the handler to end the episode: the robo call raises EpisodeEnded (a BaseException) in the cell."""


@dataclass(frozen=True)
class CellResult:
    """What one cell produced. ``limit`` names the limit that ended or trimmed it, if any."""

    ok: bool  #: the cell ran to its end without an exception
    stdout: str  #: captured, trimmed (head and tail around "[... N characters omitted ...]")
    stderr: str  #: captured, trimmed
    result_repr: str | None  #: repr of a trailing expression that is not None, trimmed
    error: str | None  #: traceback text (kernel frames removed), or what stopped the kernel
    limit: LimitName | None
    namespace_reset: bool  #: the cell ran in, or left behind, a fresh namespace (earlier definitions are gone)
    episode_ended: bool  #: the handler raised EpisodeOver during this cell
    wall_s: float  #: time from sending the cell to its result, robo calls included [s]
    rpc_calls: int  #: robo calls answered during this cell
    notice: str | None = None  #: what the kernel changed to run the cell (HTML entities decoded), for the model


class _ProtocolError(Exception):
    """The kernel sent something that is not a valid message (only forged messages do)."""


def _names(value: Any, key: str) -> list[str]:
    """A list of short texts from the kernel's report (None: empty); anything else is a protocol violation."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _ProtocolError(f"a result whose {key!r} is not a list of text")
    names = [trim_text(v, 200) for v in value[:MAX_REPORTED_NAMES]]
    if len(value) > MAX_REPORTED_NAMES:
        names.append(f"{len(value) - MAX_REPORTED_NAMES} more")
    return names


class CellRun:
    """The parent's side of one cell: send it, answer robo calls, watch the limits, collect the result."""

    def __init__(self, process: KernelProcess, handler: Handler, names: Collection[str]) -> None:
        """One cell on ``process``, whose robo calls ``handler`` answers for the attribute ``names`` it serves."""
        self.process = process
        self.handler = handler
        self.limits = process.limits
        self.conn = process.conn
        self.calls = 0
        self.handler_s = 0.0
        self.episode_ended = False
        self.names = frozenset(names)

    def execute(self, code: str) -> CellResult:
        """Send ``code``, answer its robo calls and watch its limits until it is done; never raises for the cell."""
        limits = self.limits
        self.start = time.monotonic()
        cpu_start = self.process.cpu_s()
        next_cpu_check = self.start + limits.poll_interval_s
        try:
            self.conn.send_bytes(pickle.dumps(("run", code), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            return self._crashed()
        while True:
            now = time.monotonic()
            cell_s = now - self.start - self.handler_s
            if cell_s >= limits.wall_s:
                return self._stopped("wall_time", f"the cell ran for more than {limits.wall_s:g} s of wall-clock time "
                                     "(time inside robo calls not counted)")  # fmt: skip
            if now >= next_cpu_check:
                if self.process.cpu_s() - cpu_start >= limits.cpu_s:
                    return self._stopped("cpu_time", f"the cell used more than {limits.cpu_s:g} s of CPU time")
                next_cpu_check = now + limits.poll_interval_s
            timeout = max(0.0, min(limits.wall_s - cell_s, next_cpu_check - now))
            if not self.conn.poll(timeout):
                continue
            try:
                data = self.conn.recv_bytes(limits.max_message_bytes)
            except EOFError:
                return self._crashed()
            except OSError:
                return self._violation(f"a message larger than {limits.max_message_bytes} bytes")
            try:
                message = loads_from_child(data)
            except Exception as exc:
                return self._violation(f"a message that is not allowed ({exc})")
            kind = message[0] if isinstance(message, tuple) and message else None
            if kind == "call" and len(message) == 4:
                try:
                    self._answer(*message[1:])
                except OSError:
                    return self._crashed()
            elif kind == "done" and len(message) == 2 and isinstance(message[1], dict):
                try:
                    return self._done(message[1])
                except _ProtocolError as exc:
                    return self._violation(str(exc))
            else:
                return self._violation("an unexpected message")

    def _answer(self, name: Any, args: Any, kwargs: Any) -> None:
        """Run the handler for one robo call and send its reply; the handler's time is not cell time."""
        self.calls += 1
        t0 = time.monotonic()
        try:
            reply = self._call_handler(name, args, kwargs)
        finally:
            self.handler_s += time.monotonic() - t0
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            value_type = type(reply[1]).__name__
            message = f"robo.{name} returned a {value_type} that cannot be sent to the cell ({exc})"
            data = pickle.dumps(("error", "RuntimeError", None, message), protocol=pickle.HIGHEST_PROTOCOL)
        self.conn.send_bytes(data)

    def _call_handler(self, name: Any, args: Any, kwargs: Any) -> tuple:
        if not isinstance(name, str) or name not in self.names:
            return ("error", "TypeError", None, f"robo has no attribute {name!r}")
        if not isinstance(args, tuple) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            return ("error", "TypeError", None, f"robo.{name}: malformed call")
        if self.episode_ended:
            return ("episode_over", "the episode is over")
        try:
            return ("ok", self.handler(name, args, kwargs))
        except EpisodeOver as exc:
            self.episode_ended = True
            return ("episode_over", str(exc) or "the episode is over")
        except (TypeError, ValueError) as exc:
            base = "TypeError" if isinstance(exc, TypeError) else "ValueError"
            return ("error", base, type(exc).__name__, str(exc))
        except RobodojoError as exc:
            return ("error", "RuntimeError", type(exc).__name__, str(exc))
        except Exception as exc:
            log.exception("robo.%s raised an unexpected error", name)
            return ("error", "RuntimeError", type(exc).__name__, str(exc))

    def _done(self, fields: Mapping[str, Any]) -> CellResult:
        limits = self.limits

        def text(key: str, max_chars: int, optional: bool = False) -> str | None:
            value = fields.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, str):
                raise _ProtocolError(f"a result whose {key!r} is not text")
            return trim_text(value, max_chars + 100)  # the kernel trims; this only bounds a forged reply

        stdout = text("stdout", limits.max_output_chars)
        stderr = text("stderr", limits.max_output_chars)
        result_repr = text("result_repr", limits.max_result_chars, optional=True)
        error = text("error", limits.max_error_chars, optional=True)
        notice = text("notice", limits.max_error_chars, optional=True)
        limit: LimitName | None = None
        if fields.get("memory_error") is True:
            limit = "memory"
        elif fields.get("output_trimmed") is True:
            limit = "output"
        reset = self._reset_after_cell(fields)
        if reset is not None:
            limit, note = reset
            self.process.kill()
            stderr = f"{stderr}\n[{note}]".lstrip("\n")
        return CellResult(
            ok=error is None,
            stdout=stdout or "",
            stderr=stderr or "",
            result_repr=result_repr,
            error=error,
            limit=limit,
            namespace_reset=reset is not None,
            episode_ended=self.episode_ended,
            wall_s=time.monotonic() - self.start,
            rpc_calls=self.calls,
            notice=notice,
        )

    def _reset_after_cell(self, fields: Mapping[str, Any]) -> tuple[LimitName, str] | None:
        """A cell that broke what the kernel needs, or left threads running, costs a restart: the limit and the note
        for the model. The kernel's own report names what it saw; the task count in /proc catches threads it cannot
        see (native ones, _thread.start_new_thread)."""
        broken = _names(fields.get("broken"), "broken")
        threads = _names(fields.get("threads_left"), "threads_left")
        extra = self._extra_tasks()
        after = "so the kernel was restarted and its namespace reset: variables, functions and imports of earlier " \
                "cells are gone"  # fmt: skip
        if broken:
            return "broken", f"the cell changed what the kernel itself needs ({'; '.join(broken)}), {after}"
        if threads or extra:
            what = ", ".join(threads) if threads else f"{extra} thread(s) started outside the threading module"
            return "threads", (
                f"the cell left threads running ({what}): a thread may not outlive its cell, {after}; join your "
                "threads before the cell ends"
            )
        return None

    def _extra_tasks(self) -> int:
        """Tasks of the kernel above its count when it was ready, after giving exiting threads a moment."""
        deadline = time.monotonic() + TASK_SETTLE_S
        while True:
            extra = self.process.task_count() - self.process.baseline_tasks
            if extra <= 0 or time.monotonic() >= deadline:
                return max(0, extra)
            time.sleep(self.limits.poll_interval_s / 5)

    def _stopped(self, limit: LimitName, what: str) -> CellResult:
        self.process.kill()
        error = (
            f"{what}; the kernel was stopped and its namespace reset: variables, functions and imports of earlier "
            "cells are gone, and the cell's output was lost"
        )
        return self._reset_result(limit, error)

    def _crashed(self) -> CellResult:
        try:
            code = self.process.proc.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        stderr = self.process.stderr_tail()
        self.process.kill()
        how = f"code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                how += f", {signal.Signals(-code).name}"
        error = f"the kernel process exited ({how}); its namespace was reset"
        if stderr:
            error += f"\n[kernel stderr]\n{stderr}"
        return self._reset_result("crashed", error)

    def _violation(self, what: str) -> CellResult:
        self.process.kill()
        error = f"the kernel sent {what}; it was stopped and its namespace reset"
        return self._reset_result("crashed", error)

    def _reset_result(self, limit: LimitName, error: str) -> CellResult:
        return CellResult(
            ok=False,
            stdout="",
            stderr="",
            result_repr=None,
            error=error,
            limit=limit,
            namespace_reset=True,
            episode_ended=self.episode_ended,
            wall_s=time.monotonic() - self.start,
            rpc_calls=self.calls,
        )
