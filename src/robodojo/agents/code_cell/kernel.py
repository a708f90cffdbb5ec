"""The code-cell kernel, parent side: runs the model's Python cells in a separate process that can really be killed.

Generic: the kernel knows nothing about robots. The parent passes a handler ``handler(name, args, kwargs)`` and the
names it serves (``api``: methods, ``properties``: read-only attributes, each with its docstring); in the kernel,
``robo.<name>(...)`` sends the call over the socket, blocks, and returns the handler's value (pickled) or raises its
error. Cells share one namespace for the kernel's life, with ``robo``, ``np`` and ``math`` predefined; a trailing
expression's repr is returned, stdout/stderr are captured (head and tail kept), exceptions come back as tracebacks
without the kernel's own frames.

Errors in the cell:
  * the handler raises :class:`~.cell_protocol.EpisodeOver` -> ``EpisodeEnded`` (a BaseException) in the cell;
    ``except Exception`` cannot swallow it and :attr:`~.cell_protocol.CellResult.episode_ended` is set by the parent
    even if the cell catches it anyway;
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

The parent side, one concern a module: :mod:`.kernel_config` (limits and containment, config/agents/kernel.yaml),
:mod:`.kernel_process` (starting, watching and killing one kernel process), :mod:`.cell_protocol` (one cell: the
messages, the robo calls answered, the limits watched, :class:`~.cell_protocol.CellResult`), :mod:`.kernel_unpickle`
(the allow-list the kernel's messages are unpickled with) and :mod:`.task_limit`; this module's :class:`Kernel` holds
them together. The child side is :mod:`.kernel_main` and :mod:`.kernel_health`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from robodojo.agents.code_cell.cell_protocol import CellResult, CellRun, Handler
from robodojo.agents.code_cell.kernel_config import KernelContainment, KernelLimits, load_kernel_config
from robodojo.agents.code_cell.kernel_process import (
    KernelError,
    KernelProcess,
    deny_read_paths,
    kernel_environment,
)
from robodojo.agents.code_cell.kernel_unpickle import HEALTH_SAMPLE
from robodojo.agents.code_cell.task_limit import TaskLimit, TaskLimitError


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
        self._deny_read = deny_read_paths(containment)
        self._process: KernelProcess | None = None  # None, or killed: the next cell starts a fresh kernel
        self._lock = threading.Lock()
        self._reset_pending: str | None = None  # why the next cell runs in a fresh namespace, if it does
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the kernel process if it is not running (run_cell starts it too)."""
        if self._closed:
            raise KernelError("the kernel was closed")
        if self._running() is None:
            self._spawn()

    def close(self) -> None:
        """Stop the kernel (asking first, then SIGKILL) and remove the scratch folder if the kernel made it."""
        with self._lock:
            if self._process is not None:
                self._process.stop()
                self._process = None
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
        process = self._running()
        return None if process is None else process.pid

    # -- cells ----------------------------------------------------------------------------------------------------
    def run_cell(self, code: str) -> CellResult:
        """Run one cell in the persistent namespace and return what it produced; never raises for the cell's sake."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        with self._lock:
            process = self._running()
            if process is not None and process.proc.poll() is not None:
                self._reset_pending = f"the kernel process had exited (code {process.proc.returncode})"
                self._kill()
            self.start()
            reset_note, self._reset_pending = self._reset_pending, None
            assert self._process is not None
            run = CellRun(self._process, self.handler, [*self.api, *self.properties])
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
    def _running(self) -> KernelProcess | None:
        """The kernel process, None when none runs (never started, or killed: a limit, a crash, a violation)."""
        if self._process is not None and self._process.killed:
            self._process = None
        return self._process

    def _spawn(self) -> None:
        limits = self.limits
        settings = {
            "api": self.api,
            "properties": self.properties,
            "scratch": str(self.scratch_dir),
            "memory_bytes": limits.memory_bytes,
            "max_file_bytes": limits.max_file_bytes,
            "thread_grace_s": limits.thread_grace_s,
            "health_sample": HEALTH_SAMPLE,
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
        env = kernel_environment(self.containment, self.scratch_dir)
        self._process = KernelProcess(settings, limits=limits, tasks=self._tasks, env=env, scratch_dir=self.scratch_dir)
        self.confinement = self._process.confinement

    def _kill(self) -> None:
        """SIGKILL the kernel (if any) and forget it; the next cell starts a fresh one."""
        if self._process is not None:
            self._process.kill()
            self._process = None
