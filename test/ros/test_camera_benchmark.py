"""benchmarks/cameras.py runs in its smoke mode (real nodes, a few frames) and prints every figure, so it does not rot.
Nothing here judges the figures: they are wall-clock numbers of a shared machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.nodes.process_graph import ros_environment

pytestmark = pytest.mark.ros


def test_camera_benchmark_smoke_prints_every_figure(ros_install, tmp_path) -> None:
    out_json = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(PACKAGE_ROOT / "benchmarks" / "cameras.py"), "--smoke", "--json", str(out_json)],
        env=ros_environment(PACKAGE_ROOT, with_install=False), cwd=tmp_path, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    for frame in ("640x480 rgb8", "1280x720 rgb8", "640x480 yuyv", "640x480 jpeg", "1280x720 jpeg"):
        assert re.search(rf"^{frame}\s+\d+\s+\d+\.\d\d\s+\d+\.\d\d", text, re.MULTILINE), (frame, text)
    assert "3a. device source" in text and "3b. device_camera_node" in text
    assert re.search(r"^640x480 rgb8, reliable\s+\d+\s+\d+", text, re.MULTILINE), text
    figures = json.loads(out_json.read_text())
    assert figures["device_in_process"]["n"] >= 10
    assert figures["node_pair"]["device_capture_to_receive"]["n"] > 0
