"""`robodojo doctor` against the replay server configured as each kind of server users run."""

from __future__ import annotations

import dataclasses
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import pytest

from robodojo.agents.llm.doctor import Check, DoctorReport, diagnose, format_report, tool_choice_sent
from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer
from robodojo.agents.llm.settings import LlmSettings, load_llm_settings
from robodojo.cli import main


def settings_with(**extra: dict[str, Any]) -> LlmSettings:
    """Local profiles with pinned quirk flags (config/llm.yaml may change), plus ``extra`` ones."""
    base = load_llm_settings()
    template = base.profile("vllm")
    flags = {
        "vllm": {"assistant_content_null_ok": False, "tool_choice_required_ok": True, "supports_tool_choice": True},
        "ollama": {"assistant_content_null_ok": True, "tool_choice_required_ok": False, "supports_tool_choice": False},
        "llamacpp": {"assistant_content_null_ok": False, "tool_choice_required_ok": True, "supports_tool_choice": True},
        "replay": {"assistant_content_null_ok": True, "tool_choice_required_ok": True, "supports_tool_choice": True},
        **extra,
    }
    profiles = {
        name: dataclasses.replace(template, name=name, tool_role_supported=f.pop("tool_role_supported", True), **f)
        for name, f in ((n, dict(v)) for n, v in flags.items())
    }
    return dataclasses.replace(base, profiles=MappingProxyType(profiles))


SETTINGS = settings_with()


@contextmanager
def server(replies: list[dict[str, Any]] | None = None, **behaviour: Any) -> Iterator[ReplayServer]:
    echo = replies is None
    script = ReplayScript.parse(
        {"model": "qwen", "replies": replies or [], "behaviour": {"echo_model": echo, **behaviour}}
    )
    with ReplayServer(script) as s:
        yield s


def doctor(
    spec: str = "llamacpp:qwen", settings: LlmSettings = SETTINGS, url: str | None = None, **behaviour: Any
) -> DoctorReport:
    with server(**behaviour) as s:
        return diagnose(spec, url or s.url, timeout_s=2.0, settings=settings)


def statuses(report: DoctorReport) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}


def test_a_well_behaved_server_keeps_the_named_profile():
    for kind in ("vllm", "ollama", "llamacpp"):
        report = doctor(f"{kind}:qwen")
        assert report.working and report.profile == kind and report.fixes == (), format_report(report)
        assert set(statuses(report).values()) <= {"ok", "-"}
    assert "verdict: working setup: --llm vllm:qwen" in format_report(doctor("vllm:qwen"))


def test_llama_cpp_python_needs_tool_choice_auto_and_no_images():
    behaviour = dict(reject_tool_choice_required=True, tools_need_tool_choice=True, images_as_text=True,
                     context_tokens=8192, context_report="props")  # fmt: skip
    report = doctor(**behaviour)
    s = statuses(report)
    assert (
        s["tools, tool_choice=required"] == "FAIL" and "HTTP 500" in report.check("tools, tool_choice=required").detail
    )
    assert s["tools, tool_choice=auto"] == "ok" and s["tools, no tool_choice"] == "WARN"
    assert s["images"] == "FAIL" and "pasted into the prompt as text" in report.check("images").detail
    assert report.facts.context_tokens == 8192 and "/props" in report.check("context length").detail
    assert report.working and report.profile == "llamacpp"
    assert report.fixes[0] == "use --tool-choice auto" and report.fixes[1].startswith("use --images none")
    assert format_report(report).endswith("--tool-choice auto --images none --context-tokens 8192")
    # a profile that sends "auto" by itself is chosen instead, and the flag is no longer needed
    auto = {"assistant_content_null_ok": False, "tool_choice_required_ok": False, "supports_tool_choice": True}
    report = doctor(settings=settings_with(**{"llama-cpp-python": auto}), **behaviour)
    assert report.profile == "llama-cpp-python" and tool_choice_sent(SETTINGS.profile("ollama")) == "omitted"
    assert not any("tool-choice" in fix for fix in report.fixes) and report.working


def test_tools_only_without_tool_choice_point_to_a_profile_that_omits_it():
    report = doctor("vllm:qwen", reject_params=["tool_choice"])
    assert statuses(report)["tools, tool_choice=auto"] == "FAIL" and report.profile == "ollama" and report.working


def test_null_content_rejected_picks_a_profile_that_sends_empty_content():
    report = doctor("ollama:qwen", reject_null_assistant_content=True)
    assert statuses(report)["null content"] == "FAIL" and "HTTP 500" in report.check("null content").detail
    assert report.profile in ("vllm", "llamacpp") and report.working


@pytest.mark.parametrize(("flag", "word"), [("reject_tool_role", "rejected"), ("drop_tool_role", "dropped")])
def test_tool_role_rejected_or_dropped_needs_a_folding_profile(flag, word):
    report = doctor(**{flag: True})
    assert statuses(report)["tool role"] == "FAIL" and report.facts.tool_role == word
    assert not report.working and any("tool_role_supported: false" in fix for fix in report.fixes)
    assert "no working setup found" in format_report(report)
    folding = {"assistant_content_null_ok": False, "tool_choice_required_ok": True, "supports_tool_choice": True,
               "tool_role_supported": False}  # fmt: skip
    report = doctor(settings=settings_with(folding=folding), **{flag: True})
    assert report.profile == "folding" and report.working


def test_images_rejected_or_overflowing_the_context():
    report = doctor(reject_images=True)
    assert report.facts.images == "rejected" and "image input is not supported" in report.check("images").detail
    assert report.working and any(fix.startswith("use --images none (the server rejects") for fix in report.fixes)
    report = doctor(images_as_text=True, context_tokens=400)
    assert report.facts.images == "context" and report.facts.context_tokens == 400
    assert "prompt gets" in report.check("context length").detail


def test_context_length_from_vllm_models():
    report = doctor("vllm:qwen", context_tokens=32768, context_report="models")
    assert report.check("context length").detail.startswith("32768 tokens (max_model_len")


def test_html_escaping_is_reported():
    report = doctor(html_escape=True)
    assert statuses(report)["html escaping"] == "FAIL" and any("HTML-escapes" in fix for fix in report.fixes)
    assert "echoes" in report.check("html escaping").detail


@pytest.mark.parametrize("escape", [True, False])
def test_html_escaping_is_measured_from_token_counts_when_the_model_does_not_echo(escape):
    # llama-cpp-python 0.3.36's chatml-function-calling template with SmolLM2-135M, which answers anything but the echo
    report = doctor(html_escape=escape, echo_text="<p> I am glad to inform you", token_ratio=1.3)
    check = report.check("html escaping")
    assert check.status == ("FAIL" if escape else "ok") and "... costs +" in check.detail, check.detail
    assert report.facts.escaped is escape


def test_a_context_the_server_states_only_in_its_error_is_measured_by_overflowing_it():
    # llama-cpp-python: no max_model_len, no /props; a prompt beyond n_ctx gets HTTP 400 naming the length
    report = doctor(context_tokens=8192, tools_need_tool_choice=True, reject_tool_choice_required=True)
    assert report.facts.context_tokens == 8192 and "prompt gets" in report.check("context length").detail
    assert "use --context-tokens 8192 (long episodes then leave their oldest turns out)" in report.fixes
    assert doctor().check("context length").status == "-"  # no limit: nothing to measure, said so


def test_a_server_that_cuts_prompts_silently_is_warned_about():
    # Ollama beyond num_ctx (4096 by default on GPUs under 24 GiB since 0.15.5): no error, the prompt is cut
    report = doctor("ollama:qwen", context_tokens=4096, truncate_prompt=True)
    check = report.check("context length")
    assert check.status == "WARN" and check.detail.startswith("4096 tokens (") and "without an error" in check.detail
    assert report.facts.truncates_prompts and any("OLLAMA_CONTEXT_LENGTH" in fix for fix in report.fixes)
    assert not any(fix.startswith("use --context-tokens") for fix in report.fixes)  # raising it comes first


def test_base_url_without_v1():
    with server(v1_only=True) as s:
        root = s.url.removesuffix("/v1")
        report = diagnose("vllm:qwen", root, timeout_s=2.0, settings=SETTINGS)
    assert statuses(report)["reachable"] == "WARN" and report.facts.needs_v1
    assert report.fixes[0] == f"add /v1 to --base-url: --base-url {root}/v1" and report.working
    assert f"--base-url {root}/v1" in format_report(report).splitlines()[-1]


def test_hanging_and_absent_servers_fail_fast():
    report = doctor(delay_s=30)
    assert not report.working and report.facts.timed_out and "no answer within" in report.check("reachable").detail
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    report = diagnose("vllm:qwen", f"http://127.0.0.1:{port}/v1", timeout_s=1.0, settings=SETTINGS)
    assert not report.working and "nothing answers" in report.check("reachable").detail
    assert "start the server" in report.fixes[0]


def test_a_model_that_never_calls_tools():
    with server([{"content": "I cannot do that."}] * 12) as s:
        report = diagnose("llamacpp:qwen", s.url, timeout_s=2.0, settings=SETTINGS)
    assert not report.working and any("never calls tools" in fix for fix in report.fixes)


def test_cli_doctor_end_to_end(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("model: qwen\nbehaviour: {echo_model: true}\nreplies: []\n")
    assert main(["doctor", "--llm", f"replay:{good}", "--timeout", "2"]) == 0
    out = capsys.readouterr().out
    assert "tools, tool_choice=required" in out and "verdict: working setup: --llm replay:" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("behaviour: {echo_model: true, delay_s: 30}\nreplies: []\n")  # a hung server: nothing helps
    assert main(["doctor", "--llm", f"replay:{bad}", "--timeout", "2"]) == 1
    assert "no working setup found" in capsys.readouterr().out
    assert main(["doctor", "--llm", "nonsense"]) == 2
    assert "bad LLM spec" in capsys.readouterr().err
    assert main(["doctor", "--llm", f"replay:{good}", "--timeout", "0"]) == 2


def test_without_a_working_profile_the_closest_one_is_named():
    report = doctor("ollama:qwen", reject_null_assistant_content=True, drop_tool_role=True)
    assert not report.working and report.profile in ("vllm", "llamacpp")
    assert [fix for fix in report.fixes if "tool_role_supported" in fix] and not [
        fix for fix in report.fixes if "assistant_content_null_ok" in fix
    ]


def test_probes_that_time_out_are_not_measured_and_say_how_to_measure_them():
    # a CPU server reading a pasted image longer than the 2 s timeout of these tests
    report = doctor(images_as_text=True, image_delay_s=3.0)
    assert report.check("images") == Check("images", "WARN", "not measured: no answer within the timeout")
    assert report.facts.images is None and report.facts.timed_out_probes
    assert any("run doctor again with --timeout 60" in fix for fix in report.fixes)
    assert report.working  # what was measured makes a working setup
    assert not doctor().facts.timed_out_probes


def test_a_slow_server_gets_the_timeout_its_longest_calls_need():
    # a CPU server: 800 tokens read a second, episodes configured with a 2 s timeout; an 8192-token context takes ~10 s
    settings = dataclasses.replace(SETTINGS, timeout_s=2.0)
    report = doctor(settings=settings, context_tokens=8192, read_tokens_per_s=800.0)
    speed = report.check("speed")
    assert speed.status == "ok" and speed.detail.startswith("reads ~") and report.facts.read_tokens_per_s
    assert 200 < report.facts.read_tokens_per_s <= 850, speed.detail  # never faster than the server; slower if loaded
    (advice,) = [fix for fix in report.fixes if fix.startswith("use --timeout")]
    found = re.match(r"use --timeout (\d+) \(at the measured speeds, reading 8192 tokens and writing", advice)
    assert found and int(found.group(1)) >= 30, advice  # 2 x 8192 / 800 s at least, in whole 10 s
    assert format_report(report).endswith(f"--timeout {found.group(1)} --context-tokens 8192")
    # a server that writes slowly: an answer of the profile's 2048 tokens outlasts the configured timeout
    slow = doctor(settings=settings, echo_text="one, two, three, four, five, " * 8, write_tokens_per_s=80.0)
    assert slow.facts.write_tokens_per_s and 10 < slow.facts.write_tokens_per_s <= 85, slow.check("speed").detail
    (advice,) = [fix for fix in slow.fixes if fix.startswith("use --timeout")]
    assert "writing 1024 take ~" in advice  # these test profiles set no answer length: the default worst case
    fast = doctor(settings=settings, context_tokens=8192)
    assert fast.check("speed").detail == "too fast to time (a GPU server)"
    assert not any(fix.startswith("use --timeout") for fix in fast.fixes)
