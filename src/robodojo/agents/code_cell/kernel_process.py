"""One code-cell kernel process: started confined, handed its settings, watched and killed by the parent.

:class:`KernelProcess` is the parent's handle on one child (``python -m robodojo.agents.code_cell.kernel_main FD``):
it starts the process with one inherited socket and nothing else, in its own session, with a scrubbed environment
(:func:`kernel_environment`), puts it under its task limit, sends the settings and waits until the kernel is ready;
then it reads the kernel's CPU time and task count from /proc, keeps the tail of its native stderr, and kills it.
Which of these are real boundaries is in :mod:`.kernel`'s docstring.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from importlib.util import find_spec
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import robodojo
from robodojo.agents.code_cell.kernel_config import KernelContainment, KernelLimits
from robodojo.agents.code_cell.kernel_unpickle import loads_from_child
from robodojo.agents.code_cell.task_limit import TaskLimit, TaskLimitError, task_count
from robodojo.errors import RobodojoError

log = logging.getLogger(__name__)

KERNEL_MODULE = "robodojo.agents.code_cell.kernel_main"
CRASH_STDERR_CHARS = 1500  # tail of the kernel's native stderr (faulthandler) appended to a crash message
CLOSE_TIMEOUT_S = 2.0  # stop() waits this long for the kernel to exit before SIGKILL
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class KernelError(RobodojoError):
    """The kernel process could not be started."""


def deny_read_paths(containment: KernelContainment) -> tuple[str, ...]:
    """What cells may not read: ``deny_read`` and the source folders of the blocked modules, as real paths."""
    paths = {os.path.realpath(p) for p in containment.deny_read}
    for name in containment.blocked_modules:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            paths.update(os.path.realpath(p) for p in spec.submodule_search_locations)
        elif spec.origin and os.path.isabs(spec.origin):
            paths.add(os.path.realpath(spec.origin))
    return tuple(sorted(paths))


def kernel_environment(containment: KernelContainment, scratch_dir: Path) -> dict[str, str]:
    """The kernel's whole environment: ``env_passthrough`` only, HOME and TMPDIR the scratch folder, one thread per
    native pool."""
    env = {k: os.environ[k] for k in containment.env_passthrough if k in os.environ}
    src = str(Path(robodojo.__file__).resolve().parents[1])
    env.update(
        HOME=str(scratch_dir),
        TMPDIR=str(scratch_dir),
        PYTHONPATH=src,
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NUMEXPR_NUM_THREADS="1",
        OPENCV_FOR_THREADS_NUM="1",  # no native worker pools: every task left after a cell is the cell's
    )
    return env


class KernelProcess:
    """One running kernel; once :meth:`kill` ran (``killed``) it is gone for good and a fresh one must be started."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        limits: KernelLimits,
        tasks: TaskLimit,
        env: Mapping[str, str],
        scratch_dir: Path,
    ) -> None:
        """Start the kernel and hand it ``settings`` (its init message; ``rlimit_nproc`` is added once the process
        counts in ``tasks``); ready when this returns. KernelError when it does not start, and nothing is left
        running."""
        self.limits = limits
        self.killed = False
        self._tasks = tasks
        parent_conn, child_conn = Pipe(duplex=True)
        fd = child_conn.fileno()
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115  (kept open for the kernel's life)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-B", "-m", KERNEL_MODULE, str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr_file,
                env=dict(env),
                cwd=scratch_dir,
                start_new_session=True,
            )
        finally:
            child_conn.close()
        self.conn = parent_conn
        try:
            tasks.attach(self.proc.pid)  # before the settings: nothing runs outside the kernel's own cgroup
        except TaskLimitError as exc:
            self.kill()
            raise KernelError(str(exc)) from None
        init = {**settings, "rlimit_nproc": tasks.rlimit_nproc()}
        try:
            parent_conn.send_bytes(pickle.dumps(("init", init), protocol=pickle.HIGHEST_PROTOCOL))
            if not parent_conn.poll(limits.start_timeout_s):
                raise KernelError(f"the kernel was not ready within {limits.start_timeout_s:g} s")
            message = loads_from_child(parent_conn.recv_bytes(limits.max_message_bytes))
            if not (isinstance(message, tuple) and len(message) == 2 and message[0] == "ready"):
                raise KernelError("the kernel answered its settings with an unexpected message")
        except (KernelError, OSError, EOFError, pickle.UnpicklingError) as exc:
            stderr = self.stderr_tail()
            self.kill()
            raise KernelError(f"the kernel process did not start: {exc}" + (f"\n{stderr}" if stderr else "")) from None
        #: what the kernel reported about its confinement (network_namespace, uid, no_new_privs, notes, task_limit)
        self.confinement: dict[str, Any] = dict(message[1]) if isinstance(message[1], dict) else {}
        self.confinement["task_limit"] = tasks.describe()
        #: tasks of the kernel process when it was ready (its main and parent-watch threads)
        self.baseline_tasks = self.task_count()
        if self.confinement.get("notes"):
            log.warning("kernel confinement incomplete: %s", "; ".join(map(str, self.confinement["notes"])))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """Ask the kernel to exit, wait a moment, then :meth:`kill` it."""
        if not self.killed:
            try:
                self.conn.send_bytes(pickle.dumps(("exit",)))
                self.proc.wait(CLOSE_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        """SIGKILL the kernel (if it still runs) and release its socket, stderr file and task limit."""
        if self.killed:
            return
        self.killed = True
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._tasks.detach()
        self.conn.close()
        self._stderr_file.close()

    def stderr_tail(self) -> str:
        """The end of what the kernel wrote to its native stderr (faulthandler tracebacks, interpreter errors)."""
        if self.killed:
            return ""
        try:
            self._stderr_file.seek(0, io.SEEK_END)
            size = self._stderr_file.tell()
            self._stderr_file.seek(max(0, size - 4 * CRASH_STDERR_CHARS))
            text = self._stderr_file.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        lines = text.splitlines()
        if any(line.startswith("Fatal Python error") for line in lines):  # faulthandler: keep the cell's frames
            text = "\n".join(line for line in lines if line.startswith("Fatal Python error") or '"<cell ' in line)
        return text[-CRASH_STDERR_CHARS:]

    def task_count(self) -> int:
        """Tasks (threads) of the kernel process now, from /proc/<pid>/status; 0 when it is gone."""
        return task_count(self.proc.pid)

    def cpu_s(self) -> float:
        """User + system CPU time of the kernel process so far [s], from /proc/<pid>/stat."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                data = f.read()
        except OSError:
            return 0.0
        fields = data[data.rindex(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
