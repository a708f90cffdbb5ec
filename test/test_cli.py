"""The `robodojo` command: demo output, listings, and clean errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.errors import ConfigError

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"


def _robodojo(*args, timeout=300, env=None):
    import os

    full_env = None if env is None else {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-m", "robodojo.cli", *args], capture_output=True, text=True, timeout=timeout, env=full_env
    )


def test_demo_writes_images_and_a_summary(tmp_path):
    result = _robodojo("demo", "--out", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert {e["task"] for e in summary} == {"general_pickup", "fr3_pick_cube"}
    assert all(e["success"] for e in summary)
    for episode in summary:
        folder = tmp_path / "demo" / f"{episode['task']}_seed0"
        assert (folder / "head_start.png").stat().st_size > 10_000
        assert (folder / "head_sheet.png").is_file() and (folder / "summary.json").is_file()
    assert "images and summary:" in result.stdout and "moving through the motion server" in result.stdout
    assert all(m["tool_text"].startswith("Accepted: playing") for e in summary for m in e["moves"])


def test_listings():
    from robodojo.sim.tasks import available_tasks, get_task

    tasks = _robodojo("tasks")
    assert tasks.returncode == 0
    lines = tasks.stdout.splitlines()
    for name in available_tasks():  # each under its axis's heading, with its step limit
        (line,) = [i for i, text in enumerate(lines) if text.split()[:1] == [name]]
        heading = next(lines[i] for i in range(line, -1, -1) if not lines[i].startswith(" "))
        assert heading.startswith(get_task(name).capability + " ")
        assert f"{get_task(name).step_limit} steps" in lines[line]
    robots = _robodojo("robots")
    assert robots.returncode == 0 and "dual_arx_x5" in robots.stdout


def test_errors_are_one_line_and_exit_2(tmp_path):
    result = _robodojo("render", "--task", "juggle", "--out", str(tmp_path))
    assert result.returncode == 2
    from robodojo.sim.tasks import available_tasks

    assert result.stderr.strip() == f"robodojo: error: unknown task 'juggle'; available: {', '.join(available_tasks())}"


def test_render_writes_every_camera(tmp_path):
    result = _robodojo("render", "--task", "handover", "--variant", "cluttered", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert len(list(tmp_path.glob("handover_cluttered_seed0_*.png"))) == 3


def test_run_replays_a_move_eef_episode_through_the_real_client(tmp_path):
    """`robodojo run --llm replay:FILE`: the real openai client talks to the local replay server; the episode
    solves the task through the motion server and leaves a complete record."""
    result = _robodojo(
        "run",
        "--task",
        "general_pickup",
        "--seed",
        "0",
        "--agent",
        "move_eef",
        "--llm",
        f"replay:{REPLAY}",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "success, score 1.00, ended by success" in result.stdout
    (folder,) = tmp_path.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["success"] and metrics["end_reason"] == "success" and metrics["llm_calls"] == 4
    assert metrics["input_tokens"] > 0 and metrics["steps_used"] > 0
    requests = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    assert len(requests) == 4 and requests[0]["messages"][0]["role"] == "system"
    assert any(
        p.get("type") == "image_file"
        for m in requests[-1]["messages"]
        for p in m.get("content") or []
        if isinstance(p, dict)
    )


def _script_that_500s_on_required(tmp_path):
    """The shipped replay script, served like llama-cpp-python: HTTP 500 to tool_choice "required"."""
    import yaml

    script = yaml.safe_load(REPLAY.read_text())
    script = script if isinstance(script, dict) else {"replies": script}
    script["behaviour"] = {**(script.get("behaviour") or {}), "reject_tool_choice_required": True}
    path = tmp_path / "llamacpppy_like.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


def test_run_says_why_an_llm_error_ended_it_and_a_user_profile_fixes_it(tmp_path):
    """The 500 is not retried and its cause and hint reach the terminal; an --llm-config file that makes the replay
    profile send "auto" (as the llamacpppy profile does) lets the same episode succeed."""
    script = _script_that_500s_on_required(tmp_path)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}  # not the developer's own ~/.config/robodojo/llm.yaml
    args = ("run", "--task", "general_pickup", "--llm", f"replay:{script}", "--retries", "4")
    failed = _robodojo(*args, "--out", str(tmp_path / "a"), env=env)
    assert failed.returncode == 1 and "ended by llm_error" in failed.stdout
    assert "error: LLM request to replay" in failed.stdout and "HTTP 500" in failed.stdout
    assert "try --tool-choice auto" in failed.stdout and "retrying" not in failed.stderr
    config = tmp_path / "mine.yaml"
    config.write_text("profiles:\n  replay: {tool_choice_required_ok: false}\n")
    fixed = _robodojo(*args, "--llm-config", str(config), "--out", str(tmp_path / "b"), env=env)
    assert fixed.returncode == 0 and "ended by success" in fixed.stdout, fixed.stdout + fixed.stderr
    (folder,) = (tmp_path / "b").iterdir()
    first = json.loads((folder / "requests.jsonl").read_text().splitlines()[0])
    assert first["tool_choice"] == "auto" and [t["function"]["name"] for t in first["tools"]] == ["move_eef", "give_up"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles:\n  replay: {tool_choice_required_ok: sometimes}\n")
    wrong = _robodojo(*args, "--llm-config", str(bad), "--out", str(tmp_path / "c"), env=env)
    assert wrong.returncode == 2 and f"{bad}.profiles.replay.tool_choice_required_ok: expected true" in wrong.stderr


def test_a_missing_api_key_is_reported_before_the_world_is_built(tmp_path, monkeypatch, capsys):
    import robodojo.sim.world
    from robodojo.cli import main

    def no_world(*args, **kwargs):
        raise AssertionError("the world was built before the API key was checked")

    monkeypatch.setattr(robodojo.sim.world, "EmbeddedWorld", no_world)
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert main(["run", "--task", "general_pickup", "--llm", "openai:gpt-4.1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs an API key: set environment variable OPENAI_API_KEY" in err and "llamacpppy:" in err
    argv = ["compare", "--tasks", "general_pickup", "--seeds", "0", "--llm", "openai:gpt-4.1", "--out", str(tmp_path)]
    assert main(argv) == 2 and "needs an API key" in capsys.readouterr().err


def test_run_with_an_unknown_llm_spec_is_a_clean_error(tmp_path):
    result = _robodojo("run", "--task", "general_pickup", "--llm", "gemini:pro", "--out", str(tmp_path))
    assert result.returncode == 2 and result.stderr.startswith("robodojo: error:")


def test_a_recorded_episode_serves_as_a_one_shot_demonstration(tmp_path):
    from robodojo.episodes.demonstration import read_demonstration

    assert (
        _robodojo(
            "run",
            "--task",
            "general_pickup",
            "--seed",
            "0",
            "--llm",
            f"replay:{REPLAY}",
            "--out",
            str(tmp_path / "demo"),
        ).returncode
        == 0
    )
    (recorded,) = (tmp_path / "demo").iterdir()
    steps = read_demonstration(recorded)
    assert len(steps) == 4 and all(len(s.pose) == 14 for s in steps)
    assert set(steps[0].images) == {"head", "left_wrist", "right_wrist"} and steps[-1].images == {}
    assert "move_eef" in steps[0].text
    # Another layout with that demonstration: the first request carries it after the Goal message.
    result = _robodojo(
        "run",
        "--task",
        "general_pickup",
        "--seed",
        "0",
        "--llm",
        f"replay:{REPLAY}",
        "--demonstration",
        str(recorded),
        "--out",
        str(tmp_path / "shot"),
    )
    assert result.returncode == 0, result.stderr
    (folder,) = (tmp_path / "shot").iterdir()
    first = json.loads((folder / "requests.jsonl").read_text().splitlines()[0])["messages"]
    assert len(first) >= 4 and "Goal" in json.dumps(first[1]) and "move_eef" in json.dumps(first[2])


def test_graph_llm_follows_the_agent_unless_given():
    from robodojo.agents.llm.replay_server import ReplayScript
    from robodojo.cli import build_parser, graph_llm

    def llm(*args: str, task: str = "general_pickup") -> str:
        parsed = build_parser().parse_args(["graph", *args])
        return graph_llm(parsed.agent, parsed.llm, task, parsed.seed)

    assert llm() == "replay:examples/replay/general_pickup_seed0.yaml"
    assert llm("--agent", "code_cell") == "replay:examples/cells/general_pickup.py"
    assert llm("--agent", "code_cell", "--llm", "openai:gpt-4.1") == "openai:gpt-4.1"
    assert llm("--agent", "none") == ""
    assert llm(task="fr3_pick_cube") == "replay:examples/replay/fr3_pick_cube_seed0.yaml"
    for spec in (llm(), llm("--agent", "code_cell")):  # both defaults are real scripts, from any working directory
        assert ReplayScript.load(spec.removeprefix("replay:")).replies
    with pytest.raises(ConfigError, match="no replayed move_eef example for task general_pickup seed 3"):
        llm("--seed", "3")


def test_graph_passes_the_llm_and_agent_options_to_the_agent_node(monkeypatch, tmp_path):
    """What `robodojo graph` hands run_graph for agent_node: every flag, as the node's parameters (nodes.yaml names)."""
    import robodojo.nodes.process_graph as process_graph
    from robodojo.cli import main
    from robodojo.nodes.parameters import AgentNodeParams

    seen = {}
    monkeypatch.setattr(process_graph, "run_graph", lambda **kwargs: seen.update(kwargs) or 0)
    config = tmp_path / "llm.yaml"
    config.write_text("defaults: {timeout_s: 30}\n")
    args = ["graph", "--llm", "llamacpppy:smollm2", "--timeout", "60", "--retries", "0", "--tool-choice", "auto",
            "--images", "none", "--context-tokens", "8192", "--llm-config", str(config),
            "--max-output-tokens", "512", "--reasoning-effort", "low"]  # fmt: skip
    assert main(args) == 0
    params = seen["agent_params"]
    assert params == {"llm_config": str(config.resolve()), "llm_timeout_s": 60.0, "llm_retries": 0,
                      "llm_max_output_tokens": 512, "llm_reasoning_effort": "low", "tool_choice": "auto",
                      "images": "none", "context_tokens": 8192}  # fmt: skip
    assert set(params) <= {f.name for f in dataclasses.fields(AgentNodeParams)}
    assert main(["graph"]) == 0  # nothing given: the node's own defaults (config/nodes.yaml)
    assert seen["agent_params"] == {"llm_config": "", "llm_timeout_s": 0.0, "llm_retries": -1,
                                    "llm_max_output_tokens": 0, "llm_reasoning_effort": "", "tool_choice": "profile",
                                    "images": "",
                                    "context_tokens": 0}  # fmt: skip
    assert main(["graph", "--agent", "mcp", "--mcp-tools", "move_eef", "--mcp-port", "9000"]) == 0
    assert seen["agent"] == "mcp" and seen["llm"] == ""  # the MCP client brings its own model
    assert (seen["agent_params"]["mcp_tools"], seen["agent_params"]["mcp_port"]) == ("move_eef", 9000)
    assert main(["graph", "--llm-config", str(tmp_path / "missing.yaml")]) == 2  # said before any node starts


def test_graph_hardware_isaac_names_the_bridges_config_parameter(monkeypatch):
    """`robodojo graph --hardware isaac --hardware-config F`: F reaches isaac_bridge_node as its isaac_config."""
    import robodojo.nodes.process_graph as process_graph
    from robodojo.cli import main
    from robodojo.nodes.parameters import IsaacBridgeParams

    seen = {}
    monkeypatch.setattr(process_graph, "run_graph", lambda **kwargs: seen.update(kwargs) or 0)
    assert main(["graph", "--hardware", "isaac", "--hardware-config", "my_isaac.yaml", "--agent", "none"]) == 0
    assert seen["hardware"] == "isaac" and seen["hardware_params"] == {"isaac_config": "my_isaac.yaml"}
    assert set(seen["hardware_params"]) <= {f.name for f in dataclasses.fields(IsaacBridgeParams)}
