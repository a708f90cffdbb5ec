"""benchmarks/flood.py and benchmarks/ros_graph.py run in their smoke mode (real nodes, every part at its smallest) and
print every part, so neither rots (issue 35). The parts are checked by their headers and figure names, never by their
values: they are wall-clock numbers of a shared machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.nodes.process_graph import claim_ros_domain, ros_environment

pytestmark = pytest.mark.ros

SMOKE_TIMEOUT_S = 600.0  # about 10 s each here; the margin is for a loaded 2-core machine


def _smoke_run(name: str, tmp_path: Path) -> tuple[str, dict]:
    """``benchmarks/<name>.py --smoke`` in a domain claimed like the graph tests' (the benchmark's own choice, from
    its pid, could meet a test's graph); its output, which must show a clean exit, and its JSON figures."""
    out_json = tmp_path / "figures.json"
    domain_id, lock = claim_ros_domain()
    try:
        proc = subprocess.run(
            [sys.executable, str(PACKAGE_ROOT / "benchmarks" / f"{name}.py"), "--smoke", "--domain-id", str(domain_id),
             "--json", str(out_json)],
            env=ros_environment(PACKAGE_ROOT, with_install=False), cwd=tmp_path, capture_output=True, text=True,
            timeout=SMOKE_TIMEOUT_S,
        )  # fmt: skip
    finally:
        lock.close()
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
    return proc.stdout, json.loads(out_json.read_text())


def _assert_parts(name: str, stdout: str, parts: tuple[str, ...]) -> None:
    for part in parts:
        assert part in stdout, f"{name}: {part!r} missing:\n{stdout[-4000:]}"


def test_flood_benchmark_smoke_prints_every_part(ros_install, tmp_path) -> None:
    stdout, figures = _smoke_run("flood", tmp_path)
    _assert_parts(
        "flood",
        stdout,
        (
            "robodojo flood benchmark (smoke",
            "sim_node up in",
            "serialised message sizes",
            "phase ",
            "baseline ",
            "flood ",
            "recovery ",
            "joint states",
            "gap p50 ms",
            "sim CPU %",
            "log lines",
            "flood / baseline: real-time factor",
            "messages sent",
            "publish cost per kind",
            "largest left arm joint change during the flood",
            "sim_node exit code 0",  # the node ended cleanly
        ),
    )
    assert set(figures["phases"]) == {"baseline", "flood", "recovery"}
    assert {"flood", "flood_over_baseline", "message_bytes", "sim_exit_code"} <= set(figures)


def test_ros_graph_benchmark_smoke_prints_every_part(ros_install, tmp_path) -> None:
    stdout, figures = _smoke_run("ros_graph", tmp_path)
    _assert_parts(
        "ros_graph",
        stdout,
        (
            "robodojo ROS graph benchmark",
            "graph up in",
            "1. cross-process latency",
            "/cameras/head/image_raw 640x480 rgb8",
            "/joint_states (small)",
            "images: ",
            "image / joint state median latency",
            "2. MoveEef goals: 2 on the graph",
            "graph: round trip send_goal -> result",
            "graph: trajectory duration_s (real time)",
            "graph: overhead = round trip - duration_s",
            "graph: goal accepted (send -> response)",
            "graph: overhead before the first point",
            "graph: overhead while playing",
            "graph: overhead after the last point",
            "in process: server.plan()",
            "in process: move_eef() (plan + sim steps)",
            "in process: trajectory duration (sim time)",
            "graph overhead median",
            "arrival on the graph",
            "3. simulator control period",
            "during goals",
            "idle (part 1)",
            "node exit codes: {'sim_node': 0, 'motion_server_node': 0}",  # both nodes ended cleanly
        ),
    )
    assert {"latency", "move_eef", "control_period", "node_exit_codes"} <= set(figures)
