"""The code-cell agent: cells through the real kernel and robo, tool texts, malformed replies, limits, finish."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import NO_TOOL_CALL_TEXT, CodeCellAgent, cell_result_text
from robodojo.agents.code_cell.cell_protocol import CellResult
from robodojo.agents.code_cell.kernel_config import load_kernel_config
from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
from robodojo.agents.robo.reference import robo_api_methods
from robodojo.episodes import episode_context

CELLS = PACKAGE_ROOT / "examples" / "cells" / "general_pickup.py"


def _reply(*calls: tuple[str, object]) -> ChatReply:
    tool_calls = tuple(
        ToolCall(f"call_{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    )
    return ChatReply(None, tool_calls, Usage(10, 0, 5, 0.0), "scripted", "tool_calls", 0.0, 1)


class Caller:
    """Scripted replies (the real client and replay server are covered by test_llm_client and the CLI test)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, messages, tools, *, tool_choice="required"):
        self.requests.append(messages)
        return self.replies.pop(0)


@pytest.fixture
def agent(dual_world):
    dual_world.reset("general_pickup", seed=0)
    ctx = episode_context(dual_world)
    limits, _ = load_kernel_config()
    agent = CodeCellAgent(kernel_limits=dataclasses.replace(limits, wall_s=1.0))
    agent.begin(ctx)
    yield agent
    agent.close()


def test_system_message_carries_the_generated_api_reference(agent):
    system = agent.conversation.history[0]["content"]
    assert all(f"robo.{name}(" in system for name in robo_api_methods())
    assert "python(code)" in system and agent.conversation.history[1]["content"].startswith("Goal: Pick up the")


def test_a_cell_runs_with_the_robot_and_keeps_its_namespace(agent, dual_world):
    caller = Caller(
        [
            _reply(("python", {"code": "s = robo.state()\nprint(round(s.left.tcp_pos[2], 2))\nrobo.steps_left"})),
            _reply(("python", {"code": "robo.show('head')\nround(s.right.gripper, 2)"})),
        ]
    )
    first = agent.turn(caller, 1)
    assert first.action == "python" and first.tool_results[0] == f"0.9\n{dual_world.steps_left}"
    second = agent.turn(caller, 2)
    assert second.tool_results[0] == "1.0" and second.details["images_shown"] == ["head"]
    images = agent.conversation.history[-1]["content"]
    assert images[0]["text"] == "Images from robo.show():" and images[2]["type"] == "image_url"


def test_a_raw_newline_inside_the_code_string_runs_the_cell(agent):
    raw = '{"code": "x = 6 * 7\nx"}'  # a real newline inside the JSON string, as some local servers send
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    record = agent.turn(Caller([_reply(("python", raw))]), 1)
    assert record.action == "python" and record.tool_results == ["42"]
    (stored,) = agent.conversation.history[-2]["tool_calls"]
    assert json.loads(stored["function"]["arguments"]) == {"code": "x = 6 * 7\nx"}  # resent as strict JSON


def test_malformed_replies_run_nothing(agent, dual_world):
    before = dual_world.data.qpos.copy(), dual_world.step_count
    caller = Caller(
        [
            ChatReply("I will think first", (), Usage(), "scripted", "stop", 0.0, 1),
            _reply(("python", {"code": "robo.home()"}), ("python", {"code": "robo.home()"})),
            _reply(("shell", {"cmd": "ls"})),
            _reply(("python", "{not json")),
            _reply(("python", {"source": "robo.home()"})),
            _reply(("finish", {"status": "maybe"})),
        ]
    )
    texts = [agent.turn(caller, t).tool_results[0] for t in range(1, 7)]
    assert texts[0] == NO_TOOL_CALL_TEXT
    assert texts[1] == "Your reply called 2 tools; call exactly one tool per turn; none was run"
    assert texts[2] == "unknown tool 'shell'; the tools are python and finish; nothing ran"
    assert texts[3].startswith("arguments of python are not valid JSON")
    assert texts[4] == "python needs 'code' (a string of Python source); nothing ran"
    assert texts[5] == "finish needs 'status': one of success, failure; the episode continues"
    np.testing.assert_array_equal(dual_world.data.qpos, before[0])
    assert dual_world.step_count == before[1]


def test_a_cell_that_loops_hits_the_limit_and_the_robot_holds_still(agent, dual_world):
    steps = dual_world.step_count
    record = agent.turn(Caller([_reply(("python", {"code": "x = 1\nwhile True:\n    pass"}))]), 1)
    text = record.tool_results[0]
    assert "wall-clock limit" in text and "namespace was reset" in text and "the robot holds still" in text
    assert dual_world.step_count == steps
    after = agent.turn(Caller([_reply(("python", {"code": "'x' in dir()"}))]), 2)
    assert after.tool_results[0] == "False"  # a fresh namespace


def test_robo_calls_are_logged_per_turn_with_results_and_errors(agent):
    code = (
        "try:\n    robo.move_to('left', (0, 0, 0.5))\nexcept ValueError as e:\n    print(e)\nrobo.image('head').shape"
    )
    record = agent.turn(Caller([_reply(("python", {"code": code}))]), 1)
    bounds = "xyz z=0.5 is outside the left arm's workspace [0.7, 1.565] m"
    assert record.tool_results == [f"{bounds}\n(480, 640, 3)"]
    move, image = record.robo_calls
    assert (move.method, move.args, move.kwargs, move.result) == ("move_to", ["left", [0, 0, 0.5]], {}, None)
    assert move.error == f"ValueError: {bounds}"
    assert (image.method, image.args, image.result, image.error) == ("image", ["head"], "<array 480x640x3 uint8>", "")
    assert 0 <= move.duration_s < 1 and 0 <= image.duration_s < 1
    later = agent.turn(Caller([_reply(("python", {"code": "robo.steps_left"}))]), 2)
    assert [(c.method, c.result) for c in later.robo_calls] == [("steps_left", int(later.tool_results[0]))]


def test_finish_ends_the_episode(agent):
    record = agent.turn(Caller([_reply(("finish", {"status": "failure", "summary": "cannot see it"}))]), 1)
    assert record.finished and record.action == "finish"


def test_code_is_run_as_sent_but_bounded(agent):
    code = "s = 'a\u202eb\u200bc'\r\nif s:\r\n\tprint(len(s), s.encode('unicode_escape').decode())"
    record = agent.turn(Caller([_reply(("python", {"code": code}))]), 1)
    assert record.tool_results == ["5 a\\u202eb\\u200bc"] and record.details["code"] == code
    assert "text_limits" not in record.details
    pid = agent.kernel.pid
    too_long = agent.turn(Caller([_reply(("python", {"code": "x = 1\n" * 20_000}))]), 2)
    assert too_long.action == "error" and too_long.tool_results == [
        "python 'code' is 120000 characters; a cell may have at most 100000: split it into smaller cells (functions "
        "you define stay in the namespace); nothing ran\n[the arguments of your tool call (in this chat) cut to 110000 "
        "characters (it had 140012)]"
    ]  # kept in the history as head and tail, and the model is told so
    after = agent.turn(Caller([_reply(("python", {"code": "'x' in dir()"}))]), 3)
    assert agent.kernel.pid == pid and after.tool_results == ["False"]  # nothing ran


def test_finish_summary_is_bounded(agent):
    summary = "done\x00\u202e " + "s" * 10_000
    record = agent.turn(Caller([_reply(("finish", {"status": "success", "summary": summary}))]), 1)
    assert record.finished and record.details["summary"] == ("done " + "s" * 10_000)[:4000]
    assert record.details["text_limits"]["summary"] == {
        "cut": True, "sent_chars": len(summary), "removed_chars": 2, "max_chars": 4000
    }  # fmt: skip
    assert record.tool_results[0].endswith("'summary' cut to 4000 characters (it had 10005)]")


def test_cell_result_text_sections():
    result = CellResult(
        ok=False,
        stdout="hello\n",
        stderr="warn",
        result_repr=None,
        error="Traceback ...\nValueError: bad",
        limit=None,
        namespace_reset=False,
        episode_ended=False,
        wall_s=0.1,
        rpc_calls=2,
    )
    assert cell_result_text(result) == "hello\n[stderr]\nwarn\nTraceback ...\nValueError: bad"
    empty = dataclasses.replace(result, stdout="", stderr="", error="", ok=True)
    assert cell_result_text(empty) == "(the cell printed nothing and ended without a value)"


def test_scripted_cells_solve_general_pickup_through_the_cli(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "robodojo.cli",
            "run",
            "--task",
            "general_pickup",
            "--seed",
            "0",
            "--agent",
            "code_cell",
            "--llm",
            f"replay:{CELLS}",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["success"] and metrics["end_reason"] == "success"
    turns = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    # Every robo call, in order per turn: the motions add up to the episode's env steps, and each result is what the
    # cell printed; the last cell is the one that grasps (through the cells' library, so not by name in its code).
    calls = [json.loads(line) for line in (folder / "robo_calls.jsonl").read_text().splitlines()]
    assert all(t["action"] == "python" for t in turns)
    assert any(c["method"] == "grasp" and c["turn"] == turns[-1]["turn"] for c in calls)
    for turn in turns:
        mine = [c for c in calls if c["turn"] == turn["turn"]]
        assert [c["index"] for c in mine] == list(range(len(mine))) == list(range(turn["details"]["rpc_calls"]))
    assert all(c["error"] == "" and c["duration_s"] >= 0 for c in calls)
    motions = [c for c in calls if c["method"] in ("move_to", "grasp", "release", "home")]
    assert [c["method"] for c in motions] == ["move_to", "move_to", "grasp", "move_to"]
    assert sum(c["result"]["steps_used"] for c in motions) == metrics["steps_used"]
    above = motions[0]
    assert above["args"][0] == "right" and len(above["args"][1]) == 3 and above["kwargs"] == {"gripper": 1.0}
    assert motions[2]["result"]["type"] == "MoveResult" and motions[2]["result"]["holding"] is True
    for motion in motions:
        steps, reached = motion["result"]["steps_used"], motion["result"]["reached"]
        assert f"steps_used={steps}" in turns[-1]["tool_results"][0] and isinstance(reached, bool)
    segment = next(c for c in calls if c["method"] == "segment")
    assert segment["result"]["found"] and segment["result"]["mask"].startswith("<mask 480x640, area ")
