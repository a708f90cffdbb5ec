"""grab: a task tool as an earlier repair round might have left it; it has a bug for the repair loop to find."""

from __future__ import annotations

from typing import Any

from robo_shell.measure import locate

NAME = "grab"
DEPTH_M = 0.02  # how far below the top face the fingertips close
COMMANDS = {
    "grasp": {
        "help": "grasp the object whose top face shows at a pixel of the head camera, and lift it",
        "args": {
            "row": {"type": "float", "help": "pixel row on the top face"},
            "col": {"type": "float", "help": "pixel column on the top face"},
        },
    }
}


def grasp_height(top_z: float) -> float:
    """Where the fingertips close."""
    return top_z + DEPTH_M


def run(api: Any, command: str, args: dict[str, Any]) -> dict[str, Any]:
    obj = locate(api, "head", args["row"], args["col"])
    if not obj["found"]:
        return {"ok": False, "object": obj}
    x, y, top_z = obj["top_centre_m"]
    arm = "left" if x < 0 else "right"
    z = grasp_height(top_z)
    yaw = obj["long_edge_yaw_deg"] + 90.0
    yaw = yaw - 180.0 if yaw > 90.0 else yaw
    api.open(arm)
    api.point(arm, "down", "x")
    api.rotate(arm, yaw_deg=yaw)
    api.move_to(arm, (x, y, top_z + 0.08))
    api.move_to(arm, (x, y, z))
    closed = api.close(arm)
    if not closed.get("holding"):
        api.open(arm)
        api.move(arm, dz=0.08)
        return {"ok": False, "arm": arm, "grasp_z_m": z, "top_z_m": top_z, "reason": "closed on nothing"}
    api.move_to(arm, (x, y, z + 0.15))
    return {"ok": True, "arm": arm, "grasp_z_m": z, "top_z_m": top_z}
