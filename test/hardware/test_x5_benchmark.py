"""benchmarks/x5.py --smoke runs every part against the bus emulator and the real SDK and prints its figures (no timing
is asserted: the figures are the benchmark's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.hardware.x5_bus import shim

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("arx5_interface", reason="arx5-interface is not installed (pip install '.[hardware]')")

pytestmark = pytest.mark.ros

SMOKE_TIMEOUT_S = 600.0


def test_the_x5_benchmark_smoke_run_prints_every_part():
    script = PACKAGE_ROOT / "benchmarks" / "x5.py"
    env = shim.environment_without_shim(os.environ)  # the benchmark preloads it itself, for emulators of its own
    out = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
        env=env,
        cwd=PACKAGE_ROOT,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    for part in ("1. bus command rate", "2. trajectory -> first bus frame", "3. /joint_states", "5. e-stop"):
        assert part in text, text[-4000:]
    assert "trajectory flood" in text and "flooded / quiet" in text, text[-4000:]
    assert "FAILED" not in text, text[-4000:]
    assert "with exit code 0" in text, text[-4000:]  # the driver ended cleanly
