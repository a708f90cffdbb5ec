"""Tools: folders that add sub-commands to ``robo`` (seed 003, section 3.3).

A tool is a folder ``<name>/`` with:
  * ``tool.py`` declaring ``NAME`` (the folder's name), ``COMMANDS`` and ``run(api, command, args)``;
  * ``interface.md``: what the agent reads about it (appended to the manual under "Extra tools for this task");
  * unit tests, ``test_*.py`` (pytest), which the delivery check runs.

``COMMANDS`` maps each sub-command to ``{"help": str, "args": {name: spec}}``; an argument spec is a mapping with
``type`` (``float``, ``int``, ``str`` or ``flag``), ``help``, and optionally ``default`` (without it the argument is
required) and ``choices``. ``run`` gets an :class:`robo_shell.api.EpisodeAPI`, the sub-command and the parsed
arguments as a dict, and returns a JSON-serialisable dict (its record); ``ok`` defaults to True.

A tool is found by name in the tool folders (task tools first, then the shared pool) and runs only when its name is
in the task's enabled list.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from robo_shell import ENABLED_ENV, TOOLS_ENV

TOOL_FILE = "tool.py"
INTERFACE_FILE = "interface.md"
ARG_TYPES: dict[str, Callable[[str], Any]] = {"float": float, "int": int, "str": str}
MANUAL_TOOLS_HEADING = "## Extra tools for this task"


class ToolError(Exception):
    """A tool that cannot be loaded or a command line it does not accept."""


@dataclass(frozen=True)
class Tool:
    name: str
    folder: Path
    commands: Mapping[str, Mapping[str, Any]]
    run: Callable[[Any, str, dict[str, Any]], dict[str, Any]]

    @property
    def interface(self) -> str:
        return read_interface(self.folder) or ""


def tool_dirs() -> list[Path]:
    return [Path(p) for p in os.environ.get(TOOLS_ENV, "").split(os.pathsep) if p]


def enabled_names(text: str) -> list[str]:
    """The names in an enabled-tools file's text (one a line, # comments), each once."""
    names = []
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if name and name not in names:
            names.append(name)
    return names


def enabled_tools(path: str | Path | None = None) -> list[str]:
    """The names in the enabled-tools file; none when it is missing."""
    file = Path(path or os.environ.get(ENABLED_ENV, ""))
    if not str(file) or not file.is_file():
        return []
    return enabled_names(file.read_text())


def has_tool_file(folder: Path) -> bool:
    return (folder / TOOL_FILE).is_file()


def find_tool(
    name: str, dirs: Sequence[Path] | None = None, *, is_tool: Callable[[Path], bool] = has_tool_file
) -> Path | None:
    """The first folder ``<dir>/<name>`` holding a tool; ``is_tool`` decides (the harness passes one that follows
    no link)."""
    for folder in dirs if dirs is not None else tool_dirs():
        candidate = folder / name
        if is_tool(candidate):
            return candidate
    return None


def load_tool(folder: Path) -> Tool:
    """Import ``folder/tool.py`` and check its declarations; raises ToolError saying what is wrong."""
    path = folder / TOOL_FILE
    spec = importlib.util.spec_from_file_location(f"robo_tool_{folder.name}", path)
    if spec is None or spec.loader is None:
        raise ToolError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))  # a tool may keep helper modules beside tool.py
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ToolError(f"{path} does not import: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(folder))
    return _declared(module, folder)


def _declared(module: ModuleType, folder: Path) -> Tool:
    where = folder / TOOL_FILE
    name = getattr(module, "NAME", None)
    if name != folder.name:
        raise ToolError(f"{where}: NAME must be the folder's name {folder.name!r}, got {name!r}")
    commands = getattr(module, "COMMANDS", None)
    if not isinstance(commands, Mapping) or not commands:
        raise ToolError(f"{where}: COMMANDS must be a non-empty mapping of sub-commands")
    for command, spec in commands.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("args", {}), Mapping):
            raise ToolError(f"{where}: COMMANDS[{command!r}] must be a mapping with 'help' and 'args'")
        for arg, arg_spec in spec.get("args", {}).items():
            kind = arg_spec.get("type") if isinstance(arg_spec, Mapping) else None
            if kind not in (*ARG_TYPES, "flag"):
                raise ToolError(f"{where}: {command} --{arg}: type must be float, int, str or flag, got {kind!r}")
    run = getattr(module, "run", None)
    if not callable(run):
        raise ToolError(f"{where}: run(api, command, args) is missing")
    return Tool(name, folder, commands, run)


def read_interface(folder: Path) -> str | None:
    path = folder / INTERFACE_FILE
    return path.read_text() if path.is_file() else None


def manual_with_tools(
    manual: str,
    enabled: Sequence[str],
    dirs: Sequence[Path],
    *,
    is_tool: Callable[[Path], bool] = has_tool_file,
    read: Callable[[Path], str | None] = read_interface,
) -> str:
    """The manual with the enabled tools' interface files appended under "Extra tools for this task" (``is_tool``
    and ``read`` look at the files: the harness, outside the sandbox, passes ones that follow no link)."""
    text = manual.rstrip("\n")
    parts = []
    for name in enabled:
        folder = find_tool(name, dirs, is_tool=is_tool)
        interface = read(folder) if folder is not None else None
        if interface is not None:
            parts.append(interface.strip())
    if parts:
        text += f"\n\n{MANUAL_TOOLS_HEADING}\n\n" + "\n\n".join(parts)
    return text + "\n"


def parser_for(tool: Tool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"robo {tool.name}", exit_on_error=False, add_help=False)
    sub = parser.add_subparsers(dest="command", required=True)
    for command, spec in tool.commands.items():
        p = sub.add_parser(command, help=spec.get("help", ""), exit_on_error=False, add_help=False)
        for arg, arg_spec in spec.get("args", {}).items():
            flag = f"--{arg.replace('_', '-')}"
            if arg_spec["type"] == "flag":
                p.add_argument(flag, dest=arg, action="store_true", help=arg_spec.get("help", ""))
                continue
            options: dict[str, Any] = {"dest": arg, "type": ARG_TYPES[arg_spec["type"]], "help": arg_spec.get("help")}
            if "choices" in arg_spec:
                options["choices"] = list(arg_spec["choices"])
            if "default" in arg_spec:
                options["default"] = arg_spec["default"]
            else:
                options["required"] = True
            p.add_argument(flag, **options)
    return parser


class _Refused(Exception):
    pass


def parse_tool_args(tool: Tool, argv: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """(sub-command, arguments) from a tool's command line; raises ToolError with argparse's message."""
    parser = parser_for(tool)

    def error(message: str) -> None:
        raise _Refused(message)

    parser.error = error  # type: ignore[method-assign]
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        for p in getattr(action, "choices", {}).values():
            p.error = error
    try:
        namespace = parser.parse_args(list(argv))
    except (_Refused, argparse.ArgumentError) as exc:
        commands = ", ".join(tool.commands)
        raise ToolError(f"robo {tool.name}: {exc} (sub-commands: {commands})") from None
    args = vars(namespace)
    return args.pop("command"), args
