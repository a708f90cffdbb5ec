"""The acting agent's sandbox: bubblewrap around every shell command of the shell harness (seed 003, section 3.1).

What is a real boundary, enforced by the kernel through bubblewrap (``bwrap``, Debian package ``bubblewrap``):
  * new user, mount, PID, network, IPC, UTS and cgroup namespaces, every capability dropped, no new privileges;
    the agent runs as ``uid`` inside. Where the kernel refuses user namespaces (a chroot, a container, a kernel with
    them disabled) and the harness runs as root, ``user_namespace: auto`` goes on without one: the agent is then
    root inside with every capability dropped (it cannot remount, mount, chroot, or pass file permissions), the other
    namespaces and mounts are the same; :attr:`Sandbox.boundary` says which mode an episode got;
  * the file system is a fresh tmpfs root holding only: the runtime (``runtime_paths``, read-only: /usr and the
    loader's files), the Python interpreter's own prefix (read-only), the allowed Python distributions
    (``python_distributions``) and the agent-side part of robodojo (``robodojo_modules``) and :mod:`robo_shell`
    under /opt/robo (read-only), the tool folders (read-only, or for the optimizer a writable copy of its own
    folder), the episode's work folder at /home/agent (writable), and /run/robo, read-only: the command route's
    socket, the model proxy's socket (a socket connects on a read-only mount) and obs/, which only the harness
    writes. No other host folder exists inside: no repository, no simulator (mujoco is not among the
    distributions), no task or scoring code, no other episode's files;
  * a hard link cannot cross mounts (EXDEV), so the agent can link only files of its own writable folders;
  * the network namespace has only a loopback interface: no route anywhere. The robot is reached through the
    command route's Unix socket;
  * the environment is cleared: only PATH, HOME, LANG and the robo variables are set, so no API key enters.

The other half of the boundary is the harness's own conduct, outside (as root in CI and in chroots): nothing outside
writes, reads or follows a path the agent controls.
  * ``robo obs`` writes the harness's own folder (/run/robo/obs), each file under a random temporary name renamed
    into place, through a descriptor of that folder (robodojo.agents.shell.host_files); the agent's ``obs`` is a
    link to it, made again if deleted, otherwise left alone (the record says so);
  * a file the model asks to see (``view_image``) is read by the sandbox itself, so a link leads only where the
    agent could read anyway and a FIFO is never opened;
  * the optimizer edits a copy of its tool folder, brought back as regular files and folders only (links, FIFOs,
    sockets are refused and listed); tool files read outside (interfaces for the manual, enabled_tools.txt, the
    delivery check's sources) are read through host_files, which opens every name with ``O_NOFOLLOW``;
  * a command's output is read from a pipe with head and tail kept (robodojo.agents.shell.output), and the command
    route reads every request into a bounded buffer of its own (robodojo.agents.shell.route): a flood or a silent
    client costs bounded memory and holds up no other command.

Not a boundary here: CPU, memory and disk of the sandbox (the command timeout kills the whole process group; no cgroup
limit is set; the work folder shares its host's disk). Not hidden: the host paths of the mounted folders, which the
kernel shows in /proc/self/mountinfo (a bind mount's source; bubblewrap cannot hide it); the agent learns a path,
not access, since nothing outside follows one it made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

import robo_shell
import robodojo
from robodojo.agents.shell.settings import SandboxSettings
from robodojo.errors import ConfigError

WORK = "/home/agent"
OPT = "/opt/robo"
LIB = f"{OPT}/lib"
SITE = f"{OPT}/site-packages"
BIN = f"{OPT}/bin"
TOOLS = f"{OPT}/tools"
RUN = "/run/robo"
PATH = f"{BIN}:/usr/local/bin:/usr/bin:/bin"
#: the robo command's entry (``-c`` rather than ``-m``: runpy and importlib.util cost a few ms more per command)
ROBO_MAIN = "import sys; from robo_shell.__main__ import main; sys.exit(main())"
BOUNDARY = (
    "bubblewrap: new {user}mount, PID, network (loopback only), IPC, UTS and cgroup namespaces; capabilities dropped; "
    "read-only runtime; of the host only the work folder, the tool folders and, read-only, the command route's folder"
)
_PROBES: dict[tuple[str, str], bool] = {}  # (bwrap, mode) -> whether it can run here; probed once per process


@dataclass(frozen=True)
class Mount:
    """A host path shown inside the sandbox."""

    host: Path
    inside: str
    writable: bool = False


def with_dependencies(names: Sequence[str]) -> list[str]:
    """``names`` and every distribution they require (markers evaluated for this interpreter, no extras), so that
    the sandbox holds what the allowed packages import (pytest's own dependencies differ between versions)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = canonicalize_name(name)
        if key in seen:
            continue
        seen[key] = name
        for text in metadata.requires(name) or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen.values(), key=str.lower)


def distribution_roots(name: str) -> list[Path]:
    """The top-level files and folders a Python distribution installed into site-packages (its import packages,
    extension modules and bundled libraries; not its metadata or scripts)."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"sandbox: Python distribution {name!r} is not installed (config/agents/shell.yaml)"
        ) from None
    base = Path(str(dist.locate_file("")))
    roots: set[str] = set()
    for f in dist.files or ():
        top = PurePosixPath(str(f)).parts[0]
        if top in ("..", "__pycache__") or top.endswith((".dist-info", ".egg-info", ".pth")):
            continue
        roots.add(top)
    return [base / r for r in sorted(roots) if (base / r).exists()]


#: every namespace but the user namespace, which is chosen separately (``--unshare-all`` would imply it)
_NAMESPACES = ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")


def _bwrap_runs(exe: str, user_namespace: bool) -> bool:
    key = (exe, str(user_namespace))
    if key not in _PROBES:
        args = [exe, *_NAMESPACES, "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
        args += ["--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"]
        if user_namespace:
            args[1:1] = ["--unshare-user"]
        try:
            result = subprocess.run([*args, "--", "/bin/true"], capture_output=True, env={}, timeout=30, check=False)
            _PROBES[key] = result.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _PROBES[key] = False
    return _PROBES[key]


def _user_namespace(exe: str, mode: str) -> bool:
    """Whether the sandbox gets a user namespace, by ``mode`` (config sandbox.user_namespace) and what runs here."""
    root = os.geteuid() == 0
    if mode != "off" and _bwrap_runs(exe, True):
        return True
    if mode == "required" or not root:
        why = "the kernel refuses a user namespace here" if mode != "off" else "user_namespace is off"
        raise ConfigError(
            f"the shell harness's sandbox cannot start: {why}"
            + ("" if root else " and the harness is not root")
            + " (enable unprivileged user namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1, or run as root;"
            " config/agents/shell.yaml sandbox.user_namespace)"
        )
    if not _bwrap_runs(exe, False):
        raise ConfigError(
            "the shell harness's sandbox cannot start: bubblewrap fails without a user namespace too (in a chroot, "
            "its root must be a mount point: mount --bind DIR DIR)"
        )
    return False


def boundary_text(user_namespace: bool) -> str:
    """What the sandbox enforces, in words, for the episode record."""
    text = BOUNDARY.format(user="user, " if user_namespace else "")
    return (
        text if user_namespace else text + " (no user namespace here: the agent is root inside, without capabilities)"
    )


def sandbox_boundary(settings: SandboxSettings) -> str:
    """:func:`boundary_text` of the sandbox these settings give on this machine (probed once per process)."""
    exe = shutil.which(settings.bwrap)
    if exe is None:
        return f"none: {settings.bwrap!r} is not installed"
    try:
        return boundary_text(_user_namespace(exe, settings.user_namespace))
    except ConfigError as exc:
        return f"none: {exc}"


class Sandbox:
    """Runs commands under bubblewrap with the mounts described in the module docstring.

    ``work_dir`` becomes /home/agent (the agent's home and working folder, writable); ``route_dir`` the folder of the
    command route's socket and obs/ (/run/robo, read-only); ``tool_mounts`` the tool folders under /opt/robo/tools;
    ``env`` adds variables (the robo ones) to the cleared environment. A bin folder with ``robo`` and ``python3`` is
    written into ``run_dir``.
    """

    def __init__(
        self,
        settings: SandboxSettings,
        work_dir: Path,
        route_dir: Path,
        run_dir: Path,
        *,
        tool_mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        exe = shutil.which(settings.bwrap)
        if exe is None:
            raise ConfigError(
                f"the shell harness needs bubblewrap: {settings.bwrap!r} is not on PATH "
                "(Debian: apt install bubblewrap; make setup installs it)"
            )
        self.settings = settings
        self.bwrap = exe
        self.user_namespace = _user_namespace(exe, settings.user_namespace)
        self.boundary = boundary_text(self.user_namespace)
        self.work_dir = work_dir
        self.interpreter = Path(sys.base_prefix)
        self.python = self.interpreter / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        self.bin_dir = run_dir / "bin"
        self._write_bin()
        self.mounts = [
            *self._python_mounts(),
            Mount(self.bin_dir, BIN),
            *tool_mounts,
            Mount(work_dir, WORK, writable=True),
            Mount(route_dir, RUN),  # read-only: its sockets connect all the same, and obs/ is the harness's
        ]
        self.env = {
            "PATH": PATH,
            "HOME": WORK,
            "LANG": "C.UTF-8",
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
            **(env or {}),
        }

    def _write_bin(self) -> None:
        """``robo``, and ``python3``/``python`` with numpy, OpenCV and the agent-side robodojo on their path. Each
        sets PYTHONPATH itself, so a coding agent's own Python (its venv) is not handed these packages."""
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        path = f"{LIB}:{SITE}"
        scripts = {
            # -S: no site module (it costs about 35 ms of a 45 ms start here); every package comes from PYTHONPATH
            "robo": f'#!/bin/sh\nPYTHONPATH={path} exec "{self.python}" -S -c "{ROBO_MAIN}" "$@"\n',
            "python3": f'#!/bin/sh\nPYTHONPATH={path}${{PYTHONPATH:+:$PYTHONPATH}} exec "{self.python}" "$@"\n',
        }
        scripts["python"] = scripts["python3"]
        for name, text in scripts.items():
            file = self.bin_dir / name
            if file.is_symlink():
                file.unlink()
            file.write_text(text)
            file.chmod(0o755)

    def _python_mounts(self) -> list[Mount]:
        mounts = [Mount(Path(robo_shell.__file__).parent, f"{LIB}/robo_shell")]
        package = Path(robodojo.__file__).parent
        for module in self.settings.robodojo_modules:
            source = package / module
            if not source.exists():
                raise ConfigError(f"sandbox.robodojo_modules: {source} does not exist (config/agents/shell.yaml)")
            mounts.append(Mount(source, f"{LIB}/robodojo/{module}"))
        for name in with_dependencies(self.settings.python_distributions):
            mounts.extend(Mount(root, f"{SITE}/{root.name}") for root in distribution_roots(name))
        return mounts

    def argv(self, command: Sequence[str]) -> list[str]:
        """The bwrap command line that runs ``command`` inside (cwd /home/agent)."""
        user = ["--unshare-user", "--uid", str(self.settings.uid), "--gid", str(self.settings.uid)]
        args = [
            self.bwrap,
            *_NAMESPACES,
            *(user if self.user_namespace else []),
            "--cap-drop", "ALL",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--proc", "/proc",
            "--dev", "/dev",
            "--tmpfs", "/tmp",
            "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/sbin", "/sbin",
        ]  # fmt: skip
        for path in self.settings.runtime_paths:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        args += ["--ro-bind", str(self.interpreter), str(self.interpreter)]
        for m in self.mounts:
            args += ["--bind" if m.writable else "--ro-bind", str(m.host), m.inside]
        for key, value in self.env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", WORK, "--", *command]
        return args

    def popen(self, command: Sequence[str], **kwargs) -> subprocess.Popen:
        """Start ``command`` inside; stdin is empty unless given. The process leads its own group (kill it whole).

        bwrap itself is PID 1 inside, so its command line and environment can be read there: it gets an empty
        environment (no key of this process reaches it) and its arguments through a pipe (``--args``), which keeps
        the host's paths out of its command line."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        args = self.argv(command)
        read_fd, write_fd = os.pipe()
        try:
            with os.fdopen(write_fd, "wb") as pipe:
                write_fd = -1
                split = args.index("--")  # the options go through the pipe; the command stays on the command line
                pipe.write(b"".join(a.encode() + b"\0" for a in args[1:split]))
            return subprocess.Popen(
                [args[0], "--args", str(read_fd), *args[split:]],
                pass_fds=(read_fd,), env={}, start_new_session=True, **kwargs,
            )  # fmt: skip
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    def shell(self, script: str, **kwargs) -> subprocess.Popen:
        """Start ``bash -c script`` inside."""
        return self.popen(["/bin/bash", "-c", script], **kwargs)
