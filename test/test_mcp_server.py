"""robodojo mcp end to end: the MCP SDK's own client against the real server in a subprocess, on the embedded world.

Two episodes of general_pickup seed 0: over stdio with the move_eef tools, and over streamable HTTP with the robo
tools. In each a scripted client first behaves like a hostile one (unknown tool, oversized and mistyped arguments,
NaN, out-of-bounds values, a burst of concurrent calls) and checks that every call got its precise error and the
joints did not move; then it solves the task, and calls after the episode's end are refused. The record must say
success with agent ``mcp`` and the client's name.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.types import ToolCall
from robodojo.agents.move_eef.tools import tool_schemas, validate_tool_call
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.agents.text_limits import default_text_limits
from robodojo.agents.tool_calls import ToolCallError
from robodojo.episodes.record import EpisodeRecord
from robodojo.motion.targets import dimension_bounds
from robodojo.robots.config import load_robot_config

TASK = "general_pickup"
REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"  # move_eef targets that solve seed 0
CLIENT = "robodojo-test-client"
SERVER_START_S = 120  # the world is built before the first call is answered; generous for a loaded 2-core machine
OVERSIZE_WAIT_S = 60  # a 413 comes at once; only to fail the test instead of waiting for ever
SRC = str(PACKAGE_ROOT / "src")
JOINTS = re.compile(r"^Arm joint angles.*$", re.MULTILINE)


def _command(tools: str, transport: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robodojo.cli", "mcp", "--task", TASK, "--seed", "0", "--tools", tools,
            "--transport", transport, "--out", str(out), *extra]  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _refused(session: ClientSession, name: str, arguments: Any) -> str:
    result = await session.call_tool(name, arguments)
    assert result.is_error, f"{name} {arguments!r} was not refused: {_text(result)}"
    return _text(result)


def _model_refusal(name: str, arguments: Any) -> str:
    """What the move_eef agent tells a model for the same call."""
    call = ToolCall("t", name, json.dumps(arguments))
    with pytest.raises(ToolCallError) as refused:
        validate_tool_call(call, default_text_limits())
    return str(refused.value)


def _record(out: Path) -> EpisodeRecord:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return EpisodeRecord.open(folder)


@asynccontextmanager
async def _client(read: Any, write: Any) -> AsyncIterator[ClientSession]:
    info = types.Implementation(name=CLIENT, version="1")
    async with ClientSession(read, write, read_timeout_seconds=SERVER_START_S, client_info=info) as session:
        await session.initialize()
        yield session


# -- move_eef over stdio ---------------------------------------------------------------------------------------------
async def _move_eef_episode(out: Path) -> None:
    command = _command("move_eef", "stdio", out)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(), cwd=str(PACKAGE_ROOT))
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), _client(read, write) as session:
            await _move_eef_hostile_then_solve(session)


async def _move_eef_hostile_then_solve(session: ClientSession) -> None:
    robot = load_robot_config("dual_arx_x5")
    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert list(listed) == ["move_eef", "give_up", "observe"]
    for schema in tool_schemas(dimension_bounds(robot), default_text_limits()):  # the move_eef agent's own
        tool = listed[schema["function"]["name"]]
        assert (tool.description, tool.input_schema) == (schema["function"]["description"],
                                                         schema["function"]["parameters"])  # fmt: skip
    instruction = (await session.read_resource("robodojo://episode/instruction")).contents[0]
    assert isinstance(instruction, types.TextResourceContents) and "cyan block" in instruction.text
    cameras = (await session.read_resource("robodojo://episode/cameras")).contents[0]
    assert isinstance(cameras, types.TextResourceContents)
    assert set(json.loads(cameras.text)) == set(robot.camera_names)

    first = await session.call_tool("observe", {})
    images = [c for c in first.content if isinstance(c, types.ImageContent)]
    assert not first.is_error and len(images) == len(robot.camera_names)
    assert all(i.mime_type == "image/png" and i.data.startswith("iVBORw0KGgo") for i in images)  # base64 of PNG
    joints_before = JOINTS.findall(_text(first))
    assert len(joints_before) == 1

    assert await _refused(session, "teleport", {"to": "goal"}) == (
        "unknown tool 'teleport'; the tools are move_eef, give_up, observe; nothing moved"
    )
    huge = {"targets": {"right_z": 0.9}, "note": "x" * 100_000}
    assert await _refused(session, "move_eef", huge) == (
        f"the arguments of move_eef are {len(json.dumps(huge, separators=(',', ':')))} characters of JSON; at most "
        "8000; nothing moved"
    )
    mistyped = (
        {"targets": "up"},
        {"targets": {"right_z": 0.9}, "note": 5},
        {"targets": {"right_z": 0.9}, "speed": 2},
        {},
    )
    for arguments in mistyped:
        assert await _refused(session, "move_eef", arguments) == _model_refusal("move_eef", arguments)
    assert await _refused(session, "give_up", {"reason": 42}) == _model_refusal("give_up", {"reason": 42})
    out_of_bounds = await _refused(session, "move_eef", {"targets": {"left_z": 5.0}})
    assert out_of_bounds.startswith("target for 'left_z' is outside [0.7, 1.565]") and "nothing moved" in out_of_bounds
    # JSON has no NaN: the SDK's client writes it as null, which the target parser refuses as not finite
    not_finite = await _refused(session, "move_eef", {"targets": {"right_z": math.nan}})
    assert not_finite == "'right_z' must be a finite number; nothing moved"
    assert (
        await _refused(session, "observe", {"camera": "head"})
        == "observe takes no arguments, got 'camera'; nothing ran"
    )

    async def hostile(index: int, results: list[str]) -> None:
        results.append(await _refused(session, "move_eef", {"targets": {"right_x": index * 10.0}}))

    burst: list[str] = []
    async with anyio.create_task_group() as group:
        for index in range(1, 9):
            group.start_soon(hostile, index, burst)
    assert len(burst) == 8 and all("right_x" in text and "nothing moved" in text for text in burst)
    assert JOINTS.findall(_text(await session.call_tool("observe", {}))) == joints_before  # nothing moved

    for step in yaml.safe_load(REPLAY.read_text()):
        (call,) = step["tool_calls"]
        result = await session.call_tool(call["name"], call["arguments"])
        assert not result.is_error and _text(result).startswith("Accepted: playing"), _text(result)
    after = await _refused(session, "move_eef", {"targets": {"right_z": 0.9}})
    assert after.startswith("the episode is over (ended by success: success, score 1.00)")
    assert "nothing moved" in after


def test_move_eef_tools_over_stdio(tmp_path: Path) -> None:
    anyio.run(_move_eef_episode, tmp_path)
    record = _record(tmp_path)
    assert (record.meta.agent, record.meta.model) == ("mcp", CLIENT)
    assert record.outcome is not None and not record.problems
    assert (record.outcome.success, record.outcome.end_reason) == (True, "success")
    actions = [t.action for t in record.turns]
    refused = [t for t in record.turns if t.action == "refused"]
    assert refused[0].tool_results == (
        "unknown tool 'teleport'; the tools are move_eef, give_up, observe; nothing moved",
    )
    accepted = [t for t in record.turns if t.move is not None and t.move["accepted"]]
    assert actions[0] == "observe" and len(accepted) == 4  # the replay's four motions; every refusal moved nothing
    assert record.outcome.llm_calls == len(record.turns)  # every call the episode served is a recorded turn


# -- robo over streamable HTTP ---------------------------------------------------------------------------------------
def _status_joints(result: types.CallToolResult) -> dict[str, list[float]]:
    record = json.loads(_text(result))
    assert record["ok"] and record["command"] == "status"
    return record["joints_rad"]


async def _robo_hostile_then_solve(session: ClientSession) -> None:
    limits = load_shell_settings().commands
    names = [t.name for t in (await session.list_tools()).tools]
    assert names == ["move", "rotate", "point", "gripper", "home", "wait", "obs", "status", "done", "observe"]
    joints_before = _status_joints(await session.call_tool("status", {}))

    assert await _refused(session, "move", {"arm": "right", "dz": "0.1"}) == (
        "'dz' must be a number, got string; nothing moved"
    )
    assert await _refused(session, "move", {"arm": "right", "dz": 0.05, "speed": 9}) == (
        "unexpected argument 'speed' for move; its arguments: arm, dx, dy, dz; nothing moved"
    )
    assert await _refused(session, "gripper", {"arm": "right", "open": "yes"}) == (
        "'open' must be true or false, got string; nothing moved"
    )
    beyond = json.loads(await _refused(session, "move", {"arm": "right", "dx": 5}))
    assert beyond["verdict"] == "refused" and beyond["steps_used"] == 0
    assert beyond["reason"] == (
        f"--dx 5 m is beyond the {limits.max_translation_m:g} m a move may go along one axis; nothing moved"
    )
    injected = json.loads(await _refused(session, "move", {"arm": "--dx=0.2"}))
    assert injected["reason"].startswith("unknown arm '--dx=0.2'")
    # JSON has no NaN: the SDK's client writes it as null
    assert await _refused(session, "rotate", {"arm": "right", "yaw": math.nan}) == (
        "'yaw' must be a number, got null; nothing moved"
    )
    assert _status_joints(await session.call_tool("status", {})) == joints_before  # nothing moved

    # A burst of concurrent waits: run one after the other, each its own 0.2 s (5 env steps), none overlapping.
    waits: list[dict[str, Any]] = []

    async def wait() -> None:
        result = await session.call_tool("wait", {"seconds": 0.2})
        waits.append(json.loads(_text(result)))

    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(wait)
    steps = 5  # 0.2 s at 25 Hz
    assert len(waits) == 6 and all(w["ok"] and w["steps_used"] == steps for w in waits)
    left = sorted(w["steps_left"] for w in waits)
    assert left == list(range(left[0], left[0] + 6 * steps, steps))  # one after the other, 5 steps apart

    # Solve: the replay's right-arm grasp as relative moves from where the arm is.
    status = json.loads(_text(await session.call_tool("status", {})))
    x, y, z = status["arms"]["right"]["tcp_pos_m"]
    (first,) = yaml.safe_load(REPLAY.read_text())[0]["tool_calls"]
    goal = first["arguments"]["targets"]
    plan = [
        ("gripper", {"arm": "right", "open": True}),
        ("move", {"arm": "right", "dx": goal["right_x"] - x, "dy": goal["right_y"] - y, "dz": goal["right_z"] - z}),
        ("move", {"arm": "right", "dz": -0.1}),
        ("gripper", {"arm": "right", "close": True}),
        ("move", {"arm": "right", "dz": 0.15}),
    ]
    for name, arguments in plan:
        record = json.loads(_text(await session.call_tool(name, arguments)))
        assert record["ok"], record
    assert record["task_done"] is True
    after = await _refused(session, "done", {"reason": "lifted"})
    assert after.startswith("the episode is over (ended by success: success")


async def _robo_episode(out: Path) -> None:
    command = _command("robo", "http", out, "--port", "0", "--max-calls", "40")
    server = subprocess.Popen(command, env=_env(), cwd=PACKAGE_ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        url = ""
        with anyio.fail_after(SERVER_START_S):
            while not url:
                line = await anyio.to_thread.run_sync(server.stderr.readline)
                assert line, f"robodojo mcp exited ({server.poll()}) before serving"
                url = line.split("serving ", 1)[1].strip() if "serving http" in line else ""
        assert url.startswith("http://127.0.0.1:")
        await anyio.to_thread.run_sync(_oversize_body_is_refused_unread, url)
        async with streamable_http_client(url) as (read, write), _client(read, write) as session:
            await _robo_hostile_then_solve(session)
        # Closing the session ends the server: the record is complete once it exited.
        assert await anyio.to_thread.run_sync(server.wait) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _oversize_body_is_refused_unread(url: str) -> None:
    """A request declaring 64 MB (the SDK's limit is 4 MiB), its body never sent: 413 at once, and the connection
    closed, not held open to read the body (a client sending it would otherwise be read to its end)."""
    parts = urllib.parse.urlsplit(url)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Length: 64000000\r\n\r\n["
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=OVERSIZE_WAIT_S) as s:
        s.sendall(head.encode())
        answer = b""
        while chunk := s.recv(65536):  # to the server's end of the connection (a timeout fails the test)
            answer += chunk
    status, _, rest = answer.partition(b"\r\n")
    assert status.split()[1] == b"413", answer[:300]
    assert b"connection: close" in rest.lower(), answer[:300]


def test_robo_tools_over_http(tmp_path: Path) -> None:
    anyio.run(_robo_episode, tmp_path)
    record = _record(tmp_path)
    assert (record.meta.agent, record.meta.model) == ("mcp", CLIENT)
    assert record.outcome is not None and not record.problems
    assert (record.outcome.success, record.outcome.end_reason) == (True, "success")
    robo = [line for line in record.robo_calls if line["argv"][0] in ("move", "gripper")]
    assert robo and all(line["record"]["command"] == line["argv"][0] for line in robo)


def test_http_refuses_another_host(tmp_path: Path) -> None:
    command = _command("robo", "http", tmp_path, "--host", "0.0.0.0")
    done = subprocess.run(command, env=_env(), cwd=PACKAGE_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "robodojo: error: --host must be 127.0.0.1: the robot is served to this machine only (got '0.0.0.0')"
    ]
