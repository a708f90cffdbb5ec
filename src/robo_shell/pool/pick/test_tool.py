"""pick: the grasp plan from a measured object, and the stages it drives through base commands."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _tool():
    spec = importlib.util.spec_from_file_location("pick_tool", Path(__file__).with_name("tool.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OBJECT = {
    "found": True,
    "top_centre_m": [0.12, -0.18, 0.805],
    "height_m": 0.04,
    "footprint_xy_m": [[0.1, -0.2], [0.14, -0.2], [0.14, -0.16], [0.1, -0.16]],
    "long_edge_yaw_deg": 80.0,
}


class FakeApi:
    """Answers base commands like the harness would; ``holding`` decides what closing finds."""

    def __init__(self, holding: bool) -> None:
        self.holding = holding
        self.sent: list[tuple] = []

    def status(self):
        return {"arms": {"left": {}, "right": {}}, "task_done": self.holding}

    def _ok(self, *what, **extra):
        self.sent.append(what)
        return {"ok": True, "steps_used": 5, "reached": True, **extra}

    def open(self, arm, check=True):
        return self._ok("open", arm)

    def close(self, arm, check=True):
        return self._ok("close", arm, holding=self.holding)

    def point(self, arm, direction, fingers, check=True):
        return self._ok("point", arm, direction, fingers)

    def rotate(self, arm, roll_deg=0.0, pitch_deg=0.0, yaw_deg=0.0, check=True):
        return self._ok("rotate", arm, round(yaw_deg, 3))

    def move_to(self, arm, xyz, check=True):
        return [self._ok("move_to", arm, tuple(round(v, 4) for v in xyz))]

    def move(self, arm, dx=0.0, dy=0.0, dz=0.0, check=True):
        return self._ok("move", arm, dz)


def test_plan_grasps_across_the_long_edge_below_the_top():
    plan = _tool().grasp_plan(OBJECT)
    assert plan["grasp_z"] == pytest.approx(0.785) and plan["hover_z"] == pytest.approx(0.885)
    assert plan["yaw_deg"] == pytest.approx(-10.0)  # fingers open along x turned to 80 + 90 - 180
    thin = _tool().grasp_plan({**OBJECT, "height_m": 0.01, "long_edge_yaw_deg": -30.0})
    assert thin["grasp_z"] == pytest.approx(0.8) and thin["yaw_deg"] == pytest.approx(60.0)


def test_the_arm_on_the_objects_side():
    tool = _tool()
    assert tool.choose_arm(["left", "right"], -0.1) == "left"
    assert tool.choose_arm(["left", "right"], 0.1) == "right"
    assert tool.choose_arm(["arm"], -0.3) == "arm"


def test_grasp_runs_the_stages_in_order(monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "locate", lambda *a, **k: OBJECT)
    api = FakeApi(holding=True)
    result = tool.run(api, "grasp", {"camera": "head", "row": 1.0, "col": 2.0, "second_view": "", "arm": "auto",
                                     "lift": 0.15})  # fmt: skip
    assert result["ok"] and result["arm"] == "right" and result["holding"]
    assert [s["stage"] for s in result["stages"]] == ["open", "orient", "turn", "hover", "descend", "close", "lift"]
    assert api.sent[0] == ("open", "right") and api.sent[1] == ("point", "right", "down", "x")
    assert api.sent[3] == ("move_to", "right", (0.12, -0.18, 0.885))
    assert api.sent[-1] == ("move_to", "right", (0.12, -0.18, 0.935))
    assert result["steps_used_total"] == 5 * len(api.sent)


def test_a_miss_opens_and_backs_off(monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "locate", lambda *a, **k: OBJECT)
    api = FakeApi(holding=False)
    result = tool.run(api, "grasp", {"camera": "head", "row": 1.0, "col": 2.0, "second_view": "", "arm": "left",
                                     "lift": 0.15})  # fmt: skip
    assert not result["ok"] and result["holding"] is False and "re-aim" in result["reason"]
    assert api.sent[-2:] == [("open", "left"), ("move", "left", 0.08)]


def test_nothing_moves_when_the_object_is_not_found(monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "locate", lambda *a, **k: {"found": False, "reason": "on the table"})
    api = FakeApi(holding=True)
    result = tool.run(api, "grasp", {"camera": "head", "row": 1.0, "col": 2.0, "second_view": "", "arm": "auto",
                                     "lift": 0.15})  # fmt: skip
    assert not result["ok"] and result["object"]["reason"] == "on the table" and api.sent == []
