"""What the Rerun viewer costs: the live view's per-control-step cost, converting an episode to .rrd, and what a
stalled viewer loses.

What is measured, in one process with ``time.perf_counter``, on the replayed general_pickup episode (seed 0, the
move_eef agent, ``examples/replay/general_pickup_seed0.yaml``) in the embedded world (``EmbeddedWorld('dual_arx_x5')``,
3 cameras of 640x480), recorded as shipped (episode.mcap with every camera at config/record.yaml's 5 Hz):

1. Per control step: a step observer on the world notes ``perf_counter`` after every control step; the interval
   between two consecutive steps of one motion (physics, the recorder's tick with its 5 Hz renders, and whatever the
   live view costs the control thread: a queue put, and the GIL its thread takes to log) is the control step's cost.
   Variants, interleaved over ``--repeats`` (3) rounds: no live view (the baseline), ``--view`` to a file
   (episode.rrd in the episode folder) at config/view.yaml's state_rate_hz and at every state (state_rate_hz 0), and
   ``--view`` to a FIFO nobody reads (a stalled viewer: the view's thread blocks, the queue drops). Unpaced, the
   interval is the step's whole cost; paced to the 40 ms control period (a :class:`~robodojo.control.pacing.Pacer`
   per motion, as the simulator node and the arm drivers hold their loops), it is the period as it was kept: the
   stretch past 40 ms is what the issue bounds. Printed: step interval p50 / p95 / max [ms] per variant, each p50
   against its baseline's, and each episode's wall time.
2. Converting: ``robodojo view`` (``view_episode``, to a .rrd) of the baseline's episodes: seconds p50 and max, and the
   .rrd's size against its episode.mcap's.
3. A stalled viewer: the live view's own count (LiveStats) of updates handed over and dropped per episode.

Run: ``make bench`` or ``.venv/bin/python benchmarks/viewer.py [--repeats 3] [--smoke] [--json out.json]``. On a
2-core CPU the default takes about two minutes; ``--smoke`` (1 round; the test suite runs it) about 40 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import os
import platform
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from _common import cpu_model, nproc, table, version, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.move_eef.agent import MoveEefAgent
from robodojo.control.pacing import Pacer
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.mcap_record import MCAP_FILE
from robodojo.episodes.record_settings import RecordSettings
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.commands import view_episode
from robodojo.episodes.viewing.live import STATS_LOG_KEY, LiveStats
from robodojo.episodes.viewing.settings import CONFIG_ENV, CONFIG_PATH, shipped_view_settings
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


@dataclass(frozen=True)
class Variant:
    """One way of running the episode: its live target, the view's state rate (None: config/view.yaml's), paced."""

    name: str
    target: str = ""  #: "" no live view, "rrd" a file, "fifo" a FIFO nobody reads
    state_rate_hz: float | None = None
    paced: bool = False

    def baseline(self) -> Variant:
        return next(v for v in VARIANTS if v.paced == self.paced and not v.target)


VARIANTS = (
    Variant("no live view"),
    Variant("--view to a file", "rrd"),
    Variant("--view to a file, every state", "rrd", state_rate_hz=0.0),
    Variant("--view, stalled viewer (FIFO)", "fifo"),
    Variant("paced: no live view", paced=True),
    Variant("paced: --view to a file", "rrd", paced=True),
    Variant("paced: --view, every state", "rrd", state_rate_hz=0.0, paced=True),
)
STALLED = VARIANTS[3]


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


def episode(world: EmbeddedWorld, out: Path, target: str, *, paced: bool) -> tuple[list[float], float, Path]:
    """One replayed episode with the live target ``target`` ("" for none), its control steps held to the control
    period when ``paced``: the step intervals [s] within motions, its wall time [s] and its folder."""
    stamps: list[float] = []
    period_s = world.robot.control_dt_s
    pacer: list[Pacer] = []
    last_step_s = [-math.inf]

    def timer(_world: EmbeddedWorld) -> None:
        stamps.append(time.perf_counter())

    def pace(_world: EmbeddedWorld) -> None:
        if time.monotonic() - last_step_s[0] > TURN_GAP_S:  # a motion begins (after a turn): a schedule of its own
            pacer[:] = [Pacer(period_s)]
        pacer[0].wait()
        last_step_s[0] = time.monotonic()

    world.step_observers.insert(0, timer)  # first: the interval holds everything after the physics
    if paced:
        world.step_observers.insert(0, pace)  # before the timer: the interval is the period as kept
    os.environ[VIEW_ENV] = target
    try:
        started = time.perf_counter()
        with open_llm(f"replay:{REPLAY}") as llm:
            result = run_episode(WorldHost(world), MoveEefAgent(), llm, SPEC, out, record_settings=RECORD)
        wall = time.perf_counter() - started
    finally:
        world.step_observers.remove(timer)
        if paced:
            world.step_observers.remove(pace)
        os.environ.pop(VIEW_ENV, None)
    intervals = [b - a for a, b in itertools.pairwise(stamps) if b - a < TURN_GAP_S]
    return intervals, wall, result.folder


def _use_view_settings(root: Path, state_rate_hz: float | None) -> None:
    """config/view.yaml, with ``state_rate_hz`` when given, for the next episode (ROBODOJO_VIEW_CONFIG)."""
    settings = yaml.safe_load(CONFIG_PATH.read_text())
    if state_rate_hz is not None:
        settings["state_rate_hz"] = state_rate_hz
    path = root / f"view_{state_rate_hz}.yaml"
    path.write_text(yaml.safe_dump(settings))
    os.environ[CONFIG_ENV] = str(path)
    shipped_view_settings.cache_clear()


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
    print(
        f"live view: queue_size {settings.queue_size}, state_rate_hz {settings.state_rate_hz}, "
        f"camera_rate_hz {settings.camera_rate_hz}\n"
    )

    world = EmbeddedWorld(ROBOT)
    intervals: dict[Variant, list[float]] = {v: [] for v in VARIANTS}
    walls: dict[Variant, list[float]] = {v: [] for v in VARIANTS}
    stalled_stats: list[LiveStats] = []
    thinned: dict[Variant, list[LiveStats]] = {v: [] for v in VARIANTS if v.target == "rrd"}
    folders: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="bench_viewer_") as tmp:
        root = Path(tmp)
        with tempfile.TemporaryDirectory(prefix="bench_viewer_rerun_") as config:
            os.environ["XDG_CONFIG_HOME"] = config  # Rerun's analytics config of the benchmark's own
            for r in range(repeats):
                for i, variant in enumerate(VARIANTS):
                    target = variant.target
                    if target == "fifo":
                        fifo = root / f"stalled{r}.rrd"
                        os.mkfifo(fifo)
                        target = str(fifo)
                    _use_view_settings(root, variant.state_rate_hz)
                    before = len(collector.stats)
                    steps, wall, folder = episode(world, root / f"{r}_{i}", target, paced=variant.paced)
                    intervals[variant] += steps
                    walls[variant].append(wall)
                    if variant == VARIANTS[0]:
                        folders.append(folder)
                    if variant == STALLED:
                        stalled_stats += collector.stats[before:]
                        _drain(fifo)
                    if variant in thinned:
                        thinned[variant] += collector.stats[before:]
            os.environ.pop(CONFIG_ENV, None)
            shipped_view_settings.cache_clear()

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

    figures: dict = {"step_interval_ms": {}, "episode_wall_s": {}, "states_shown": {}}
    rows = []
    for variant, values in intervals.items():
        p, base = percentiles_ms(values), percentiles_ms(intervals[variant.baseline()])
        figures["step_interval_ms"][variant.name] = p
        figures["episode_wall_s"][variant.name] = float(np.median(walls[variant]))
        rows.append((
            variant.name, str(len(values)), f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{p['max']:.2f}",
            f"{p['p50'] / base['p50']:.2f}x", f"{p['p50'] - base['p50']:+.2f}", f"{np.median(walls[variant]):.2f}",
        ))  # fmt: skip
    print("1. per control step: interval between two steps of a motion [ms]")
    table(("", "steps", "p50", "p95", "max", "p50 / no view", "p50 - no view", "episode wall [s]"), rows, "<>>>>>>>")
    print(
        f"(p95: the steps with the record's 5 Hz renders; paced: the {world.robot.control_dt_s * 1e3:.0f} ms period "
        f"as kept, its stretch the p50 - no view; a stalled viewer's episode also waits close_timeout_s "
        f"= {settings.close_timeout_s:.1f} s for it at its end)"
    )
    for variant, stats in thinned.items():
        queued, left_out = sum(s.queued for s in stats), sum(s.thinned for s in stats)
        figures["states_shown"][variant.name] = {"updates_queued": queued, "states_thinned": left_out}
        print(f"{variant.name}: {queued} updates queued, {left_out} states left out by state_rate_hz")

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
