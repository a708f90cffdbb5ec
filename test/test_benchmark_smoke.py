"""Every in-process benchmark's ``--smoke`` run (each part at its smallest: seconds, campaign.py's spawned workers about
half a minute) exits cleanly and prints every part, so a benchmark cannot rot unnoticed (issue 35). The parts are
checked by their headers and figure names, never by their values: no timing is asserted (motion.py once failed on a
renamed setting and nothing noticed). The smoke runs that start ROS graphs or franky-sim are tested in test/hardware
(fr3_graph.py, hardware.py, x5.py) and test/ros (cameras.py, flood.py, lost_arm.py, ros_graph.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT

SMOKE_TIMEOUT_S = 300.0  # a smoke run takes seconds; the margin is for a loaded 2-core machine
LONGEST = {"campaign"}  # run_first: its 5 campaigns start 8 worker processes, the long pole of these cases

# benchmark -> text every smoke run prints (a part's header or a figure's name)
PARTS: dict[str, tuple[str, ...]] = {
    "agent_overhead": (
        "1. overhead per turn",
        "harness overhead (a)-(e)",
        "same, horizon unlimited",
        "same, context",
        "not harness overhead",
        "recorder per turn",
        "harness overhead by turn",
        "replay server round trip",
        "2. request size per turn",
        "totals over",
    ),
    "agents": (
        "1. one replayed episode per agent",
        "per call p50 ms",
        "move_eef",
        "shell:mini-swe-agent",
        "mcp:claude-code",
        "2. robodojo mcp over stdio",
        "observe (3 images)",
    ),
    "campaign": (
        "episodes/min",
        "scaling 2 workers / 1",
        "remote model emulated",
        "2 workers x 8 / one at a time",
        "2 workers x 16 / one at a time",
        "worker peak with 1 episode",
        "report for 2 episodes",
    ),
    "motion": ("30 cm", "two-arm", "mink", "arrival"),
    "calibration": ("hand-eye closed form", "refined flat / closed form", "board placed", "head from placed board"),
    "latency": ("1. success per task and clock", "2. per axis", "3. static unchanged across clocks", "fixed:3"),
    "records": (
        "1. episode.mcap at the shipped rates",
        "record_tick p50/p95/max ms",
        "2. the campaign report",
        "report for 20",
    ),
    "code_cell": (
        "kernel round trip",
        "empty cell",
        "robo.state() in the kernel",
        "robo.image('head') in the kernel",
        "scripted cells",
        "general_pickup randomized",
        "all targets met",
    ),
    "perception": (
        "1. table height",
        "2. back-projection",
        "3. triangulation",
        "4. segment() from one clicked",
        "5. time per call",
        "summary",
    ),
    "render_cost": (
        "1. one RGB image, by stage",
        "2. LP_NUM_THREADS",
        "LP_NUM_THREADS=unset",
        "3. geometry",
        "us per extra box",
        "4. table texture",
        "5a. scene lights",
        "5b. shadows",
        "5c. MSAA",
        "6. resolution",
        "7. full loop",
        "8. GL backend",
    ),
    "robot_meshes": ("1. Scene", "mesh triangles", "2. RGB per image", "3. Full loop", "configured"),
    "shell": (
        "robo status, CLI to JSON",
        "protocol.call(status), one process",
        "robo obs, CLI to JSON",
        "shell tool call",
        "robo status beside 2 silent clients",
        "baseline: code cell robo.state()",
        "output flood of 1 MB",
        "repair loop, replayed",
    ),
    "sim": ("physics alone", "control loop", "full loop", "baseline full loop", "fast / baseline", "render time per"),
    "sim_graph_loop": (
        "physics alone",
        "GIL: a pure-Python counter thread",
        "mjr_render + mjr_readPixels",
        "img/s per camera",
        "serial  unpaced",
        "worker  unpaced",
        "serial  real time",
        "worker  real time",
        "worker / serial (same process)",
    ),
    "viewer": (
        "1. per control step",
        "no live view",
        "--view to a file",
        "--view to a file, every state",
        "--view, stalled viewer (FIFO)",
        "paced: no live view",
        "paced: --view to a file",
        "p50 - no view",
        "states left out by state_rate_hz",
        "2. robodojo view",
        "convert time [s]",
        ".rrd / mcap",
        "3. stalled viewer",
    ),
    "tasks": (
        "1. the suite",
        "per axis",
        "2. the heaviest scene",
        "step + observe",
        "RGB head",
        "3. scripted cells",
        "general_pickup randomized",
    ),
}


def _case(name: str):
    # a group of its own per benchmark: make test's `--dist loadgroup` spreads them over the workers
    marks = [pytest.mark.xdist_group(f"benchmark_smoke_{name}")]
    if name in LONGEST:
        marks.append(pytest.mark.run_first)
    return pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("name", [_case(name) for name in PARTS])
def test_the_benchmark_smoke_run_prints_every_part(name):
    script = PACKAGE_ROOT / "benchmarks" / f"{name}.py"
    out = subprocess.run(
        [sys.executable, str(script), "--smoke"], capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S,
        cwd=PACKAGE_ROOT,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
    for part in PARTS[name]:
        assert part in out.stdout, f"{name}: {part!r} missing:\n{text[-4000:]}"
