"""benchmarks/hardware.py --smoke runs every part against franky-sim (2 samples, a 1 s move) and prints every figure,
so it does not rot (issue 35). The parts are checked by their figure names, never by their values (no timing is
asserted: the figures are the benchmark's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT

pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")

# The benchmark's franky-sim, on a loopback address of its own: conftest's simulators hold .3/.4/.5 (the benchmark's
# default .5 is fr3_world's), fr3_logged_sim.py .6, fr3_graph.py .7 and test_fr3_stops.py .8.
HOST = "127.0.0.9"
SMOKE_TIMEOUT_S = 300.0  # about 15 s here; the margin is for a loaded 2-core machine
PARTS = (
    "trajectory -> first SDK command",
    "joint state at",
    "cosine move as waypoint motion",
    "cosine move as JointMotion sequence",
    "30 cm Cartesian move",
    "TCP off the planned line",
)


def test_the_hardware_benchmark_smoke_run_prints_every_part() -> None:
    if not Path(sys.executable).with_name("franky-sim").exists() and shutil.which("franky-sim") is None:
        pytest.skip("the franky-sim executable is not on PATH")
    out = subprocess.run(
        [sys.executable, str(PACKAGE_ROOT / "benchmarks" / "hardware.py"), "--smoke", "--host", HOST],
        capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S, cwd=PACKAGE_ROOT,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
    for part in PARTS:
        assert part in out.stdout, f"{part!r} missing:\n{text[-4000:]}"
