"""pick: locate the object under a pixel and pick it up from above with one arm, using base motion commands only."""

from __future__ import annotations

from typing import Any

from robo_shell.api import EpisodeAPI
from robo_shell.measure import locate

NAME = "pick"
HOVER_M = 0.08  # above the top face before descending
MAX_GRASP_DEPTH_M = 0.02  # the fingertips go at most this far below the top face
LIFT_M = 0.15

_WHERE = {
    "camera": {"type": "str", "default": "head", "help": "camera whose image shows the object"},
    "row": {"type": "float", "help": "pixel row on the object's top face"},
    "col": {"type": "float", "help": "pixel column on the object's top face"},
    "second_view": {"type": "str", "default": "", "help": "another camera that sees the object (better height)"},
}
COMMANDS = {
    "locate": {"help": "measure where the object at a pixel stands (free)", "args": _WHERE},
    "grasp": {
        "help": "grasp the object at a pixel from above and lift it",
        "args": {
            **_WHERE,
            "arm": {"type": "str", "default": "auto", "help": "arm to use; auto: the one on the object's side"},
            "lift": {"type": "float", "default": LIFT_M, "help": "how far to lift after closing [m]"},
        },
    },
}


def choose_arm(arms: list[str], x_m: float) -> str:
    """The arm on the object's side of the table (left at negative x); a single arm is always chosen."""
    if len(arms) == 1:
        return arms[0]
    return "left" if x_m < 0 else "right"


def grasp_plan(obj: dict[str, Any]) -> dict[str, float]:
    """Heights and the finger turn for a top grasp: fingers close across the footprint's long edge."""
    x, y, top_z = obj["top_centre_m"]
    depth = min(obj["height_m"] / 2.0, MAX_GRASP_DEPTH_M)
    # `point --fingers x` opens the fingers along world x; turn them to open across the long edge
    yaw = obj["long_edge_yaw_deg"] + 90.0
    yaw = yaw - 180.0 if yaw > 90.0 else yaw
    return {"x": x, "y": y, "hover_z": top_z + HOVER_M, "grasp_z": top_z - depth, "yaw_deg": yaw}


def run(api: EpisodeAPI, command: str, args: dict[str, Any]) -> dict[str, Any]:
    obj = locate(api, args["camera"], args["row"], args["col"], second_view=args["second_view"])
    if command == "locate" or not obj["found"]:
        return {"ok": bool(obj["found"]), "object": obj}
    arms = list(api.status()["arms"])
    arm = args["arm"] if args["arm"] != "auto" else choose_arm(arms, obj["top_centre_m"][0])
    plan = grasp_plan(obj)
    stages: list[dict[str, Any]] = []

    def stage(name: str, record: dict[str, Any] | list[dict[str, Any]]) -> bool:
        records = record if isinstance(record, list) else [record]
        ok = all(r.get("ok") for r in records)
        last = records[-1] if records else {}
        stages.append({
            "stage": name, "ok": ok, "steps_used": sum(r.get("steps_used", 0) for r in records),
            "reached": last.get("reached"), "final_dist_m": last.get("final_dist_m"),
            "gripper_opening": last.get("gripper_opening"),
            "reason": next((r.get("reason") for r in records if not r.get("ok")), last.get("reason", "")),
        })  # fmt: skip
        return ok

    def result(ok: bool, **extra: Any) -> dict[str, Any]:
        steps = sum(s["steps_used"] for s in stages)
        return {"ok": ok, "arm": arm, "object": obj, "plan": plan, "stages": stages, "steps_used_total": steps,
                **extra}  # fmt: skip

    if not stage("open", api.open(arm, check=False)):
        return result(False)
    if not stage("orient", api.point(arm, "down", "x", check=False)):
        return result(False)
    if abs(plan["yaw_deg"]) > 0.5 and not stage("turn", api.rotate(arm, yaw_deg=plan["yaw_deg"], check=False)):
        return result(False)
    if not stage("hover", api.move_to(arm, (plan["x"], plan["y"], plan["hover_z"]), check=False)):
        return result(False)
    if not stage("descend", api.move_to(arm, (plan["x"], plan["y"], plan["grasp_z"]), check=False)):
        return result(False)
    close = api.close(arm, check=False)
    stage("close", close)
    holding = bool(close.get("holding"))
    if not holding:
        stage("release", api.open(arm, check=False))
        stage("back_off", api.move(arm, dz=HOVER_M, check=False))
        return result(False, holding=False, reason="the fingers closed on nothing: look again and re-aim")
    stage("lift", api.move_to(arm, (plan["x"], plan["y"], plan["grasp_z"] + args["lift"]), check=False))
    final = api.status()
    return result(True, holding=True, task_done=final.get("task_done", False))
