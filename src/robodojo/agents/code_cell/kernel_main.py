"""Child side of the code-cell kernel, run as ``python -m robodojo.agents.code_cell.kernel_main FD``.

The parent (:mod:`robodojo.agents.code_cell.kernel`) starts this process with one inherited socket FD and nothing
else; every message is a length-prefixed pickle on that FD. The first message carries the settings; this process then
confines itself (network namespace, rlimits, unprivileged user, audit hook, import blocker; see the parent module's
docstring for which of these are real boundaries), answers ``("ready", info)`` and runs cells one at a time:

    parent -> child   ("run", code)             child -> parent   ("done", fields)
                      ("exit",)                                   ("call", name, args, kwargs)
    reply to a call:  ("ok", value) | ("error", base, type_name, message) | ("episode_over", message)

After each cell, before answering "done", the kernel waits up to ``thread_grace_s`` for the threads the cell started
and names those still alive (``threads_left``), then checks its own essentials (:mod:`.kernel_health`) and names what
the cell broke (``broken``); the parent restarts the kernel for either.

This module imports only the standard library (and :mod:`.kernel_health` and :mod:`robodojo.text`, which do the same)
at import time; numpy is imported when the child starts.
"""

from __future__ import annotations

import ast
import builtins
import html
import io
import linecache
import os
import pickle
import re
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from robodojo.agents.code_cell.kernel_health import KernelHealth, leftover_threads
from robodojo.text import omission_marker, trim_text

CLONE_NEWNET = 0x40000000
PR_SET_KEEPCAPS = 8
PR_SET_NO_NEW_PRIVS = 38
CAP_DAC_READ_SEARCH = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
PARENT_WATCH_INTERVAL_S = 0.5  # the kernel exits when its parent is gone (checked this often)
_THIS_FILE = os.path.abspath(__file__)
CELL_FILENAME_PREFIX = "<cell "  # a cell's code object filename is "<cell N>"; its frames are the model's own

# Audit events refused outright: event -> what the model is told it tried.
_FORBIDDEN_EVENTS = {
    "subprocess.Popen": "creating processes",
    "os.system": "creating processes",
    "os.fork": "creating processes",
    "os.forkpty": "creating processes",
    "os.posix_spawn": "creating processes",
    "os.spawn": "creating processes",
    "os.exec": "replacing the kernel process",
    "os.kill": "sending signals",
    "os.killpg": "sending signals",
    "signal.pthread_kill": "sending signals",
    "sys.remote_exec": "attaching to processes",
    "gc.get_objects": "walking the interpreter's objects",
    "gc.get_referrers": "walking the interpreter's objects",
    "gc.get_referents": "walking the interpreter's objects",
}
# Audit events that change the file system: event -> indices of the path arguments that must lie in the scratch folder.
_WRITE_EVENTS = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.mkdir": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.link": (1,),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "os.chflags": (0,),
    "os.lchflags": (0,),
    "os.lchmod": (0,),
    "os.lchown": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.copymode": (1,),
    "shutil.copystat": (1,),
    "shutil.copytree": (1,),
    "shutil.move": (0, 1),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PROC_PID = re.compile(r"^/proc/(\d+)(/|$)")
_ALWAYS_WRITABLE = ("/dev/null",)


class EpisodeEnded(BaseException):
    """The episode is over: raised by a robo call; a BaseException so that ``except Exception`` cannot swallow it."""


class BoundedCapture(io.TextIOBase):
    """A text stream that keeps the first and last ``max_chars / 2`` characters written to it and counts the rest.

    Memory stays under ``head + 2 * tail`` characters however much is written: the tail is a rolling buffer that is
    cut back to its size whenever it doubles.
    """

    def __init__(self, max_chars: int, name: str) -> None:
        super().__init__()
        self.max_chars = max_chars
        self.name = name
        self._head_max = max_chars // 2
        self._tail_max = max_chars - self._head_max
        self.reset()

    def reset(self) -> None:
        """Forget everything written so far (called when a cell starts)."""
        self._head: list[str] = []
        self._head_len = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        self.total += n
        room = self._head_max - self._head_len
        if room > 0:
            part = s[:room]
            self._head.append(part)
            self._head_len += len(part)
            s = s[room:]
        if s:
            if len(s) >= self._tail_max:
                self._tail = [s[-self._tail_max :]]
                self._tail_len = self._tail_max
            else:
                self._tail.append(s)
                self._tail_len += len(s)
                if self._tail_len > 2 * self._tail_max:
                    kept = "".join(self._tail)[-self._tail_max :]
                    self._tail = [kept]
                    self._tail_len = len(kept)
        return n

    @property
    def trimmed(self) -> bool:
        """True when more was written than is kept."""
        return self.total > self.max_chars

    def getvalue(self) -> str:
        """Everything written, or its head and tail with a marker when it was longer than ``max_chars``."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.trimmed:
            return head + tail
        tail = tail[-self._tail_max :]
        return head + omission_marker(self.total - len(head) - len(tail)) + tail


# -- containment ---------------------------------------------------------------------------------------------------


def _is_blocked(name: str, blocked: tuple[str, ...]) -> bool:
    return any(name == b or name.startswith(b + ".") for b in blocked)


class _BlockedImportFinder:
    """First entry of ``sys.meta_path``: refuses the blocked modules with an ImportError that says why."""

    blocked: tuple[str, ...] = ()

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> None:
        if _is_blocked(name, cls.blocked):
            raise ImportError(_import_message(name), name=name)


def _import_message(name: str) -> str:
    return (
        f"importing {name!r} is not allowed in a cell: the robot and the simulation are reached only through robo, "
        "and native-code access (ctypes) is disabled"
    )


def _confine_process(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Network namespace, rlimits and the unprivileged user: everything that needs ctypes or root. Never raises."""
    import ctypes
    import resource

    info: dict[str, Any] = {"network_namespace": False, "uid": os.getuid(), "no_new_privs": False, "notes": []}
    notes: list[str] = info["notes"]
    libc = ctypes.CDLL(None, use_errno=True)
    root = os.geteuid() == 0
    if settings["network_namespace"]:
        if not root:
            notes.append("not root: no network namespace, only the audit hook blocks sockets")
        elif libc.unshare(CLONE_NEWNET) == 0:
            info["network_namespace"] = True
        else:
            notes.append(f"unshare(CLONE_NEWNET) failed: {os.strerror(ctypes.get_errno())}")

    def set_limit(which: int, value: int) -> None:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError) as exc:
            notes.append(f"setrlimit({which}, {value}) failed: {exc}")

    set_limit(resource.RLIMIT_AS, settings["memory_bytes"])
    set_limit(resource.RLIMIT_FSIZE, settings["max_file_bytes"])
    set_limit(resource.RLIMIT_CORE, 0)
    if settings["rlimit_nproc"] is not None:  # counts the threads of every process of the user; root is exempt
        set_limit(resource.RLIMIT_NPROC, settings["rlimit_nproc"])
    user = settings["drop_to"]
    if user is not None and root:
        uid, gid = user
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
            os.setresuid(uid, uid, uid)
            info["uid"] = uid
            if not _keep_only_read_search(ctypes, libc):
                notes.append(f"capset failed: {os.strerror(ctypes.get_errno())} (files outside world-readable places)")
        except OSError as exc:
            notes.append(f"dropping to uid {uid} failed: {exc}")
    info["no_new_privs"] = libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    return info


def _keep_only_read_search(ctypes: Any, libc: Any) -> bool:
    """After setresuid with KEEPCAPS: effective and permitted capabilities = CAP_DAC_READ_SEARCH only.

    The interpreter and its libraries may live where the unprivileged user cannot read (e.g. under /root); this one
    capability lets the kernel read and import them, and grants nothing else (no writes, no signals, no /proc/<pid>/
    environ of other users, which needs ptrace access).
    """

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]  # noqa: RUF012

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]  # noqa: RUF012

    header = Header(LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()  # type: ignore[operator]  # (ctypes is passed in, so mypy sees Data as deriving from Any)
    data[0].effective = data[0].permitted = 1 << CAP_DAC_READ_SEARCH
    return libc.capset(ctypes.byref(header), data) == 0


def _disarm_loaded_modules(blocked: tuple[str, ...]) -> None:
    """Drop blocked modules from sys.modules and from module attributes (numpy keeps a reference to ctypes), and
    disable the process-creating and signalling functions that raise no audit event."""
    import _posixsubprocess
    import signal

    def refused(*args: Any, **kwargs: Any) -> None:
        raise PermissionError("creating processes and sending signals are not allowed in a cell")

    setattr(_posixsubprocess, "fork_exec", refused)  # noqa: B010 (a typed module attribute, replaced on purpose)
    for module, attr in ((os, "pidfd_open"), (signal, "pidfd_send_signal")):
        if hasattr(module, attr):
            setattr(module, attr, refused)
    for name in [n for n in sys.modules if _is_blocked(n, blocked)]:
        del sys.modules[name]
    for module in list(sys.modules.values()):
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if isinstance(value, ModuleType) and _is_blocked(value.__name__, blocked):
                setattr(module, attr, None)


def _make_audit_hook(scratch: str, deny_read: tuple[str, ...], blocked: tuple[str, ...]) -> Callable[..., None]:
    """The in-process policy: best effort (see the kernel module docstring), installed before any cell runs."""
    own_pid = os.getpid()

    def resolve(path: Any) -> str | None:
        if isinstance(path, int):
            return None  # an open file descriptor; its path was checked when it was opened
        try:
            return os.path.realpath(os.fsdecode(os.fspath(path)))
        except (TypeError, ValueError):
            return None

    def inside(path: str, folder: str) -> bool:
        return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)

    def check_write(path: Any, event: str) -> None:
        real = resolve(path)
        if real is not None and not inside(real, scratch) and real not in _ALWAYS_WRITABLE:
            raise PermissionError(f"writing outside the scratch folder {scratch} is not allowed in a cell: {real!r}")

    def check_read(path: Any) -> None:
        real = resolve(path)
        if real is None:
            return
        match = _PROC_PID.match(real)
        if (match and int(match.group(1)) != own_pid) or any(inside(real, d) for d in deny_read):
            raise PermissionError(f"reading {real!r} is not allowed in a cell")

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args[0], args[1], args[2] if len(args) > 2 else 0
            writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
            if writing:
                check_write(path, event)
            else:
                check_read(path)
            return
        what = _FORBIDDEN_EVENTS.get(event)
        if what is not None:
            raise PermissionError(f"{what} is not allowed in a cell ({event})")
        if event.startswith("socket."):
            raise PermissionError(f"network access is not allowed in a cell ({event})")
        if event.startswith("ctypes."):
            raise PermissionError(f"native-code access is not allowed in a cell ({event})")
        if event == "import":
            if _is_blocked(args[0], blocked):
                raise ImportError(_import_message(args[0]), name=args[0])
            return
        indices = _WRITE_EVENTS.get(event)
        if indices is not None:
            for i in indices:
                if i < len(args):
                    check_write(args[i], event)

    return hook


def _watch_parent(parent_pid: int) -> None:
    """Exit when the parent is gone (this process is then re-parented), even while a cell is still running. The
    functions are bound before any cell runs, so a cell that patches os or time does not stop the watch."""
    from time import sleep

    getppid, exit_now = os.getppid, os._exit
    while True:
        sleep(PARENT_WATCH_INTERVAL_S)
        if getppid() != parent_pid:
            exit_now(70)


# -- cells ---------------------------------------------------------------------------------------------------------


class _Channel:
    """The socket to the parent, used by the cell runner and by robo calls (one message in flight at a time)."""

    def __init__(self, fd: int, max_message_bytes: int) -> None:
        from multiprocessing.connection import Connection

        self.conn = Connection(fd)
        self.max_message_bytes = max_message_bytes
        self.lock = threading.Lock()
        self.in_cell = False
        self._remote_types: dict[tuple[str, str], type[BaseException]] = {}

    def send(self, message: tuple) -> None:
        self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def receive(self) -> Any:
        return pickle.loads(self.conn.recv_bytes())

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """One robo call: send it, block for the parent's reply, return its value or raise its error."""
        try:
            data = pickle.dumps(("call", name, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise TypeError(f"robo.{name}: the arguments cannot be sent to the robot ({exc})") from None
        if len(data) > self.max_message_bytes:
            raise ValueError(f"robo.{name}: the arguments are {len(data)} bytes; at most {self.max_message_bytes}")
        with self.lock:
            if not self.in_cell:
                raise RuntimeError("robo can be used only while a cell runs (not from a thread after its cell ended)")
            self.conn.send_bytes(data)
            raw = self.conn.recv_bytes()
        try:
            reply = pickle.loads(raw)
        except Exception as exc:
            raise RuntimeError(f"robo.{name}: its result cannot be loaded in the kernel ({exc!r})") from None
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "episode_over":
            raise EpisodeEnded(reply[1])
        raise self._remote_error(*reply[1:]) from None

    def _remote_error(self, base: str, type_name: str | None, message: str) -> BaseException:
        """TypeError/ValueError (or a subclass of the same name) as such; anything else as a RuntimeError."""
        base_type = {"TypeError": TypeError, "ValueError": ValueError}.get(base)
        if base_type is None:
            return RuntimeError(f"{type_name}: {message}" if type_name else message)
        if not type_name or type_name == base or not type_name.isidentifier():
            return base_type(message)
        remote = self._remote_types.get((base, type_name))
        if remote is None:
            remote = type(type_name, (base_type,), {"__module__": "builtins"})
            self._remote_types[(base, type_name)] = remote
        return remote(message)


def _make_robo(channel: _Channel, api: Mapping[str, str], properties: Mapping[str, str]) -> object:
    """A fresh proxy (new class, new instance) for every cell: whatever a cell does to robo, the next cell gets the
    real methods back. Attributes cannot be set or deleted on the instance."""

    def method(name: str, doc: str) -> staticmethod:
        def call(*args: Any, **kwargs: Any) -> Any:
            return channel.call(name, args, kwargs)

        call.__name__ = name
        call.__qualname__ = f"robo.{name}"
        call.__module__ = "robo"
        call.__doc__ = doc
        call.__annotations__ = {}  # help() shows add(*args, **kwargs), not the proxy's string annotations
        return staticmethod(call)

    def prop(name: str, doc: str) -> property:
        return property(lambda self: channel.call(name, (), {}), doc=doc)

    def refuse(self: object, name: str, *value: Any) -> None:
        raise AttributeError(f"robo is read-only: cannot set or delete {name!r}; assign to your own variable instead")

    def missing(self: object, name: str) -> Any:
        available = ", ".join(sorted([*api, *properties]))
        raise AttributeError(f"robo has no attribute {name!r}; available: {available}")

    namespace: dict[str, Any] = {name: method(name, doc) for name, doc in api.items()}
    namespace.update({name: prop(name, doc) for name, doc in properties.items()})
    namespace.update(
        __slots__=(),
        __doc__="The robot: call its methods; help(robo.<name>) shows one method's documentation.",
        __setattr__=refuse,
        __delattr__=refuse,
        __getattr__=missing,
        __repr__=lambda self: f"<robo: {', '.join(sorted([*api, *properties]))}>",
        __module__="robo",
    )
    return type("Robo", (), namespace)()


class _CellRunner:
    """One namespace for the kernel's life; runs cells in it and formats what comes back."""

    def __init__(self, channel: _Channel, settings: Mapping[str, Any]) -> None:
        import math

        import numpy as np

        self.channel = channel
        self.api: dict[str, str] = dict(settings["api"])
        self.properties: dict[str, str] = dict(settings["properties"])
        self.max_result_chars: int = settings["max_result_chars"]
        self.max_error_chars: int = settings["max_error_chars"]
        self.stdout = BoundedCapture(settings["max_output_chars"], "<stdout>")
        self.stderr = BoundedCapture(settings["max_output_chars"], "<stderr>")
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, "np": np, "math": math}
        self.cells = 0

    def run(self, code: str) -> dict[str, Any]:
        """Run one cell; the reply fields of a ("done", ...) message."""
        self.cells += 1
        filename = f"{CELL_FILENAME_PREFIX}{self.cells}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        self.stdout.reset()
        self.stderr.reset()
        sys.stdout, sys.stderr, sys.stdin = self.stdout, self.stderr, io.StringIO()  # whatever the last cell set
        self.namespace["__builtins__"] = builtins
        self.namespace["robo"] = _make_robo(self.channel, self.api, self.properties)
        result_repr = error = notice = None
        memory_error = episode_ended = False
        with self.channel.lock:
            self.channel.in_cell = True
        try:
            tree, notice = _parse_cell(code, filename)
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):
                tree.body.pop()
            else:
                last = None
            exec(compile(tree, filename, "exec", dont_inherit=True), self.namespace)
            if last is not None:
                expression = ast.Expression(last.value)
                value = eval(compile(expression, filename, "eval", dont_inherit=True), self.namespace)
                if value is not None:
                    result_repr = trim_text(repr(value), self.max_result_chars)
        except BaseException as exc:  # SystemExit and EpisodeEnded included: the cell ends, the kernel goes on
            memory_error = _caused_by(exc, MemoryError)
            episode_ended = _caused_by(exc, EpisodeEnded)
            try:
                error = trim_text(_format_exception(exc), self.max_error_chars)
            except BaseException as format_exc:
                error = f"{type(exc).__name__} (its traceback could not be formatted: {type(format_exc).__name__})"
        finally:
            with self.channel.lock:
                self.channel.in_cell = False
        return {
            "stdout": self.stdout.getvalue(),
            "stderr": self.stderr.getvalue(),
            "output_trimmed": self.stdout.trimmed or self.stderr.trimmed,
            "result_repr": result_repr,
            "error": error,
            "notice": notice,
            "memory_error": memory_error,
            "episode_ended": episode_ended,
        }


def _parse_cell(code: str, filename: str) -> tuple[ast.Module, str | None]:
    """The cell's syntax tree, and a notice when it only parsed with HTML entities decoded.

    A server whose chat template HTML-escapes the prompt (llama-cpp-python's chatml-function-calling) shows the model
    its own earlier code as ``if x &lt; 3:``, and models copy it. Code that is a SyntaxError as written and parses
    once ``&lt;`` ``&gt;`` ``&amp;`` ``&quot;`` ``&#39;`` are decoded cannot have meant the entities, so it runs
    decoded and the model is told; any other SyntaxError is raised as it was.
    """
    try:
        return ast.parse(code, filename, "exec"), None
    except SyntaxError as original:
        decoded = html.unescape(code) if "&" in code else code
        if decoded == code:
            raise
        try:
            tree = ast.parse(decoded, filename, "exec")
        except SyntaxError:
            raise original from None
    linecache.cache[filename] = (len(decoded), None, decoded.splitlines(True), filename)
    return tree, "the cell had HTML entities (such as &lt;) where Python needs the characters; it ran decoded"


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _format_exception(exc: BaseException) -> str:
    """The traceback of a cell, without the kernel's own frames (runner, parse step and robo proxy).

    A SyntaxError of the cell is then only its own ``File "<cell 3>", line 2`` block: the frames of ast.parse that
    raised it are machinery the model cannot act on. Frames of library code the cell called stay (they say where
    inside numpy or json a call failed)."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    _strip_kernel_frames(te, set())
    return "".join(te.format())


def _is_cell_frame(frame: traceback.FrameSummary) -> bool:
    return frame.filename.startswith(CELL_FILENAME_PREFIX)


def _strip_kernel_frames(te: traceback.TracebackException, seen: set[int]) -> None:
    if id(te) in seen:
        return
    seen.add(id(te))
    frames = list(te.stack)
    # Everything before the first cell frame is how the kernel got there: the runner, and for a cell that does not
    # parse, ast.parse (whose stack has no cell frame at all, so it is dropped whole).
    first = next((i for i, f in enumerate(frames) if _is_cell_frame(f)), len(frames))
    frames = [f for f in frames[first:] if f.filename != _THIS_FILE]  # the robo proxy, below a cell frame
    te.stack = traceback.StackSummary.from_list(frames)
    for sub in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        if sub is not None:
            _strip_kernel_frames(sub, seen)


# -- entry point ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Read the settings, confine the process, then run cells until told to exit or the parent goes away."""
    argv = sys.argv[1:] if argv is None else argv
    channel = _Channel(int(argv[0]), max_message_bytes=0)
    kind, settings = channel.receive()
    if kind != "init":
        return 2
    channel.max_message_bytes = settings["max_message_bytes"]

    import faulthandler
    import importlib

    import numpy  # noqa: F401  (imported before the import blocker so that its own imports succeed)

    faulthandler.enable(all_threads=False)  # a segfault prints the cell's frames to the stderr file the parent keeps
    for name in settings["preload"]:
        importlib.import_module(name)
    info = _confine_process(settings)
    blocked = tuple(settings["blocked_modules"])
    _disarm_loaded_modules(blocked)
    watch = threading.Thread(target=_watch_parent, args=(os.getppid(),), name="kernel-parent-watch", daemon=True)
    watch.start()
    runner = _CellRunner(channel, settings)
    scratch = os.path.realpath(settings["scratch"])
    os.chdir(scratch)
    _BlockedImportFinder.blocked = blocked
    sys.meta_path.insert(0, _BlockedImportFinder)
    sys.addaudithook(_make_audit_hook(scratch, tuple(settings["deny_read"]), blocked))
    health = _health(settings["health_sample"])
    own_threads = frozenset({threading.main_thread(), watch})
    grace_s = settings["thread_grace_s"]
    channel.send(("ready", info))
    while True:
        try:
            message = channel.receive()
        except EOFError:
            return 0
        if message[0] == "exit":
            return 0
        try:
            fields = runner.run(message[1])
        except BaseException as exc:  # the runner itself failed (e.g. MemoryError while formatting)
            fields = {"stdout": "", "stderr": "", "output_trimmed": False, "result_repr": None,
                      "error": f"the kernel could not finish the cell: {type(exc).__name__}",
                      "memory_error": isinstance(exc, MemoryError), "episode_ended": False}  # fmt: skip
        try:
            fields["threads_left"] = leftover_threads(own_threads, grace_s)
        except BaseException as exc:
            fields["broken"] = [f"the kernel could not list the cell's threads ({type(exc).__name__})"]
        fields["broken"] = fields.get("broken", []) + health.problems()
        channel.send(("done", fields))


def _health(sample: bytes) -> KernelHealth:
    """The snapshot of what the kernel needs: the modules and classes its runner, capture, RPC and proxy use."""
    import ast as ast_module
    import copyreg
    import multiprocessing.connection as connection
    import struct

    this = sys.modules[__name__]
    objects: dict[str, object] = {
        "builtins": builtins,
        "pickle": pickle,
        "copyreg": copyreg,
        "io": io,
        "ast": ast_module,
        "linecache": linecache,
        "traceback": traceback,
        "os": os,
        "os.path": os.path,
        "struct": struct,
        "threading": threading,
        "threading.Thread": threading.Thread,
        "multiprocessing.connection": connection,
        "Connection": connection.Connection,
        "kernel": this,
        **{f"kernel.{cls.__name__}": cls for cls in (_Channel, _CellRunner, BoundedCapture, _BlockedImportFinder)},
    }
    mutable = frozenset({("threading", "excepthook")})  # cells may set it; the kernel does not use it
    return KernelHealth(objects, sample=sample, first_meta_path=_BlockedImportFinder, mutable=mutable)


if __name__ == "__main__":
    sys.exit(main())
