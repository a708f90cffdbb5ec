"""agent:=mcp: the agent node serves the graph's episode to one MCP client over streamable HTTP, the server of
``robodojo mcp`` with the graph's host. The MCP SDK's own client solves general_pickup seed 0 with the move_eef tools
(the replay's targets) through the simulator and motion server nodes, after a burst of hostile calls that move nothing;
a call after the end moves nothing; the record
is the agent node's, with agent ``mcp`` and the client's name, and the node exits 0 once the client is gone."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import anyio
import graph_client as gc
import mcp.types as types
import pytest
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from robodojo import PACKAGE_ROOT
from robodojo.nodes import topics
from robodojo.nodes.process_graph import NodeProcess

pytestmark = pytest.mark.ros

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
CLIENT = "robodojo-graph-test-client"
SERVE_TIMEOUT_S = 120  # the node resets the episode and waits for every camera before it serves


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(port: int, agent: NodeProcess) -> None:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert agent.alive, f"agent_node exited {agent.returncode}:\n{agent.output()[-3000:]}"
        assert time.monotonic() < deadline, f"agent_node never served:\n{agent.output()[-3000:]}"
        time.sleep(0.2)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


HOSTILE_CALLS = [  # sent all at once before the solution: each refused with its own error, none moves the robot
    ("juggle", {}),
    ("move_eef", {"targets": "up"}),
    ("move_eef", {"targets": {"right_z": 5.0}}),
    ("move_eef", {"targets": {"right_z": 0.9}, "note": "x" * 20_000}),
    ("move_eef", {"targets": {"right_q": 1.0}}),
    ("observe", {"camera": "../../etc/passwd"}),
]


async def _hostile_burst(session: ClientSession) -> list[types.CallToolResult]:
    results: list[types.CallToolResult | None] = [None] * len(HOSTILE_CALLS)

    async def call(i: int, name: str, arguments: dict) -> None:
        results[i] = await session.call_tool(name, arguments)

    async with anyio.create_task_group() as group:
        for i, (name, arguments) in enumerate(HOSTILE_CALLS):
            group.start_soon(call, i, name, arguments)
    return [r for r in results if r is not None]


async def _solve(url: str, rec: gc.Recorder) -> list[str]:
    info = types.Implementation(name=CLIENT, version="1.0")
    texts = []
    async with streamable_http_client(url) as (read, write), ClientSession(read, write, client_info=info) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert {"move_eef", "give_up", "observe"} <= tools, tools
        observed = await session.call_tool("observe", {})
        assert sum(isinstance(c, types.ImageContent) for c in observed.content) == 3  # the graph's three cameras
        refused = await _hostile_burst(session)
        assert len(refused) == len(HOSTILE_CALLS) and all(r.is_error for r in refused), [_text(r) for r in refused]
        assert all("nothing" in _text(r) for r in refused), [_text(r) for r in refused]
        await anyio.sleep(1.0)  # a motion would have started by now: the episode counts no step, no trajectory came
        assert rec.last(topics.EPISODE_STATUS).steps_used == 0
        for arm in ("left", "right"):
            reports = rec.all(topics.trajectory_status(topics.controller_names(arm).arm))
            assert not any(m.state == m.PLAYING for m in reports), arm
        for reply in yaml.safe_load(REPLAY.read_text()):
            (call,) = reply["tool_calls"]
            result = await session.call_tool(call["name"], call["arguments"])
            texts.append(_text(result))
        after = await session.call_tool("move_eef", {"targets": {"right_z": 0.9}})
        assert after.is_error and "the episode is over" in _text(after)
    return texts


def _serving_agent(graph, out: Path, tools: str) -> tuple[NodeProcess, int, gc.Recorder]:
    """The simulator, the motion server and agent_node serving its episode (agent mcp); the node, its port and the
    graph's recorder."""
    rec, _ = gc.start_sim_and_motion(graph)
    port = _free_port()
    agent = graph.start(
        "agent_node", agent="mcp", mcp_tools=tools, mcp_port=port, out=str(out), use_sim_time=True, **gc.AGENT_SLACK
    )
    _wait_serving(port, agent)
    return agent, port, rec


def test_an_mcp_client_solves_the_graphs_episode_through_agent_node(graph, tmp_path: Path):
    out = tmp_path / "graph"
    agent, port, rec = _serving_agent(graph, out, "move_eef")
    texts = anyio.run(_solve, f"http://127.0.0.1:{port}/mcp", rec)
    assert agent.wait(60) == 0, agent.output()[-3000:]
    (folder,) = out.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    meta = json.loads((folder / "meta.json").read_text())
    assert metrics["success"] and metrics["end_reason"] == "success", (metrics, texts)
    assert meta["agent"] == "mcp" and meta["model"] == CLIENT
    assert metrics["steps_used"] > 0  # the arm moved on the simulator node


def test_ctrl_c_while_the_node_waits_for_its_client_ends_the_episode_as_interrupted(graph, tmp_path: Path):
    out = tmp_path / "graph"
    agent, _, _ = _serving_agent(graph, out, "robo")
    assert agent.stop() == 0, agent.output()[
        -3000:
    ]  # SIGINT: the episode ends, its record written, within launch's 5 s
    (folder,) = out.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["end_reason"] == "interrupted" and metrics["steps_used"] == 0, metrics
