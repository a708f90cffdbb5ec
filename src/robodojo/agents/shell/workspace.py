"""One episode's shell workspace: the work folder, the command route, the sandbox, and running commands in it.

Layout of the workspace folder (a temporary folder unless given):
    work/            the agent's working folder, /home/agent inside (obs/ is refreshed here)
    route/           the command route's Unix socket, /run/robo inside
    run/bin/         robo and python3, /opt/robo/bin inside
    run/etc/         enabled_tools.txt, /opt/robo/etc inside
    run/out/         each command's output file (outside the sandbox)
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
from robo_shell.tools import enabled_tools, manual_with_tools
from robodojo.agents.code_cell.kernel_main import trim_text
from robodojo.agents.shell.route import CommandRoute, RouteCall
from robodojo.agents.shell.sandbox import OPT, RUN, TOOLS, WORK, Mount, Sandbox
from robodojo.agents.shell.settings import ShellSettings

ENABLED_FILE = "enabled_tools.txt"
KILL_GRACE_S = 2.0


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
    """The task's enabled tools: its folder's enabled_tools.txt, or ``default`` when it has none."""
    file = task_tools / ENABLED_FILE if task_tools is not None else None
    return enabled_tools(file) if file is not None and file.is_file() else list(default)


class ShellWorkspace:
    """The sandboxed shell of one episode. ``handler(argv) -> record`` runs robot commands (BaseCommands.run);
    ``task_tools`` is the task's tool folder (read-only here; the optimizer gets it writable), searched before
    the shared pool."""

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
        self.obs_dir = self.work_dir / "obs"
        run = self.root / "run"
        for folder in (self.work_dir, run / "etc", run / "out"):
            folder.mkdir(parents=True, exist_ok=True)
        self.out_dir = run / "out"
        self.etc_dir = run / "etc"  # /opt/robo/etc inside, read-only
        self.enabled = enabled_tools_for(task_tools, settings.agent.default_tools)
        (run / "etc" / ENABLED_FILE).write_text("".join(f"{name}\n" for name in self.enabled))
        self.route = CommandRoute(self.root / "route", handler)
        tool_mounts = [Mount(POOL_DIR, f"{TOOLS}/pool"), Mount(run / "etc", f"{OPT}/etc")]
        tool_dirs = [f"{TOOLS}/pool"]
        if task_tools is not None:
            task_tools.mkdir(parents=True, exist_ok=True)
            tool_mounts.append(Mount(task_tools, f"{TOOLS}/task", writable=task_tools_writable))
            tool_dirs.insert(0, f"{TOOLS}/task")
        self.host_tool_dirs = [task_tools, POOL_DIR] if task_tools is not None else [POOL_DIR]
        self.sandbox = Sandbox(
            settings.sandbox,
            self.work_dir,
            self.route.path.parent,
            run,
            tool_mounts=[*tool_mounts, *extra_mounts],
            env={
                ROUTE_ENV: f"{RUN}/{self.route.path.name}",
                OBS_ENV: f"{WORK}/obs",
                TOOLS_ENV: os.pathsep.join(tool_dirs),
                ENABLED_ENV: f"{OPT}/etc/{ENABLED_FILE}",
                **(extra_env or {}),
            },
        )
        self._count = 0

    def manual(self) -> str:
        """What ``robo help`` prints inside: the manual and the enabled tools' interfaces."""
        return manual_with_tools(MANUAL_PATH.read_text(), self.enabled, [d for d in self.host_tool_dirs if d])

    def run(self, command: str, timeout_s: float | None = None) -> CommandOutcome:
        """Run ``bash -c command`` in the sandbox, serving its robot commands until it ends or times out."""
        self._count += 1
        out_path = self.out_dir / f"{self._count:05d}.txt"
        timeout = timeout_s if timeout_s is not None else self.settings.agent.command_timeout_s
        started = time.monotonic()
        with out_path.open("wb") as out:
            proc = self.sandbox.shell(command, stdout=out, stderr=subprocess.STDOUT)
            try:
                finished = self.route.serve_while(lambda: proc.poll() is None, started + timeout)
            finally:
                if proc.poll() is None:
                    kill_group(proc)
        timed_out = not finished
        text = out_path.read_bytes().decode("utf-8", errors="replace")
        return CommandOutcome(
            exit_code=None if timed_out else proc.returncode,
            output=trim_text(text, self.settings.agent.max_output_chars),
            timed_out=timed_out,
            wall_s=time.monotonic() - started,
            calls=self.route.take_calls(),
        )

    def host_path(self, inside: str) -> Path | None:
        """The host file behind a path in the agent's working folder, or None when it lies outside it (symbolic
        links are resolved on the host side, so a link out of the folder is refused too)."""
        path = Path(inside)
        if path.is_absolute():
            try:
                path = path.relative_to(WORK)
            except ValueError:
                return None
        host = (self.work_dir / path).resolve()
        return host if host.is_relative_to(self.work_dir.resolve()) else None

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
