"""The shell harness (seed 003): every base command through the real robo CLI in the real bubblewrap sandbox, the
obs/ folder against the observation, bounds refused with nothing moving, and a replayed shell episode solving
general_pickup through the CLI with the shared pick tool."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys

import cv2
import numpy as np
import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.agents.shell.commands import BaseCommands
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace
from robodojo.episodes import episode_context
from robodojo.errors import ConfigError

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

REPLAY = PACKAGE_ROOT / "examples" / "shell" / "general_pickup.yaml"


@pytest.fixture
def shell(dual_world, tmp_path):
    dual_world.reset("general_pickup", seed=0)
    settings = load_shell_settings()
    holder: dict[str, BaseCommands] = {}
    workspace = ShellWorkspace(settings, lambda argv: holder["commands"].run(argv), root=tmp_path / "ws")
    holder["commands"] = BaseCommands(episode_context(dual_world), settings.commands, workspace.obs_dir)
    yield workspace, holder["commands"], dual_world
    workspace.close()


def records(outcome) -> list[dict]:
    return [json.loads(line) for line in outcome.output.splitlines() if line.startswith("{")]


def test_motion_commands_report_and_move(shell):
    workspace, _, world = shell
    before = np.array(world.arm_state("left").tcp_pos_m)
    outcome = workspace.run("robo move --arm left --dz 0.05 --dx 0.02")
    assert outcome.exit_code == 0, outcome.output
    (move,) = records(outcome)
    assert move["ok"] and move["planned"] and move["reached"] and move["verdict"] == "executed"
    assert move["steps_used"] > 0 and move["steps_left"] == world.steps_left
    after = np.array(world.arm_state("left").tcp_pos_m)
    assert np.allclose(after - before, [0.02, 0.0, 0.05], atol=0.003)
    assert np.allclose(move["arms"]["left"]["tcp_pos_m"], after, atol=1e-4)
    # the served call is logged with its record
    (call,) = outcome.calls
    assert call.argv[:3] == ["move", "--arm", "left"] and call.record == move and call.answered

    out = records(workspace.run("robo rotate --arm left --yaw 30; robo point --arm right --fingers y; "
                                "robo gripper --arm right --close; robo gripper --arm right --open; "
                                "robo wait --seconds 0.4; robo home"))  # fmt: skip
    assert [r["command"] for r in out] == ["rotate", "point", "gripper", "gripper", "wait", "home"]
    assert all(r["ok"] for r in out), out
    assert out[2]["holding"] is False and out[3]["gripper_opening"] > 0.9
    assert out[4]["steps_used"] == 10  # 0.4 s at 25 Hz


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("robo move --arm left --dz 0.25", "beyond the 0.2 m"),
        ("robo move --arm left --dx nan", "finite"),
        ("robo move --arm middle --dz 0.01", "unknown arm"),
        ("robo rotate --arm left --yaw 120", "beyond the 90 deg"),
        ("robo point --arm left --direction down --fingers z", "cannot open along z"),
        ("robo gripper --arm left --opening 1.5", "from 0 (closed) to 1"),
        ("robo wait --seconds 11", "from 0 to 10"),
        ("robo move --arm left --dz -0.2 --dy 0.2 --dx -0.2", "nothing moved"),  # planner: beyond the workspace
    ],
)
def test_bad_commands_are_refused_and_nothing_moves(shell, command, reason):
    workspace, _, world = shell
    qpos = world.data.qpos.copy()
    steps = world.steps_left
    outcome = workspace.run(command)
    (record,) = records(outcome)
    assert outcome.exit_code == 1 and not record["ok"] and record["verdict"] == "refused"
    assert reason in record["reason"] and record["steps_used"] == 0
    assert world.steps_left == steps and np.allclose(world.data.qpos, qpos, atol=1e-9)


def test_usage_errors_exit_2_and_name_the_commands(shell):
    workspace, _, world = shell
    outcome = workspace.run("robo fly --arm left; echo status=$?; robo move --dz 0.1; echo status=$?")
    usage = records(outcome)
    assert [r["verdict"] for r in usage] == ["usage", "usage"]
    assert "'fly' is not a command" in usage[0]["reason"] and "move, rotate, point" in usage[0]["reason"]
    assert "--arm" in usage[1]["reason"]
    assert "status=2" in outcome.output
    assert world.step_count == 0


def test_obs_folder_equals_the_observation(shell):
    workspace, _, world = shell
    outcome = workspace.run("robo obs && ls obs")
    assert outcome.exit_code == 0
    obs = world.observe()
    cameras = json.loads((workspace.obs_dir / "cameras.json").read_text())
    state = json.loads((workspace.obs_dir / "state.json").read_text())
    assert set(cameras) == set(obs.cameras) == {"head", "left_wrist", "right_wrist"}
    assert not list(workspace.obs_dir.glob("*depth*"))
    rng = np.random.default_rng(0)
    points = np.column_stack([rng.uniform(-0.3, 0.3, 50), rng.uniform(-0.3, 0.1, 50), rng.uniform(0.77, 0.9, 50)])
    for name, frame in obs.cameras.items():
        png = cv2.imread(str(workspace.obs_dir / cameras[name]["image"]))[:, :, ::-1]
        assert np.array_equal(png, frame.rgb)  # lossless, and the same state renders the same image
        truth = world.calibration(name)
        K, T = np.array(cameras[name]["K"]), np.array(cameras[name]["T_world_cam"])
        cam = (points - T[:3, 3]) @ T[:3, :3]
        px = (cam @ K.T)[:, :2] / cam[:, 2:3]
        visible = cam[:, 2] > 0
        assert np.max(np.linalg.norm(px[visible] - truth.project(points)[visible], axis=1)) < 1.0
    for arm, a in obs.arms.items():
        assert np.allclose(state["arms"][arm]["tcp_pos_m"], a.tcp_pos_m)
        assert state["arms"][arm]["joint_positions_rad"] == pytest.approx(list(a.joint_positions_rad))
    assert state["steps_left"] == world.steps_left


def test_obs_folder_keeps_the_distortion_model(dual_world, tmp_path):
    """A fisheye camera is read back as one (robo_shell's reader), not as plumb_bob."""
    import dataclasses

    from robo_shell.api import read_obs
    from robodojo.agents.shell.commands import write_obs_folder

    dual_world.reset("general_pickup", seed=0)
    obs = dual_world.observe()
    head = obs.cameras["head"]
    fisheye = dataclasses.replace(head.calibration, distortion_model="equidistant", distortion=(0.1, -0.02, 0.0, 0.0))
    obs = dataclasses.replace(obs, cameras={**obs.cameras, "head": dataclasses.replace(head, calibration=fisheye)})
    write_obs_folder(obs, tmp_path)
    read = read_obs(tmp_path)
    assert read.cameras["head"].distortion_model == "equidistant"
    assert read.cameras["head"].distortion == pytest.approx((0.1, -0.02, 0.0, 0.0))
    assert read.cameras["left_wrist"].distortion_model == "plumb_bob"


def test_status_and_done(shell):
    workspace, commands, _world = shell
    status, done = records(workspace.run("robo status; robo done --reason 'all set'"))
    assert status["instruction"].startswith("Pick up the") and set(status["joints_rad"]) == {"left", "right"}
    assert done["episode_over"] and commands.declared_done == "all set"


def test_help_prints_the_manual_with_the_enabled_tools(shell):
    workspace, _, _ = shell
    outcome = workspace.run("robo help")
    assert "## Base commands" in outcome.output and "## Extra tools for this task" in outcome.output
    assert "### pick" in outcome.output and "### table_plane" in outcome.output
    assert outcome.output.strip() == workspace.manual().strip()


def test_a_command_that_hangs_is_killed_at_its_timeout(shell):
    workspace, _, _ = shell
    outcome = workspace.run("sleep 30", timeout_s=1.0)
    assert outcome.timed_out and outcome.exit_code is None and outcome.wall_s < 10
    assert "killed" in outcome.text()


def test_replayed_shell_agent_solves_general_pickup_through_the_cli(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--seed", "0", "--agent", "shell",
         "--llm", f"replay:{REPLAY}", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["success"] and metrics["end_reason"] == "success"
    calls = [json.loads(line) for line in (folder / "robo_calls.jsonl").read_text().splitlines()]
    moves = [c for c in calls if c["argv"][0] in ("move", "rotate", "point", "gripper")]
    # the pick tool drove the arm through base commands only; their steps add up to the episode's
    assert sum(c["record"]["steps_used"] for c in calls) == metrics["steps_used"] > 0
    assert moves and all(c["answered"] for c in calls)
    turns = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    assert "robo pick grasp" in turns[-1]["details"]["command"]
    # the record says what the sandbox enforced in this episode
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["agent_settings"]["sandbox"].startswith("bubblewrap: new ")


# Each coding-agent CLI: its name, its replay (examples/shell/), its shell tool, a word of its own system prompt, and
# the wire API it speaks (in the id). mini-swe-agent comes with make setup, the npm CLIs with make agents.
CODING_AGENTS = [
    pytest.param("mini-swe-agent", "general_pickup_mini_swe_agent.yaml", "bash", "robot", id="mini-swe-agent-chat"),
    pytest.param("codex", "general_pickup_codex.yaml", "exec_command", "Codex", id="codex-responses-api"),
    pytest.param("opencode", "general_pickup_opencode.yaml", "bash", "opencode", id="opencode-streamed-chat"),
    pytest.param("claude-code", "general_pickup_claude-code.yaml", "Bash", "Claude", id="claude-code-messages-api"),
]


@pytest.mark.parametrize("cli, replay, shell_tool, prompt_word", CODING_AGENTS)
def test_a_coding_agent_cli_solves_general_pickup_through_its_own_loop(tmp_path, cli, replay, shell_tool, prompt_word):
    if not load_shell_settings().coding_agents.get(cli).installed:
        pytest.skip(f"{cli} is not installed (make setup installs mini-swe-agent, make agents the npm CLIs)")
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "run", "--task", "general_pickup", "--seed", "0", "--agent", "shell",
         "--coding-agent", cli, "--llm", f"replay:{PACKAGE_ROOT / 'examples' / 'shell' / replay}",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.iterdir()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["success"] and metrics["llm_calls"] == 3
    # the CLI's own requests, through the proxy: its tools, its system prompt, the task, robo's answers as it ran them
    requests = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    assert all(shell_tool in [t["function"]["name"] for t in r["tools"]] for r in requests)
    assert prompt_word in requests[0]["messages"][0]["content"]
    assert any("## Base commands" in json.dumps(m["content"]) for m in requests[0]["messages"] if m["role"] == "user")
    results = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert results and "steps_left" in str(results[0]["content"])  # robo status's record, in the CLI's words
    calls = [json.loads(line) for line in (folder / "robo_calls.jsonl").read_text().splitlines()]
    assert sum(c["record"]["steps_used"] for c in calls) == metrics["steps_used"] > 0


@pytest.mark.skipif(
    not load_shell_settings().coding_agents.get("codex").installed,
    reason="Codex CLI is not installed (make agents installs it from npm into .venv/agents/npm)",
)
def test_a_campaign_compares_the_built_in_shell_agent_with_a_coding_agent_cli(tmp_path):
    spec = tmp_path / "agents.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "cli_axis", "tasks": ["general_pickup"], "seeds": [0], "agents": ["shell", "shell:codex", "mcp:codex"],
        "llms": {"replay": {"shell": "replay:examples/shell/general_pickup.yaml",
                            "shell:codex": "replay:examples/shell/general_pickup_codex.yaml",
                            "mcp:codex": "replay:examples/mcp/general_pickup.yaml"}},
    }))  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "eval", str(spec), "--out", str(tmp_path / "campaign")],
        capture_output=True, text=True, timeout=300, cwd=PACKAGE_ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3/3 episodes ended, 3 successes, 0 crashed" in result.stdout
    with (tmp_path / "campaign" / "report" / "efficiency.csv").open() as f:
        rows = {r["agent"]: r for r in csv.DictReader(f)}
    # calls, tokens and wall time per solved episode, Codex over the built-in agent
    assert rows["shell:codex"]["base_agent"] == "shell" and float(rows["shell:codex"]["mean_llm_calls"]) == 3
    assert float(rows["shell:codex"]["ratio_input_tokens"]) > 1  # Codex's own prompt and tools ride along
    assert float(rows["shell:codex"]["mean_wall_time_s"]) > 0
    # Codex as the MCP client: its four move_eef calls, one per model call
    assert rows["mcp:codex"]["base_agent"] == "shell" and float(rows["mcp:codex"]["mean_llm_calls"]) == 4
    # the report is titled with the spec's name, its episode time said in seconds (three short episodes)
    report = tmp_path / "campaign" / "report"
    assert (report / "report.md").read_text().startswith("# Campaign cli_axis\n")
    index = (report / "index.html").read_text()
    assert "<h1>Campaign cli_axis</h1>" in index and re.search(r"<b>\d+ s</b> episode time", index), index[:2000]


@pytest.mark.parametrize(
    "agent, why",
    [
        ("shell:nope", "unknown coding agent 'nope'"),
        ("move_eef:codex", "only shell and mcp take a coding-agent CLI"),
        ("mcp", "agent 'mcp' needs its client: mcp:<cli>"),
        ("mcp:mini-swe-agent", "mini-swe-agent does not run as an MCP client; those that do: codex, opencode"),
    ],
)
def test_a_campaign_refuses_an_unknown_coding_agent_before_it_starts(tmp_path, agent, why):
    from robodojo.campaigns.spec import campaign_spec_from_dict

    with pytest.raises(ConfigError, match=why):
        campaign_spec_from_dict(
            {"name": "x", "tasks": ["general_pickup"], "agents": [agent], "llms": {"r": "replay:x"}}
        )


def test_a_campaign_runs_the_shell_agent_when_listed(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "eval", "--tasks", "general_pickup", "--seeds", "0", "--agents",
         "shell", "--llm", "replay:examples/shell/{task}.yaml", "--out", str(tmp_path / "campaign")],
        capture_output=True, text=True, timeout=300, cwd=PACKAGE_ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1/1 episodes ended, 1 successes, 0 crashed" in result.stdout


def test_view_image_shows_what_the_agent_can_read_and_nothing_it_links_to_outside(dual_world, tmp_path):
    from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
    from robodojo.agents.shell.agent import ShellAgent

    def reply(name, args):
        return ChatReply(None, (ToolCall("c1", name, json.dumps(args)),), Usage(1, 0, 1, 0.0), "m", "tool_calls", 0, 1)

    class Caller:
        def __init__(self, replies):
            self.replies = list(replies)

        def chat(self, messages, tools, *, tool_choice="required"):
            return self.replies.pop(0)

    host_png = tmp_path / "host.png"  # a real image on the host, outside the sandbox: linking to it shows nothing
    cv2.imwrite(str(host_png), np.zeros((8, 8, 3), np.uint8))
    dual_world.reset("general_pickup", seed=0)
    agent = ShellAgent()
    agent.begin(episode_context(dual_world))
    try:
        llm = Caller([
            reply("shell", {"command": f"robo obs >/dev/null && ln -s {host_png} leak.png && mkfifo pipe.png"}),
            reply("view_image", {"path": "obs/head.png"}),
            reply("view_image", {"path": "leak.png"}),
            reply("view_image", {"path": "obs/nothing.png"}),
            reply("view_image", {"path": "pipe.png"}),  # a FIFO: refused without being opened (nothing blocks)
        ])  # fmt: skip
        assert agent.turn(llm, 1).action == "shell"
        shown = agent.turn(llm, 2)
        assert shown.action == "view_image" and "640x480 image follows" in shown.tool_results[0]
        last = agent.conversation.history[-1]["content"]
        assert last[1]["type"] == "image_url"
        images = len(agent.conversation.history)
        leak, missing, fifo = agent.turn(llm, 3), agent.turn(llm, 4), agent.turn(llm, 5)
        assert leak.action == "error" and "'leak.png' does not exist" in leak.tool_results[0]
        assert missing.action == "error" and "does not exist" in missing.tool_results[0]
        assert fifo.action == "error" and "is not a regular file" in fifo.tool_results[0]
        assert len(agent.conversation.history) == images + 6  # three calls and three answers: no picture added
    finally:
        agent.close()


def test_a_refused_huge_command_is_kept_bounded_in_the_history(dual_world):
    from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
    from robodojo.agents.shell.agent import ShellAgent

    class Caller:
        def __init__(self) -> None:
            self.requests: list[list[dict]] = []

        def chat(self, messages, tools, *, tool_choice="required"):
            self.requests.append(json.loads(json.dumps(messages)))
            command = "echo " + "x" * 2_000_000 if len(self.requests) == 1 else "robo status"
            call = ToolCall(f"c{len(self.requests)}", "shell", json.dumps({"command": command}))
            return ChatReply(None, (call,), Usage(1, 0, 1, 0.0), "m", "tool_calls", 0, 1)

    dual_world.reset("general_pickup", seed=0)
    agent = ShellAgent()
    agent.begin(episode_context(dual_world))
    try:
        llm = Caller()
        refused, ran = agent.turn(llm, 1), agent.turn(llm, 2)
        bound = agent.settings.agent.max_call_chars
        assert refused.action == "error" and "nothing ran" in refused.tool_results[0]
        assert refused.tool_results[0].endswith(f"cut to {bound} characters (it had 2000020)]")
        assert ran.action == "shell"
        kept = llm.requests[1][2]["tool_calls"][0]["function"]["arguments"]
        assert len(kept) < bound + 100 and "characters omitted" in kept  # not 2 MB in every later request
    finally:
        agent.close()


TINY_CLI = """\
python3 - <<'PY'
import json, time, urllib.request
body = json.dumps({"messages": [{"role": "user", "content": "go"}]}).encode()
for _ in range(100):  # the forwarder starts beside this one
    try:
        req = urllib.request.Request("http://127.0.0.1:{model_port}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        print(json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]["message"]["content"])
        break
    except OSError:
        time.sleep(0.1)
PY
rm obs && mkdir obs && mkfifo obs/state.json && robo obs | grep -o '"note"'
yes | head -c 20M; echo; robo done --reason finished
"""


def test_a_coding_agent_cli_is_served_and_its_log_is_bounded_while_read(dual_world, tmp_path):
    from dataclasses import replace

    from robodojo.agents.llm.types import ChatReply, Usage
    from robodojo.agents.shell.cli_run import LOG_TAIL_CHARS
    from robodojo.agents.shell.external import ExternalShellAgent
    from robodojo.agents.shell.settings import CodingAgentCli

    install = tmp_path / "cli"  # the CLI is the bash script above; its install folder only has to exist
    (install / "bin").mkdir(parents=True)
    (install / "bin" / "python").touch()
    settings = load_shell_settings()
    cli = CodingAgentCli("tiny", install, "bin/python", TINY_CLI, None, {})
    settings = replace(settings, coding_agents=replace(settings.coding_agents, clis={"tiny": cli}))

    class Caller:
        def chat(self, messages, tools, *, tool_choice=None):
            return ChatReply("the model says hi", (), Usage(1, 1, 2, 0.0), "m", "stop", 0.0, 1)

    dual_world.reset("general_pickup", seed=0)
    agent = ExternalShellAgent("tiny", settings=settings)
    agent.begin(episode_context(dual_world))
    try:
        record = agent.turn(Caller(), 1)
    finally:
        agent.close()
    assert record.finished and record.details["done_reason"] == "finished"
    assert [c["argv"][0] for c in record.robo_calls] == ["obs", "done"]
    log = record.details["log_tail"]  # 20 MB printed; its head and tail kept while it was read
    assert log.startswith('the model says hi\n"note"\ny\n') and "bytes omitted" in log
    assert len(log) < LOG_TAIL_CHARS + 100


def test_a_coding_agent_cli_that_exits_at_once_ends_the_turn_with_its_exit_code_and_output(dual_world, tmp_path):
    from dataclasses import replace

    from robodojo.agents.shell.external import CodingAgentError, ExternalShellAgent
    from robodojo.agents.shell.settings import CodingAgentCli

    install = tmp_path / "cli"
    (install / "bin").mkdir(parents=True)
    (install / "bin" / "python").touch()
    cli = CodingAgentCli("quitter", install, "bin/python", "echo 'no key configured' >&2; exit 3", None, {})
    settings = load_shell_settings()
    settings = replace(settings, coding_agents=replace(settings.coding_agents, clis={"quitter": cli}))
    dual_world.reset("general_pickup", seed=0)
    agent = ExternalShellAgent("quitter", settings=settings)
    agent.begin(episode_context(dual_world))
    try:
        with pytest.raises(CodingAgentError, match=r"quitter ended before asking its model anything \(exit 3\)"):
            agent.turn(None, 1)  # no model call is made: the CLI never asked
        assert "no key configured" in agent.run.log_tail()
    finally:
        agent.close()
