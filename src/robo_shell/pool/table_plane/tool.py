"""table_plane: the table top's height from the cameras (plane sweep over every camera pair), once per episode."""

from __future__ import annotations

from typing import Any

from robo_shell.measure import table_height

NAME = "table_plane"
COMMANDS = {
    "measure": {
        "help": "measure the table top's height (cached for the episode)",
        "args": {"refresh": {"type": "flag", "help": "measure again instead of reading the cache"}},
    }
}


def run(api: Any, command: str, args: dict[str, Any]) -> dict[str, Any]:
    result = table_height(api, refresh=bool(args.get("refresh")))
    return {"ok": bool(result["found"]), **result}
