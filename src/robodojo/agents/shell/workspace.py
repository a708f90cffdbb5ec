"""One episode's shell workspace: the work folder, the command route, the sandbox, and running commands in it.

Layout of the workspace folder (a temporary folder unless given):
    work/            the agent's working folder, /home/agent inside (writable); ``work/obs`` is a link to
                     /run/robo/obs that the harness makes (and makes again if the agent deletes it)
    robo/            /run/robo inside, read-only: the command route's Unix socket, the model proxy's socket, and
                     obs/, which only the harness writes (``robo obs``)
    run/bin/         robo and python3, /opt/robo/bin inside
    run/etc/         enabled_tools.txt, /opt/robo/etc inside
    run/task/        for the optimizer: its writable copy of the task's tool folder, copied back by
                     :meth:`ShellWorkspace.export_task_tools` (regular files and folders only)

A command's output is read from its pipe while it runs, head and tail kept (robodojo.agents.shell.output); the agent's
files are read only by the sandbox itself (:meth:`ShellWorkspace.read_file`) or through
robodojo.agents.shell.host_files, which follows no link the agent made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robo_shell import ENABLED_ENV, OBS_ENV, ROUTE_ENV, TOOLS_ENV
from robo_shell.paths import MANUAL_PATH, POOL_DIR
from robo_shell.tools import INTERFACE_FILE, TOOL_FILE, enabled_names, manual_with_tools
from robodojo.agents.shell import host_files
from robodojo.agents.shell.output import BoundedOutput, PipeReader
from robodojo.agents.shell.route import CommandRoute, RouteCall
from robodojo.agents.shell.sandbox import OPT, RUN, TOOLS, Mount, Sandbox
from robodojo.agents.shell.settings import ShellSettings
from robodojo.agents.text_limits import quote

ENABLED_FILE = "enabled_tools.txt"
KILL_GRACE_S = 2.0
OBS_NAME = "obs"
OBS_INSIDE = f"{RUN}/{OBS_NAME}"  #: where the harness writes obs/ (read-only inside); work/obs links to it
READ_FILE_TIMEOUT_S = 30.0  # read_file: a regular file is read at once; this only bounds a stuck sandbox
MAX_TOOL_FILE_BYTES = 1 << 20  # interface.md, enabled_tools.txt: a few kB each
#: read_file's script: exit 3 when nothing is there (or a dangling link), 4 when it is not a regular file (a FIFO
#: is never opened)
_READ_SCRIPT = '[ -e "$1" ] || exit 3; [ -f "$1" ] || exit 4; exec head -c "$2" -- "$1"'


@dataclass(frozen=True)
class CommandOutcome:
    """What one shell command did: its exit status and output (trimmed), and the robot commands it sent."""

    exit_code: int | None  # None when it was killed at the timeout
    output: str
    timed_out: bool
    wall_s: float
    calls: list[RouteCall]

    def text(self) -> str:
        """The tool result the model reads."""
        head = "[killed: the command exceeded its time limit]" if self.timed_out else f"[exit {self.exit_code}]"
        return f"{head}\n{self.output}" if self.output else head


def enabled_tools_for(task_tools: Path | None, default: Sequence[str]) -> list[str]:
    """The task's enabled tools: its folder's enabled_tools.txt (a regular file, read without following a link),
    or ``default`` when it has none."""
    if task_tools is None or not host_files.is_regular_under(task_tools, ENABLED_FILE):
        return list(default)
    return enabled_names(host_files.read_under(task_tools, ENABLED_FILE, MAX_TOOL_FILE_BYTES).decode())


def read_interface(folder: Path) -> str | None:
    """A tool folder's interface.md read on the host: a regular file reached without a link, else None."""
    try:
        return host_files.read_under(folder.parent, f"{folder.name}/{INTERFACE_FILE}", MAX_TOOL_FILE_BYTES).decode(
            errors="replace"
        )
    except (OSError, host_files.UnsafeFileError):
        return None


def is_tool(folder: Path) -> bool:
    """Whether ``folder`` holds a tool.py, looked at on the host without following a link."""
    return host_files.is_regular_under(folder.parent, f"{folder.name}/{TOOL_FILE}")


class ShellWorkspace:
    """The sandboxed shell of one episode. ``handler(argv) -> record`` runs robot commands (BaseCommands.run);
    ``task_tools`` is the task's tool folder, searched before the shared pool: read-only, or for the optimizer
    (``task_tools_writable``) a copy it may edit, brought back by :meth:`export_task_tools`."""

    def __init__(
        self,
        settings: ShellSettings,
        handler: Callable[[list[str]], dict[str, Any]],
        *,
        task_tools: Path | None = None,
        task_tools_writable: bool = False,
        root: Path | None = None,
        extra_mounts: Sequence[Mount] = (),
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="robodojo-shell-")) if root is None else root
        self.work_dir = self.root / "work"
        robo_dir = self.root / "robo"  # /run/robo inside, read-only: only the harness writes here
        self.obs_dir = robo_dir / OBS_NAME
        run = self.root / "run"
        for folder in (self.work_dir, self.obs_dir, run / "etc"):
            folder.mkdir(parents=True, exist_ok=True)
        with host_files.opened_dir(self.work_dir, trusted=True) as work:
            if not os.path.lexists(self.work_dir / OBS_NAME):
                os.symlink(OBS_INSIDE, OBS_NAME, dir_fd=work)
        self.etc_dir = run / "etc"  # /opt/robo/etc inside, read-only
        self.task_tools = task_tools
        self.enabled = enabled_tools_for(task_tools, settings.agent.default_tools)
        (run / "etc" / ENABLED_FILE).write_text("".join(f"{name}\n" for name in self.enabled))
        self.route = CommandRoute(robo_dir, handler)
        tool_mounts = [Mount(POOL_DIR, f"{TOOLS}/pool"), Mount(run / "etc", f"{OPT}/etc")]
        tool_dirs = [f"{TOOLS}/pool"]
        self.staged_tools: Path | None = None
        if task_tools is not None:
            task_tools.mkdir(parents=True, exist_ok=True)
            shown = task_tools
            if task_tools_writable:  # the optimizer edits a copy; nothing it leaves is read in place
                self.staged_tools = shown = run / "task"
                shutil.rmtree(shown, ignore_errors=True)
                host_files.copy_tree(task_tools, shown)
            tool_mounts.append(Mount(shown, f"{TOOLS}/task", writable=task_tools_writable))
            tool_dirs.insert(0, f"{TOOLS}/task")
        self.host_tool_dirs = [task_tools, POOL_DIR] if task_tools is not None else [POOL_DIR]
        self.sandbox = Sandbox(
            settings.sandbox,
            self.work_dir,
            robo_dir,
            run,
            tool_mounts=[*tool_mounts, *extra_mounts],
            env={
                ROUTE_ENV: f"{RUN}/{self.route.path.name}",
                OBS_ENV: OBS_INSIDE,
                TOOLS_ENV: os.pathsep.join(tool_dirs),
                ENABLED_ENV: f"{OPT}/etc/{ENABLED_FILE}",
                **(extra_env or {}),
            },
        )
        self.last_output: BoundedOutput | None = None  # the last command's output as read (tests, benchmarks)

    def manual(self) -> str:
        """What ``robo help`` prints inside: the manual and the enabled tools' interfaces."""
        dirs = [d for d in self.host_tool_dirs if d]
        return manual_with_tools(MANUAL_PATH.read_text(), self.enabled, dirs, is_tool=is_tool, read=read_interface)

    def run(self, command: str, timeout_s: float | None = None) -> CommandOutcome:
        """Run ``bash -c command`` in the sandbox, serving its robot commands until it ends or times out. Its
        output is read while it runs; the harness keeps only its head and tail (``agent.max_output_chars``)."""
        timeout = timeout_s if timeout_s is not None else self.settings.agent.command_timeout_s
        started = time.monotonic()
        proc = self.sandbox.shell(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        reader = PipeReader(proc.stdout, self.settings.agent.max_output_chars)
        try:
            finished = self.route.serve_while(lambda: proc.poll() is None, started + timeout)
        finally:
            if proc.poll() is None:
                kill_group(proc)
            output = reader.finish(KILL_GRACE_S)
            self.route.close_clients()
        self.last_output = output
        timed_out = not finished
        return CommandOutcome(
            exit_code=None if timed_out else proc.returncode,
            output=output.text(self.settings.agent.max_output_chars),
            timed_out=timed_out,
            wall_s=time.monotonic() - started,
            calls=self.route.take_calls(),
        )

    def obs_note(self) -> str:
        """Whether ``obs`` in the working folder is still the link to the harness's obs/ folder: the link is made
        again when the agent deleted it; anything else the agent put there is left alone and named (returned)."""
        with host_files.opened_dir(self.work_dir, trusted=True) as work:
            try:
                if os.readlink(OBS_NAME, dir_fd=work) == OBS_INSIDE:
                    return ""
            except FileNotFoundError:
                os.symlink(OBS_INSIDE, OBS_NAME, dir_fd=work)  # never follows: fails if the name was taken meanwhile
                return ""
            except OSError:
                pass  # not a link
        return (
            f"obs in your working folder is no longer the link to {OBS_INSIDE} (something else is there now); "
            f"the files are in {OBS_INSIDE}"
        )

    def read_file(self, path: str, max_bytes: int) -> tuple[bytes | None, str]:
        """(the bytes of ``path`` as the agent sees it, problem): read by the sandbox itself, so only what the
        agent can read there is read, and no link it made is followed outside. Problem is empty when read."""
        proc = self.sandbox.popen(
            ["/bin/sh", "-c", _READ_SCRIPT, "read_file", path, str(max_bytes + 1)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            data, err = proc.communicate(timeout=READ_FILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return None, f"{quote(path)} could not be read within {READ_FILE_TIMEOUT_S:g} s"
        if proc.returncode == 3:
            return None, f"{quote(path)} does not exist"
        if proc.returncode == 4:
            return None, f"{quote(path)} is not a regular file"
        if proc.returncode != 0:
            return None, f"{quote(path)} cannot be read: {err.decode(errors='replace').strip()[:200]}"
        if len(data) > max_bytes:
            return None, f"{quote(path)} is larger than {max_bytes} bytes"
        return data, ""

    def export_task_tools(self) -> host_files.TreeCopy:
        """Bring the optimizer's copy of the task's tool folder back (its folders and regular files only: links,
        FIFOs, sockets are left behind and listed in ``refused``). Call when no command runs."""
        if self.staged_tools is None or self.task_tools is None:
            raise RuntimeError("export_task_tools: the task's tool folder was not writable in this workspace")
        fresh = self.task_tools.with_name(f".{self.task_tools.name}.{os.getpid()}.new")
        shutil.rmtree(fresh, ignore_errors=True)
        copied = host_files.copy_tree(self.staged_tools, fresh)
        old = self.task_tools.with_name(f".{self.task_tools.name}.{os.getpid()}.old")
        os.replace(self.task_tools, old)
        os.replace(fresh, self.task_tools)
        shutil.rmtree(old, ignore_errors=True)
        return copied

    def close(self) -> None:
        self.route.close()
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the command's whole process group (bwrap leads it; its PID namespace ends with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
