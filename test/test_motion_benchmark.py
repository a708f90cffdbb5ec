"""benchmarks/motion.py --smoke runs every part (planning latency, failure diagnosis, the mink + toppra baseline,
arrival in the embedded world) at its smallest and prints its figures, so the benchmark cannot rot unnoticed (it once
failed on a renamed setting and nothing noticed). No timing is asserted."""

from __future__ import annotations

import subprocess
import sys

from robodojo import PACKAGE_ROOT

SMOKE_TIMEOUT_S = 600.0


def test_the_motion_benchmark_smoke_run_prints_every_part():
    script = PACKAGE_ROOT / "benchmarks" / "motion.py"
    out = subprocess.run(
        [sys.executable, str(script), "--smoke"], capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S,
        cwd=PACKAGE_ROOT,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
    for part in ("30 cm", "two-arm", "mink", "arrival"):
        assert part in text, f"{part!r} missing:\n{text[-4000:]}"
