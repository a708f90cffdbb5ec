"""Reasoning effort: what each profile sends for it (the real openai client against the replay server, which refuses
the forms its emulated server would), the reasoning tokens in usage and cost, the settings' validation, the command
line and `robodojo doctor`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from robodojo.agents.llm.client import LlmClient, parse_usage
from robodojo.agents.llm.doctor import diagnose, format_report
from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer
from robodojo.agents.llm.settings import load_llm_settings, parse_llm_settings, run_llm_settings
from robodojo.agents.llm.types import LlmError
from robodojo.config import CONFIG_DIR, load_yaml
from robodojo.errors import ConfigError

TOOL = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object", "properties": {}}}}
TOOL_REPLY = {"content": None, "tool_calls": [{"name": "finish", "arguments": {}}]}
USER = [{"role": "user", "content": "pick up the cube"}]
VLLM_EFFORTS = ["low", "medium", "high"]  # vLLM's ChatCompletionRequest.reasoning_effort Literal


@contextmanager
def serve(replies: list[dict[str, Any]], **behaviour: Any) -> Iterator[ReplayServer]:
    with ReplayServer(ReplayScript.parse({"replies": replies, "behaviour": behaviour})) as server:
        yield server


def client(server: ReplayServer, profile: str, effort: str | None, model: str = "m") -> LlmClient:
    settings = dataclasses.replace(load_llm_settings(), reasoning_effort=effort, max_retries=0)
    return LlmClient(model, server.url, "test-key", profile, settings)


@pytest.mark.parametrize(
    ("profile", "effort", "behaviour", "expected"),
    [
        ("openai", "minimal", {}, {"reasoning_effort": "minimal"}),
        ("gemini", "medium", {}, {"reasoning_effort": "medium"}),
        # vLLM takes low/medium/high only: minimal is sent as low, which the emulated vLLM accepts
        ("vllm", "minimal", {"reasoning_efforts": VLLM_EFFORTS}, {"reasoning_effort": "low"}),
        ("vllm", "high", {"reasoning_efforts": VLLM_EFFORTS}, {"reasoning_effort": "high"}),
        # Anthropic: a thinking budget, counted inside max_tokens (4096 answer + 16384), tool_choice auto
        (
            "anthropic",
            "high",
            {},
            {
                "thinking": {"type": "enabled", "budget_tokens": 16384},
                "max_tokens": 4096 + 16384,
                "tool_choice": "auto",
            },
        ),
        ("anthropic", "minimal", {}, {"thinking": {"type": "disabled"}, "max_tokens": 4096, "tool_choice": "required"}),
    ],
)
def test_each_profile_sends_the_effort_as_its_server_takes_it(profile, effort, behaviour, expected):
    with serve([TOOL_REPLY], **behaviour) as server:
        llm = client(server, profile, effort)
        reply = llm.chat(USER, [TOOL])  # the emulated server refuses a form it would not take
        assert reply.tool_calls[0].name == "finish"
        body = server.requests[0]
        for key, value in expected.items():
            assert body[key] == value, key
        others = {"reasoning_effort", "thinking"} - set(expected)
        assert not others & set(body), "only the profile's own field is sent"
        assert llm.describe()["reasoning_effort"] == effort


def test_no_effort_sends_nothing_and_an_effort_a_server_refuses_is_a_clean_error():
    with serve([TOOL_REPLY, TOOL_REPLY], reasoning_efforts=VLLM_EFFORTS) as server:
        client(server, "vllm", None).chat(USER, [TOOL])
        assert "reasoning_effort" not in server.requests[0] and "thinking" not in server.requests[0]
        with pytest.raises(LlmError, match="Invalid value for 'reasoning_effort': 'minimal'"):
            client(server, "replay", "minimal").chat(USER, [TOOL])  # the OpenAI-like profile sends minimal as it is


def test_a_profile_without_a_reasoning_control_refuses_an_effort_before_any_call():
    with serve([TOOL_REPLY]) as server:
        with pytest.raises(ConfigError, match="'llamacpp' has no reasoning-effort control"):
            client(server, "llamacpp", "high")
        assert server.requests == []


def test_reasoning_tokens_are_counted_in_usage_and_cost():
    with serve([TOOL_REPLY, TOOL_REPLY, TOOL_REPLY], reasoning_tokens=700) as server:
        high = client(server, "replay", "high", model="gpt-5-mini")
        reply = high.chat(USER, [TOOL])
        usage = reply.usage
        assert usage.reasoning_tokens == 700 and usage.output_tokens > 700  # inside the output, as OpenAI counts
        price = load_llm_settings().prices["gpt-5-mini"]
        assert usage.cost_usd == pytest.approx(
            price.cost(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens)
        )
        assert usage.cost_usd > price.cost(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens - 700)
        minimal = client(server, "replay", "minimal", model="gpt-5-mini").chat(USER, [TOOL])
        assert minimal.usage.reasoning_tokens == 0  # no hidden reasoning asked for, none reported
        assert (high.usage_total + minimal.usage).reasoning_tokens == 700
        none = client(server, "replay", None).chat(USER, [TOOL])
        assert none.usage.reasoning_tokens == 0


def test_reasoning_tokens_a_server_reports_beside_its_completion_are_added_to_the_output():
    inside = {
        "usage": {"prompt_tokens": 10, "completion_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 40}}
    }
    beside = {
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 40}}
    }
    assert parse_usage(inside) == (10, 0, 50, 40)
    assert parse_usage(beside) == (10, 0, 45, 40)
    assert parse_usage({"usage": {"prompt_tokens": 3, "completion_tokens": 2}}) == (3, 0, 2, 0)


def _config() -> dict[str, Any]:
    return load_yaml(CONFIG_DIR / "llm.yaml")


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("defaults", "reasoning_effort"), "extreme", r"defaults.reasoning_effort must be one of minimal, low"),
        (("profiles", "openai", "reasoning_effort_param"), "effort", r"reasoning_effort_param: expected one of"),
        (
            ("profiles", "llamacpp", "reasoning_effort"),
            "low",
            r"llamacpp.reasoning_effort: needs reasoning_effort_param",
        ),
        (("profiles", "vllm", "reasoning_effort_values"), {"max": "high"}, r"unknown effort\(s\) max"),
        (("profiles", "anthropic", "reasoning_effort_values"), {"low": 1024}, r"needs a budget for every effort"),
        (
            ("profiles", "anthropic", "reasoning_effort_values"),
            {"minimal": 0, "low": -1, "medium": 2048, "high": 4096},
            r"anthropic.reasoning_effort_values.low: expected a thinking budget",
        ),
        (("defaults", "min_output_tokens"), 0, r"min_output_tokens"),
    ],
)
def test_bad_reasoning_settings_are_named(path, value, error):
    data = _config()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ConfigError, match=error):
        parse_llm_settings(data, "llm.yaml")


def test_the_run_override_is_validated_and_wins():
    assert run_llm_settings(None, reasoning_effort="low").reasoning_effort == "low"
    with pytest.raises(ConfigError, match="--reasoning-effort must be one of"):
        run_llm_settings(None, reasoning_effort="max")


def test_cli_offers_the_effort_where_the_other_llm_options_are(capsys):
    from robodojo.cli import build_parser, llm_settings

    parser = build_parser()
    for command in (
        ["run", "--task", "t", "--llm", "replay:x"],
        ["compare", "--tasks", "t"],
        ["evolve", "--task", "t", "--llm", "x"],
    ):
        args = parser.parse_args([*command, "--reasoning-effort", "high"])
        assert llm_settings(args).reasoning_effort == "high"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--task", "t", "--llm", "replay:x", "--reasoning-effort", "max"])
    assert "invalid choice: 'max'" in capsys.readouterr().err


def test_a_campaign_spec_carries_the_effort_and_validates_it():
    from robodojo.campaigns.spec import campaign_spec_from_dict

    spec = campaign_spec_from_dict(
        {"tasks": ["general_pickup"], "llms": {"r": "replay:x"}, "llm_options": {"reasoning_effort": "low"}}
    )
    assert spec.llm_options["reasoning_effort"] == "low"
    with pytest.raises(ConfigError, match=r"llm_options\.reasoning_effort must be one of"):
        campaign_spec_from_dict(
            {"tasks": ["general_pickup"], "llms": {"r": "replay:x"}, "llm_options": {"reasoning_effort": "hi"}}
        )


def _script(tmp_path: Path, **behaviour: Any) -> str:
    path = tmp_path / "doctor.yaml"
    import yaml

    path.write_text(yaml.safe_dump({"replies": [], "behaviour": {"echo_model": True, **behaviour}}))
    return f"replay:{path}"


def test_doctor_reports_the_effort_in_use_and_whether_the_server_took_it(tmp_path):
    spec = _script(tmp_path, reasoning_tokens=120)
    took = diagnose(spec, timeout_s=5, reasoning_effort="high")
    row = took.check("reasoning effort")
    assert row.status == "ok" and 'high sent as {"reasoning_effort": "high"}' in row.detail
    assert "120 reasoning tokens reported" in row.detail
    assert "--reasoning-effort high" in format_report(took)

    refused = diagnose(_script(tmp_path, reasoning_efforts=VLLM_EFFORTS), timeout_s=5, reasoning_effort="minimal")
    assert refused.check("reasoning effort").status == "FAIL"
    assert any("did not take reasoning effort 'minimal'" in fix for fix in refused.fixes)
    assert "--reasoning-effort" not in format_report(refused).splitlines()[-1]

    unset = diagnose(spec, timeout_s=5)
    assert unset.check("reasoning effort").status == "-" and "none asked for" in unset.check("reasoning effort").detail
