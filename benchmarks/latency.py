"""Success against latency: the scripted code cells under the fixed clock, where each model call costs S seconds of
world time (robodojo.episodes.clock; issue 38).

What is measured, in one process per worker: each task's cells (``examples/cells/<task>.py``) replayed as the model
of a code-cell episode (``run_episode`` + ``CodeCellAgent`` + the replay LLM, as benchmarks/tasks.py does) on seeds
0 .. ``--seeds`` - 1 of the standard variant, under every clock of ``--clocks`` (default fixed:0,1,3,10). The world
moves on for S seconds before each cell runs (objects roll, belts carry, the arms hold) and that time uses none of
the step budget. Printed:

1. success per task and clock: successes of n, SR and its 95 % Wilson interval, the five dynamic tasks first (their
   capability axis), then three static ones;
2. per axis: the dynamic tasks pooled against the static ones, per clock;
3. static unchanged: whether every static episode ended as it did at the first clock (the same success, seed by
   seed): time that only passes while nothing moves by itself must not change them.

Run: ``.venv/bin/python benchmarks/latency.py [--seeds 20] [--clocks fixed:0,1,3,10] [--tasks a,b] [--workers 2]
[--json out.json]``. The full grid (8 tasks x 4 clocks x 20 seeds) takes about 13 minutes on one core of a 2-core
Xeon; ``--workers 2`` halves it on an idle machine. ``--smoke`` runs one dynamic and one static task at seed 0 under
two clocks (the test suite runs it) and exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mujoco
from _common import cpu_model, nproc, table, write_figures

from robodojo.agents.llm.client import open_llm
from robodojo.campaigns.report.stats import wilson_interval
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.clock import ClockSetting, parse_clock_sweep
from robodojo.episodes.factory import make_agent
from robodojo.sim.tasks import get_task

CELLS_DIR = Path(__file__).resolve().parent.parent / "examples" / "cells"
#: every dynamic task (objects that move or are moved without a grasp), and one static task per other kind of skill
DYNAMIC = ("stop_rolling_ball", "pick_from_conveyor", "push_to_pad", "push_into_corner", "fr3_push_to_pad")
STATIC = ("general_pickup", "stack_blocks", "lift_bar")
CLOCKS = "fixed:0,1,3,10"
SEEDS = 20
SMOKE = (("stop_rolling_ball", "general_pickup"), "fixed:0,3", 1)  # --smoke: tasks, clocks, seeds
VARIANT = "standard"
PERCENT = 100.0


@dataclass(frozen=True)
class Episode:
    task: str
    seed: int
    clock: str
    success: bool
    end_reason: str
    llm_calls: int
    steps_used: int
    latency_applied_s: float
    wall_s: float


def run_one(world: Any, task: str, seed: int, clock: ClockSetting, out: Path) -> Episode:
    """One scripted-cell episode of ``task`` under ``clock`` (no episode.mcap: the figures need only the outcome)."""
    started = time.perf_counter()
    agent = make_agent("code_cell")
    try:
        with open_llm(f"replay:{CELLS_DIR / f'{task}.py'}") as llm:
            result = run_episode(
                WorldHost(world), agent, llm, EpisodeSpec(task, seed, VARIANT), out, model=llm.model, mcap=False,
                clock=clock,
            )  # fmt: skip
    except Exception as exc:  # a crash is a failed episode here; its kind is in the end reason
        return Episode(task, seed, clock.text, False, f"crashed: {type(exc).__name__}", 0, 0, 0.0,
                       time.perf_counter() - started)  # fmt: skip
    finally:
        agent.close()
    return Episode(
        task, seed, clock.text, result.success, result.end_reason.value, result.llm_calls, result.steps_used,
        result.latency_applied_s, time.perf_counter() - started,
    )  # fmt: skip


def run_task(task: str, seeds: int, clocks: Sequence[str]) -> list[Episode]:
    """Every seed and clock of one task, in a world of its own (a worker process's job)."""
    from robodojo.sim.world import EmbeddedWorld

    world = EmbeddedWorld(get_task(task).robot)
    episodes = []
    try:
        with tempfile.TemporaryDirectory(prefix="robodojo-bench-latency-") as out:
            for clock in clocks:
                for seed in range(seeds):
                    episodes.append(run_one(world, task, seed, ClockSetting.parse(clock), Path(out)))
    finally:
        world.close()
    return episodes


def rate_text(wins: int, n: int) -> str:
    low, high = wilson_interval(wins, n)
    return f"{wins}/{n} {PERCENT * wins / n:.0f}% [{PERCENT * low:.0f}, {PERCENT * high:.0f}]"


def rate(wins: int, n: int) -> dict[str, float]:
    low, high = wilson_interval(wins, n)
    return {"successes": wins, "n": n, "sr_pct": PERCENT * wins / n, "ci_low_pct": PERCENT * low,
            "ci_high_pct": PERCENT * high}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"seeds per task and clock (default {SEEDS})")
    parser.add_argument("--clocks", default=CLOCKS, help=f"clocks to compare (default {CLOCKS})")
    parser.add_argument("--tasks", default=None, help="only these tasks (comma-separated; default the eight)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes, a task each at a time (default 1)")
    parser.add_argument("--smoke", action="store_true", help="one dynamic and one static task, seed 0, two clocks")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    tasks: Sequence[str] = (*DYNAMIC, *STATIC)
    if args.smoke:
        tasks, args.clocks, args.seeds = SMOKE
    elif args.tasks:
        tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    clocks = [c.text for c in parse_clock_sweep(args.clocks)]
    static = [t for t in tasks if get_task(t).capability != "dynamic"]

    print(f"robodojo latency benchmark: scripted code cells, {len(tasks)} tasks x {len(clocks)} clocks x {args.seeds} "
          f"seeds ({VARIANT})")  # fmt: skip
    print(f"  machine : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(f"  mujoco  : {mujoco.__version__}; workers {args.workers}")
    print("  clock   : fixed:S = each model call (each cell) costs S s of world time before it runs; the arms hold")
    print()
    started = time.perf_counter()
    by_task: dict[str, list[Episode]] = {}
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        futures = {task: pool.submit(run_task, task, args.seeds, clocks) for task in tasks}
        for task, future in futures.items():
            by_task[task] = future.result()
            wins = ", ".join(
                f"{c} {sum(e.success for e in by_task[task] if e.clock == c)}" for c in clocks
            )  # fmt: skip
            print(f"  {task}: {wins} ({time.perf_counter() - started:.0f} s)", flush=True)
    print()

    print("1. success per task and clock: solved/n SR [95 % Wilson interval]")
    rows = []
    for task in tasks:
        episodes = by_task[task]
        cells = [rate_text(sum(e.success for e in episodes if e.clock == c), args.seeds) for c in clocks]
        rows.append((task, get_task(task).capability, *cells))
    table(("task", "axis", *clocks), rows, "<<" + ">" * len(clocks))
    print()

    print("2. per axis: dynamic tasks against static ones, pooled")
    axis_rows = []
    for label, members in (("dynamic", [t for t in tasks if t not in static]), ("static", static)):
        if not members:
            continue
        cells = [
            rate_text(sum(e.success for t in members for e in by_task[t] if e.clock == c), args.seeds * len(members))
            for c in clocks
        ]
        axis_rows.append((label, str(len(members)), *cells))
    table(("tasks", "n tasks", *clocks), axis_rows, "<>" + ">" * len(clocks))
    print()

    changed = [
        (e.task, e.seed, e.clock)
        for t in static
        for e in by_task[t]
        if e.success != next(b.success for b in by_task[t] if b.seed == e.seed and b.clock == clocks[0])
    ]
    print(f"3. static unchanged across clocks: {'yes' if not changed else 'NO'}"
          + "".join(f"\n  changed: {t} seed {s} under {c}" for t, s, c in changed))  # fmt: skip
    failures = [e for t in tasks for e in by_task[t] if not e.success]
    print(f"  failures: {len(failures)} of {sum(len(v) for v in by_task.values())} episodes; end reasons: "
          + ", ".join(f"{r} {sum(e.end_reason == r for e in failures)}"
                      for r in sorted({e.end_reason for e in failures})))  # fmt: skip
    print(f"  total {time.perf_counter() - started:.0f} s")

    if args.json:
        figures = {
            "clocks": clocks,
            "seeds": args.seeds,
            "per_task": {
                t: {c: rate(sum(e.success for e in by_task[t] if e.clock == c), args.seeds) for c in clocks}
                for t in tasks
            },
            "static_changed": changed,
            "episodes": [asdict(e) for t in tasks for e in by_task[t]],
        }
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
