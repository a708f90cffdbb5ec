"""``robo``: the acting agent's one command to the robot. Prints one JSON record per command.

    robo help                          the manual (base commands, and the enabled tools' interfaces)
    robo <base command> [--options]    sent to the harness over the command route (robo help lists them)
    robo <tool> <command> [--options]  an enabled tool, run here over the episode API

Exit status: 0 when the record says ok, 1 when the command was refused or failed (the record says why), 2 for a
command line that is not understood (nothing was sent), 3 when the robot cannot be reached.

A base command imports only the standard library's json, os and socket: a command is a process, and its start is
most of what it costs (benchmarks/shell.py). Tools and the manual load the rest when asked for.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from robo_shell import protocol

TRACEBACK_CHARS = 2000


def manual() -> str:
    """The manual, with the enabled tools' interface files appended."""
    from robo_shell.paths import MANUAL_PATH
    from robo_shell.tools import enabled_tools, manual_with_tools, tool_dirs

    return manual_with_tools(MANUAL_PATH.read_text(), enabled_tools(), tool_dirs())


def emit(record: dict[str, Any]) -> int:
    print(json.dumps(record, separators=(", ", ": "), default=_plain))
    return 0 if record.get("ok") else 1


def _plain(value: object) -> object:
    """numpy scalars and arrays in a tool's record as plain JSON."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def run_tool(name: str, argv: list[str]) -> int:
    import traceback

    from robo_shell.tools import ToolError, find_tool, load_tool, parse_tool_args

    command = f"{name} {argv[0]}" if argv else name
    folder = find_tool(name)
    if folder is None:
        return emit({"ok": False, "command": command, "verdict": "error", "reason": f"tool {name!r} is not installed"})
    try:
        tool = load_tool(folder)
        sub, args = parse_tool_args(tool, argv)
    except ToolError as exc:
        print(json.dumps({"ok": False, "command": command, "verdict": "usage", "reason": str(exc)}))
        return 2
    from robo_shell.api import EpisodeAPI  # numpy, OpenCV and perception: loaded for tools only

    try:
        record = tool.run(EpisodeAPI(), sub, args)
    except protocol.RouteError as exc:
        emit({"ok": False, "command": command, "verdict": "error", "reason": str(exc)})
        return 3
    except Exception as exc:
        tb = traceback.format_exc()[-TRACEBACK_CHARS:]
        reason = f"{type(exc).__name__}: {exc}"
        return emit({"ok": False, "command": command, "verdict": "error", "reason": reason, "traceback": tb})
    if not isinstance(record, dict):
        return emit({"ok": False, "command": command, "verdict": "error",
                     "reason": f"the tool returned {type(record).__name__}, not a dict"})  # fmt: skip
    return emit({"ok": True, "command": command, **record})


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("help", "-h", "--help", "manual"):
        print(manual(), end="")
        return 0
    if argv[0] not in protocol.BASE_COMMANDS:
        from robo_shell.tools import enabled_tools

        if argv[0] in enabled_tools():
            return run_tool(argv[0], argv[1:])
    try:
        record = protocol.call(argv)
    except protocol.RouteError as exc:
        emit({"ok": False, "command": argv[0], "verdict": "error", "reason": str(exc)})
        return 3
    status = emit(record)
    return 2 if record.get("verdict") == "usage" else status


if __name__ == "__main__":
    sys.exit(main())
