"""The task suite: scripted-cell success per task and variant, and the cost of the heaviest scene.

What is measured, in one process:

1. The suite: every registered task with its capability axis, robot, env step limit and whether
   ``examples/cells/<task>.py`` exists.
2. The heaviest scene: every task's seed 0 in every variant is built (``EmbeddedWorld.reset``) and the one with the
   most geoms is kept. On it, as benchmarks/sim.py measures one scene: the full control loop (``world.step`` +
   ``world.observe`` of every camera) as real-time factor (RTF = simulated seconds per wall second; target >= 1.5),
   and the time to render one RGB image per camera (median and p95; target <= 15 ms).
3. Scripted cells: each task's cells replayed as the model of a code-cell episode (as benchmarks/code_cell.py does:
   ``run_episode`` + ``CodeCellAgent`` + the replay LLM) over seeds 0 .. ``--seeds`` - 1 in every variant. Printed
   per task and variant: successes, the success rate against the issue's 80% target, and the mean LLM calls and env
   steps of the solved episodes; every failure with its end reason and the last line its cells printed.

Run: ``.venv/bin/python benchmarks/tasks.py [--seeds 20] [--tasks a,b] [--quick] [--json out.json]``. On a 2-core CPU
the full grid takes about 10-30 s per task and variant at 20 seeds; ``--quick`` runs 3 seeds. ``--smoke`` runs every
part at its smallest (the heaviest of general_pickup's scenes only, 0.2 s of loop and 2 images per camera on it, the
general_pickup cells at seed 0 in every variant; the test suite runs it) and exits 0 whatever the targets: it
checks that the parts run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from _common import cpu_model, mark, nproc, table, write_figures
from code_cell import Episode, bench_scripted, cells_files
from sim import bench_full_loop, bench_render

from robodojo.sim.render import select_gl_backend
from robodojo.sim.tasks import get_task
from robodojo.sim.tasks.base import CAPABILITIES, Task
from robodojo.sim.variants import VARIANTS
from robodojo.sim.world import EmbeddedWorld

SUCCESS_TARGET = 0.80  # per task and variant (issue 17)
RTF_TARGET = 1.5
RENDER_TARGET_MS = 15.0
LOOP_SECONDS = 8.0  # simulated seconds of the full loop on the heaviest scene
RENDER_SAMPLES = 40
SMOKE_SIZES = (0.2, 2, 1, "general_pickup")  # --smoke: loop seconds, render samples, seeds, tasks


def suite_rows() -> list[tuple[str, ...]]:
    files, _ = cells_files(None)
    tasks = sorted(Task.registry.values(), key=lambda t: (CAPABILITIES.index(t.capability), t.robot, t.name))
    return [(t.name, t.capability, t.robot, str(t.step_limit), "yes" if t.name in files else "NO") for t in tasks]


def heaviest_scene(names: Collection[str] | None = None) -> tuple[str, str, int]:
    """(task, variant, ngeom) of the scene with the most geoms, every task's (or only ``names``') seed 0 in every
    variant."""
    best = ("", "", -1)
    worlds: dict[str, EmbeddedWorld] = {}
    try:
        for name, task in sorted(Task.registry.items()):
            if names is not None and name not in names:
                continue
            world = worlds.get(task.robot) or worlds.setdefault(task.robot, EmbeddedWorld(task.robot))
            for variant in VARIANTS:
                world.reset(name, seed=0, variant=variant)
                if world.model.ngeom > best[2]:
                    best = (name, variant, int(world.model.ngeom))
    finally:
        for world in worlds.values():
            world.close()
    return best


def bench_heaviest(
    task: str, variant: str, *, loop_s: float = LOOP_SECONDS, render_samples: int = RENDER_SAMPLES
) -> dict[str, Any]:
    world = EmbeddedWorld(get_task(task).robot)
    try:
        world.reset(task, seed=0, variant=variant)
        n_control = max(1, round(loop_s / world.control_dt_s))
        loop = bench_full_loop(world, n_control)
        render = bench_render(world, render_samples)["rgb"]
        nbody = int(world.model.nbody)
    finally:
        world.close()
    return {"task": task, "variant": variant, "nbody": nbody, "loop": loop, "render_rgb": render}


def cell_rows(episodes: list[Episode]) -> tuple[list[tuple[str, ...]], list[dict[str, Any]]]:
    rows, figures = [], []
    for task in dict.fromkeys(e.task for e in episodes):
        for variant in VARIANTS:
            group = [e for e in episodes if e.task == task and e.variant == variant]
            if not group:
                continue
            solved = [e for e in group if e.success]
            rate = len(solved) / len(group)
            calls = float(np.mean([e.llm_calls for e in solved])) if solved else float("nan")
            steps = float(np.mean([e.steps_used for e in solved])) if solved else float("nan")
            rows.append(
                (
                    task,
                    variant,
                    f"{len(solved)}/{len(group)}",
                    f"{rate * 100:.0f}",
                    mark(rate >= SUCCESS_TARGET),
                    f"{calls:.1f}",
                    f"{steps:.0f}",
                )
            )
            figures.append(
                {
                    "task": task,
                    "variant": variant,
                    "episodes": len(group),
                    "successes": len(solved),
                    "success_rate": rate,
                    "ok": rate >= SUCCESS_TARGET,
                    "mean_llm_calls_solved": calls,
                    "mean_env_steps_solved": steps,
                }
            )
    return rows, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, help="seeds per task and variant (default 20; 3 with --quick)")
    parser.add_argument("--tasks", default=None, help="only these tasks' cells (comma-separated; default: all)")
    parser.add_argument("--quick", action="store_true", help="3 seeds per task and variant")
    parser.add_argument("--skip-cells", action="store_true", help="only the suite and the heaviest scene")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    loop_s, render_samples = LOOP_SECONDS, RENDER_SAMPLES
    if args.smoke:
        loop_s, render_samples, args.seeds, smoke_tasks = SMOKE_SIZES
        args.tasks = args.tasks or smoke_tasks
    seeds = args.seeds or (3 if args.quick else 20)

    backend = select_gl_backend()
    print(f"robodojo task-suite benchmark: {len(Task.registry)} tasks, variants {', '.join(VARIANTS)}")
    print(f"  machine : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(f"  mujoco  : {mujoco.__version__}; GL {backend}")
    print()

    print("1. the suite")
    suite = suite_rows()
    table(("task", "axis", "robot", "step limit", "cells"), suite, "<<<><")
    per_axis = {axis: sum(1 for r in suite if r[1] == axis) for axis in CAPABILITIES}
    print("  per axis: " + ", ".join(f"{axis} {n}" for axis, n in per_axis.items()))
    print()

    t0 = time.perf_counter()
    task, variant, ngeom = heaviest_scene([t.strip() for t in args.tasks.split(",")] if args.smoke else None)
    heavy = bench_heaviest(task, variant, loop_s=loop_s, render_samples=render_samples)
    loop, render = heavy["loop"], heavy["render_rgb"]
    print(f"2. the heaviest scene: {task} ({variant}, seed 0): {ngeom} geoms, {heavy['nbody']} bodies")
    rows = [
        ("step + observe", f"{loop['rtf']:.2f}x", f"{loop['step_median_ms']:.1f}", f"{loop['step_p95_ms']:.1f}",
         f"RTF >= {RTF_TARGET}: {mark(loop['rtf'] >= RTF_TARGET)}"),
        *((f"RGB {cam}", "", f"{r['median_ms']:.1f}", f"{r['p95_ms']:.1f}",
           f"<= {RENDER_TARGET_MS:g} ms: {mark(r['median_ms'] <= RENDER_TARGET_MS)}") for cam, r in render.items()),
    ]  # fmt: skip
    table(("loop", "RTF", "median ms", "p95 ms", "target"), rows, "<>>><")
    print(f"  ({time.perf_counter() - t0:.0f} s)")
    print()

    figures: dict[str, Any] = {"suite": suite, "per_axis": per_axis, "heaviest": heavy}
    ok = loop["rtf"] >= RTF_TARGET and all(r["median_ms"] <= RENDER_TARGET_MS for r in render.values())
    if not args.skip_cells:
        files, notes = cells_files(args.tasks)
        print(f"3. scripted cells: {len(files)} tasks x {len(VARIANTS)} variants x {seeds} seeds")
        for note in notes:
            print(f"  {note}")
        episodes = bench_scripted(files, seeds)
        rows, cells = cell_rows(episodes)
        header = ("task", "variant", "solved", "%", f">= {SUCCESS_TARGET * 100:g}%", "LLM calls", "env steps")
        print()
        table(header, rows, "<<>><>>")
        print("  (LLM calls and env steps: means over the solved episodes)")
        failures = [e for e in episodes if not e.success]
        for e in failures:
            print(f"  failed: {e.task} {e.variant} seed {e.seed}: {e.end_reason}; {e.last_line}")
        figures["cells"] = cells
        ok = ok and all(c["ok"] for c in cells)
    if args.json:
        write_figures(args.json, figures)
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
