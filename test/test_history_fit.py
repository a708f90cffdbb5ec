"""Long episodes against a known context length: the oldest exchanges are left out of a request that would not fit,
the estimate learns the server's token counts, and a server's context error says which option fixes it (issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from robodojo.agents.context_budget import ContextBudget, TokenScale
from robodojo.agents.conversation import OMITTED_IMAGE_TEXT, Conversation
from robodojo.agents.llm.types import ChatReply, LlmError, ToolCall, Usage
from robodojo.errors import ConfigError

TOOLS = [{"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}]
PICTURE = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + "A" * 400}}


def _preamble(conversation: Conversation) -> None:
    conversation.add({"role": "system", "content": "s" * 2000})
    conversation.add({"role": "user", "content": "Goal: lift the cube."})


def _cell(conversation: Conversation, i: int, output_chars: int = 800, prompt_tokens: int = 0) -> None:
    """One code-cell exchange: a reply calling python, then its tool result."""
    call = ToolCall(f"call_{i}", "python", json.dumps({"code": f"print({i})"}))
    conversation.add_reply(ChatReply(None, (call,), Usage(input_tokens=prompt_tokens), "m", "tool_calls", 0.0, 1))
    conversation.add_tool_result(call.id, f"out {i} " + "x" * output_chars)


def _check_structure(request: list[dict]) -> None:
    """Every tool result follows the reply that called it, as the chat API needs."""
    open_ids: set[str] = set()
    for message in request:
        if message["role"] == "assistant":
            open_ids = {c["id"] for c in message.get("tool_calls", [])}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_ids, request
            open_ids.discard(message["tool_call_id"])


def test_without_a_known_context_every_exchange_is_sent():
    conversation = Conversation()
    _preamble(conversation)
    for i in range(40):
        _cell(conversation, i)
    assert conversation.request(TOOLS) == conversation.history and conversation.omitted_turns == 0


def test_the_oldest_exchanges_are_left_out_to_fit_and_later_requests_keep_their_prefix():
    budget = ContextBudget(3000, reply_reserve_tokens=500)
    conversation = Conversation(context=budget)
    _preamble(conversation)
    seen_omitted, previous = [], None
    for i in range(40):
        _cell(conversation, i)
        request = conversation.request(TOOLS)
        _check_structure(request)
        assert budget.estimate(request, TOOLS) <= 2500
        assert request[0] == conversation.history[0]  # the system message is never dropped
        assert request[-1]["content"].startswith(f"out {i} ")  # the latest exchange always goes
        n = conversation.omitted_turns
        if n:
            assert request[1]["content"].startswith("Goal: lift the cube.")
            assert f"The oldest {n} exchange(s) of this episode are left out" in request[1]["content"]
            assert request[2]["tool_calls"][0]["id"] == f"call_{n}"  # the first exchange kept, whole
        if previous is not None and n == seen_omitted[-1]:
            assert request[: len(previous)] == previous  # the same prefix: a prompt cache keeps working
        seen_omitted.append(n)
        previous = request
    assert seen_omitted == sorted(seen_omitted) and seen_omitted[-1] > 10  # never taken back
    # dropping goes below the limit by a margin, so most turns drop nothing new
    assert len(set(seen_omitted)) < len(seen_omitted) / 2
    assert conversation.turn_details({"a": 1}) == {"a": 1, "omitted_turns": seen_omitted[-1]}


def test_a_preamble_that_fills_most_of_the_context_still_leaves_the_history_its_room():
    # llama-cpp-python with n_ctx 8192: ~5300 tokens of code-cell preamble and tools, 2048 kept for the answer
    budget = ContextBudget(3000, reply_reserve_tokens=500)
    conversation = Conversation(context=budget)
    conversation.add({"role": "system", "content": "s" * 8000})  # 2000 tokens: 500 left for the history
    conversation.add({"role": "user", "content": "Goal: lift the cube."})
    for i in range(40):
        _cell(conversation, i, output_chars=100)
        request = conversation.request(TOOLS)
    history = budget.estimate(request[2:])
    assert 0.5 * 500 <= history <= 500 and conversation.omitted_turns < 40 - 3


def test_move_eef_exchanges_start_at_their_observation_and_keep_the_image_horizon():
    budget = ContextBudget(2000, image_tokens=100, reply_reserve_tokens=200)
    conversation = Conversation(image_horizon=2, context=budget)
    _preamble(conversation)
    for i in range(25):
        conversation.add_observation(
            {"role": "user", "content": [{"type": "text", "text": f"state {i} " + "y" * 300}, PICTURE]}
        )
        _cell(conversation, i, output_chars=100)
    request = conversation.request(TOOLS)
    n = conversation.omitted_turns
    assert n > 0 and request[2]["content"][0]["text"].startswith(f"state {n} ")
    observations = [m for m in request if m["role"] == "user" and isinstance(m["content"], list)]
    with_pictures = [m for m in observations if PICTURE in m["content"]]
    assert with_pictures == observations[-2:]  # the horizon still counts the latest observations
    assert all({"type": "text", "text": OMITTED_IMAGE_TEXT} in m["content"] for m in observations[:-2])
    _check_structure(request)


def test_the_estimate_learns_a_tokenizer_that_counts_more_from_the_reported_usage():
    def run(ratio: float) -> int:
        conversation = Conversation(context=ContextBudget(3000, reply_reserve_tokens=500))
        _preamble(conversation)
        reported = 0
        for i in range(12):
            _cell(conversation, i, prompt_tokens=reported)
            request = conversation.request(TOOLS)
            reported = round(ContextBudget().estimate(request, TOOLS) * ratio)  # what the server counts
        return conversation.omitted_turns

    assert run(1.6) > run(1.0) > 0
    scale = TokenScale()
    scale.update(1000, 1300)
    scale.update(1000, 1100)  # the highest ratio seen is kept
    scale.update(1000, 0)  # a server that reports no usage teaches nothing
    assert scale.value == pytest.approx(1.3)
    scale.update(10, 10_000)
    assert scale.value == TokenScale.MAX


def test_a_request_that_cannot_fit_even_with_every_older_exchange_left_out_is_refused():
    conversation = Conversation(context=ContextBudget(600, reply_reserve_tokens=100))
    _preamble(conversation)  # the system message alone is ~500 tokens
    _cell(conversation, 0, output_chars=800)
    with pytest.raises(LlmError, match="no older turn is left to drop"):
        conversation.request(TOOLS)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [("reply_reserve_tokens", -1, "integer >= 0"), ("trim_to_fraction", 0.0, r"in \[0.1, 1\]")],
)
def test_fit_settings_are_validated(field, value, match):
    with pytest.raises(ConfigError, match=f"{field} must be .*{match}"):
        ContextBudget(8192, **{field: value})


# -- end to end: a code-cell episode longer than the server's context ------------------------------------------------
def _script(tmp_path, cells: int) -> str:
    """A replay server with llama-cpp-python's 8192 context and a tokenizer counting 1.3x characters / 4, and a model
    that writes ``cells`` cells each printing ~1200 characters, then finishes."""
    replies = [
        {"tool_calls": [{"name": "python", "arguments": {"code": f"print('cell {i} ' + 'x' * 1200)"}}]}
        for i in range(cells)
    ]
    replies.append({"tool_calls": [{"name": "finish", "arguments": {"status": "failure", "summary": "done"}}]})
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump({"behaviour": {"context_tokens": 8192, "token_ratio": 1.3}, "replies": replies}))
    return str(path)


def _run(tmp_path, script: str, *flags: str) -> tuple[subprocess.CompletedProcess, dict, list[dict]]:
    out = tmp_path / ("fit" if flags else "plain")
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--agent", "code_cell",
         "--llm", f"replay:{script}", "--budget", "40", "--out", str(out), *flags],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (folder,) = out.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    turns = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    return result, metrics, turns


def test_a_long_code_cell_episode_runs_to_its_end_with_the_context_stated_or_learnt(tmp_path):
    """Unstated, the context is learnt from the server's first "does not fit" (agents/context_fit.py: once, then
    every call fits); stated with --context-tokens, no call overflows. Either way all 14 cells run."""
    script = _script(tmp_path, cells=14)
    result, metrics, turns = _run(tmp_path, script)
    assert metrics["end_reason"] == "finished", result.stdout + result.stderr
    overflows = [t["details"]["context_overflows"] for t in turns if t.get("details", {}).get("context_overflows")]
    assert len(overflows) == 1 and "did not fit a context of 8192 tokens" in overflows[0][0], overflows
    assert len([t for t in turns if t["action"] == "python"]) == 14
    result, metrics, turns = _run(tmp_path, script, "--context-tokens", "8192")
    assert metrics["end_reason"] == "finished", result.stdout + result.stderr
    assert not any(t.get("details", {}).get("context_overflows") for t in turns)
    executed = [t for t in turns if t["action"] == "python"]
    assert len(executed) == 14 and all(t["tool_results"][0].startswith(f"cell {i} ") for i, t in enumerate(executed))
    omitted = [t.get("details", {}).get("omitted_turns", 0) for t in turns]
    assert omitted[0] == 0 and omitted[-1] > 0 and omitted == sorted(omitted)
