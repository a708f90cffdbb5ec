"""The robo call log (robodojo.agents.robo.call_log): JSON-safe summaries, and one record per call."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodojo.agents.code_cell.cell_protocol import EpisodeOver
from robodojo.agents.robo import results as R
from robodojo.agents.robo.call_log import MAX_ITEMS, MAX_STRING_CHARS, RoboCallLog, summarize


def test_summaries_keep_numbers_exact_and_shrink_what_is_large():
    move = R.MoveResult(True, False, 0.0431237521, 0.017, 22, 15, "task_success", True, "solved", holding=True)
    assert summarize(move) == {
        "type": "MoveResult", "planned": True, "reached": False, "final_dist_m": 0.0431237521, "final_angle_deg": 0.017,
        "waypoints": 22, "steps_used": 15, "stop_reason": "task_success", "terminated": True, "reason": "solved",
        "gripper": None, "holding": True,
    }  # fmt: skip
    mask = np.zeros((480, 640), bool)
    mask[10:20, 10:30] = True
    segment = summarize(R.Segment(True, mask=mask, centroid_px=(14.5, 19.5), footprint_xy=np.zeros((24, 2))))
    assert segment["mask"] == "<mask 480x640, area 200 px>" and segment["footprint_xy"] == "<array 24x2 float64>"
    assert segment["centroid_px"] == [14.5, 19.5]
    assert summarize(np.zeros((480, 640, 3), np.uint8)) == "<array 480x640x3 uint8>"
    assert summarize(np.eye(4)) == np.eye(4).tolist()  # small arrays whole (a camera pose)
    assert summarize((np.float32(0.5), np.int64(3), [1, (2, 3)])) == [0.5, 3, [1, [2, 3]]]
    assert summarize(list(range(MAX_ITEMS + 1))) == f"<list of {MAX_ITEMS + 1} items>"
    long = summarize("x" * 1000)
    assert len(long) < MAX_STRING_CHARS + 60 and "600 characters omitted" in long
    assert summarize({1: {"a": None}}) == {"1": {"a": None}}
    assert summarize(object()).startswith("<object object at")
    state = R.State(
        {"arm": R.ArmState("arm", (0, 0, 1), (1, 0, 0, 0), (0, 0, 1.1), (1, 0, 0, 0), 0.5, (0, 0, -1), ())},
        7,
        False,
        1.5,
    )
    assert summarize(state)["arms"]["arm"]["tcp_pos"] == [0, 0, 1] and summarize(state)["steps_left"] == 7
    json.dumps(summarize(state), allow_nan=False)


def test_each_call_is_recorded_once_in_order_and_errors_are_re_raised():
    log = RoboCallLog()
    assert log.run("table_height", (), {}, lambda: R.TableHeight(True, 0.765)) == R.TableHeight(True, 0.765)
    with pytest.raises(ValueError, match="unknown arm"):
        log.run("grasp", ("both",), {}, lambda: (_ for _ in ()).throw(ValueError("unknown arm 'both'")))
    with pytest.raises(EpisodeOver):
        log.run("home", (), {}, lambda: (_ for _ in ()).throw(EpisodeOver("the env step budget is used up")))
    log.run("move_to", ("left", np.array([0.1, -0.2, 0.9])), {"gripper": np.float64(1.0)}, lambda: None)
    calls = log.drain()
    assert [c.method for c in calls] == ["table_height", "grasp", "home", "move_to"]
    assert calls[0].result == {"type": "TableHeight", "found": True, "z": 0.765, "reason": ""} and calls[0].error == ""
    assert calls[1].error == "ValueError: unknown arm 'both'" and calls[1].args == ["both"] and calls[1].result is None
    assert calls[2].error == "EpisodeOver: the env step budget is used up"
    assert calls[3].args == ["left", [0.1, -0.2, 0.9]] and calls[3].kwargs == {"gripper": 1.0}
    assert all(c.duration_s >= 0 for c in calls)
    assert log.drain() == []
