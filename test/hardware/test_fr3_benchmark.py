"""benchmarks/fr3_graph.py --smoke runs every part of its FR3 path and prints its figures (no timing is asserted: the
figures are the benchmark's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")

pytestmark = pytest.mark.ros

SMOKE_TIMEOUT_S = 900.0  # the interfaces' colcon build alone took 150 s on a loaded 2-core machine


def test_the_fr3_graph_benchmark_smoke_run_prints_every_part():
    script = PACKAGE_ROOT / "benchmarks" / "fr3_graph.py"
    out = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
        env=os.environ.copy(),
        cwd=PACKAGE_ROOT,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    for part in ("1. /joint_states", "2. trajectories", "received_to_sdk_ms", "4. e-stops", "call -> command at rest"):
        assert part in text, text[-4000:]
    assert "2/2 finished" in text and "2/2 at rest" in text, text[-4000:]  # braked, or refused and said
    assert "'fr3_driver_node': 0" in text, text[-4000:]  # the driver ended cleanly
