"""The coding-agent CLIs from npm (make agents) as MCP clients of ``robodojo mcp``: each starts the server itself over
stdio, as its users configure it, and solves general_pickup seed 0 with the move_eef tools, its model played by the
replay server in the API the CLI speaks (Codex: the Responses API, whose tool namespace carries the MCP server's
tools; opencode: streamed chat completions; Claude Code: the Anthropic Messages API). The record is the server's:
success, agent ``mcp``, the CLI's own name from its initialize request.

And as ``robodojo run --agent mcp:<cli>`` runs them: the CLI in the shell harness's sandbox as the client of the
episode's own server, its model calls the episode's (counted and recorded), refusals read by its model."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer
from robodojo.agents.shell.settings import load_shell_settings

MCP_REPLAYS = {  # general_pickup seed 0's move_eef calls under the names each CLI gives the server's tools
    "codex": PACKAGE_ROOT / "examples" / "mcp" / "general_pickup.yaml",
    "opencode": PACKAGE_ROOT / "examples" / "mcp" / "general_pickup_opencode.yaml",
    "claude-code": PACKAGE_ROOT / "examples" / "mcp" / "general_pickup.yaml",
}
NPM = PACKAGE_ROOT / ".venv" / "agents" / "npm" / "node_modules"
RUN_TIMEOUT_S = 300
PROMPT = "Pick up the cyan block with the robodojo tools; stop when the task is done."
OFFLINE = {  # every CLI's own switches for update checks, telemetry and side calls
    "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}  # fmt: skip


def _server_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "robodojo.cli", "mcp", "--task", "general_pickup", "--seed", "0", "--tools",
            "move_eef", "--transport", "stdio", "--out", str(out)]  # fmt: skip


def _script(cli: str) -> ReplayScript:
    """The move_eef replay under the CLI's names for the server's tools (examples/mcp); its last reply ends the run."""
    return ReplayScript.parse(yaml.safe_load(MCP_REPLAYS[cli].read_text()), str(MCP_REPLAYS[cli]))


def _platform_binary(package: str, executable: str) -> Path:
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return NPM / f"{package}-linux-{arch}" / executable


def _codex(home: Path, url: str, server: list[str]) -> tuple[list[str], dict[str, str]]:
    config = (PACKAGE_ROOT / "config" / "agents" / "codex.toml").read_text()
    config = config.replace("http://127.0.0.1:{model_port}/v1", url)
    config += (
        f"\n[mcp_servers.robodojo]\ncommand = {json.dumps(server[0])}\nargs = {json.dumps(server[1:])}\n"
        "startup_timeout_sec = 120\nrequired = true\n"
    )
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(config)
    command = ["node", str(NPM / "@openai" / "codex" / "bin" / "codex.js"), "exec", "--strict-config",
               "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--disable", "multi_agent",
               "--disable", "goals", PROMPT]  # fmt: skip
    return command, {"CODEX_HOME": str(home / ".codex"), "ROBODOJO_MODEL_KEY": "sandbox-has-no-key"}


def _opencode(home: Path, url: str, server: list[str]) -> tuple[list[str], dict[str, str]]:
    config = json.loads((PACKAGE_ROOT / "config" / "agents" / "opencode.json").read_text())
    config["provider"]["robodojo"]["options"]["baseURL"] = url
    config["mcp"] = {"robodojo": {"type": "local", "command": server, "enabled": True}}
    config["tools"] = {name: False for name in ("bash", "edit", "write", "read", "glob", "grep", "webfetch", "task",
                                                "todowrite", "skill")}  # fmt: skip
    (home / "opencode.json").write_text(json.dumps(config))
    with open("/proc/cpuinfo") as cpu:
        baseline = platform.machine() == "x86_64" and " avx2" not in cpu.read()
    binary = _platform_binary("opencode", "bin/opencode")
    if baseline:
        binary = Path(str(binary).replace("linux-x64", "linux-x64-baseline"))
    return [str(binary), "run", PROMPT], {"OPENCODE_CONFIG": str(home / "opencode.json")}


def _claude_code(home: Path, url: str, server: list[str]) -> tuple[list[str], dict[str, str]]:
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"robodojo": {"command": server[0], "args": server[1:]}}}))
    command = [str(_platform_binary("@anthropic-ai/claude-code", "claude")), "-p", PROMPT, "--model", "robodojo",
               "--mcp-config", str(home / "mcp.json"), "--strict-mcp-config", "--tools", "",
               "--allowedTools", "mcp__robodojo"]  # fmt: skip
    env = {"ANTHROPIC_BASE_URL": url.removesuffix("/v1"), "ANTHROPIC_API_KEY": "sandbox-has-no-key"}
    return command, env


CLIS = [  # the shell harness's name, how the CLI names the server's tools, its MCP client's name, its setup
    pytest.param("codex", "mcp__robodojo__", "codex", _codex, id="codex"),
    pytest.param("opencode", "robodojo_", "opencode", _opencode, id="opencode"),
    pytest.param("claude-code", "mcp__robodojo__", "claude-code", _claude_code, id="claude-code"),
]


@pytest.mark.parametrize("cli, tool_prefix, client_word, setup", CLIS)
def test_an_npm_cli_solves_general_pickup_as_an_mcp_client(tmp_path, cli, tool_prefix, client_word, setup):
    if not load_shell_settings().coding_agents.get(cli).installed:
        pytest.skip(f"{cli} is not installed (make agents installs it from npm into .venv/agents/npm)")
    home, out = tmp_path / "home", tmp_path / "episodes"
    home.mkdir()
    with ReplayServer(_script(cli)) as replay:
        command, env = setup(home, replay.url, _server_command(out))
        result = subprocess.run(
            command, env={**os.environ, **OFFLINE, **env, "HOME": str(home)}, cwd=home, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        requests = list(replay.requests)
    log = result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode == 0, log
    # its model saw the server's tools under the CLI's names, and the server's answers came back as tool results
    assert all(f"{tool_prefix}move_eef" in [t["function"]["name"] for t in r.get("tools", [])] for r in requests), log
    assert any(m.get("role") == "tool" for m in requests[-1]["messages"])
    (folder,) = out.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    meta = json.loads((folder / "meta.json").read_text())
    assert metrics["success"], (metrics, log)
    assert meta["agent"] == "mcp" and client_word in meta["model"].lower(), meta


# -- mcp:<cli>: the CLI in the sandbox as the client of the episode's own server, its model the episode's --------------
def _run_mcp_agent(tmp_path: Path, cli: str, replay: Path) -> Path:
    if not load_shell_settings().coding_agents.get(cli).installed:
        pytest.skip(f"{cli} is not installed (make agents installs it from npm into .venv/agents/npm)")
    out = tmp_path / "episodes"
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--seed", "0", "--agent",
         f"mcp:{cli}", "--llm", f"replay:{replay}", "--out", str(out)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (folder,) = out.iterdir()
    return folder


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("cli", list(MCP_REPLAYS))
def test_a_run_with_an_npm_cli_as_the_mcp_client_solves_general_pickup(tmp_path, cli):
    folder = _run_mcp_agent(tmp_path, cli, MCP_REPLAYS[cli])
    metrics = json.loads((folder / "metrics.json").read_text())
    meta = json.loads((folder / "meta.json").read_text())
    # four model calls of the CLI, through the proxy to the episode's own client: counted, with their tokens
    assert metrics["success"] and metrics["llm_calls"] == 4 and metrics["input_tokens"] > 0, metrics
    assert meta["agent"] == "mcp" and meta["agent_settings"]["coding_agent"] == cli
    # each turn: the model's answer, then the one move_eef call it made through the server, run and recorded
    turns = _jsonl(folder / "turns.jsonl")
    assert [[c["tool"] for c in t["details"]["tool_calls"]] for t in turns] == [["move_eef"]] * 4
    assert not any(c["refused"] for t in turns for c in t["details"]["tool_calls"])
    # the CLI's model saw the server's tools under the CLI's names (the replay's), observe among them
    prefix = "robodojo_" if cli == "opencode" else "mcp__robodojo__"
    names = [{t["function"]["name"] for t in r["tools"]} for r in _jsonl(folder / "requests.jsonl")]
    assert all({f"{prefix}move_eef", f"{prefix}observe"} <= n for n in names), names[0]


def test_a_refused_call_of_an_mcp_cli_moves_nothing_and_its_model_reads_why(tmp_path):
    replies = yaml.safe_load(MCP_REPLAYS["claude-code"].read_text())
    out_of_reach = {"name": "mcp__robodojo__move_eef", "arguments": {"targets": {"right_z": 5.0}, "note": "up"}}
    wrong_type = {"name": "mcp__robodojo__move_eef", "arguments": {"targets": "up", "note": "up"}}
    replay = tmp_path / "refused.yaml"
    replay.write_text(yaml.safe_dump([{"content": None, "tool_calls": [out_of_reach]},
                                      {"content": None, "tool_calls": [wrong_type]}, *replies]))  # fmt: skip
    folder = _run_mcp_agent(tmp_path, "claude-code", replay)
    metrics = json.loads((folder / "metrics.json").read_text())
    turns = _jsonl(folder / "turns.jsonl")
    assert metrics["success"] and metrics["llm_calls"] == 6, metrics
    # both refused by the server before anything ran: no step taken, the arm where it was
    assert [c["refused"] for t in turns[:2] for c in t["details"]["tool_calls"]] == [True, True]
    limit = metrics["env_step_limit"]
    assert turns[0]["steps_left"] == turns[1]["steps_left"] == limit, [t["steps_left"] for t in turns]
    assert turns[0]["arms"] == turns[1]["arms"]
    # and the CLI's model read each refusal as the tool's result in its next request
    requests = _jsonl(folder / "requests.jsonl")
    for request, said in ((requests[1], turns[0]["tool_results"][0]), (requests[2], turns[1]["tool_results"][0])):
        results = [m for m in request["messages"] if m.get("role") == "tool"]
        assert results and said.split(": ", 1)[1][:60] in json.dumps(results[-1]["content"]), (said, results[-1])
