"""`robodojo compare`: both agents on the same episodes, offline with the shipped replay scripts; skips and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.cli import main
from robodojo.episodes.compare import Outcome, fill_spec, parse_seeds, summarize
from robodojo.errors import ConfigError

MOVE_EEF = f"replay:{PACKAGE_ROOT / 'examples' / 'replay'}/{{task}}_seed{{seed}}.yaml"
CODE_CELL = f"replay:{PACKAGE_ROOT / 'examples' / 'cells'}/{{task}}.py"


def _row(text: str, label: str) -> list[str]:
    """The cells of the table row starting with ``label`` (labels may hold single spaces; cells are 2+ apart)."""
    for line in text.splitlines():
        if line.startswith(label) and (len(line) == len(label) or line[len(label)] == " "):
            return line[len(label) :].split()
    raise AssertionError(f"no row {label!r} in:\n{text}")


def test_compare_offline_matches_the_episode_records(tmp_path, capsys):
    """Seed 0 has a script for both agents, seed 1 only for the code-cell agent: move_eef's seed 1 is skipped and
    the means are over seed 0 alone, equal to the two episodes' metrics.json."""
    out = tmp_path / "cmp"
    code = main(
        ["compare", "--tasks", "general_pickup", "--seeds", "0-1", "--move-eef-llm", MOVE_EEF,
         "--code-cell-llm", CODE_CELL, "--out", str(out)]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    assert "general_pickup seed 1 (standard) move_eef : skipped: no script" in text
    report = json.loads((out / "compare.json").read_text())
    episodes = {(e["agent"], e["seed"]): e for e in report["episodes"]}
    assert set(episodes) == {("move_eef", 0), ("code_cell", 0), ("move_eef", 1), ("code_cell", 1)}
    assert not episodes["move_eef", 1]["ran"] and episodes["move_eef", 1]["skipped"].startswith("no script")
    metrics = {agent: json.loads((Path(episodes[agent, 0]["folder"]) / "metrics.json").read_text())
               for agent in ("move_eef", "code_cell")}  # fmt: skip
    assert all(m["success"] for m in metrics.values()), metrics

    summary = report["summary"]
    assert summary["both_solved"]["episodes"] == [{"task": "general_pickup", "seed": 0, "variant": "standard"}]
    assert summary["per_agent"]["move_eef"] == {"episodes": 1, "skipped": 1, "successes": 1, "success_rate": 1.0}
    assert summary["per_agent"]["code_cell"]["episodes"] == 2
    assert _row(text, "move_eef") == ["1", "1", "100.0", "1"]
    cc = summary["per_agent"]["code_cell"]
    assert _row(text, "code_cell") == ["2", str(cc["successes"]), f"{cc['success_rate'] * 100:.1f}", "0"]

    m, c = metrics["move_eef"], metrics["code_cell"]
    for key, label, fmt in (
        ("llm_calls", "LLM calls", "{:.2f}"),
        ("input_tokens", "input tokens", "{:.1f}"),
        ("cached_input_tokens", "  of which cached", "{:.1f}"),
        ("output_tokens", "output tokens", "{:.1f}"),
        ("cost_usd", "cost USD", "{:.4f}"),
    ):
        mean = summary["both_solved"]["mean"]
        assert mean["move_eef"][key] == pytest.approx(m[key]) and mean["code_cell"][key] == pytest.approx(c[key])
        cells = _row(text, label)
        assert cells[:2] == [fmt.format(m[key]), fmt.format(c[key])], (label, cells)
        ratio = f"{c[key] / m[key]:.2f}x" if m[key] else "-"
        assert cells[2] == ratio
    assert m["llm_calls"] == 4 and c["llm_calls"] == 3  # the scripts: 4 move_eef replies; 3 cells (success ends it)


def test_missing_scripts_are_skipped_with_a_message(tmp_path, capsys):
    code = main(
        ["compare", "--tasks", "general_pickup", "--seeds", "7", "--llm", f"replay:{tmp_path}/{{task}}_{{seed}}.yaml",
         "--out", str(tmp_path / "cmp")]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert code == 1  # nothing ran
    for agent in ("move_eef ", "code_cell"):
        assert (
            f"general_pickup seed 7 (standard) {agent}: skipped: no script ({tmp_path}/general_pickup_7.yaml)" in text
        )
    assert "no episode was solved by both agents" in text
    report = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [e["ran"] for e in report["episodes"]] == [False, False]
    assert report["summary"]["per_agent"]["code_cell"]["success_rate"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "0"], "no LLM spec for move_eef, code_cell: give --llm SPEC for every agent, or --agent-llm"),
        (["--seeds", "0", "--move-eef-llm", "openai:gpt-x"], "no LLM spec for code_cell"),
        (["--seeds", "0", "--agents", "shell,shell", "--llm", "replay:x.yaml"], "--agents names an agent twice"),
        (["--seeds", "0", "--agents", "shell,juggler", "--llm", "replay:x.yaml"], "unknown agent 'juggler'"),
        (["--seeds", "0", "--agents", "shell,mcp:nope", "--llm", "replay:x.yaml"], "unknown coding agent 'nope'"),
        (["--seeds", "0", "--agents", "shell", "--agent-llm", "code_cell=replay:x.yaml"], "AGENT one of --agents"),
        (["--seeds", "0", "--agents", "shell,code_cell", "--agent-llm", "shell=replay:x.yaml"], "no LLM spec for code"),
        (["--seeds", "4-1", "--llm", "replay:x.yaml"], "bad seed range '4-1'"),
        (["--seeds", "zero", "--llm", "replay:x.yaml"], "bad seeds 'zero'"),
        (["--seeds", "0", "--llm", "gpt-4o"], "bad LLM spec 'gpt-4o'"),
        (["--seeds", "0", "--llm", "replay:x.yaml", "--budget", "0"], "--budget must be at least 1"),
        (["--seeds", "0", "--llm", "replay:x.yaml", "--tasks", "juggle"], "unknown task 'juggle'"),
    ],
)
def test_bad_arguments_give_one_line_errors(args, message, tmp_path, capsys):
    argv = ["compare", "--tasks", "general_pickup", "--out", str(tmp_path), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robodojo: error: ") and message in err and "\n" not in err
    assert not (tmp_path / "compare.json").exists()


def test_argparse_rejects_an_unknown_variant(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--tasks", "general_pickup", "--llm", "replay:x.yaml", "--variant", "messy"])
    assert exc.value.code == 2 and "invalid choice: 'messy'" in capsys.readouterr().err


def test_seeds_specs_and_summary_helpers():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("3, 0,2-3") == [0, 2, 3]
    with pytest.raises(ConfigError):
        parse_seeds("")
    assert fill_spec("replay:ex/{task}_seed{seed}.yaml", "handover", 12) == "replay:ex/handover_seed12.yaml"
    assert fill_spec("openai:gpt-{x}", "t", 1) == "openai:gpt-{x}"

    def o(agent, seed, success, calls):
        return Outcome(
            agent=agent, task="t", seed=seed, variant="standard", llm="replay:x", success=success,
            end_reason="success" if success else "give_up", llm_calls=calls, input_tokens=10 * calls,
        )  # fmt: skip

    s = summarize([o("move_eef", 0, True, 4), o("move_eef", 1, True, 8), o("code_cell", 0, True, 2),
                   o("code_cell", 1, False, 9), o("code_cell", 2, True, 1)])  # fmt: skip
    assert s["per_agent"]["code_cell"]["success_rate"] == pytest.approx(2 / 3)
    assert s["both_solved"]["count"] == 1  # seed 0 only: code_cell's seed 2 has no move_eef episode
    assert s["both_solved"]["mean"]["move_eef"]["llm_calls"] == 4 and s["both_solved"]["ratio"]["llm_calls"] == 0.5
    assert s["both_solved"]["ratio"]["cost_usd"] is None  # 0 / 0


def test_every_episode_failing_exits_1_with_the_causes_in_compare_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    script = tmp_path / "broken.yaml"
    script.write_text("behaviour: {fail_with: [500, 500]}\nreplies: [{content: x}]\n")
    out = tmp_path / "cmp"
    argv = ["compare", "--tasks", "general_pickup", "--seeds", "0", "--llm", f"replay:{script}", "--out", str(out)]
    assert main([*argv, "--retries", "3"]) == 1
    captured = capsys.readouterr()
    assert "every episode that ran failed" in captured.err
    assert captured.out.count("HTTP 500: injected server error 500") == 2  # the cause under each episode line
    report = json.loads((out / "compare.json").read_text())
    assert [e["end_reason"] for e in report["episodes"]] == ["llm_error", "llm_error"]
    assert all("was rejected: HTTP 500" in e["error"] for e in report["episodes"])  # not retried: one attempt
    assert report["request"]["max_retries"] == 3 and report["request"]["tool_choice"] == "profile"


def test_what_the_agents_send_is_set_for_the_whole_comparison_and_recorded(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(
        ["compare", "--tasks", "general_pickup", "--seeds", "0", "--move-eef-llm", MOVE_EEF,
         "--code-cell-llm", CODE_CELL, "--out", str(out), "--images", "none", "--context-tokens", "100000",
         "--image-horizon", "1"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().out
    report = json.loads((out / "compare.json").read_text())
    for episode in report["episodes"]:
        folder = Path(episode["folder"])
        settings = json.loads((folder / "meta.json").read_text())["agent_settings"]
        assert (settings["images"], settings["context_tokens"], settings["image_horizon"]) == ("none", 100000, 1)
        for line in (folder / "requests.jsonl").read_text().splitlines():
            assert "image_url" not in line  # no picture was sent
    with pytest.raises(SystemExit):
        main(["compare", "--tasks", "general_pickup", "--seeds", "0", "--llm", MOVE_EEF, "--context-tokens", "0",
              "--out", str(tmp_path / "bad")])  # fmt: skip
    assert "--context-tokens: expected a positive integer, got '0'" in capsys.readouterr().err


def test_compare_takes_any_agents_and_prints_calls_tokens_and_wall_time_per_solved_episode(tmp_path, capsys):
    """The built-in shell agent, Claude Code in the shell harness and Claude Code as the MCP client, each from its
    replay: every later agent's ratio to the first, per solved episode, equal to the episodes' own metrics."""
    from robodojo.agents.shell.settings import load_shell_settings

    if not load_shell_settings().coding_agents.get("claude-code").installed:
        pytest.skip("Claude Code is not installed (make agents installs it from npm into .venv/agents/npm)")
    agents = ("shell", "shell:claude-code", "mcp:claude-code")
    examples = PACKAGE_ROOT / "examples"
    specs = {"shell": examples / "shell" / "general_pickup.yaml",
             "shell:claude-code": examples / "shell" / "general_pickup_claude-code.yaml",
             "mcp:claude-code": examples / "mcp" / "general_pickup.yaml"}  # fmt: skip
    out = tmp_path / "cmp"
    argv = ["compare", "--tasks", "general_pickup", "--seeds", "0", "--agents", ",".join(agents), "--out", str(out),
            *(f"--agent-llm={a}=replay:{s}" for a, s in specs.items())]  # fmt: skip
    code = main(argv)
    text = capsys.readouterr().out
    assert code == 0, text
    report = json.loads((out / "compare.json").read_text())
    assert report["summary"]["agents"] == list(agents)
    folders = {e["agent"]: Path(e["folder"]) for e in report["episodes"]}
    metrics = {a: json.loads((folders[a] / "metrics.json").read_text()) for a in agents}
    assert all(m["success"] for m in metrics.values()), metrics
    header = next(line for line in text.splitlines() if line.startswith("metric"))
    assert "shell:claude-code / shell" in header and "mcp:claude-code / shell" in header
    base = metrics["shell"]
    for key, label in (("llm_calls", "LLM calls"), ("input_tokens", "input tokens"), ("wall_time_s", "wall time s")):
        cells = _row(text, label)
        assert len(cells) == 5, (label, cells)  # three means, two ratios
        for agent, cell in zip(agents[1:], cells[3:], strict=True):
            assert cell == f"{metrics[agent][key] / base[key]:.2f}x", (label, agent, cell)
