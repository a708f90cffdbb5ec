"""The episode clock applied to every agent style, each in a real episode of the embedded world with a real replay
server (or a real MCP request channel): code cells (model calls, and under the measured clocks the cell's computing
between robo calls), the built-in shell agent, a coding-agent CLI whose model calls come through the model proxy,
and an MCP client's tool calls. Each shows the world time between two of the agent's own readings of the robot
clock, and each turn's ``latency_applied_s`` in turns.jsonl."""

from __future__ import annotations

import json
import shutil
import threading
import time
from dataclasses import replace

import pytest
import yaml

from robodojo.agents.llm.client import open_llm
from robodojo.agents.mcp.agent import McpAgent, McpClientModel
from robodojo.agents.mcp.channel import CallChannel, RequestKind
from robodojo.agents.mcp.settings import load_mcp_settings
from robodojo.agents.mcp.tool_sets import make_tools
from robodojo.agents.shell.settings import CodingAgentCli, load_shell_settings
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.clock import ClockSetting
from robodojo.episodes.factory import make_agent
from robodojo.episodes.record import EpisodeRecord

TASK = "stop_rolling_ball"
STEP_S = 0.04  # the dual arm's control period: time passes in whole steps, the rest carried to the next call
COMPUTE_S = 0.5  # what the code cell below computes between its two robo calls
THINK_S = 0.3  # the MCP client's time to its second call
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


def _replay(tmp_path, replies: list[dict], name: str = "replies.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(replies, sort_keys=False))
    return path


def _run(world, agent, script, out, clock):
    world.reset(TASK, seed=0)
    with open_llm(f"replay:{script}") as llm:
        try:
            result = run_episode(WorldHost(world), agent, llm, EpisodeSpec(TASK, 0), out, model=llm.model, clock=clock)
        finally:
            agent.close()
    return result, EpisodeRecord.open(result.folder)


def _call(name: str, **arguments) -> dict:
    return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}


# -- code cells -------------------------------------------------------------------------------------------------------

CELL = f"""\
import time
t0 = robo.state().time_s
start = time.monotonic()
while time.monotonic() - start < {COMPUTE_S}:
    pass
print(f"world time over the computing: {{robo.state().time_s - t0:.3f}} s")
"""


@pytest.mark.parametrize(
    ("clock", "computed_low", "computed_high"),
    [
        ("real", COMPUTE_S - STEP_S, COMPUTE_S + 0.5),  # the computing passes (whole steps, the rest carried)
        ("scaled:2", 2 * COMPUTE_S - STEP_S, 2 * COMPUTE_S + 1.0),
        ("fixed:1", 0.0, 0.0),  # fixed counts the model calls only
    ],
)
def test_code_cells_run_in_world_time(dual_world, tmp_path, clock, computed_low, computed_high):
    script = _replay(tmp_path, [_call("python", code=CELL), _call("finish", status="failure", summary="timed")])
    result, record = _run(dual_world, make_agent("code_cell"), script, tmp_path / "ep", ClockSetting.parse(clock))
    assert result.end_reason == "finished" and result.steps_used == 0
    printed = float(record.turns[0].tool_results[0].split(": ")[1].split()[0])
    assert computed_low <= printed <= computed_high, record.turns[0].tool_results
    latencies = [t.latency_applied_s for t in record.turns]
    if clock == "fixed:1":
        assert latencies == [1.0, 1.0]  # a second per model call, nothing for the computing
    else:  # the two calls' own (small) times, and the computing under the first one's turn
        assert latencies[0] >= printed and sum(latencies) == pytest.approx(result.latency_applied_s, abs=1e-6)
    assert record.outcome is not None and record.outcome.latency_applied_s == pytest.approx(sum(latencies), abs=1e-5)


# -- the shell agents -------------------------------------------------------------------------------------------------


def _status_times(record: EpisodeRecord) -> list[float]:
    """The robot time ``robo status`` printed in each turn that ran it."""
    times = []
    for turn in record.turns:
        for text in turn.tool_results:
            times += [
                json.loads(line)["time_s"] for line in text.splitlines() if line.startswith('{"command": "status"')
            ]
    return times


@needs_bwrap
def test_the_shell_agent_s_model_calls_cost_world_time(dual_world, tmp_path):
    replies = [_call("shell", command="robo status"), _call("shell", command="robo status"),
               _call("shell", command="robo done --reason timed")]  # fmt: skip
    script = _replay(tmp_path, replies)
    result, record = _run(dual_world, make_agent("shell"), script, tmp_path / "ep", ClockSetting.parse("fixed:1"))
    assert result.end_reason == "finished" and result.steps_used == 0
    first, second = _status_times(record)
    assert second - first == pytest.approx(1.0, abs=1e-3)
    assert [t.latency_applied_s for t in record.turns] == [1.0, 1.0, 1.0] and result.latency_applied_s == 3.0


TINY_CLI = """\
python3 - <<'PY'
import json, subprocess, time, urllib.request
def ask():
    body = json.dumps({"messages": [{"role": "user", "content": "go"}]}).encode()
    for _ in range(100):  # the forwarder starts beside this one
        try:
            req = urllib.request.Request("http://127.0.0.1:{model_port}/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            return json.load(urllib.request.urlopen(req, timeout=60))
        except OSError:
            time.sleep(0.1)
def robot_time():
    subprocess.run(["robo", "status"], capture_output=True)
ask(); robot_time(); ask(); robot_time()
subprocess.run(["robo", "done", "--reason", "timed"])
PY
"""


@needs_bwrap
def test_a_coding_agent_cli_s_model_calls_through_the_proxy_cost_world_time(dual_world, tmp_path):
    from robodojo.agents.shell.external import ExternalShellAgent

    install = tmp_path / "cli"  # the CLI is the script above; its install folder only has to exist
    (install / "bin").mkdir(parents=True)
    (install / "bin" / "python").touch()
    settings = load_shell_settings()
    cli = CodingAgentCli("tiny", install, "bin/python", TINY_CLI, None, {})
    settings = replace(settings, coding_agents=replace(settings.coding_agents, clis={"tiny": cli}))
    script = _replay(tmp_path, [{"content": "first"}, {"content": "second"}])
    agent = ExternalShellAgent("tiny", settings=settings)
    result, record = _run(dual_world, agent, script, tmp_path / "ep", ClockSetting.parse("fixed:1"))
    assert result.llm_calls == 2 and result.steps_used == 0, result
    # the robot time its two robo status calls saw (robo_calls.jsonl), one model call apart
    first, second = [c["record"]["time_s"] for c in record.robo_calls if c["argv"] == ["status"]]
    assert second - first == pytest.approx(1.0, abs=1e-3)
    assert [t.latency_applied_s for t in record.turns] == [1.0, 1.0]


# -- an MCP client ----------------------------------------------------------------------------------------------------


def _answer(channel: CallChannel, name: str, **arguments) -> str:
    return channel.submit(RequestKind.TOOL, name, arguments).result(timeout=60).text


@pytest.mark.parametrize(("clock", "low", "high"), [("fixed:1", 1.0, 1.0), ("real", THINK_S - STEP_S, THINK_S + 0.5)])
def test_an_mcp_client_s_decisions_cost_world_time(dual_world, tmp_path, clock, low, high):
    settings = load_mcp_settings()
    channel = CallChannel(idle_timeout_s=settings.idle_timeout_s, max_pending=settings.max_pending_calls)
    agent = McpAgent(make_tools("robo", dual_world.robot), channel, settings, transport="http")
    dual_world.reset(TASK, seed=0)
    seen: dict = {}

    def client() -> None:  # the episode runs in this test's thread, where the world's GL context is
        seen["first"] = json.loads(_answer(channel, "status"))["time_s"]
        time.sleep(THINK_S)  # the client's model thinks
        seen["second"] = json.loads(_answer(channel, "status"))["time_s"]
        _answer(channel, "done", reason="timed")

    thread = threading.Thread(target=client)
    thread.start()
    try:
        result = run_episode(
            WorldHost(dual_world), agent, McpClientModel("http", "test"), EpisodeSpec(TASK, 0), tmp_path,
            clock=ClockSetting.parse(clock),
        )  # fmt: skip
    finally:
        agent.close()
        channel.end("over")
        thread.join(timeout=60)
    first, second = seen["first"], seen["second"]
    assert result.end_reason == "finished" and result.steps_used == 0
    assert low - 1e-6 <= second - first <= high + 1e-6, (first, second)
    latencies = [t.latency_applied_s for t in EpisodeRecord.open(result.folder).turns]
    if clock == "fixed:1":
        assert latencies == [1.0, 1.0, 1.0]
    else:
        assert latencies[1] == pytest.approx(second - first, abs=1e-6)
