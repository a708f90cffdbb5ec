"""What the Rerun viewer costs: the live view's per-control-step cost, converting an episode to .rrd, and what a
stalled viewer loses.

What is measured, in one process with ``time.perf_counter``, on the replayed general_pickup episode (seed 0, the
move_eef agent, ``examples/replay/general_pickup_seed0.yaml``) in the embedded world (``EmbeddedWorld('dual_arx_x5')``,
3 cameras of 640x480), recorded as shipped (episode.mcap with every camera at config/record.yaml's 5 Hz):

1. Per control step: a step observer on the world notes ``perf_counter`` after every control step; the interval
   between two consecutive steps of one motion (physics, the recorder's tick with its 5 Hz renders, and whatever the
   live view costs the control thread: a queue put, and the GIL its thread takes to log) is the control step's cost.
   Variants, interleaved over ``--repeats`` (3) rounds: no live view (the baseline), ``--view`` to a file
   (episode.rrd in the episode folder: every update logged), and ``--view`` to a FIFO nobody reads (a stalled
   viewer: the view's thread blocks, the queue drops). Printed: step interval p50 / p95 / max [ms] per variant, the
   ratio of each p50 to the baseline's, and each episode's wall time.
2. Converting: ``robodojo view`` (``view_episode``, to a .rrd) of the baseline's episodes: seconds p50 and max, and the
   .rrd's size against its episode.mcap's.
3. A stalled viewer: the live view's own count (LiveStats) of updates handed over and dropped per episode.

Run: ``make bench`` or ``.venv/bin/python benchmarks/viewer.py [--repeats 3] [--smoke] [--json out.json]``. On a
2-core CPU the default takes about a minute; ``--smoke`` (1 round; the test suite runs it) about 20 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, version, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import MCAP_FILE
from robodojo.episodes.record_settings import RecordSettings
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.commands import view_episode
from robodojo.episodes.viewing.live import STATS_LOG_KEY, LiveStats
from robodojo.episodes.viewing.settings import shipped_view_settings
from robodojo.sim.render import select_gl_backend
from robodojo.sim.world import EmbeddedWorld

ROBOT = "dual_arx_x5"
REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SPEC = EpisodeSpec("general_pickup", 0)
RECORD = RecordSettings(camera_rate_hz=5.0)  # config/record.yaml as shipped (the test suite turns frames off)
DEFAULT_REPEATS = 3
SMOKE_REPEATS = 1
#: an interval longer than this is a turn boundary (the agent, the record's chunk), not a control step
TURN_GAP_S = 0.25
BASELINE, TO_FILE, STALLED = "no live view", "--view to a file", "--view, stalled viewer (FIFO)"


class _Stats(logging.Handler):
    """Collects the LiveStats each live view logs when its episode ends."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.stats: list[LiveStats] = []

    def emit(self, record: logging.LogRecord) -> None:
        stats = getattr(record, STATS_LOG_KEY, None)
        if stats is not None:
            self.stats.append(stats)


def percentiles_ms(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float) * 1e3
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def episode(world: EmbeddedWorld, out: Path, target: str) -> tuple[list[float], float, Path]:
    """One replayed episode with the live target ``target`` ("" for none): the step intervals [s] within motions,
    its wall time [s] and its folder."""
    stamps: list[float] = []

    def timer(_world: EmbeddedWorld) -> None:
        stamps.append(time.perf_counter())

    world.step_observers.insert(0, timer)  # first: the interval holds everything after the physics
    os.environ[VIEW_ENV] = target
    try:
        started = time.perf_counter()
        with open_llm(f"replay:{REPLAY}") as llm:
            result = run_episode(WorldHost(world), MoveEefAgent(), llm, SPEC, out, record_settings=RECORD)
        wall = time.perf_counter() - started
    finally:
        world.step_observers.remove(timer)
        os.environ.pop(VIEW_ENV, None)
    intervals = [b - a for a, b in itertools.pairwise(stamps) if b - a < TURN_GAP_S]
    return intervals, wall, result.folder


def _drain(fifo: Path) -> None:
    """Read the FIFO to its end on a thread, so a live view blocked opening it can finish."""

    def read() -> None:
        with fifo.open("rb") as f:
            while f.read(1 << 16):
                pass

    threading.Thread(target=read, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="rounds of every variant")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    repeats = SMOKE_REPEATS if args.smoke else args.repeats
    t_all = time.perf_counter()
    backend = select_gl_backend()
    collector = _Stats()
    logging.getLogger("robodojo.episodes.viewing.live").addHandler(collector)
    logging.getLogger("robodojo.episodes.viewing.live").setLevel(logging.INFO)
    print(f"{cpu_model()}, {nproc()} CPUs, Python {platform.python_version()}, GL {backend}")
    print(f"rerun-sdk {version('rerun-sdk')}, mcap {version('mcap')}; {repeats} rounds per variant")
    settings = shipped_view_settings()
    print(f"live view: queue_size {settings.queue_size}, camera_rate_hz {settings.camera_rate_hz}\n")

    world = EmbeddedWorld(ROBOT)
    intervals: dict[str, list[float]] = {name: [] for name in (BASELINE, TO_FILE, STALLED)}
    walls: dict[str, list[float]] = {name: [] for name in intervals}
    stalled_stats: list[LiveStats] = []
    folders: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="bench_viewer_") as tmp:
        root = Path(tmp)
        with tempfile.TemporaryDirectory(prefix="bench_viewer_rerun_") as config:
            os.environ["XDG_CONFIG_HOME"] = config  # Rerun's analytics config of the benchmark's own
            for r in range(repeats):
                for name in intervals:
                    target = ""
                    if name == TO_FILE:
                        target = "rrd"
                    elif name == STALLED:
                        fifo = root / f"stalled{r}.rrd"
                        os.mkfifo(fifo)
                        target = str(fifo)
                    before = len(collector.stats)
                    steps, wall, folder = episode(world, root / f"{r}_{name[:6]}", target)
                    intervals[name] += steps
                    walls[name].append(wall)
                    if name == BASELINE:
                        folders.append(folder)
                    if name == STALLED:
                        stalled_stats += collector.stats[before:]
                        _drain(fifo)

            # 2. converting the baseline's episodes
            convert_s, ratios, rrd_mb, mcap_mb = [], [], [], []
            for folder in folders:
                report = view_episode(folder, save=folder / "converted.rrd")
                convert_s.append(report.seconds)
                rrd = (folder / "converted.rrd").stat().st_size
                mcap = (folder / MCAP_FILE).stat().st_size
                ratios.append(rrd / mcap)
                rrd_mb.append(rrd / 1e6)
                mcap_mb.append(mcap / 1e6)
    world.close()

    figures: dict = {"step_interval_ms": {}, "episode_wall_s": {}}
    base = percentiles_ms(intervals[BASELINE])
    rows = []
    for name, values in intervals.items():
        p = percentiles_ms(values)
        figures["step_interval_ms"][name] = p
        figures["episode_wall_s"][name] = float(np.median(walls[name]))
        rows.append((
            name, str(len(values)), f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{p['max']:.2f}",
            f"{p['p50'] / base['p50']:.2f}x", f"{np.median(walls[name]):.2f}",
        ))  # fmt: skip
    print("1. per control step: interval between two steps of a motion [ms]")
    table(("", "steps", "p50", "p95", "max", "p50 / no view", "episode wall [s]"), rows, "<>>>>>>")
    print(
        f"(p95: the steps with the record's 5 Hz renders; a stalled viewer's episode also waits close_timeout_s "
        f"= {settings.close_timeout_s:.1f} s for it at its end)"
    )

    print("\n2. robodojo view: episode.mcap to .rrd")
    conv = {"p50": float(np.median(convert_s)), "max": float(np.max(convert_s))}
    figures["convert_s"] = conv
    figures["rrd_over_mcap"] = float(np.median(ratios))
    table(
        ("", "p50", "max"),
        [("convert time [s]", f"{conv['p50']:.2f}", f"{conv['max']:.2f}")],
        "<>>",
    )
    print(
        f"size: .rrd {np.median(rrd_mb):.2f} MB, episode.mcap {np.median(mcap_mb):.2f} MB: "
        f".rrd / mcap {np.median(ratios):.2f}x (the URDF's geometry is in the .rrd, once)"
    )

    print("\n3. stalled viewer: updates the live view handed over and dropped, per episode")
    stall_rows = [(f"round {i + 1}", str(s.queued), str(s.dropped), str(s.logged)) for i, s in enumerate(stalled_stats)]
    table(("", "queued", "dropped", "shown"), stall_rows, "<>>>")
    figures["stalled"] = [{"queued": s.queued, "dropped": s.dropped, "logged": s.logged} for s in stalled_stats]
    print(f"\nbenchmark wall time {time.perf_counter() - t_all:.1f} s")

    if args.json is not None:
        figures.update(
            machine={"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            gl_backend=backend, repeats=repeats, versions={d: version(d) for d in ("rerun-sdk", "mcap")},
        )  # fmt: skip
        write_figures(args.json, json.loads(json.dumps(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
