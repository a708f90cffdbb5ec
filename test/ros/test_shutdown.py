"""Shutdown as under ros2 launch: one SIGINT or two (a terminal's Ctrl-C reaches the whole process group, and the
launcher forwards another) end every node with exit code 0 and no traceback; an agent node interrupted mid-episode
leaves a complete record that says so; `robodojo graph` names a node that died and keeps the others running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import graph_client as gc
import pytest

from robodojo import PACKAGE_ROOT
from robodojo.nodes import topics
from robodojo.nodes.process_graph import STOP_TIMEOUT_S, NodeProcess

pytestmark = pytest.mark.ros

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
READY = {"sim_node": "real-time factor", "motion_server_node": "MoveEef on"}  # each node's last start-up line
SIGNAL_GAP_S = 0.05
RECORD_FILES = ("meta.json", "requests.jsonl", "responses.jsonl", "turns.jsonl", "metrics.json")


def _interrupt(proc: NodeProcess, times: int, sig: signal.Signals = signal.SIGINT) -> None:
    for i in range(times):
        if i:
            time.sleep(SIGNAL_GAP_S)
        proc.proc.send_signal(sig)


def _assert_clean_exit(proc: NodeProcess, times: int) -> str:
    code = proc.wait(STOP_TIMEOUT_S)
    out = proc.output()
    assert code == 0 and "Traceback" not in out, f"{proc.node} exited {code}:\n{out[-3000:]}"
    assert "stop signal received: shutting down" in out
    # A second signal is logged when it finds the node still shutting down, ignored once the node is done
    assert out.count("already shutting down") <= times - 1, out[-2000:]
    return out


def _start_sim_and_motion(graph) -> tuple[NodeProcess, NodeProcess]:
    sim = graph.start("sim_node")
    motion = graph.start("motion_server_node", use_sim_time=True, joint_state_timeout_s=gc.JOINT_STATE_TIMEOUT_S)
    for proc in (sim, motion):
        graph.wait(lambda p=proc: READY[p.node] in p.output(), 60, f"{proc.node} to start")
    return sim, motion


@pytest.mark.parametrize(("sig", "times"), [(signal.SIGINT, 1), (signal.SIGINT, 2), (signal.SIGTERM, 1)])
def test_sim_and_motion_server_exit_0_on_one_or_two_sigints_or_sigterm(graph, sig, times):
    from sensor_msgs.msg import JointState

    sim, motion = _start_sim_and_motion(graph)
    states = threading.Event()
    graph.client.create_subscription(JointState, topics.JOINT_STATES, lambda _: states.set(), 10)
    graph.wait(states.is_set, 30, "joint states (the simulator running, the motion server subscribed)")
    for proc in (motion, sim):  # the motion server while the simulator still publishes to it
        _interrupt(proc, times, sig)
        _assert_clean_exit(proc, times)


@pytest.mark.parametrize("times", [1, 2])
def test_agent_node_interrupted_mid_episode_exits_0_with_a_complete_interrupted_record(graph, tmp_path, times):
    sim, motion = _start_sim_and_motion(graph)
    out = tmp_path / "episodes"
    agent = graph.start(
        "agent_node", agent="move_eef", llm=f"replay:{REPLAY}", out=str(out), use_sim_time=True, **gc.AGENT_SLACK
    )

    def turns() -> int:
        return sum(len(f.read_text().splitlines()) for f in out.glob("*/turns.jsonl"))

    # After the first recorded turn the replay sends the next goal at once: the signal finds a motion running.
    graph.wait(lambda: turns() >= 1, 120, "the episode's first turn")
    _interrupt(agent, times)
    log = _assert_clean_exit(agent, times)

    (folder,) = out.iterdir()
    assert all((folder / name).is_file() for name in RECORD_FILES), sorted(p.name for p in folder.iterdir())
    metrics = json.loads((folder / "metrics.json").read_text())
    ended = f"{metrics['end_reason']}: {metrics.get('error')}\nmotion server:\n{motion.output()[-3000:]}"
    assert metrics["end_reason"] == "interrupted" and not metrics["success"], ended
    assert "shutting down" in metrics["error"] and "ended by interrupted" in log
    recorded = [json.loads(line) for line in (folder / "turns.jsonl").read_text().splitlines()]
    assert metrics["llm_calls"] == len(recorded) < 4  # the replay solves it in 4 turns: it was stopped partway
    assert sim.alive and motion.alive  # interrupting the agent leaves the robot side running


def _launcher_line(output: Path, pattern: str, timeout_s: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if match := re.search(pattern, output.read_text()):
            return match
        time.sleep(0.1)
    pytest.fail(f"no line matching {pattern!r} within {timeout_s} s in:\n{output.read_text()[-3000:]}")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _launch(graph, tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """`robodojo graph` in a session of its own: a Ctrl-C sent to its process group reaches every node, as a
    terminal's would, and never pytest."""
    output = tmp_path / "graph.out"
    cmd = [sys.executable, "-m", "robodojo.cli", "graph", *args, "--domain-id", str(graph.domain_id)]
    cmd += ["--log-dir", str(tmp_path / "logs"), "--out", str(tmp_path / "episodes")]
    with output.open("w") as f:
        launcher = subprocess.Popen(
            cmd, env=graph.env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
    return launcher, output


def _ctrl_c(launcher: subprocess.Popen) -> int:
    """SIGINT to the launcher's whole process group; its exit code (killed, with the group, if it hangs)."""
    os.killpg(launcher.pid, signal.SIGINT)
    try:
        return launcher.wait(STOP_TIMEOUT_S + 10)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


def _assert_stopped_cleanly(output: Path, code: int) -> None:
    text = output.read_text()
    assert code == 0 and "Traceback" not in text, text[-3000:]
    assert "every node stopped" in text and "not every one cleanly" not in text, text[-3000:]
    for log in (output.parent / "logs").glob("*.log"):
        assert "Traceback" not in log.read_text(), f"{log.name}:\n{log.read_text()[-3000:]}"


def test_graph_names_a_killed_motion_server_keeps_the_simulator_and_ctrl_c_exits_0(graph, tmp_path):
    from sensor_msgs.msg import JointState

    launcher, output = _launch(graph, tmp_path, "--agent", "none")
    try:
        sim_pid = int(_launcher_line(output, r"started sim_node \(pid (\d+)\)", 30)[1])
        motion_pid = int(_launcher_line(output, r"started motion_server_node \(pid (\d+)\)", 30)[1])
        count = [0]
        graph.client.create_subscription(
            JointState, topics.JOINT_STATES, lambda _: count.__setitem__(0, count[0] + 1), 50
        )
        graph.wait(lambda: count[0] > 10, 60, "joint states from the graph's simulator")
        time.sleep(1.0)  # the motion server up too (it logs nothing the test can see before its log file)

        os.kill(motion_pid, signal.SIGKILL)
        _launcher_line(output, rf"motion_server_node \(pid {motion_pid}\) exited with code -9 \(SIGKILL\)", 10)
        _launcher_line(output, r"motion_server_node is not required: sim_node keeps running", 5)
        before = count[0]
        time.sleep(1.0)
        assert count[0] > before + 20 and not _gone(sim_pid), "the simulator stopped with the motion server"
    finally:
        code = _ctrl_c(launcher)  # every process of the group gets it, and the launcher forwards another
    _assert_stopped_cleanly(output, code)
    assert _gone(sim_pid) and _gone(motion_pid)
    assert "stop signal received" in (tmp_path / "logs" / "sim_node.log").read_text()


def test_ctrl_c_on_a_graph_mid_episode_interrupts_the_episode_and_exits_0(graph, tmp_path):
    """Every node gets two SIGINTs at once (the terminal's, the launcher's); the motion server may be gone before
    the agent's cancel is answered, and the record is still complete."""
    launcher, output = _launch(graph, tmp_path)  # the move_eef agent and its replay
    try:
        graph.wait(lambda: any(f.read_text() for f in (tmp_path / "episodes").glob("*/turns.jsonl")), 120, "a turn")
    finally:
        code = _ctrl_c(launcher)
    _assert_stopped_cleanly(output, code)
    (folder,) = (tmp_path / "episodes").iterdir()
    assert all((folder / name).is_file() for name in RECORD_FILES), sorted(p.name for p in folder.iterdir())
    assert json.loads((folder / "metrics.json").read_text())["end_reason"] == "interrupted"


@pytest.mark.parametrize(("busy_s", "code"), [(1.5, 0), (30.0, 1)])
def test_a_callback_still_running_at_the_stop_never_aborts_the_process(tmp_path, busy_s, code):
    """A callback the spin thread is still in once close returned (a graph stopping at once on 2 loaded cores: a
    camera node aborted with SIGABRT, "terminate called without an active exception"): it gets the rest of the way
    out and the node exits 0; one still running then ends the process with code 1 and a line, never an abort, and
    within launch's SIGTERM window."""
    script = Path(__file__).with_name("slow_callback_node.py")
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "RCUTILS_LOGGING_BUFFERED_STREAM": "0"}
    log = tmp_path / "node.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(busy_s)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while "ready" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert "ready" in log.read_text(), log.read_text()
        proc.send_signal(signal.SIGINT)
        returncode = proc.wait(STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert returncode == code, f"exit {returncode}:\n{text[-2000:]}"
    assert "terminate called" not in text
    if code:
        assert "exiting without shutting rclpy down" in text, text[-2000:]
