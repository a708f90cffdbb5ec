"""mcp:<cli> attacked by its own client: a "CLI" (a Python script, configured like the real ones) that, from inside
the sandbox, plants links and a FIFO where it can write, tries to write where it cannot, holds silent connections to
the robot's MCP server and floods it, sends it a body far over any limit and calls a tool with huge arguments, then
asks its model once and exits. The harness outside follows none of it: what lies outside is untouched (a link to it
included), its folders are gone after the episode, the robot never moved, the server still answers after the floods,
and the record says what happened."""

from __future__ import annotations

import json
from dataclasses import replace

from robodojo.agents.llm.types import ChatReply, Usage
from robodojo.agents.mcp.cli_agent import McpCliAgent
from robodojo.agents.shell.settings import CodingAgentCli, McpClientMode, load_shell_settings
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode

HOSTILE = r"""
import json, os, socket, time, urllib.request, urllib.error
home, report = os.path.expanduser("~"), {}
def attempt(name, fn):
    try:
        fn(); report[name] = "done"
    except Exception as exc:
        report[name] = type(exc).__name__
attempt("symlink_root", lambda: os.symlink("/", f"{home}/root_link"))
attempt("symlink_outside", lambda: os.symlink("{outside}", f"{home}/outside_link"))  # the host's path, guessed
attempt("symlink_socket", lambda: os.symlink("/run/robo/mcp.sock", f"{home}/sock_link"))
attempt("fifo", lambda: os.mkfifo(f"{home}/fifo"))
attempt("hardlink_task", lambda: os.link("/opt/robo/etc/task.md", f"{home}/task_hl"))
attempt("write_sockets", lambda: open("/run/robo/evil", "w").write("x"))
attempt("write_etc", lambda: open("/opt/robo/etc/task.md", "w").write("x"))
attempt("rename_socket", lambda: os.rename("/run/robo/mcp.sock", "/run/robo/moved.sock"))
silent = []
for _ in range(40):  # connections that never send a byte
    s = socket.socket(); s.connect(("127.0.0.1", {mcp_port})); silent.append(s)
def post(path, body, headers):
    req = urllib.request.Request(f"http://127.0.0.1:{mcp_port}{path}", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=240) as r:  # a loaded machine runs this suite at nice 19
            return r.status, r.read(2000).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read(2000).decode(errors="replace")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200], ""
mcp = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
       "MCP-Protocol-Version": "2025-06-18"}
report["huge_body"] = post("/mcp", b"[" + b"1," * 3_000_000 + b"1]", mcp)[0]
call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "move_eef", "arguments": {"targets": {"right_z": 0.9}, "note": "x" * 5_000_000}}}
report["huge_arguments"] = post("/mcp", json.dumps(call).encode(), mcp)[0]
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}}
report["initialize_after"] = post("/mcp", json.dumps(init).encode(), mcp)[0]
for s in silent:
    s.close()
chat = {"model": "robodojo", "messages": [{"role": "user", "content": json.dumps(report)}]}
req = urllib.request.Request("http://127.0.0.1:{model_port}/v1/chat/completions", data=json.dumps(chat).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
with urllib.request.urlopen(req, timeout=60) as r:
    print(r.read(300).decode())
"""


class _Model:
    """The episode's model: answers once, and keeps what the client's request said."""

    def __init__(self) -> None:
        self.requests: list = []

    def chat(self, messages, tools, *, tool_choice=None):
        self.requests.append(messages)
        return ChatReply("noted", (), Usage(1, 1, 2, 0.0), "m", "stop", 0.0, 1)


def test_a_hostile_mcp_client_reaches_nothing_outside_and_moves_nothing(dual_world, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    canary = outside / "canary.txt"
    canary.write_text("untouched")
    install = tmp_path / "cli"
    install.mkdir()
    settings = load_shell_settings()
    coding = settings.coding_agents
    script = HOSTILE.replace("{mcp_port}", str(coding.mcp_port)).replace("{model_port}", str(coding.model_port))
    script = script.replace("{outside}", str(outside))
    (install / "hostile.py").write_text(script)
    mode = McpClientMode("python3 /opt/agent/hostile.py </dev/null", None, {})
    cli = CodingAgentCli("hostile", install, "hostile.py", "true", None, {}, mode)
    settings = replace(settings, coding_agents=replace(coding, clis={"hostile": cli}))
    agent = McpCliAgent("hostile", shell_settings=settings)
    model = _Model()
    try:
        result = run_episode(WorldHost(dual_world), agent, model, EpisodeSpec("general_pickup", 0), tmp_path / "eps")
        episode_root = agent.root  # its own: other tests' episodes run beside it in the same temp folder
    finally:
        agent.close()

    # the client asked its model once, and the episode ended when it exited: no step, nothing moved
    assert result.end_reason is EndReason.FINISHED and result.llm_calls == 1 and result.steps_used == 0, result
    report = json.loads(model.requests[0][-1]["content"])
    # inside, what it could not do was refused by the sandbox; what it could do stayed in its own folder
    assert report["write_sockets"] != "done" and report["write_etc"] != "done" and report["rename_socket"] != "done"
    assert report["hardlink_task"] != "done"  # another mount: no hard link to the harness's files
    # a body over the server's limit (4 MiB: 6 MB, and a call with 5 MB of arguments) is refused before it is read:
    # 413, which the sender sees, or the connection closed while it still writes (the server closes it rather than
    # read the rest); then the server answers as before
    for flood in ("huge_body", "huge_arguments"):
        assert report[flood] == 413 or any(w in str(report[flood]) for w in ("Broken pipe", "reset by peer")), report
    assert report["initialize_after"] == 200, report
    # outside: untouched, and the episode's folders gone (links and FIFO removed without being followed)
    assert canary.read_text() == "untouched"
    assert episode_root is not None and not episode_root.exists()
    turns = [json.loads(line) for line in (result.folder / "turns.jsonl").read_text().splitlines()]
    assert len(turns) == 1 and turns[0]["details"]["coding_agent"] == "hostile" and turns[0]["finished"]
    assert all(not t["details"]["tool_calls"] or all(c["refused"] for c in t["details"]["tool_calls"]) for t in turns)
