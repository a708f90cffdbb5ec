"""The real openai-based LlmClient against the local replay server, configured to behave like each kind of server."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from robodojo.agents.llm.client import LlmClient, adapt_messages, image_part, open_llm, text_part
from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer, ServerBehaviour
from robodojo.agents.llm.settings import LlmSettings, load_llm_settings, parse_llm_settings
from robodojo.agents.llm.types import LlmError, Usage
from robodojo.config import CONFIG_DIR, load_yaml
from robodojo.errors import ConfigError, UnknownNameError

MOVE_EEF = {
    "type": "function",
    "function": {
        "name": "move_eef",
        "description": "move the grasp points",
        "parameters": {"type": "object", "properties": {"targets": {"type": "object"}, "note": {"type": "string"}}},
    },
}
TOOL_REPLY = {"content": None, "tool_calls": [{"name": "move_eef", "arguments": {"targets": {"left_z": 0.9}}}]}
TEXT_REPLY = {"content": "done"}
USER = [{"role": "user", "content": "lift the left arm"}]


def fast_settings(**overrides: Any) -> LlmSettings:
    values = {"timeout_s": 0.4, "max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05}
    values.update(overrides)
    return dataclasses.replace(load_llm_settings(), **values)


def profile(name: str, **flags: Any):
    return dataclasses.replace(load_llm_settings().profile(name), **flags)


@contextmanager
def serve(replies: list[dict[str, Any]], **behaviour: Any) -> Iterator[ReplayServer]:
    script = ReplayScript.parse({"replies": replies, "behaviour": behaviour})
    with ReplayServer(script) as server:
        yield server


def client_for(server: ReplayServer, prof: Any = "replay", model: str = "replay", **settings: Any) -> LlmClient:
    return LlmClient(model, server.url, "test-key", prof, fast_settings(**settings))


def history_with_tool_result(llm: LlmClient) -> list[dict[str, Any]]:
    """user -> assistant tool call (content null) -> tool result -> user: the move_eef agent's second turn."""
    first = llm.chat(USER, [MOVE_EEF])
    call = first.tool_calls[0]
    return [
        *USER,
        first.assistant_message(),
        {"role": "tool", "tool_call_id": call.id, "content": "Accepted: playing 12 waypoints (0.48s)."},
        {"role": "user", "content": "left 3 mm and 0.0 deg away"},
    ]


# -- basics ------------------------------------------------------------------------------------------------------------


def test_tool_call_and_text_reply_round_trip():
    with serve([TOOL_REPLY, TEXT_REPLY]) as server:
        llm = client_for(server)
        reply = llm.chat(USER, [MOVE_EEF])
        assert reply.content is None and reply.finish_reason == "tool_calls" and reply.attempts == 1
        (call,) = reply.tool_calls
        assert call.name == "move_eef" and json.loads(call.arguments) == {"targets": {"left_z": 0.9}}
        assert call.id.startswith("call_")
        assert reply.raw["choices"][0]["message"]["tool_calls"][0]["id"] == call.id
        body = server.requests[0]
        assert body["tool_choice"] == "required" and body["tools"] == [MOVE_EEF] and body["model"] == "replay"
        reply2 = llm.chat([*USER, reply.assistant_message()], [])
        assert reply2.content == "done" and reply2.tool_calls == () and reply2.finish_reason == "stop"
        assert "tools" not in server.requests[1] and "tool_choice" not in server.requests[1]
        assert server.requests[1]["messages"][1]["content"] is None  # openai-like profile keeps null
        assert llm.calls == 2


def test_models_endpoint_and_exhausted_script_is_a_clean_error():
    with serve([TEXT_REPLY]) as server:
        with urllib.request.urlopen(server.url + "/models", timeout=2) as answer:
            assert json.load(answer)["data"][0]["id"] == "replay"
        llm = client_for(server)
        llm.chat(USER, [])
        with pytest.raises(LlmError, match="replay script exhausted") as info:
            llm.chat(USER, [])
        assert info.value.attempts == 1  # 400 is not retried
        assert llm.calls == 1


# -- retries -----------------------------------------------------------------------------------------------------------


def test_retries_on_429_502_503_timeout_and_disconnect_then_succeeds(caplog):
    with serve([TOOL_REPLY], fail_with=[429, 502, 503, "timeout", "disconnect"], hang_s=2.0) as server:
        llm = client_for(server, max_retries=5, timeout_s=0.3)
        with caplog.at_level(logging.WARNING, logger="robodojo.agents.llm.client"):
            reply = llm.chat(USER, [MOVE_EEF])
        assert reply.attempts == 6 and len(server.requests) == 6
        assert llm.calls == 1 and llm.attempts_total == 6
        retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
        assert len(retries) == 5
        for fragment, line in zip(
            ["HTTP 429", "HTTP 502", "HTTP 503", "timed out", "connection error"], retries, strict=True
        ):
            assert fragment in line
        assert reply.latency_s >= 0.3  # the timed-out attempt counts
        log_ = reply.attempt_log
        assert [a.status for a in log_] == [429, 502, 503, None, None, None]
        assert [a.error is None for a in log_] == [False] * 5 + [True]
        assert 0.3 <= log_[3].latency_s < 1.0 and reply.latency_s >= sum(a.latency_s for a in log_)


def test_retry_after_header_is_honoured():
    with serve([TEXT_REPLY], fail_with=[429], retry_after_s=0.25) as server:
        llm = client_for(server, backoff_max_s=1.0)
        t0 = time.monotonic()
        assert llm.chat(USER, []).attempts == 2
        assert time.monotonic() - t0 >= 0.25


def test_gives_up_after_the_bound_with_llm_error():
    with serve([TEXT_REPLY], fail_with=[503] * 10) as server:
        llm = client_for(server, max_retries=2)
        with pytest.raises(LlmError, match=r"failed after 3 attempts.*HTTP 503: injected server error 503") as info:
            llm.chat(USER, [])
        assert info.value.attempts == 3 and len(server.requests) == 3
        assert llm.calls == 0 and llm.usage_total == Usage()


def test_gives_up_on_repeated_timeouts():
    with serve([TEXT_REPLY], fail_with=["timeout"] * 5, hang_s=2.0) as server:
        llm = client_for(server, max_retries=1, timeout_s=0.25)
        t0 = time.monotonic()
        with pytest.raises(LlmError, match="timed out") as info:
            llm.chat(USER, [])
        assert info.value.attempts == 2 and time.monotonic() - t0 < 1.5


def test_unreachable_server_gives_up_cleanly():
    with serve([TEXT_REPLY]) as server:
        url = server.url
    llm = LlmClient("replay", url, "k", "replay", fast_settings(max_retries=1))
    with pytest.raises(LlmError, match="connection error") as info:
        llm.chat(USER, [])
    assert info.value.attempts == 2


# -- usage and cost ----------------------------------------------------------------------------------------------------


def test_usage_totals_and_cost_from_the_price_table():
    replies = [
        {**TOOL_REPLY, "usage": {"prompt_tokens": 2000, "completion_tokens": 50, "cached_tokens": 1024}},
        {**TEXT_REPLY, "usage": {"prompt_tokens": 3000, "completion_tokens": 20, "cached_tokens": 2048}},
        {**TEXT_REPLY, "usage": {"prompt_tokens": 100, "completion_tokens": 5}},
    ]
    with serve(replies) as server:
        llm = client_for(server, model="gpt-4o-mini")
        usages = [llm.chat(USER, [MOVE_EEF]).usage for _ in replies]
    price = load_llm_settings().prices["gpt-4o-mini"]
    assert usages[0].input_tokens == 2000 and usages[0].cached_input_tokens == 1024 and usages[0].output_tokens == 50
    assert usages[0].cost_usd == pytest.approx(
        (976 * price.input + 1024 * price.cached_input + 50 * price.output) / 1e6
    )
    total = llm.usage_total
    assert (total.input_tokens, total.cached_input_tokens, total.output_tokens) == (5100, 3072, 75)
    assert total.cost_usd == pytest.approx(sum(u.cost_usd for u in usages)) and total.cost_usd > 0
    assert llm.calls == 3


def test_estimated_usage_emulates_prefix_caching():
    system = {"role": "system", "content": "You operate a dual-arm robot. " * 300}  # ~9000 chars, ~2250 tokens
    with serve([TEXT_REPLY, TEXT_REPLY]) as server:
        llm = client_for(server)
        first = llm.chat([system, *USER], [MOVE_EEF]).usage
        second = llm.chat([system, *USER, {"role": "assistant", "content": "ok"}, *USER], [MOVE_EEF]).usage
    assert first.input_tokens > 2000 and first.cached_input_tokens == 0
    assert second.cached_input_tokens >= 1024 and second.cached_input_tokens % 128 == 0
    assert second.cached_input_tokens < second.input_tokens


def test_prices_match_by_prefix_and_local_profiles_are_free():
    s = load_llm_settings()
    assert s.price_for("gpt-4o-mini-2024-07-18") == s.prices["gpt-4o-mini"]
    assert s.price_for("gpt-4o-2024-08-06") == s.prices["gpt-4o"]
    assert s.price_for("qwen2.5-vl-7b", s.profile("vllm")) == s.prices["local"]
    assert s.price_for("qwen2.5-vl-7b", s.profile("openai")) is None


def test_unknown_model_costs_zero_and_is_logged_once(caplog):
    with serve([TEXT_REPLY, TEXT_REPLY]) as server:
        llm = client_for(server, prof=profile("replay", default_price=None), model="mystery-model-x1")
        with caplog.at_level(logging.WARNING, logger="robodojo.agents.llm.client"):
            assert llm.chat(USER, []).usage.cost_usd == 0.0
            assert llm.chat(USER, []).usage.cost_usd == 0.0
    assert sum("no price for LLM model 'mystery-model-x1'" in r.getMessage() for r in caplog.records) == 1
    assert llm.usage_total.input_tokens > 0


# -- server differences: each quirk with the matching profile, and the mismatch where it shows the point ---------------


def test_null_assistant_content_rejected_by_vllm_like_server():
    with serve([TOOL_REPLY, TEXT_REPLY], reject_null_assistant_content=True) as server:
        llm = client_for(server, prof="vllm")
        reply = llm.chat(history_with_tool_result(llm), [MOVE_EEF])
        assert reply.content == "done"
        assert server.requests[1]["messages"][1]["content"] == ""
    with serve([TOOL_REPLY, TEXT_REPLY], reject_null_assistant_content=True) as server:
        llm = client_for(server, prof="openai", max_retries=3)  # sends null: a 500 that retrying cannot fix
        with pytest.raises(LlmError, match="HTTP 500: chat template error") as info:
            llm.chat(history_with_tool_result(llm), [MOVE_EEF])
        assert info.value.attempts == 1 and len(server.requests) == 2  # not retried


def test_tool_role_rejected_is_folded_into_user_messages():
    folding = profile("replay", tool_role_supported=False)
    with serve([TOOL_REPLY, TEXT_REPLY], reject_tool_role=True) as server:
        llm = client_for(server, prof=folding)
        history = history_with_tool_result(llm)
        call_id = history[1]["tool_calls"][0]["id"]
        assert llm.chat(history, [MOVE_EEF]).content == "done"
        sent = server.requests[1]["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]  # result + observation merged: alternation
        assert sent[2]["content"].startswith(f"Result of tool call {call_id} (move_eef): Accepted: playing 12")
        assert sent[2]["content"].endswith("left 3 mm and 0.0 deg away")
        assert history[2]["role"] == "tool"  # the caller's history is untouched
    with serve([TOOL_REPLY, TEXT_REPLY], reject_tool_role=True) as server:
        llm = client_for(server, prof="replay")
        with pytest.raises(LlmError, match=r"HTTP 400.*roles must alternate") as info:
            llm.chat(history_with_tool_result(llm), [MOVE_EEF])
        assert info.value.attempts == 1


def test_tool_role_silently_dropped_is_folded_so_the_model_sees_the_result():
    with serve([TOOL_REPLY, TEXT_REPLY], drop_tool_role=True) as server:
        llm = client_for(server, prof=profile("replay", tool_role_supported=False))
        llm.chat(history_with_tool_result(llm), [MOVE_EEF])
        assert "Accepted: playing 12 waypoints" in server.prompts[-1]
    with serve([TOOL_REPLY, TEXT_REPLY], drop_tool_role=True) as server:
        llm = client_for(server, prof="replay")  # no error at all: the result just vanishes from the prompt
        assert llm.chat(history_with_tool_result(llm), [MOVE_EEF]).content == "done"
        assert "Accepted" not in server.prompts[-1]


def test_folding_keeps_images_of_the_following_observation():
    folding = profile("replay", tool_role_supported=False)
    image = image_part(np.zeros((8, 8, 3), np.uint8))
    history = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [text_part("ok")]},
        {"role": "user", "content": [text_part("obs"), image]},
    ]
    sent = adapt_messages(history, folding)
    assert sent[2]["content"] == [text_part("Result of tool call c1 (?): ok"), text_part("obs"), image]


def test_tool_call_arguments_as_object_are_normalised_to_json_text():
    replies = [{"tool_calls": [{"name": "move_eef", "arguments": {"targets": {"right_x": 0.3}}}]}]
    replies.append({"tool_calls": [{"name": "move_eef", "arguments": '{"targets": {"right_x": '}]})  # malformed
    with serve(replies, arguments_as_object=True) as server:
        llm = client_for(server, prof="ollama")
        reply = llm.chat(USER, [MOVE_EEF])
        assert isinstance(reply.raw["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], dict)
        assert json.loads(reply.tool_calls[0].arguments) == {"targets": {"right_x": 0.3}}
        assert llm.chat(USER, [MOVE_EEF]).tool_calls[0].arguments == '{"targets": {"right_x": '  # passed on as is


def test_missing_usage_and_missing_cached_tokens_count_as_zero():
    with serve([TEXT_REPLY], omit_usage=True) as server:
        assert client_for(server, prof="llamacpp").chat(USER, []).usage == Usage()
    reply = {**TEXT_REPLY, "usage": {"prompt_tokens": 5000, "completion_tokens": 9, "cached_tokens": 4096}}
    with serve([reply], omit_cached_tokens=True) as server:
        usage = client_for(server, prof="vllm").chat(USER, []).usage
        assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (5000, 0, 9)


def test_missing_tool_call_ids_are_generated_and_stop_becomes_tool_calls():
    call = {"name": "move_eef", "arguments": {}}
    with serve([{"content": "", "tool_calls": [call, call]}], omit_tool_call_ids=True, finish_reason_stop=True) as s:
        reply = client_for(s, prof="ollama").chat(USER, [MOVE_EEF])
    ids = [c.id for c in reply.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert reply.finish_reason == "tool_calls" and reply.content is None
    assert [c["id"] for c in reply.assistant_message()["tool_calls"]] == ids


def test_tool_choice_is_omitted_for_servers_without_it():
    with serve([TOOL_REPLY], reject_params=["tool_choice", "parallel_tool_calls"]) as server:
        client_for(server, prof="ollama").chat(USER, [MOVE_EEF], parallel_tool_calls=False)
        assert "tool_choice" not in server.requests[0] and "parallel_tool_calls" not in server.requests[0]
    with (
        serve([TOOL_REPLY], reject_params=["tool_choice"]) as server,
        pytest.raises(LlmError, match="HTTP 400: Unsupported parameter: 'tool_choice'"),
    ):
        client_for(server, prof="replay").chat(USER, [MOVE_EEF])


def test_parallel_tool_calls_and_tool_choice_fallback():
    with serve([TOOL_REPLY, TOOL_REPLY]) as server:
        client_for(server, prof="vllm").chat(USER, [MOVE_EEF], parallel_tool_calls=False)
        client_for(server, prof=profile("vllm", tool_choice_required_ok=False)).chat(USER, [MOVE_EEF])
        assert server.requests[0]["parallel_tool_calls"] is False and server.requests[0]["tool_choice"] == "required"
        assert server.requests[1]["tool_choice"] == "auto" and "parallel_tool_calls" not in server.requests[1]


def test_max_tokens_parameter_name_follows_the_profile():
    with serve([TEXT_REPLY], reject_params=["max_tokens"]) as server:  # like OpenAI's reasoning models
        client_for(server, prof="openai", max_output_tokens=256).chat(USER, [])
        assert server.requests[0]["max_completion_tokens"] == 256
    with serve([TEXT_REPLY], reject_params=["max_completion_tokens"]) as server:  # like an older local server
        client_for(server, prof="vllm", max_output_tokens=256).chat(USER, [])
        assert server.requests[0]["max_tokens"] == 256


def test_servers_that_generate_until_their_context_is_full_get_an_answer_length_from_their_profile():
    settings = load_llm_settings()
    for name in ("llamacpp", "llamacpppy"):  # llama.cpp and llama-cpp-python: unlimited unless max_tokens is sent
        assert settings.profile(name).max_output_tokens == 2048
    assert settings.profile("vllm").max_output_tokens is None and settings.max_output_tokens is None
    with serve([TEXT_REPLY, TEXT_REPLY, TEXT_REPLY]) as server:
        llamacpppy = dataclasses.replace(settings.profile("llamacpppy"), name="llamacpppy")
        client = LlmClient("m", server.url, None, llamacpppy, settings)
        client.chat(USER, [])
        assert server.requests[-1]["max_tokens"] == 2048 and client.describe()["max_output_tokens"] == 2048
        flagged = LlmClient("m", server.url, None, llamacpppy, dataclasses.replace(settings, max_output_tokens=300))
        flagged.chat(USER, [])  # --max-output-tokens wins over the profile
        assert server.requests[-1]["max_tokens"] == 300 and flagged.max_output_tokens == 300
        LlmClient("m", server.url, None, settings.profile("vllm"), settings).chat(USER, [])
        assert "max_tokens" not in server.requests[-1]  # the server's own default


def test_agents_keep_the_answer_length_free_in_a_known_context():
    from robodojo.episodes.factory import make_agent

    cell = make_agent("code_cell", context_tokens=8192, reply_reserve_tokens=2048)
    move = make_agent("move_eef", context_tokens=8192, reply_reserve_tokens=2048)
    assert cell.context.history_limit_tokens == move.config.context.history_limit_tokens == 8192 - 2048
    assert make_agent("code_cell", context_tokens=8192).context.reply_reserve_tokens == 1024  # no answer length known


# -- images ------------------------------------------------------------------------------------------------------------


def test_images_are_sent_as_base64_jpeg_parts():
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[..., 0] = 255  # pure red in RGB
    part = image_part(rgb, quality=90)
    url = part["image_url"]["url"]
    assert part["type"] == "image_url" and url.startswith("data:image/jpeg;base64,")
    bgr = cv2.imdecode(np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    assert bgr.shape == (48, 64, 3)
    assert bgr[..., 2].mean() > 240 and bgr[..., 0].mean() < 15  # red stays red (RGB -> BGR done right)
    with serve([TEXT_REPLY]) as server:
        message = {"role": "user", "content": [text_part("what do you see?"), part]}
        usage = client_for(server).chat([message], []).usage
        assert server.requests[0]["messages"][0]["content"][1] == part
        assert usage.input_tokens >= 85
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        image_part(np.zeros((4, 4), np.uint8))


# -- open_llm, profiles, keys ------------------------------------------------------------------------------------------


def test_open_llm_replay_end_to_end(tmp_path):
    script = tmp_path / "replies.yaml"
    script.write_text(
        "model: replay-test\n"
        "behaviour: {fail_with: [503]}\n"
        "replies:\n"
        "  - tool_calls: [{name: move_eef, arguments: {targets: {left_z: 0.9}}, id: call_a}]\n"
        "  - content: done\n"
    )
    # A generous timeout: this checks the retry after a 503; a reply slower than 0.4 s on a loaded machine would be
    # retried as well and use up the script (seen under make test beside another suite).
    with open_llm(f"replay:{script}", settings=fast_settings(timeout_s=30.0)) as llm:
        assert llm.profile.name == "replay" and llm.base_url.startswith("http://127.0.0.1:")
        server = llm.replay_server
        first = llm.chat(USER, [MOVE_EEF])
        assert first.attempts == 2 and first.tool_calls[0].id == "call_a" and first.model == "replay-test"
        assert llm.chat([*USER, first.assistant_message()], []).content == "done"
        assert server is not None and server.replies_left == 0
    with pytest.raises(RuntimeError):
        _ = server.url  # stopped on exit


def test_open_llm_json_script(tmp_path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"content": "hi"}]))
    with open_llm(f"replay:{script}") as llm:
        assert llm.chat(USER, []).content == "hi"


@pytest.mark.parametrize("spec", ["", "gpt-4o", "mistral:large", "openai:", "replay:"])
def test_open_llm_bad_specs(spec):
    with (
        pytest.raises(ConfigError, match=r"replay:FILE, openai:MODEL, vllm:MODEL, ollama:MODEL, llamacpp:MODEL"),
        open_llm(spec),
    ):
        pass


def test_open_llm_local_profiles_and_base_url_overrides(monkeypatch):
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    with open_llm("vllm:Qwen/Qwen2.5-VL-7B-Instruct") as llm:
        assert llm.base_url == "http://localhost:8000/v1" and llm.model == "Qwen/Qwen2.5-VL-7B-Instruct"
    with open_llm("ollama:qwen2.5vl", base_url="http://gpu-box:11434/v1") as llm:
        assert llm.base_url == "http://gpu-box:11434/v1" and llm.profile.name == "ollama"
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:9999/v1")
    with open_llm("llamacpp:any") as llm:
        assert llm.base_url == "http://127.0.0.1:9999/v1" and llm.price == load_llm_settings().prices["local"]


def test_openai_profile_needs_a_key_and_reads_base_url_from_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LlmClient("gpt-4o")
    with serve([TEXT_REPLY]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        with open_llm("openai:gpt-4.1-mini", settings=fast_settings()) as llm:
            reply = llm.chat(USER, [])
        assert reply.usage.cost_usd > 0 and llm.base_url == server.url
    with pytest.raises(UnknownNameError, match="LLM server profile 'nope'"):
        LlmClient("m", profile="nope")


# -- script and config validation --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[]", "no replies"),
        ("replies: []", r"\.replies: no replies"),
        ("- {}", r"\[0\]: a reply needs content or tool_calls"),
        ("- {content: hi, tools: []}", r"\[0\]: unknown key\(s\) tools; valid: content, tool_calls"),
        ("- {tool_calls: [{arguments: {}}]}", r"\[0\]\.tool_calls\[0\]\.name: expected a non-empty string"),
        ("- {tool_calls: [{name: f, arguments: 3}]}", r"tool_calls\[0\]\.arguments: expected an object or a string"),
        ("- {content: 7}", r"\[0\]\.content: expected a string or null"),
        ("- {content: a, usage: {prompt_tokens: -1}}", r"usage\.prompt_tokens: expected an integer >= 0"),
        ("{replies: [{content: a}], behaviour: {explode: true}}", r"behaviour: unknown behaviour flag\(s\) explode"),
        ("{replies: [{content: a}], behaviour: {fail_with: [boom]}}", r"fail_with: 'boom' is not a failure"),
        ("{replies: [{content: a}], behaviour: {omit_usage: 1}}", r"omit_usage: expected true or false"),
        ("{replies: [{content: a}], extra: 1}", r"unknown key\(s\) extra"),
        ("{content: a}", "missing key 'replies'"),
        ("- [unclosed", "not valid YAML or JSON"),
    ],
)
def test_bad_script_files(tmp_path, text, error):
    path = tmp_path / "script.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error) as info:
        ReplayScript.load(path)
    assert str(path) in str(info.value)


def test_missing_script_file():
    with pytest.raises(ConfigError, match="replay script not found"):
        ReplayScript.load(Path("/nonexistent/replies.yaml"))


def test_behaviour_defaults_and_profiles_in_config():
    assert ServerBehaviour.parse(None, "x") == ServerBehaviour()
    s = load_llm_settings()
    assert set(s.profiles) >= {"openai", "vllm", "ollama", "llamacpp", "replay"}
    assert not s.profile("vllm").assistant_content_null_ok and s.profile("openai").api_key_required
    assert s.prices["local"].cost(10**6, 0, 10**6) == 0.0


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("defaults", "timeout_s"), -1, r"defaults\.timeout_s: must be > 0"),
        (("defaults", "jpeg_quality"), 101, r"defaults\.jpeg_quality: must be in 1\.\.100"),
        (("profiles", "vllm", "max_tokens_param"), "n_predict", r"profiles\.vllm\.max_tokens_param: expected one of"),
        (("profiles", "ollama", "default_price"), "cheap", r"profiles\.ollama\.default_price: 'cheap' is not in"),
        (("profiles", "openai", "tool_role_supported"), "yes", r"profiles\.openai\.tool_role_supported: expected true"),
        (("profiles", "openai", "supports_tools"), True, r"profiles\.openai: unknown key\(s\) supports_tools"),
        (("prices", "gpt-4o", "input"), "cheap", r"prices\.gpt-4o\.input: expected a finite number"),
    ],
)
def test_bad_llm_config(path, value, error):
    data = load_yaml(CONFIG_DIR / "llm.yaml")
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError, match=error):
        parse_llm_settings(data, "llm.yaml")


def test_local_profile_without_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="'replay' is for a local server: pass base_url"):
        LlmClient("replay", profile="replay")


def test_replay_script_paths_fall_back_to_the_shipped_examples(tmp_path, monkeypatch):
    """ros2 launch runs nodes from any directory; the default llm:=replay:examples/... must still load."""
    from robodojo.agents.llm.replay_server import ReplayScript

    monkeypatch.chdir(tmp_path)
    script = ReplayScript.load("examples/replay/general_pickup_seed0.yaml")
    assert script.replies and script.replies[0].tool_calls[0].name == "move_eef"
    with pytest.raises(ConfigError, match=r"replay script not found: examples/nope\.yaml"):
        ReplayScript.load("examples/nope.yaml")


def test_cell_scripts_include_shared_helpers_as_sent_code(tmp_path):
    from robodojo.agents.llm.replay_server import cells_script

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.py").write_text('"""Docs for readers."""\n\n\ndef twice(x):\n    return 2 * x\n')
    replies = cells_script("# %% setup\n# include: lib/helpers.py\ny = twice(2)\n# %%\ny\n", tmp_path)
    codes = [r["tool_calls"][0]["arguments"]["code"] for r in replies[:-1]]
    assert codes == ["def twice(x):\n    return 2 * x\ny = twice(2)", "y"]
    assert "Docs for readers" not in codes[0]
    with pytest.raises(ConfigError, match="included file not found"):
        cells_script("# %%\n# include: lib/nope.py\n", tmp_path)
    (tmp_path / "lib" / "cells.py").write_text("# %%\nx = 1\n")
    with pytest.raises(ConfigError, match="may not contain"):
        cells_script("# %%\n# include: lib/cells.py\n", tmp_path)


# -- issue 13: tool_choice by profile, failures that say why, user profiles ------------------------------------------


def test_llamacpppy_profile_sends_auto_where_required_500s_and_never_omits_tool_choice():
    """llama-cpp-python (as emulated): "required" -> HTTP 500 every time, no tool_choice -> the tools are ignored."""
    quirks = {"reject_tool_choice_required": True, "tools_need_tool_choice": True}
    with serve([TOOL_REPLY], **quirks) as server:
        reply = client_for(server, prof="llamacpppy").chat(USER, [MOVE_EEF], tool_choice="required")
        assert server.requests[0]["tool_choice"] == "auto" and reply.tool_calls[0].name == "move_eef"
        assert reply.request["tool_choice"] == "auto" and reply.request["tools"] == [MOVE_EEF]
    with serve([TOOL_REPLY], **quirks) as server:
        llm = client_for(server, prof="vllm", max_retries=5)
        t0 = time.monotonic()
        with pytest.raises(LlmError, match=r"HTTP 500.*try --tool-choice auto, or a profile .*llamacpppy") as info:
            llm.chat(USER, [MOVE_EEF])
        assert info.value.attempts == 1 and len(server.requests) == 1 and time.monotonic() - t0 < 1.0
        assert info.value.request["tool_choice"] == "required" and info.value.attempt_log[0].status == 500
    with serve([TOOL_REPLY], **quirks) as server:  # what omitting it (ollama's setting) would do: no tool call
        reply = client_for(server, prof="ollama").chat(USER, [MOVE_EEF])
        assert "tool_choice" not in server.requests[0] and reply.tool_calls == () and "move_eef" in reply.content


def test_tool_choice_override_is_sent_as_given():
    with serve([TOOL_REPLY] * 3) as server:
        settings = fast_settings()
        LlmClient("replay", server.url, "k", "ollama", settings, tool_choice="required").chat(USER, [MOVE_EEF])
        LlmClient("replay", server.url, "k", "llamacpppy", settings, tool_choice="none").chat(USER, [MOVE_EEF])
        LlmClient("replay", server.url, "k", "llamacpppy", settings, tool_choice="profile").chat(USER, [MOVE_EEF])
        assert [r["tool_choice"] for r in server.requests] == ["required", "none", "auto"]
    with pytest.raises(ConfigError, match="tool_choice must be one of auto, required, none, profile"):
        LlmClient("replay", "http://127.0.0.1:1/v1", "k", "replay", settings, tool_choice="any")


def test_404_says_the_base_url_may_miss_v1():
    with serve([TEXT_REPLY]) as server:
        base = server.url.removesuffix("/v1") + "/api"
        llm = LlmClient("replay", base, "k", "replay", fast_settings(max_retries=3))
        with pytest.raises(LlmError, match=r"HTTP 404.*is the base URL missing /v1\?") as info:
            llm.chat(USER, [])
        assert info.value.attempts == 1


def test_a_silent_server_is_reported_early_and_the_call_deadline_bounds_the_retries(caplog):
    with serve([TEXT_REPLY], fail_with=["timeout"] * 10, hang_s=5.0) as server:
        llm = client_for(server, max_retries=5, timeout_s=3.0, silence_warning_s=0.2, call_deadline_s=0.8)
        t0 = time.monotonic()
        with (
            caplog.at_level(logging.WARNING, logger="robodojo.agents.llm.client"),
            pytest.raises(LlmError, match=r"gave up at the call deadline \(0\.8 s\) after 1 attempt") as info,
        ):
            llm.chat(USER, [])
        elapsed = time.monotonic() - t0
    assert 0.7 < elapsed < 1.5  # not timeout_s (3 s), let alone 6 x 3 s
    assert any("no answer after 0.2 s (attempt 1/6" in r.getMessage() for r in caplog.records)
    assert info.value.attempt_log[0].error == "timed out"


def test_user_profiles_are_merged_over_the_package_file(tmp_path, monkeypatch):
    from robodojo.agents.llm.settings import load_llm_settings_layers, user_llm_config_path

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_llm_config_path() == tmp_path / "xdg" / "robodojo" / "llm.yaml"
    user_llm_config_path().parent.mkdir(parents=True)
    user_llm_config_path().write_text("profiles:\n  vllm: {tool_choice_required_ok: false}\n")
    mybox = dict(load_yaml(CONFIG_DIR / "llm.yaml")["profiles"]["llamacpp"], default_base_url="http://box:1/v1")
    extra = tmp_path / "extra.yaml"
    extra.write_text(json.dumps({"defaults": {"timeout_s": 7}, "profiles": {"mybox": mybox}}))
    s = load_llm_settings_layers(extra)
    assert not s.profile("vllm").tool_choice_required_ok and s.profile("vllm").default_base_url.endswith(":8000/v1")
    assert s.profile("mybox").default_base_url == "http://box:1/v1" and s.timeout_s == 7
    assert load_llm_settings_layers(None, user_file=False).profile("vllm").tool_choice_required_ok
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles:\n  half: {default_base_url: 'http://x/v1'}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml\.profiles\.half: missing key"):
        load_llm_settings_layers(bad)
    bad.write_text("profile:\n  vllm: {}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown key\(s\) profile; valid: defaults, prices, profiles"):
        load_llm_settings_layers(bad)


def test_a_context_error_is_named_whatever_its_status_and_before_the_tool_choice_hint():
    from robodojo.agents.llm.client import _Attempt, _hint
    from robodojo.agents.llm.server_errors import context_length_in_error, is_context_error

    # llama-server (llama-cpp-python 0.3.36's vendored llama.cpp), slots sharing the cache: HTTP 500
    assert is_context_error(500, "HTTP 500: Context size has been exceeded.")
    assert is_context_error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000")
    assert not is_context_error(500, "AssertionError: tool_choice 'required' is not supported")
    assert not is_context_error(None, "context size")  # no HTTP answer is not the server's word on it
    assert context_length_in_error({"error": {"n_ctx": 4096}}, "") == 4096
    assert context_length_in_error(None, "maximum context length is 8192 tokens") == 8192
    with serve([TEXT_REPLY], fail_with=[]) as server:
        client = client_for(server, prof="llamacpp")
        request = client.build_request(USER, [MOVE_EEF], tool_choice="required")
    full = _Attempt("HTTP 500: Context size has been exceeded.", False, status=500)
    hint = _hint(full, request, None, client.settings)
    assert "does not fit its context: pass --context-tokens N" in hint and "tool_choice" not in hint
    other = _hint(_Attempt("HTTP 500: template error", False, status=500), request, None, client.settings)
    assert 'may not support tool_choice "required"' in other
