"""What the records cost: episode.mcap's bytes per simulated minute and write time per control tick at the shipped
rates, and the time to write a campaign report for 1,000 and 10,000 episodes.

1. episode.mcap at config/record.yaml's rates (every control step's joint states and /tf, every camera at 5 Hz of
   simulation time, the agent's own frames, planned paths, text), from real episodes: the replayed move_eef episode of
   general_pickup seed 0 (examples/replay) in the embedded world, ``--episodes`` (3) times, each with frames at the
   shipped rate and again with the record's own frames off (camera_rate_hz 0: only the agent's). Printed per variant:
   the file's bytes per minute of simulation time, and the time of each ``EpisodeRecorder.record_tick`` (the call the
   world makes after every control step, inside the control loop: joint states, /tf and, every 5th step of 25 Hz,
   three JPEG frames) as p50 / p95 / max [ms] against the 40 ms control period, and the episode's wall time against
   the same episode recorded without episode.mcap (``mcap=False``) in the same run.
2. The campaign report (``robodojo report``: tables, plots, HTML with a page and an image strip per episode) for
   ``--report-sizes`` (1000, 10000) episodes: one real campaign episode (``robodojo eval``, the same replay), then a
   results store of N rows that share its record (hard links: the report reads every record) over four agents and
   N / 4 seeds, with outcomes drawn from a fixed seed; timed once per size, with the pages and strips written.

The live viewer's cost on the control loop is benchmarks/viewer.py's.

Run: ``make bench`` or ``.venv/bin/python benchmarks/records.py [--episodes 3] [--report-sizes 1000,10000]
[--smoke] [--json out.json]``. On 2 cores the default takes a few minutes (the 10,000-episode report most of it);
``--smoke`` (1 episode per variant, a 20-episode report; the test suite runs it) about 20 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, version, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.campaigns.reporting import write_report
from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.store import STORE_FILE, ResultsStore
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import MCAP_FILE
from robodojo.episodes.record_settings import RecordSettings, shipped_record_settings
from robodojo.episodes.recorder import EpisodeRecorder
from robodojo.sim.world import EmbeddedWorld

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SPEC = EpisodeSpec("general_pickup", 0)
SMOKE = {"episodes": 1, "report_sizes": "20"}
AGENTS = ("move_eef", "code_cell", "shell", "mcp:codex")  # the synthetic store's groups (names only)
SUCCESS_RATES = (0.8, 0.6, 0.5, 0.3)  # per agent above: a leaderboard with differences to test
OUTCOME_SEED = 20261207


@dataclasses.dataclass(frozen=True)
class EpisodeFigures:
    """One recorded episode: its file, its simulated and wall time, and each record_tick's time."""

    mcap_bytes: int
    simulated_s: float
    wall_s: float
    tick_s: tuple[float, ...]


def _timed_ticks(into: list[float]):
    """EpisodeRecorder.record_tick, timed: each call's time appended to ``into``."""
    original = EpisodeRecorder.record_tick

    def timed(self, state, within_step_s: float = 0.0) -> None:
        t0 = time.perf_counter()
        original(self, state, within_step_s)
        into.append(time.perf_counter() - t0)

    return original, timed


def record_episode(world: EmbeddedWorld, out: Path, settings: RecordSettings | None, *, mcap: bool) -> EpisodeFigures:
    """The replayed episode, recorded with ``settings`` (None: the shipped ones) or without episode.mcap."""
    ticks: list[float] = []
    original, timed = _timed_ticks(ticks)
    EpisodeRecorder.record_tick = timed  # type: ignore[method-assign]
    try:
        with open_llm(f"replay:{REPLAY}") as llm:
            t0 = time.perf_counter()
            result = run_episode(
                WorldHost(world), MoveEefAgent(), llm, SPEC, out, model=llm.model, mcap=mcap, record_settings=settings
            )
            wall = time.perf_counter() - t0
    finally:
        EpisodeRecorder.record_tick = original  # type: ignore[method-assign]
    path = result.folder / MCAP_FILE
    size = path.stat().st_size if path.exists() else 0
    return EpisodeFigures(size, result.steps_used * world.robot.control_dt_s, wall, tuple(ticks))


def percentiles_ms(values: list[float] | tuple[float, ...]) -> tuple[float, float, float]:
    a = np.asarray(values) * 1e3
    return float(np.percentile(a, 50)), float(np.percentile(a, 95)), float(a.max())


# -- the report ------------------------------------------------------------------------------------------------------
def real_campaign_episode(folder: Path) -> tuple[EpisodeRow, Path]:
    """One episode run by ``robodojo eval`` (a real campaign folder): its row and record folder."""
    command = [
        str(Path(sys.executable).parent / "robodojo"), "eval", "--tasks", "general_pickup", "--seeds", "0",
        "--agents", "move_eef", "--llm", f"replay:{REPLAY}", "--out", str(folder),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, text=True)
    with ResultsStore(folder / STORE_FILE) as store:
        (row,) = store.rows()
    return row, folder / row.folder


def synthetic_campaign(folder: Path, row: EpisodeRow, record: Path, size: int) -> None:
    """A campaign folder whose store holds ``size`` rows over AGENTS and size / len(AGENTS) seeds, each with its own
    record folder of hard links to ``record``'s files, outcomes drawn at SUCCESS_RATES."""
    draw = random.Random(OUTCOME_SEED)
    folder.mkdir(parents=True)
    (folder / "campaign.yaml").write_text(f"name: report_scale_{size}\n")
    with ResultsStore(folder / STORE_FILE) as store:
        for i in range(size):
            agent_index, seed = i % len(AGENTS), i // len(AGENTS)
            agent = AGENTS[agent_index]
            episode_id = f"general_pickup.standard.seed{seed}.{agent.replace(':', '_')}.replay.zero_shot"
            target = folder / "episodes" / episode_id / "try1" / record.name
            target.mkdir(parents=True)
            for file in record.iterdir():
                if file.is_file():
                    os.link(file, target / file.name)
            success = draw.random() < SUCCESS_RATES[agent_index]
            store.record_try(
                dataclasses.replace(
                    row, episode_id=episode_id, seed=seed, agent=agent, folder=str(target.relative_to(folder)),
                    success=success, score=1.0 if success else 0.25, end_reason="success" if success else "give_up",
                ),
                final=True,
            )  # fmt: skip


def report_time(folder: Path) -> float:
    t0 = time.perf_counter()
    write_report(folder)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3, help="episodes per record variant (default 3)")
    parser.add_argument("--report-sizes", default="1000,10000", help="report sizes in episodes (default 1000,10000)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.episodes, args.report_sizes = SMOKE["episodes"], SMOKE["report_sizes"]
    sizes = [int(s) for s in args.report_sizes.split(",") if s.strip()]
    shipped = shipped_record_settings()
    print(f"robodojo records benchmark: {args.episodes} episodes per variant, reports of {sizes} episodes")
    print(
        f"  machine: {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}; "
        f"mcap {version('mcap')}, mcap-ros2-support {version('mcap-ros2-support')}; shipped camera rate "
        f"{shipped.camera_rate_hz:g} Hz\n"
    )
    figures: dict = {}
    world = EmbeddedWorld("dual_arx_x5")
    variants = {
        f"shipped ({shipped.camera_rate_hz:g} Hz frames)": (None, True),
        "agent's frames only": (RecordSettings(camera_rate_hz=0.0), True),
        "no episode.mcap (baseline)": (None, False),
    }
    runs: dict[str, list[EpisodeFigures]] = {name: [] for name in variants}
    try:
        with tempfile.TemporaryDirectory(prefix="records_bench_") as tmp:
            for i in range(args.episodes):  # variants interleaved: a load change touches each alike
                for name, (settings, mcap) in variants.items():
                    runs[name].append(record_episode(world, Path(tmp) / f"{i}-{len(runs[name])}", settings, mcap=mcap))
    finally:
        world.close()
    baseline_wall = float(np.median([r.wall_s for r in runs["no episode.mcap (baseline)"]]))
    rows = []
    for name, records in runs.items():
        minutes = sum(r.simulated_s for r in records) / 60.0
        per_minute = sum(r.mcap_bytes for r in records) / minutes if minutes else 0.0
        ticks = [t for r in records for t in r.tick_s]  # none without episode.mcap: nothing follows the steps
        p50, p95, worst = percentiles_ms(ticks) if ticks else (math.nan, math.nan, math.nan)
        wall = float(np.median([r.wall_s for r in records]))
        period_ms = 1e3 * world.robot.control_dt_s
        rows.append((
            name, f"{per_minute / 2**20:.1f} MiB" if ticks else "-",
            f"{p50:.2f} / {p95:.2f} / {worst:.2f}" if ticks else "-",
            f"{100 * p95 / period_ms:.1f} %" if ticks else "-", f"{wall:.2f} s ({wall / baseline_wall:.2f}x)",
        ))  # fmt: skip
        figures[name] = {"mcap_bytes_per_sim_min": per_minute, "tick_ms": [p50, p95, worst], "wall_s": wall}
    print("1. episode.mcap at the shipped rates (general_pickup seed 0, replayed move_eef, embedded world)")
    table(
        ("record", "per simulated minute", "record_tick p50/p95/max ms", "p95 of the period", "episode wall (vs none)"),
        rows, "<>>>>",
    )  # fmt: skip
    print()
    print("2. the campaign report (tables, plots, a page and an image strip per episode)")
    report_rows = []
    with tempfile.TemporaryDirectory(prefix="records_bench_report_") as tmp:
        row, record = real_campaign_episode(Path(tmp) / "real")
        for size in sizes:
            folder = Path(tmp) / f"n{size}"
            synthetic_campaign(folder, row, record, size)
            seconds = report_time(folder)
            report_rows.append((f"report for {size} episodes", f"{seconds:.1f} s", f"{1e3 * seconds / size:.1f} ms"))
            figures[f"report_{size}_s"] = seconds
    table(("", "wall", "per episode"), report_rows, "<>>")
    if args.json is not None:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
