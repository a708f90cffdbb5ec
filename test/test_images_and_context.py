"""Which camera pictures reach the model (``images``), the image horizon's semantics, and refusing requests that
exceed a known context length before they are sent (issue 13)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.code_cell.kernel_config import load_kernel_config
from robodojo.agents.context_budget import ContextBudget, head_cameras
from robodojo.agents.llm.types import ChatReply, LlmError, ToolCall, Usage
from robodojo.agents.move_eef import MoveEefConfig, Probes
from robodojo.agents.move_eef.agent import MoveEefAgent, parse_move_eef_config
from robodojo.agents.move_eef.prompts import Embodiment
from robodojo.agents.robo.reference import robo_api_reference
from robodojo.episodes import episode_context
from robodojo.episodes.factory import make_agent
from robodojo.errors import ConfigError

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
EMBODIMENT = Embodiment(name="robodojo-arx-x5", reach_forward_m=0.45, reach_sideways_m=0.30)


def _reply(name: str, args: object) -> ChatReply:
    call = ToolCall("call_0", name, args if isinstance(args, str) else json.dumps(args))
    return ChatReply(None, (call,), Usage(), "scripted", "tool_calls", 0.0, 1)


class Caller:
    def __init__(self, replies: list[ChatReply]) -> None:
        self.replies = list(replies)
        self.requests: list[list[dict]] = []
        self.tools: list[list[dict]] = []

    def chat(self, messages, tools, *, tool_choice="required"):
        self.requests.append(messages)
        self.tools.append(tools)
        return self.replies.pop(0)


def _parts(message: dict) -> list[dict]:
    content = message["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _images(message: dict) -> int:
    return sum(p.get("type") == "image_url" for p in _parts(message))


def _labels(message: dict) -> list[str]:
    return [p["text"] for p in _parts(message) if p.get("type") == "text" and p["text"].startswith("camera '")]


# -- the estimate and the refusal -----------------------------------------------------------------------------------
def test_the_estimate_counts_text_by_characters_and_images_as_pasted_or_fixed():
    url = "data:image/jpeg;base64," + "A" * 40_000
    messages = [
        {"role": "system", "content": "x" * 400},
        {
            "role": "user",
            "content": [{"type": "text", "text": "y" * 40}, {"type": "image_url", "image_url": {"url": url}}],
        },
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "go", "arguments": "z" * 78}}]},
    ]
    text_tokens = (400 + 40 + 2 + 78) // 4
    assert ContextBudget().estimate(messages) == text_tokens + len(url) // 4
    assert ContextBudget(image_tokens=800).estimate(messages) == text_tokens + 800
    tools = [{"type": "function", "function": {"name": "t"}}]
    assert ContextBudget(image_tokens=800).estimate(messages, tools) == (
        (400 + 40 + 2 + 78 + len(json.dumps(tools))) // 4 + 800
    )


def test_a_request_beyond_the_context_is_refused_with_the_option_to_use():
    url = "data:image/jpeg;base64," + "A" * 40_000
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    ContextBudget().check(messages)  # no known context: nothing is refused
    ContextBudget(20_000).check(messages)
    with pytest.raises(LlmError) as refused:
        ContextBudget(8192).check(messages)
    n = len(url) // 4
    assert (
        str(refused.value) == f"request of ~{n} tokens exceeds the model's context of 8192: use --images none or head"
    )
    with pytest.raises(LlmError, match="holds no images and no older turn is left to drop; use a model with a longer"):
        ContextBudget(10).check([{"role": "user", "content": "w" * 100}])


@pytest.mark.parametrize(("field", "value"), [("context_tokens", 0), ("image_tokens", -1), ("context_tokens", True)])
def test_budget_values_are_validated(field, value):
    with pytest.raises(ConfigError, match=f"{field} must be a positive integer or null"):
        ContextBudget(**{field: value})


# -- configuration and the horizon --------------------------------------------------------------------------------
def test_config_keys_are_validated_and_the_horizon_cannot_be_zero():
    base = {"robots": {}}
    cfg = parse_move_eef_config({**base, "images": "none", "context_tokens": 8192, "image_tokens": 800}, "t")
    assert cfg.images == "none" and cfg.context == ContextBudget(8192, 800)
    assert (
        parse_move_eef_config(base, "t").images == "all"
        and parse_move_eef_config(base, "t").context.context_tokens is None
    )
    with pytest.raises(ConfigError, match=r"t.images must be one of none, head, all, got 'wrist'"):
        parse_move_eef_config({**base, "images": "wrist"}, "t")
    with pytest.raises(ConfigError, match=r"t.context_tokens must be a positive integer or null, got 0"):
        parse_move_eef_config({**base, "context_tokens": 0}, "t")
    with pytest.raises(ConfigError, match="images: none sends no pictures"):
        MoveEefConfig(image_horizon=0)
    with pytest.raises(ConfigError, match="images must be one of"):
        CodeCellAgent(images="some")


def test_factory_overrides():
    agent = make_agent("move_eef", image_horizon="all", images="head", context_tokens=4096)
    assert isinstance(agent, MoveEefAgent)
    assert agent.config.image_horizon is None and agent.config.images == "head"
    assert agent.config.context.context_tokens == 4096
    assert make_agent("move_eef", image_horizon=3).config.image_horizon == 3  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="to send no images use --images none"):
        make_agent("move_eef", image_horizon=0)
    cell = make_agent("code_cell", images="none", context_tokens=8192)
    assert isinstance(cell, CodeCellAgent) and cell.images == "none" and cell.context.context_tokens == 8192


# -- move_eef -------------------------------------------------------------------------------------------------------
def _move_eef(world, images: str, context: ContextBudget | None = None) -> MoveEefAgent:
    world.reset("general_pickup", seed=0)
    cfg = MoveEefConfig(
        probes=Probes(), embodiments={"dual_arx_x5": EMBODIMENT}, images=images, context=context or ContextBudget()
    )
    agent = MoveEefAgent(cfg)
    agent.begin(episode_context(world))
    return agent


def test_move_eef_text_only_sends_the_state_and_promises_no_pictures(dual_world):
    agent = _move_eef(dual_world, "none")
    caller = Caller([_reply("move_eef", {"targets": {"left_z": 0.95}, "note": "up"})])
    record = agent.turn(caller, 1)
    assert record.action == "move_eef"
    system, _goal, observation = caller.requests[0]
    assert sum(_images(m) for m in caller.requests[0]) == 0 and _labels(observation) == []
    assert "World-frame grasp-point state" in _parts(observation)[0]["text"]  # the state text stays
    assert "You receive no camera images" in system["content"]
    for promise in ("RGB camera images", "estimated from RGB", "wrist view", "Cameras:"):
        assert promise not in system["content"]


def test_move_eef_head_only_sends_the_head_camera(dual_world):
    agent = _move_eef(dual_world, "head")
    caller = Caller([_reply("move_eef", {"targets": {"left_z": 0.95}, "note": "up"})])
    agent.turn(caller, 1)
    observation = caller.requests[0][-1]
    (head,) = head_cameras(dual_world.robot)
    assert _images(observation) == 1 and _labels(observation)[0].startswith(f"camera '{head}'")
    assert "images of the head camera" in caller.requests[0][0]["content"]
    every = _move_eef(dual_world, "all")
    caller = Caller([_reply("move_eef", {"targets": {"left_z": 0.95}, "note": "up"})])
    every.turn(caller, 1)
    assert _images(caller.requests[0][-1]) == len(dual_world.robot.camera_names) == 3


def test_move_eef_refuses_an_oversized_request_before_sending(dual_world):
    agent = _move_eef(dual_world, "all", ContextBudget(8192))
    caller = Caller([])
    with pytest.raises(LlmError, match=r"^request of ~\d+ tokens exceeds the model's context of 8192: use --images"):
        agent.turn(caller, 1)
    assert caller.requests == []  # nothing was sent
    text_only = _move_eef(dual_world, "none", ContextBudget(8192))
    caller = Caller([_reply("move_eef", {"targets": {"left_z": 0.95}, "note": "up"})])
    assert text_only.turn(caller, 1).action == "move_eef"  # the same context fits without pictures


# -- code cell ------------------------------------------------------------------------------------------------------
@pytest.fixture
def cell_agent(dual_world, request):
    dual_world.reset("general_pickup", seed=0)
    limits, _ = load_kernel_config()
    agent = CodeCellAgent(kernel_limits=dataclasses.replace(limits, wall_s=2.0), images=request.param)
    agent.begin(episode_context(dual_world))
    yield agent
    agent.close()


@pytest.mark.parametrize("cell_agent", ["none"], indirect=True)
def test_code_cell_text_only_keeps_images_for_code_but_sends_and_promises_none(cell_agent):
    system = cell_agent.conversation.history[0]["content"]
    python_tool = cell_agent.tools[0]["function"]["description"]
    assert "robo.show" not in system and "robo.show" not in python_tool and "image" not in python_tool
    assert "robo.image(" in system and "no pictures are sent to you" in system
    code = "print(robo.image('head').shape)\ntry:\n    robo.show('head')\nexcept AttributeError as e:\n    print(e)"
    caller = Caller([_reply("python", {"code": code})])
    record = cell_agent.turn(caller, 1)
    printed = record.tool_results[0].splitlines()
    assert printed[0] == "(480, 640, 3)" and "has no attribute 'show'" in printed[1]
    assert record.details["images_shown"] == [] and sum(_images(m) for m in cell_agent.conversation.history) == 0


@pytest.mark.parametrize("cell_agent", ["head"], indirect=True)
def test_code_cell_head_only_shows_the_head_camera(cell_agent, dual_world):
    (head,) = head_cameras(dual_world.robot)
    wrist = next(c for c in dual_world.robot.camera_names if c != head)
    code = f"try:\n    robo.show({wrist!r})\nexcept ValueError as e:\n    print(e)\nrobo.show({head!r})"
    record = cell_agent.turn(Caller([_reply("python", {"code": code})]), 1)
    assert record.tool_results[0] == f"robo.show({wrist!r}): this run sends only the pictures of {head!r}"
    assert record.details["images_shown"] == [head]
    assert _images(cell_agent.conversation.history[-1]) == 1
    assert "This run sends only the pictures of" in robo_api_reference(dual_world.robot, images="head")


@pytest.mark.parametrize("cell_agent", ["all"], indirect=True)
def test_code_cell_refuses_an_oversized_request_before_sending(cell_agent):
    cell_agent.conversation.context = ContextBudget(500)  # the system message and API reference alone are larger
    caller = Caller([])
    with pytest.raises(LlmError, match=r"exceeds the model's context of 500: it holds no images"):
        cell_agent.turn(caller, 1)
    assert caller.requests == []


# -- end to end: the real client, the replay server, the runner -----------------------------------------------------
def _run(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, dict, list[dict]]:
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--llm", f"replay:{REPLAY}",
         "--out", str(tmp_path), *flags],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (folder,) = tmp_path.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    turns = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    return result, metrics, turns


def test_an_oversized_request_ends_the_episode_as_llm_error_with_the_option(tmp_path):
    result, metrics, turns = _run(tmp_path / "all", "--context-tokens", "8192")
    assert result.returncode == 1 and "ended by llm_error" in result.stdout, result.stderr
    assert metrics["end_reason"] == "llm_error" and metrics["llm_calls"] == 0  # refused, never sent
    assert "exceeds the model's context of 8192: use --images none or head" in turns[-1]["error"]
    result, metrics, _ = _run(tmp_path / "none", "--context-tokens", "8192", "--images", "none")
    assert metrics["end_reason"] != "llm_error", result.stdout + result.stderr  # text only fits


def test_the_cli_refuses_a_zero_horizon(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--llm", f"replay:{REPLAY}",
         "--image-horizon", "0", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2 and "to send no images use --images none" in result.stderr
