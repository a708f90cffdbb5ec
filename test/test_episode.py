"""The episode runner and recorder: end conditions, budgets, and a complete record even after a crash."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodojo.agents.base import EpisodeContext, TurnRecord
from robodojo.agents.llm.types import ChatReply, LlmError, ToolCall, Usage
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.errors import ConfigError, EpisodeInterrupted
from robodojo.geometry import quat_from_matrix
from robodojo.sim.scripted import plan_top_down_grasp

IMAGE_URL = "data:image/jpeg;base64,"


def _reply(name="move_eef", args="{}", tokens=(100, 20, 10)) -> ChatReply:
    return ChatReply(
        content=None,
        tool_calls=(ToolCall("call_1", name, args),),
        usage=Usage(tokens[0], tokens[1], tokens[2], 0.001),
        model="scripted",
        finish_reason="tool_calls",
        latency_s=0.01,
        attempts=1,
        raw={"id": "x"},
    )


class ScriptedCaller:
    """Stands in for the LLM in runner tests (the real client is tested against the replay server elsewhere)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def chat(self, messages, tools, *, tool_choice="required"):
        self.calls += 1
        if self.fail_at == self.calls:
            raise LlmError("the server kept answering 503", attempts=4)
        return _reply()


class PlanAgent:
    """A minimal agent: each turn it asks the caller, then plays the next planned motion (or gives up / crashes)."""

    name = "plan"

    def __init__(self, moves, *, give_up_at=None, crash_at=None, jpeg=b"\xff\xd8fake", tools=()) -> None:
        self.moves = moves
        self.tools = list(tools)
        self.give_up_at = give_up_at
        self.crash_at = crash_at
        self.jpeg = jpeg

    def begin(self, episode: EpisodeContext) -> None:
        self.ctx = episode

    def turn(self, llm, turn: int) -> TurnRecord:
        import base64

        if turn == self.crash_at:
            raise RuntimeError("agent bug")
        image = {"type": "image_url", "image_url": {"url": IMAGE_URL + base64.b64encode(self.jpeg).decode()}}
        request = [{"role": "system", "content": "sys"}, {"role": "user", "content": [image]}]
        reply = llm.chat(request, self.tools)
        if turn == self.give_up_at:
            return TurnRecord(turn, request, reply, ["ok, giving up"], "give_up", gave_up=True, details={"reason": "x"})
        move = self.moves(self.ctx, turn)
        report = self.ctx.motion.move_to(*move, is_success=self.ctx.is_success) if move else None
        return TurnRecord(turn, request, reply, [report.tool_text if report else "noop"], "move_eef", move=report)


def _pickup_moves(world):
    """A test agent's plan from ground truth: the agent's context has no path to it, so the test hands it the world."""

    def moves(ctx, turn):
        grasp = plan_top_down_grasp(world, "target")
        quat = quat_from_matrix(grasp.rotation)
        steps = {
            1: (grasp.arm, grasp.pregrasp_pos_m, quat, 1.0),
            2: (grasp.arm, grasp.grasp_pos_m, quat, None),
            3: (grasp.arm, grasp.grasp_pos_m, quat, 0.0),
            4: (grasp.arm, grasp.grasp_pos_m + np.array([0, 0, 0.15]), quat, None),
        }
        return steps.get(turn)

    return moves


def _read(folder):
    lines = {
        name: (folder / name).read_text().splitlines() for name in ("requests.jsonl", "responses.jsonl", "turns.jsonl")
    }
    return {k: [json.loads(x) for x in v] for k, v in lines.items()}, json.loads((folder / "metrics.json").read_text())


def test_success_ends_the_episode_and_everything_is_recorded(dual_world, tmp_path):
    agent = PlanAgent(_pickup_moves(dual_world))
    result = run_episode(WorldHost(dual_world), agent, ScriptedCaller(), EpisodeSpec("general_pickup", 0), tmp_path)
    assert result.success and result.end_reason is EndReason.SUCCESS and result.llm_calls == 4
    records, metrics = _read(result.folder)
    assert len(records["requests.jsonl"]) == len(records["responses.jsonl"]) == len(records["turns.jsonl"]) == 4
    assert metrics["success"] and metrics["end_reason"] == "success" and metrics["llm_calls"] == 4
    assert metrics["input_tokens"] == 400 and metrics["cached_input_tokens"] == 80 and metrics["output_tokens"] == 40
    assert metrics["cost_usd"] == pytest.approx(0.004) and metrics["steps_used"] == dual_world.step_count
    image_part = records["requests.jsonl"][0]["messages"][1]["content"][0]
    assert image_part == {"type": "image_file", "file": image_part["file"]}
    assert (result.folder / image_part["file"]).read_bytes() == b"\xff\xd8fake"
    assert len(list((result.folder / "images").iterdir())) == 1  # the same image is stored once
    assert records["turns.jsonl"][0]["move"]["tool_text"].startswith("Accepted: playing")
    meta = json.loads((result.folder / "meta.json").read_text())
    assert meta["task"] == "general_pickup" and meta["instruction"] == dual_world.instruction


def test_llm_call_budget(dual_world, tmp_path):
    result = run_episode(
        WorldHost(dual_world),
        PlanAgent(lambda c, t: None),
        ScriptedCaller(),
        EpisodeSpec("general_pickup", 1, llm_call_budget=3),
        tmp_path,
    )
    assert result.end_reason is EndReason.LLM_CALL_BUDGET and result.llm_calls == 3 and not result.success


def test_give_up(dual_world, tmp_path):
    result = run_episode(
        WorldHost(dual_world),
        PlanAgent(lambda c, t: None, give_up_at=2),
        ScriptedCaller(),
        EpisodeSpec("general_pickup", 1),
        tmp_path,
    )
    assert result.end_reason is EndReason.GIVE_UP and result.llm_calls == 2
    assert _read(result.folder)[0]["turns.jsonl"][-1]["details"] == {"reason": "x"}


def test_step_budget(dual_world, tmp_path):
    def far_moves(ctx, turn):
        x = -0.25 if turn % 2 else -0.35
        quat = ctx.backend.observe(cameras=()).arm("left").tcp_quat_wxyz
        return ("left", [x, -0.25 + 0.05 * (turn % 2), 0.85], quat, None)

    result = run_episode(
        WorldHost(dual_world), PlanAgent(far_moves), ScriptedCaller(), EpisodeSpec("general_pickup", 2), tmp_path
    )
    assert dual_world.task is not None and dual_world.task.name == "general_pickup"
    assert result.end_reason is EndReason.STEP_BUDGET and result.steps_used == dual_world.task.step_limit


def test_unreachable_llm_ends_the_episode_with_a_record(dual_world, tmp_path):
    result = run_episode(
        WorldHost(dual_world),
        PlanAgent(lambda c, t: None),
        ScriptedCaller(fail_at=3),
        EpisodeSpec("general_pickup", 0),
        tmp_path,
    )
    assert result.end_reason is EndReason.LLM_ERROR and result.llm_calls == 3
    records, metrics = _read(result.folder)
    assert metrics["end_reason"] == "llm_error" and "503" in metrics["error"]
    assert records["turns.jsonl"][-1]["action"] == "error" and len(records["responses.jsonl"]) == 2


def test_the_record_holds_the_bodies_as_sent_and_the_failed_call(dual_world, tmp_path):
    """With the real client: requests.jsonl has the body after the profile's rewrite (tools, tool_choice "auto" for
    llamacpppy), per-attempt timing, and the failed call with its error; meta.json names the profile and base URL."""
    import dataclasses

    from robodojo.agents.llm.client import LlmClient
    from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer
    from robodojo.agents.llm.settings import load_llm_settings

    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}
    settings = dataclasses.replace(load_llm_settings(), max_retries=2, backoff_base_s=0.01)
    with ReplayServer(ReplayScript.parse({"replies": [{"content": "ok"}]})) as server:  # the 2nd call: HTTP 400
        llm = LlmClient("replay", server.url, "k", "llamacpppy", settings)
        agent = PlanAgent(lambda c, t: None, tools=[tool])
        result = run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec("general_pickup", 0), tmp_path)
        url = server.url
    assert result.end_reason is EndReason.LLM_ERROR and "replay script exhausted" in result.error
    records, _ = _read(result.folder)
    sent, failed = records["requests.jsonl"]
    assert sent["tools"] == [tool] and sent["tool_choice"] == "auto" and sent["model"] == "replay"
    assert sent["error"] is None and len(sent["attempts"]) == 1 and sent["attempts"][0]["latency_s"] > 0
    assert failed["turn"] == 2 and "replay script exhausted" in failed["error"] and failed["tool_choice"] == "auto"
    assert [a["status"] for a in failed["attempts"]] == [400]  # a deterministic 400 is not retried
    assert failed["messages"][1]["content"][0]["type"] == "image_file"
    assert records["responses.jsonl"][0]["attempt_log"][0]["error"] is None
    meta = json.loads((result.folder / "meta.json").read_text())
    assert meta["llm"]["profile"] == "llamacpppy" and meta["llm"]["base_url"] == url


def test_a_crash_still_leaves_a_complete_record(dual_world, tmp_path):
    with pytest.raises(RuntimeError, match="agent bug"):
        run_episode(
            WorldHost(dual_world),
            PlanAgent(_pickup_moves(dual_world), crash_at=3),
            ScriptedCaller(),
            EpisodeSpec("general_pickup", 0),
            tmp_path,
        )
    (folder,) = tmp_path.iterdir()
    records, metrics = _read(folder)
    assert len(records["turns.jsonl"]) == 3 and records["turns.jsonl"][-1]["error"] == "RuntimeError: agent bug"
    assert metrics["end_reason"] == "crashed" and "agent bug" in metrics["error"] and metrics["llm_calls"] == 2


class InterruptedHost(WorldHost):
    """The embedded world, asked to stop from outside after ``after`` checks (as the agent node's host on SIGINT)."""

    def __init__(self, world, after: int) -> None:
        super().__init__(world)
        self.checks_left = after

    def check(self) -> None:
        self.checks_left -= 1
        if self.checks_left < 0:
            raise EpisodeInterrupted("the agent node is shutting down")


def test_an_interruption_ends_the_episode_as_interrupted_with_a_complete_record(dual_world, tmp_path):
    result = run_episode(
        InterruptedHost(dual_world, after=2),
        PlanAgent(_pickup_moves(dual_world)),
        ScriptedCaller(),
        EpisodeSpec("general_pickup", 0),
        tmp_path,
    )
    assert result.end_reason is EndReason.INTERRUPTED and result.llm_calls == 2 and not result.success
    records, metrics = _read(result.folder)
    assert len(records["turns.jsonl"]) == len(records["responses.jsonl"]) == 2
    assert metrics["end_reason"] == "interrupted" and metrics["error"] == "the agent node is shutting down"
    assert metrics["steps_used"] == dual_world.step_count > 0


def test_bad_budget():
    with pytest.raises(ConfigError, match="llm_call_budget must be at least 1"):
        EpisodeSpec("general_pickup", llm_call_budget=0)
