"""The code-cell agent: kernel round-trip overhead, and the success rate of the scripted cells in examples/cells/.

What is measured, in one process with ``time.perf_counter`` (cells timed in the parent around ``Kernel.run_cell``;
robo calls timed inside the cell, in the kernel process, around each call):

1. Kernel round trip, on a real :class:`Kernel` set up as :class:`CodeCellAgent` sets it up (config/agents/kernel.yaml
   limits and containment, the robo API of ``robo_api_methods``/``robo_api_properties``, the handler ``call_robo`` on
   a :class:`Robo`) over an ``EmbeddedWorld('dual_arx_x5')`` episode of general_pickup (seed 0, 3 cameras of
   640x480):

   (a) an empty cell (``""``): ``Kernel.run_cell`` from the parent, i.e. pickle the code, send it over the socket,
       compile and run it in the kernel with stdout/stderr captured, send the result back; after WARMUP_CELLS cells,
       ``--cells`` cells (500; 200 with ``--quick``), median and p95. Target: median < 5 ms.
   (b) ``robo.state()``: one cell calls it STATE_CALLS (100) times, timing each call in the kernel (proxy, pickle,
       socket, the parent's dispatch and ``Robo.state``, pickle of the State back); the cell runs ``--reps`` times
       (10; 3 with ``--quick``). The same number of ``robo.state()`` calls in-process on the same Robo give the
       baseline. Overhead per call = kernel minus in-process, for the median and for the p95; also the cell's whole
       wall time / STATE_CALLS minus the in-process mean (amortized, cell overhead included). Target: median
       overhead < 1 ms per primitive call.
   (c) ``robo.image('head')``, for reference: IMAGE_CALLS calls in one cell against as many in-process; the
       difference is mostly pickling and sending a 640x480x3 uint8 array (921,600 bytes) to the kernel.

2. Success rate of the scripted cells: every ``examples/cells/<task>.py`` whose stem is an embedded task (``--tasks``
   to choose some), replayed as the model of a code-cell episode: ``run_episode`` + ``CodeCellAgent()`` +
   ``open_llm(f"replay:{path}")`` (each ``# %%`` cell one python call, then finish), the agent closed after each
   episode, records into a temporary folder. Seeds 0 .. ``--seeds`` - 1 (20; 3 with ``--quick``), every variant
   (standard, cluttered, randomized), LLM-call budget 100, one embedded world per robot reused. Printed per task and
   variant: successes, success rate, mean LLM calls, env steps and episode wall time; totals per variant and overall.
   Targets: >= 90% standard, >= 80% cluttered and randomized (per row and per variant total). Every failure is listed
   with its end reason and the last line of the last cell's output (the last python tool result; the finish tool's
   own acknowledgement says nothing about the failure).

Run: ``make bench`` (every benchmark) or
``.venv/bin/python benchmarks/code_cell.py [--seeds 20] [--tasks a,b] [--quick] [--json out.json]``. On a 2-core
CPU the round trip takes about 5 s and the cells about 20-30 s per task by default (40 episodes), 4-6 s per task with
``--quick`` (6 episodes): with the general_pickup and handover cells, about 70 s and 14 s.
``--smoke`` runs every part at its smallest (2 empty cells, one robo.state() cell, 2 image calls, the general_pickup
cells at seed 0 in every variant; the test suite runs it): about 10 s.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from _common import cpu_model, mark, nproc, table, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.agents.base import EpisodeContext
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.code_cell.kernel import Kernel
from robodojo.agents.llm.client import open_llm
from robodojo.agents.robo.api import Robo
from robodojo.agents.robo.reference import (
    ROBO_CONSTANTS,
    call_robo,
    robo_api_methods,
    robo_api_properties,
)
from robodojo.episodes import EpisodeSpec, WorldHost, episode_context, run_episode
from robodojo.episodes.record import is_record, read_turns
from robodojo.errors import ConfigError
from robodojo.sim.tasks import get_task
from robodojo.sim.variants import VARIANTS
from robodojo.sim.world import EmbeddedWorld

CELLS_DIR = PACKAGE_ROOT / "examples" / "cells"
ROUND_TRIP_TASK = "general_pickup"
WARMUP_CELLS = 20
STATE_CALLS = 100
IMAGE_CALLS = 50
SMOKE_SIZES = (1, "general_pickup", 2, 1, 2)  # --smoke: seeds, tasks, empty cells, state cells, image calls

EMPTY_CELL_TARGET_MS = 5.0
CALL_OVERHEAD_TARGET_MS = 1.0
SUCCESS_TARGETS = {"standard": 0.90, "cluttered": 0.80, "randomized": 0.80}

TIMED_CALLS_CELL = """
import time as _time
_times = []
for _ in range({n}):
    _t0 = _time.perf_counter()
    robo.{call}
    _times.append(_time.perf_counter() - _t0)
print(repr([round(t * 1e6, 1) for t in _times]))
"""


def stats_ms(values_s: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values_s, dtype=float) * 1e3
    return {
        "n": int(a.size),
        "median_ms": float(np.median(a)),
        "p95_ms": float(np.percentile(a, 95)),
        "mean_ms": float(a.mean()),
        "max_ms": float(a.max()),
    }


# -- 1. kernel round trip -------------------------------------------------------------------------------------------
def reset_context(world: EmbeddedWorld, task: str, seed: int) -> EpisodeContext:
    world.reset(task, seed=seed)
    return episode_context(world)


def timed_calls_in_kernel(kernel: Kernel, call: str, n: int) -> tuple[list[float], float]:
    """Per-call times [s] measured inside the cell, and the cell's wall time as the parent saw it [s]."""
    t0 = time.perf_counter()
    result = kernel.run_cell(TIMED_CALLS_CELL.format(n=n, call=call))
    wall = time.perf_counter() - t0
    if not result.ok:
        raise RuntimeError(f"the timing cell failed: {result.error}")
    return [t * 1e-6 for t in json.loads(result.stdout.strip())], wall


def timed_calls_in_process(fn: Any, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def bench_round_trip(n_cells: int, reps: int, image_calls: int = IMAGE_CALLS) -> dict[str, Any]:
    world = EmbeddedWorld(get_task(ROUND_TRIP_TASK).robot)
    try:
        robo = Robo(reset_context(world, ROUND_TRIP_TASK, 0))
        properties = {**robo_api_properties(), **{name: f"robo.{name}" for name in ROBO_CONSTANTS}}
        with Kernel(
            lambda name, args, kwargs: call_robo(robo, name, args, kwargs),
            api=robo_api_methods(),
            properties=properties,
        ) as kernel:
            confinement = dict(kernel.confinement)
            for _ in range(WARMUP_CELLS):
                kernel.run_cell("")
            empty = []
            for _ in range(n_cells):
                t0 = time.perf_counter()
                kernel.run_cell("")
                empty.append(time.perf_counter() - t0)
            timed_calls_in_kernel(kernel, "state()", 10)  # warm-up of the cell's code path
            timed_calls_in_process(robo.state, 10)
            state_kernel, state_local, cell_walls = [], [], []
            for _ in range(reps):
                times, wall = timed_calls_in_kernel(kernel, "state()", STATE_CALLS)
                state_kernel += times
                cell_walls.append(wall)
                state_local += timed_calls_in_process(robo.state, STATE_CALLS)
            image_kernel, image_wall = timed_calls_in_kernel(kernel, "image('head')", image_calls)
            image_local = timed_calls_in_process(lambda: robo.image("head"), image_calls)
    finally:
        world.close()
    sk, sl = stats_ms(state_kernel), stats_ms(state_local)
    amortized_ms = float(np.mean(cell_walls)) * 1e3 / STATE_CALLS - sl["mean_ms"]
    return {
        "confinement": confinement,
        "empty_cell": stats_ms(empty),
        "state": {
            "calls_per_cell": STATE_CALLS,
            "cells": reps,
            "kernel": sk,
            "in_process": sl,
            "overhead_median_ms": sk["median_ms"] - sl["median_ms"],
            "overhead_p95_ms": sk["p95_ms"] - sl["p95_ms"],
            "overhead_amortized_ms": amortized_ms,
            "cell_wall_ms_median": float(np.median(cell_walls)) * 1e3,
        },
        "image_head": {
            "calls": image_calls,
            "bytes": 640 * 480 * 3,
            "kernel": stats_ms(image_kernel),
            "in_process": stats_ms(image_local),
            "cell_wall_ms": image_wall * 1e3,
        },
    }


# -- 2. scripted cells ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Episode:
    task: str
    variant: str
    seed: int
    success: bool
    end_reason: str
    llm_calls: int
    steps_used: int
    wall_s: float
    last_line: str  #: last line of the last cell's output (failures only)


def last_cell_line(folder: Path) -> str:
    """The last line of the last python tool result in the episode record (its turns)."""
    if not is_record(folder):
        return "(no record)"
    turns = read_turns(folder)
    text = next((str(t.tool_results[-1]) for t in reversed(turns) if t.action == "python" and t.tool_results), "")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no cell output)"


def run_scripted(world: EmbeddedWorld, path: Path, task: str, variant: str, seed: int, out: Path) -> Episode:
    agent = CodeCellAgent()
    t0 = time.perf_counter()
    try:
        with open_llm(f"replay:{path}") as llm:
            result = run_episode(WorldHost(world), agent, llm, EpisodeSpec(task, seed, variant), out, model=llm.model)
    except Exception as exc:
        wall = time.perf_counter() - t0
        return Episode(task, variant, seed, False, "crashed", 0, 0, wall, f"{type(exc).__name__}: {exc}"[:200])
    finally:
        agent.close()
    last = "" if result.success else last_cell_line(result.folder)
    return Episode(
        task,
        variant,
        seed,
        result.success,
        result.end_reason.value,
        result.llm_calls,
        result.steps_used,
        result.wall_time_s,
        last,
    )


def cells_files(tasks: str | None) -> tuple[dict[str, Path], list[str]]:
    """task -> cells file, and notes on files skipped (stem not a task) or tasks asked for without a file."""
    files, notes = {}, []
    for path in sorted(CELLS_DIR.glob("*.py")):
        try:
            get_task(path.stem)
        except ConfigError:
            notes.append(f"{path.name}: not an embedded task, skipped")
            continue
        files[path.stem] = path
    if tasks:
        wanted = [t.strip() for t in tasks.split(",") if t.strip()]
        notes += [f"{t}: no examples/cells/{t}.py" for t in wanted if t not in files]
        files = {t: files[t] for t in wanted if t in files}
    return files, notes


def bench_scripted(files: dict[str, Path], seeds: int) -> list[Episode]:
    episodes: list[Episode] = []
    worlds: dict[str, EmbeddedWorld] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="robodojo-bench-cells-") as out:
            for task, path in files.items():
                robot = get_task(task).robot
                if robot not in worlds:
                    worlds[robot] = EmbeddedWorld(robot)
                for variant in VARIANTS:
                    t0 = time.perf_counter()
                    for seed in range(seeds):
                        episodes.append(run_scripted(worlds[robot], path, task, variant, seed, Path(out)))
                    done = [e for e in episodes if e.task == task and e.variant == variant]
                    print(
                        f"  {task} {variant}: {sum(e.success for e in done)}/{len(done)} "
                        f"({time.perf_counter() - t0:.1f} s)",
                        flush=True,
                    )
    finally:
        for world in worlds.values():
            world.close()
    return episodes


def group_row(label: str, variant: str, group: list[Episode]) -> tuple[tuple[str, ...], dict[str, Any]]:
    n = len(group)
    wins = sum(e.success for e in group)
    rate = wins / n if n else 0.0
    target = SUCCESS_TARGETS.get(variant)
    ok = target is None or rate >= target
    row = (
        label,
        variant,
        str(n),
        str(wins),
        f"{rate * 100:.1f}",
        f">= {target * 100:g}" if target is not None else "",
        mark(ok) if target is not None else "",
        f"{np.mean([e.llm_calls for e in group]):.1f}",
        f"{np.mean([e.steps_used for e in group]):.0f}",
        f"{np.mean([e.wall_s for e in group]):.2f}",
    )
    figures = {"task": label, "variant": variant, "episodes": n, "successes": wins, "success_rate": rate, "ok": ok}
    return row, figures


# -- main -----------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, help="seeds per task and variant (default 20; 3 with --quick)")
    parser.add_argument("--tasks", default=None, help="only these tasks' cells (comma-separated; default: all)")
    parser.add_argument("--cells", type=int, help="empty cells timed (default 500; 200 with --quick)")
    parser.add_argument("--reps", type=int, help="robo.state() cells of 100 calls (default 10; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer samples: a run of well under 2 minutes")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    image_calls = IMAGE_CALLS
    if args.smoke:
        args.seeds, smoke_tasks, args.cells, args.reps, image_calls = SMOKE_SIZES
        args.tasks = args.tasks or smoke_tasks
    n_seeds = args.seeds or (3 if args.quick else 20)
    n_cells = max(args.cells or (200 if args.quick else 500), 1)
    reps = max(args.reps or (3 if args.quick else 10), 1)
    files, notes = cells_files(args.tasks)

    t_all = time.perf_counter()
    print(f"robodojo code-cell benchmark{' (smoke)' if args.smoke else ' (quick)' if args.quick else ''}")
    print(f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(f"  versions : mujoco {mujoco.__version__}, numpy {np.__version__}")
    print(flush=True)

    # -- 1
    rt = bench_round_trip(n_cells, reps, image_calls)
    c = rt["confinement"]
    print(
        f"kernel round trip (Kernel + Robo over an EmbeddedWorld {ROUND_TRIP_TASK} episode; kernel confinement: "
        f"network namespace {c.get('network_namespace')}, uid {c.get('uid')})"
    )
    e, s, im = rt["empty_cell"], rt["state"], rt["image_head"]
    empty_ok = e["median_ms"] < EMPTY_CELL_TARGET_MS
    overhead_ok = s["overhead_median_ms"] < CALL_OVERHEAD_TARGET_MS
    rows = [
        ("empty cell (run_cell(''))", str(e["n"]), f"{e['median_ms']:.3f}", f"{e['p95_ms']:.3f}",
         f"< {EMPTY_CELL_TARGET_MS:g} (median)", mark(empty_ok)),
        ("robo.state() in the kernel", str(s["kernel"]["n"]), f"{s['kernel']['median_ms']:.3f}",
         f"{s['kernel']['p95_ms']:.3f}", "", ""),
        ("robo.state() in-process", str(s["in_process"]["n"]), f"{s['in_process']['median_ms']:.3f}",
         f"{s['in_process']['p95_ms']:.3f}", "", ""),
        ("  overhead per call", "", f"{s['overhead_median_ms']:.3f}", f"{s['overhead_p95_ms']:.3f}",
         f"< {CALL_OVERHEAD_TARGET_MS:g} (median)", mark(overhead_ok)),
        ("robo.image('head') in the kernel", str(im["kernel"]["n"]), f"{im['kernel']['median_ms']:.3f}",
         f"{im['kernel']['p95_ms']:.3f}", "", ""),
        ("robo.image('head') in-process", str(im["in_process"]["n"]), f"{im['in_process']['median_ms']:.3f}",
         f"{im['in_process']['p95_ms']:.3f}", "", ""),
        ("  overhead per call (921,600 B)", "",
         f"{im['kernel']['median_ms'] - im['in_process']['median_ms']:.3f}",
         f"{im['kernel']['p95_ms'] - im['in_process']['p95_ms']:.3f}", "(reference)", ""),
    ]  # fmt: skip
    table(("measure", "n", "median ms", "p95 ms", "target ms", ""), rows, "<>>>><")
    print(
        f"(robo calls timed inside the cell; a cell of {STATE_CALLS} robo.state() calls takes "
        f"{s['cell_wall_ms_median']:.1f} ms from the parent: {s['overhead_amortized_ms']:.3f} ms per call over "
        "in-process, cell overhead included)"
    )
    print(flush=True)

    # -- 2
    print(
        f"scripted cells (examples/cells/<task>.py replayed through run_episode + CodeCellAgent), seeds 0-{n_seeds - 1}"
        f", {', '.join(VARIANTS)}"
    )
    for note in notes:
        print(f"  note: {note}")
    episodes = bench_scripted(files, n_seeds)
    rows, groups = [], []
    for task in files:
        for variant in VARIANTS:
            row, fig = group_row(task, variant, [x for x in episodes if x.task == task and x.variant == variant])
            rows.append(row)
            groups.append(fig)
    totals = []
    for variant in VARIANTS:
        group = [x for x in episodes if x.variant == variant]
        if group:
            row, fig = group_row("total", variant, group)
            rows.append(row)
            totals.append(fig)
    if episodes:
        row, fig = group_row("total", "all", episodes)
        rows.append(row)
        totals.append(fig)
    print()
    if rows:
        table(
            ("task", "variant", "episodes", "ok", "ok %", "target %", "", "LLM calls", "env steps", "wall s"),
            rows,
            "<<>>>><>>>",
        )
        print("(LLM calls, env steps, wall s: means per episode)")
    else:
        print("no cells files to run")
    failures = [x for x in episodes if not x.success]
    if failures:
        print(f"failures ({len(failures)}):")
        for x in failures:
            print(f"  {x.task} {x.variant} seed {x.seed}: {x.end_reason}; {x.last_line}")
    all_ok = empty_ok and overhead_ok and all(g["ok"] for g in groups + totals)
    total = time.perf_counter() - t_all
    print(f"\nall targets met: {mark(all_ok)}")
    print(f"benchmark wall time {total:.1f} s")

    if args.json is not None:
        figures = {
            "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            "versions": {"mujoco": mujoco.__version__, "numpy": np.__version__},
            "quick": args.quick,
            "round_trip": rt,
            "scripted": {
                "seeds": n_seeds,
                "tasks": {t: str(p.relative_to(PACKAGE_ROOT)) for t, p in files.items()},
                "notes": notes,
                "groups": groups,
                "totals": totals,
                "episodes": [x.__dict__ for x in episodes],
            },
            "targets": {
                "empty_cell_median_ms_max": EMPTY_CELL_TARGET_MS,
                "empty_cell_ok": empty_ok,
                "call_overhead_median_ms_max": CALL_OVERHEAD_TARGET_MS,
                "call_overhead_ok": overhead_ok,
                "success_rate_min": SUCCESS_TARGETS,
                "all_ok": all_ok,
            },
            "benchmark_wall_s": total,
        }
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
