"""The code-cell kernel, parent side: runs the model's Python cells in a separate process that can really be killed.

Generic: the kernel knows nothing about robots. The parent passes a handler ``handler(name, args, kwargs)`` and the
names it serves (``api``: methods, ``properties``: read-only attributes, each with its docstring); in the kernel,
``robo.<name>(...)`` sends the call over the socket, blocks, and returns the handler's value (pickled) or raises its
error. Cells share one namespace for the kernel's life, with ``robo``, ``np`` and ``math`` predefined; a trailing
expression's repr is returned, stdout/stderr are captured (head and tail kept), exceptions come back as tracebacks
without the kernel's own frames.

Errors in the cell:
  * the handler raises :class:`EpisodeOver` -> ``EpisodeEnded`` (a BaseException) in the cell; ``except Exception``
    cannot swallow it and :attr:`CellResult.episode_ended` is set by the parent even if the cell catches it anyway;
  * TypeError / ValueError (and subclasses such as InvalidCommandError) -> the same type name, deriving from
    TypeError / ValueError, with the same message; any other exception -> RuntimeError("TypeName: message");
  * a return value that cannot be pickled, or cannot be unpickled in the kernel -> RuntimeError in the cell. Values
    must be plain data, numpy arrays or classes from modules the kernel may import (not ``blocked_modules``).

What is a real boundary (enforced by the operating system or by the parent, whatever the cell's code does):
  * the cell runs in another process, which shares nothing with the parent but one socket (no other inherited fd,
    stdin empty, stdout to /dev/null, stderr to a file only the parent reads); the parent unpickles the kernel's
    messages with an allow-list of types and sizes, calls the handler only with the names in ``api``/``properties``,
    and treats anything else as a protocol violation (SIGKILL, namespace reset);
  * per-cell wall clock: SIGKILL and a fresh kernel (the time the parent spends inside robo calls is not counted);
  * per-cell CPU time: resource accounting by the parent, which reads the kernel's user+system time from
    ``/proc/<pid>/stat`` while it waits and sends SIGKILL past the limit (checked every ``poll_interval_s``). The
    kernel is not restarted per cell (its namespace persists), so RLIMIT_CPU, which counts a process's whole life,
    is not used;
  * rlimits of the kernel: RLIMIT_AS (memory: allocations fail with MemoryError), RLIMIT_FSIZE (file size),
    RLIMIT_CORE = 0;
  * tasks (threads included) capped at ``max_tasks`` per kernel (:mod:`.task_limit`): ``pids.max`` of a cgroup of its
    own when the machine allows it (cgroup v2 with pids delegated, or a writable v1 pids hierarchy), else
    RLIMIT_NPROC of a uid of its own (root, ``uid_range``); only as a last resort RLIMIT_NPROC of a shared user, whose
    count covers every process of that user, so that concurrent kernels can starve each other.
    ``confinement["task_limit"]`` says which one a kernel got;
  * threads end with their cell: after every cell the parent counts the kernel's tasks in ``/proc/<pid>/status``
    against the count when it was ready (its main and parent-watch threads); a thread still alive ``thread_grace_s``
    after the cell (Python or native, daemon or not) gets the kernel killed and restarted (limit ``"threads"``,
    namespace reset, the cell's output kept). Python threads cannot be stopped safely from outside, so the process
    is the unit that ends them. Native thread pools of numpy, OpenCV, numexpr are pinned to one thread (no workers)
    through the environment;
  * the environment: only the variables of ``env_passthrough`` (PATH, LANG, ...) reach the kernel, with HOME and
    TMPDIR set to the scratch folder, so secrets such as OPENAI_API_KEY never enter it;
  * when the parent runs as root: a network namespace of its own (``unshare(CLONE_NEWNET)``: no interface but a down
    loopback, so no TCP/UDP and no abstract Unix sockets), and the kernel drops to an unprivileged user (a uid of its
    own from ``uid_range``, else ``drop_to_user``, ``nobody``) that keeps only CAP_DAC_READ_SEARCH (to read the
    interpreter where it lives, e.g. under /root). Then the kernel cannot write any file it does not own (only the
    scratch folder, chowned to that user, and world-writable places such as /tmp), cannot signal the parent and
    cannot read ``/proc/<parent>/environ``; PR_SET_NO_NEW_PRIVS is set. With ``uid_range`` each kernel has a uid of
    its own, so kernels cannot write each other's files or signal each other either (they can read them:
    CAP_DAC_READ_SEARCH). Not root: no network namespace and no user switch; then only the audit hook below blocks
    sockets, signals and writes, and the kernel could read files its user may read.

What is best effort (an in-process allow-list, not a security boundary: code in the same interpreter, and above all
native code, can get around it; it exists to give clear errors and to stop ordinary attempts):
  * ``sys.addaudithook``, installed before any cell runs: refuses socket.* (create, connect, bind, getaddrinfo...),
    subprocess.Popen, os.system, os.fork/forkpty/posix_spawn/spawn/exec*, os.kill/killpg and signal.pthread_kill (of
    any process, the kernel's own included), gc.get_objects/get_referrers/get_referents, every ctypes.* event;
    open() for writing, remove, rename, mkdir, chmod, ... outside the scratch folder; open() for reading files under
    ``deny_read`` (by default the repository's src/robodojo/sim and the source folders of the blocked modules) and
    under /proc/<pid> of any other process;
  * imports of ``blocked_modules`` (mujoco, robodojo.sim, robodojo.motion, robodojo.robots, ctypes, ...) raise
    ImportError, from a ``sys.meta_path`` finder and the "import" audit event; the modules are removed from
    ``sys.modules`` and from module attributes (numpy keeps a reference to ctypes) before the first cell;
    ``_posixsubprocess.fork_exec``, ``os.pidfd_open`` and ``signal.pidfd_send_signal`` (no audit events) are
    replaced by functions that raise. ctypes is blocked precisely because native code could undo all of this;
  * a fresh ``robo`` proxy (new class, read-only instance) is put into the namespace before every cell, so a cell
    that replaces robo's methods affects only itself; ``sys.stdout``/``stderr``/``stdin`` and the namespace's
    ``__builtins__`` are reset before every cell as well;
  * a self-check after every cell (:mod:`.kernel_health`): the modules loaded before the first cell are still the
    same objects in ``sys.modules``, the functions and classes of the modules the kernel's runner, capture, RPC and
    proxy use (builtins, pickle, os, threading, multiprocessing.connection, ... and the kernel's own) were not
    replaced, the import blocker is still first in ``sys.meta_path``, and robo's kinds of results still load. A
    finding (``sys.modules['numpy'] = None``, ``pickle.loads = ...``) restarts the kernel (limit ``"broken"``,
    namespace reset, the cell's output kept) instead of leaving every later cell failing; a cell that breaks the
    kernel so that it cannot even answer is a crash and is reset as well. The threads a cell leaves are named by
    the kernel (``threads_left``); the parent's task count above is what cannot be talked around.

Output of a cell that hits the wall or CPU limit, or crashes the kernel, is lost (a cell that leaves threads or breaks
the kernel keeps its output); files in the scratch folder survive a restart. The Kernel is not thread-safe: one cell
at a time.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from importlib.util import find_spec
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

import numpy as np

import robodojo
from robodojo.agents.code_cell.task_limit import TaskLimit, TaskLimitError, task_count
from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys, resolve_path
from robodojo.errors import ConfigError, RobodojoError
from robodojo.text import trim_text

log = logging.getLogger(__name__)

CONFIG_PATH = CONFIG_DIR / "agents" / "kernel.yaml"
KERNEL_MODULE = "robodojo.agents.code_cell.kernel_main"
CRASH_STDERR_CHARS = 1500  # tail of the kernel's native stderr (faulthandler) appended to a crash message
CLOSE_TIMEOUT_S = 2.0  # close() waits this long for the kernel to exit before SIGKILL
TASK_SETTLE_S = 0.2  # after a cell, the kernel's task count may take this long to fall back (threads exiting)
MAX_REPORTED_NAMES = 10  # leftover threads and health problems named in a reset notice

Handler = Callable[[str, tuple, dict], Any]
LimitName = Literal["wall_time", "cpu_time", "memory", "output", "crashed", "threads", "broken"]


class EpisodeOver(RobodojoError):
    """Raise from the handler to end the episode: the robo call raises EpisodeEnded (a BaseException) in the cell."""


class KernelError(RobodojoError):
    """The kernel process could not be started."""


@dataclass(frozen=True)
class KernelLimits:
    """Per-cell and per-kernel limits; the defaults are in config/agents/kernel.yaml."""

    wall_s: float  #: per cell, time the cell's own code runs [s] (robo calls not counted); SIGKILL + restart
    cpu_s: float  #: per cell, user + system CPU time of the kernel [s]; SIGKILL + restart
    memory_bytes: int  #: RLIMIT_AS of the kernel [bytes]; allocations beyond fail with MemoryError
    max_output_chars: int  #: per stream (stdout, stderr) [characters]; head and tail kept around a marker
    max_result_chars: int  #: repr of the trailing expression [characters]
    max_error_chars: int  #: traceback text [characters]
    max_file_bytes: int  #: RLIMIT_FSIZE [bytes]
    max_tasks: int  #: tasks (threads included) of one kernel: pids.max of its cgroup, or RLIMIT_NPROC (task_limit)
    max_message_bytes: int  #: largest pickled robo call the parent accepts [bytes]
    poll_interval_s: float  #: how often the parent checks the CPU time and the process while it waits [s]
    thread_grace_s: float  #: a cell's threads get this long to end after the cell before the kernel is restarted [s]
    start_timeout_s: float  #: the kernel must be ready within this time [s]


@dataclass(frozen=True)
class KernelContainment:
    """How the kernel process is confined (see the module docstring for what is a real boundary)."""

    network_namespace: bool  #: when root: unshare(CLONE_NEWNET)
    drop_to_user: str | None  #: when root and uid_range is None: run the kernel as this user (None: stay root)
    uid_range: tuple[int, int] | None  #: when root: each kernel runs as a uid of its own from [first, last]
    pids_cgroup: str  #: 'auto', 'off' or a delegated cgroup folder: where each kernel gets a pids cgroup of its own
    blocked_modules: tuple[str, ...]  #: imports refused in cells (and their source folders unreadable)
    deny_read: tuple[Path, ...]  #: files and folders cells may not read (resolved against the package root)
    env_passthrough: tuple[str, ...]  #: environment variables copied from the parent when set


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


def load_kernel_config(path: str | Path = CONFIG_PATH) -> tuple[KernelLimits, KernelContainment]:
    """Load and validate config/agents/kernel.yaml (or another file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, {"limits", "containment"}, where)
    limits = Section(data.get("limits", {}), f"{where}.limits")
    reject_unknown_keys(limits.data, set(KernelLimits.__dataclass_fields__), limits.where)
    numbers = {"wall_s", "cpu_s", "poll_interval_s", "thread_grace_s", "start_timeout_s"}
    values: dict[str, Any] = {
        name: limits.number(name, positive=True) if name in numbers else limits.integer(name, positive=True)
        for name in KernelLimits.__dataclass_fields__
    }
    c = Section(data.get("containment", {}), f"{where}.containment")
    reject_unknown_keys(c.data, set(KernelContainment.__dataclass_fields__), c.where)
    user = c.data.get("drop_to_user")
    if user is not None and (not isinstance(user, str) or not user):
        raise ConfigError(f"{c.where}.drop_to_user: expected a user name or null, got {user!r}")
    uid_range = c.data.get("uid_range")
    if uid_range is not None:
        if not (
            isinstance(uid_range, list)
            and len(uid_range) == 2
            and all(isinstance(u, int) and not isinstance(u, bool) for u in uid_range)
            and 0 < uid_range[0] <= uid_range[1] < 2**31 - 1
        ):
            raise ConfigError(f"{c.where}.uid_range: expected [first, last] uids (0 < first <= last) or null, "
                              f"got {uid_range!r}")  # fmt: skip
        uid_range = (uid_range[0], uid_range[1])
    pids_cgroup = c.str("pids_cgroup")
    if pids_cgroup not in ("auto", "off") and not os.path.isabs(pids_cgroup):
        raise ConfigError(
            f"{c.where}.pids_cgroup: expected auto, off or an absolute cgroup folder, got {pids_cgroup!r}"
        )
    containment = KernelContainment(
        network_namespace=c.boolean("network_namespace"),
        drop_to_user=user,
        uid_range=uid_range,
        pids_cgroup=pids_cgroup,
        blocked_modules=c.strings("blocked_modules"),
        deny_read=tuple(resolve_path(p) for p in c.strings("deny_read")),
        env_passthrough=c.strings("env_passthrough"),
    )
    return KernelLimits(**values), containment


_SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}
_NUMPY_PICKLE_HELPERS = {
    "numpy.core.multiarray": ("scalar", "_reconstruct"),
    "numpy._core.multiarray": ("scalar", "_reconstruct"),
    "numpy.core.numeric": ("_frombuffer",),
    "numpy._core.numeric": ("_frombuffer",),
}


class _ChildUnpickler(pickle.Unpickler):
    """Unpickles the kernel's messages with an allow-list: plain data, sets, complex numbers, numpy arrays/scalars."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[(module, name)]
        if name in _NUMPY_PICKLE_HELPERS.get(module, ()):
            core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
            helper = getattr(core.multiarray if module.endswith("multiarray") else core.numeric, name)
            return _reconstruct_empty if name == "_reconstruct" else helper
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a message from the kernel")


def _reconstruct_empty(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """numpy's _reconstruct, limited to what pickling an ndarray produces (an empty array then filled by setstate),
    so that a forged message cannot make the parent allocate a huge array."""
    if subtype is not np.ndarray or not isinstance(shape, tuple) or shape != (0,):
        raise pickle.UnpicklingError("only plain numpy arrays may be sent from the kernel")
    core = getattr(np, "_core", None) or np.core
    return core.multiarray._reconstruct(subtype, shape, dtype)


# What the kernel must be able to load after every cell: the kinds of value robo calls return (kernel_health).
_HEALTH_SAMPLE = pickle.dumps(
    ("ok", (np.arange(3.0), np.zeros((2, 2), np.float32), np.float64(2.5), np.int64(3), np.bool_(True), {1, 2},
            frozenset({3}), 1j, slice(1, 2), "text", b"bytes", None, [1.5], {"k": (1, 2)})),
    protocol=pickle.HIGHEST_PROTOCOL,
)  # fmt: skip


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


def _loads_from_child(data: bytes) -> Any:
    return _ChildUnpickler(io.BytesIO(data)).load()


class _ProtocolError(Exception):
    """The kernel sent something that is not a valid message (only forged messages do)."""


class Kernel:
    """A persistent Python namespace in a confined child process; see the module docstring."""

    def __init__(
        self,
        handler: Handler,
        *,
        api: Mapping[str, str],
        properties: Mapping[str, str] | None = None,
        scratch_dir: Path | None = None,
        limits: KernelLimits | None = None,
        containment: KernelContainment | None = None,
        preload: tuple[str, ...] = (),
    ) -> None:
        """``api``: method name -> docstring; ``properties``: read-only attribute name -> docstring (reading one calls
        ``handler(name, (), {})``, so the handler tells them apart by name). ``scratch_dir``: the kernel's cwd and only
        writable folder (default: a fresh temporary folder, removed by close()); when the kernel drops to an
        unprivileged user the folder is chowned to that user. ``limits``/``containment``: default from
        config/agents/kernel.yaml. ``preload``: modules the kernel imports before the first cell (those defining the
        handler's return types), so that the health check after every cell covers them too."""
        properties = dict(properties or {})
        for name in [*api, *properties]:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"robo attribute names must be public identifiers, got {name!r}")
        clash = set(api) & set(properties)
        if clash:
            raise ValueError(f"names both in api and properties: {', '.join(sorted(clash))}")
        if limits is None or containment is None:
            default_limits, default_containment = load_kernel_config()
            limits = limits or default_limits
            containment = containment or default_containment
        self.handler = handler
        self.preload = tuple(preload)
        self.api = {name: str(doc) for name, doc in api.items()}
        self.properties = {name: str(doc) for name, doc in properties.items()}
        self.limits = limits
        self.containment = containment
        #: what the running kernel reported about its confinement (network_namespace, uid, no_new_privs, notes)
        self.confinement: dict[str, Any] = {}
        try:
            self._tasks = TaskLimit(
                max_tasks=limits.max_tasks,
                pids_cgroup=containment.pids_cgroup,
                uid_range=containment.uid_range,
                drop_to_user=containment.drop_to_user,
            )
        except TaskLimitError as exc:
            raise KernelError(str(exc)) from None
        self._owns_scratch = scratch_dir is None
        self.scratch_dir = Path(tempfile.mkdtemp(prefix="robodojo-cell-")) if scratch_dir is None else scratch_dir
        self._user = self._tasks.user
        if self._user is not None:
            os.chown(self.scratch_dir, *self._user)
        self._deny_read = self._deny_read_paths()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._stderr_file: Any = None
        self._lock = threading.Lock()
        self._reset_pending: str | None = None  # why the next cell runs in a fresh namespace, if it does
        self._baseline_tasks = 0  # tasks of the kernel process when it was ready (its main and watch threads)
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the kernel process if it is not running (run_cell starts it too)."""
        if self._closed:
            raise KernelError("the kernel was closed")
        if self._proc is None:
            self._spawn()

    def restart(self) -> None:
        """Kill the kernel and start a fresh one: an empty namespace (robo, np and math only)."""
        with self._lock:
            self._kill()
            self._reset_pending = None
            self.start()

    def close(self) -> None:
        """Stop the kernel (asking first, then SIGKILL) and remove the scratch folder if the kernel made it."""
        with self._lock:
            if self._proc is not None and self._conn is not None:
                try:
                    self._conn.send_bytes(pickle.dumps(("exit",)))
                    self._proc.wait(CLOSE_TIMEOUT_S)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._kill()
            self._tasks.close()
            if self._owns_scratch and not self._closed:
                shutil.rmtree(self.scratch_dir, ignore_errors=True)
            self._closed = True

    def __enter__(self) -> Kernel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """Process id of the running kernel, None when none runs."""
        return None if self._proc is None else self._proc.pid

    # -- cells ----------------------------------------------------------------------------------------------------
    def run_cell(self, code: str) -> CellResult:
        """Run one cell in the persistent namespace and return what it produced; never raises for the cell's sake."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                self._reset_pending = f"the kernel process had exited (code {self._proc.returncode})"
                self._kill()
            self.start()
            reset_note, self._reset_pending = self._reset_pending, None
            run = _CellRun(self)
            try:
                result = run.execute(code)
            except BaseException:
                self._kill()  # e.g. KeyboardInterrupt in the handler: the kernel is mid-call, start afresh
                raise
            if reset_note is not None and not result.namespace_reset:
                note = f"[{reset_note}; this cell ran in a fresh namespace]"
                result = replace(result, namespace_reset=True, stderr=f"{note}\n{result.stderr}".rstrip("\n"))
            return result

    # -- internals ------------------------------------------------------------------------------------------------
    def _deny_read_paths(self) -> tuple[str, ...]:
        paths = {os.path.realpath(p) for p in self.containment.deny_read}
        for name in self.containment.blocked_modules:
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

    def _environment(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in self.containment.env_passthrough if k in os.environ}
        src = str(Path(robodojo.__file__).resolve().parents[1])
        env.update(
            HOME=str(self.scratch_dir),
            TMPDIR=str(self.scratch_dir),
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

    def _spawn(self) -> None:
        parent_conn, child_conn = Pipe(duplex=True)
        fd = child_conn.fileno()
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115  (kept open for the kernel's life)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-s", "-B", "-m", KERNEL_MODULE, str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr_file,
                env=self._environment(),
                cwd=self.scratch_dir,
                start_new_session=True,
            )
        finally:
            child_conn.close()
        self._conn = parent_conn
        try:
            self._tasks.attach(self._proc.pid)  # before the settings: nothing runs outside the kernel's own cgroup
        except TaskLimitError as exc:
            self._kill()
            raise KernelError(str(exc)) from None
        limits = self.limits
        settings = {
            "api": self.api,
            "properties": self.properties,
            "scratch": str(self.scratch_dir),
            "memory_bytes": limits.memory_bytes,
            "max_file_bytes": limits.max_file_bytes,
            "rlimit_nproc": self._tasks.rlimit_nproc(),
            "thread_grace_s": limits.thread_grace_s,
            "health_sample": _HEALTH_SAMPLE,
            "preload": self.preload,
            "max_output_chars": limits.max_output_chars,
            "max_result_chars": limits.max_result_chars,
            "max_error_chars": limits.max_error_chars,
            "max_message_bytes": limits.max_message_bytes,
            "network_namespace": self.containment.network_namespace,
            "drop_to": self._user,
            "blocked_modules": self.containment.blocked_modules,
            "deny_read": self._deny_read,
        }
        try:
            parent_conn.send_bytes(pickle.dumps(("init", settings), protocol=pickle.HIGHEST_PROTOCOL))
            if not parent_conn.poll(limits.start_timeout_s):
                raise KernelError(f"the kernel was not ready within {limits.start_timeout_s:g} s")
            message = _loads_from_child(parent_conn.recv_bytes(limits.max_message_bytes))
            if not (isinstance(message, tuple) and len(message) == 2 and message[0] == "ready"):
                raise KernelError("the kernel answered its settings with an unexpected message")
        except (KernelError, OSError, EOFError, pickle.UnpicklingError) as exc:
            self._kill()
            stderr = self._stderr_tail()
            raise KernelError(f"the kernel process did not start: {exc}" + (f"\n{stderr}" if stderr else "")) from None
        self.confinement = dict(message[1]) if isinstance(message[1], dict) else {}
        self.confinement["task_limit"] = self._tasks.describe()
        self._baseline_tasks = self._task_count()
        if self.confinement.get("notes"):
            log.warning("kernel confinement incomplete: %s", "; ".join(map(str, self.confinement["notes"])))

    def _kill(self) -> None:
        """SIGKILL the kernel (if any) and forget it; the next cell starts a fresh one."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None
        self._tasks.detach()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def _stderr_tail(self) -> str:
        """The end of what the kernel wrote to its native stderr (faulthandler tracebacks, interpreter errors)."""
        if self._stderr_file is None:
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

    def _task_count(self) -> int:
        """Tasks (threads) of the kernel process now, from /proc/<pid>/status; 0 when it is gone."""
        assert self._proc is not None
        return task_count(self._proc.pid)

    def _cpu_s(self) -> float:
        """User + system CPU time of the kernel process so far [s], from /proc/<pid>/stat."""
        assert self._proc is not None
        try:
            with open(f"/proc/{self._proc.pid}/stat", "rb") as f:
                data = f.read()
        except OSError:
            return 0.0
        fields = data[data.rindex(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class _CellRun:
    """The parent's side of one cell: send it, answer robo calls, watch the limits, collect the result."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.limits = kernel.limits
        assert kernel._proc is not None and kernel._conn is not None
        self.proc = kernel._proc
        self.conn = kernel._conn
        self.calls = 0
        self.handler_s = 0.0
        self.episode_ended = False
        self.names = set(kernel.api) | set(kernel.properties)

    def execute(self, code: str) -> CellResult:
        limits = self.limits
        self.start = time.monotonic()
        cpu_start = self.kernel._cpu_s()
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
                if self.kernel._cpu_s() - cpu_start >= limits.cpu_s:
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
                message = _loads_from_child(data)
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
            return ("ok", self.kernel.handler(name, args, kwargs))
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
            self.kernel._kill()
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
            extra = self.kernel._task_count() - self.kernel._baseline_tasks
            if extra <= 0 or time.monotonic() >= deadline:
                return max(0, extra)
            time.sleep(self.limits.poll_interval_s / 5)

    def _stopped(self, limit: LimitName, what: str) -> CellResult:
        self.kernel._kill()
        error = (
            f"{what}; the kernel was stopped and its namespace reset: variables, functions and imports of earlier "
            "cells are gone, and the cell's output was lost"
        )
        return self._reset_result(limit, error)

    def _crashed(self) -> CellResult:
        try:
            code = self.proc.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        stderr = self.kernel._stderr_tail()
        self.kernel._kill()
        how = f"code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                how += f", {signal.Signals(-code).name}"
        error = f"the kernel process exited ({how}); its namespace was reset"
        if stderr:
            error += f"\n[kernel stderr]\n{stderr}"
        return self._reset_result("crashed", error)

    def _violation(self, what: str) -> CellResult:
        self.kernel._kill()
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


__all__ = [
    "CONFIG_PATH",
    "CellResult",
    "EpisodeOver",
    "Handler",
    "Kernel",
    "KernelContainment",
    "KernelError",
    "KernelLimits",
    "LimitName",
    "load_kernel_config",
]
