"""The scripted code cells' success rate per task and variant, over seeds 0 .. N-1, in one process.

Each ``<cells-dir>/<task>.py`` whose stem is an embedded task is replayed as the model of a code-cell episode
(``run_episode`` + ``CodeCellAgent`` + the replay LLM, as ``robodojo run --agent code_cell --llm replay:...`` and
test/test_scripted_cells_*.py do), one embedded world per robot reused, in every variant. Every episode is appended
as one JSON line to ``--results`` as soon as it ends, so a run that stops half way is resumed by running the same
command again (episodes already in the file are not run again). A failed episode's record folder is kept under
``--keep`` (turns.jsonl shows what its cells printed); solved ones are deleted.

The table printed at the end (or with ``--report`` alone, from the results file) has one row per task: the
successes out of the seeds run per variant, ``*`` where the rate is under the target (80%). ``--before FILE`` puts
an earlier results file's figures beside them.

Run under nice on a shared machine, e.g.:
    nice -n 19 .venv/bin/python scripts/measure_cells.py --seeds 20 --results out/cells_grid/after.jsonl
    .venv/bin/python scripts/measure_cells.py --report --results out/cells_grid/after.jsonl \
        --before out/cells_grid/before.jsonl
To measure cells as they are in a commit while editing them, copy them out first (the replay reads a cells file,
and the libraries it includes, when its episode starts):
    mkdir -p /tmp/cells && git archive HEAD examples/cells | tar -x -C /tmp/cells
    ... --cells-dir /tmp/cells/examples/cells
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.errors import ConfigError
from robodojo.sim.tasks import get_task
from robodojo.sim.variants import VARIANTS
from robodojo.sim.world import EmbeddedWorld

SUCCESS_TARGET = 0.80  # per task and variant (issue 17, issue 35)
DEFAULT_SEEDS = 20
LAST_LINE_CHARS = 300  # of a failed episode's last cell output line kept in the results
# A kernel that does not start says nothing about the cells: in a long run on a busy machine it happened to every
# episode after some point (all kernels of that process, while a new process started them), so the run starts itself
# again (the results file resumes it), at most RESTARTS_MAX times in a row without an episode that ran.
KERNEL_NOT_STARTED = "the kernel process did not start"
RESTARTS_ENV = "MEASURE_CELLS_RESTARTS"
RESTARTS_MAX = 3


def cells_files(cells_dir: Path, tasks: list[str] | None) -> dict[str, Path]:
    """task -> cells file: every file of the folder named after an embedded task (or only ``tasks``)."""
    files = {}
    for path in sorted(cells_dir.glob("*.py")):
        try:
            get_task(path.stem)
        except ConfigError:
            continue
        files[path.stem] = path
    if tasks:
        missing = [t for t in tasks if t not in files]
        if missing:
            raise SystemExit(f"no cells for {', '.join(missing)} in {cells_dir}; there are: {', '.join(files)}")
        files = {t: files[t] for t in tasks}
    return files


def last_cell_line(folder: Path) -> str:
    """The last non-empty line of the last python tool result in an episode record (turns.jsonl)."""
    text = ""
    try:
        for line in (folder / "turns.jsonl").read_text(encoding="utf-8").splitlines():
            turn = json.loads(line)
            if turn.get("action") == "python" and turn.get("tool_results"):
                text = str(turn["tool_results"][-1])
    except (OSError, ValueError):
        return "(no record)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:LAST_LINE_CHARS] if lines else "(no cell output)"


def run_one(world: EmbeddedWorld, path: Path, task: str, variant: str, seed: int, keep: Path) -> dict[str, Any]:
    """One replayed episode as a results row; its record folder moved under ``keep`` when it failed."""
    row: dict[str, Any] = {"task": task, "variant": variant, "seed": seed}
    t0 = time.perf_counter()
    agent = CodeCellAgent()
    with tempfile.TemporaryDirectory(prefix="robodojo-cells-") as out:
        try:
            with open_llm(f"replay:{path}") as llm:
                result = run_episode(
                    WorldHost(world), agent, llm, EpisodeSpec(task, seed, variant), Path(out), mcap=False
                )
        except Exception as exc:  # an episode that crashes the harness is a result of the grid, not its end
            wall_s = round(time.perf_counter() - t0, 2)
            crash = {"success": False, "score": 0.0, "end_reason": "crashed", "steps_used": 0, "wall_s": wall_s}
            return row | crash | {"last_line": f"{type(exc).__name__}: {exc}"}
        finally:
            agent.close()
        row |= {
            "success": result.success,
            "score": result.score,
            "end_reason": result.end_reason.value,
            "steps_used": result.steps_used,
            "wall_s": round(time.perf_counter() - t0, 2),
            "last_line": "" if result.success else last_cell_line(result.folder),
        }
        if not result.success:
            keep.mkdir(parents=True, exist_ok=True)
            target = keep / result.folder.name
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(str(result.folder), target)
            row["folder"] = str(target)
    return row


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_grid(files: dict[str, Path], variants: list[str], seeds: list[int], results: Path, keep: Path) -> None:
    done = {(r["task"], r["variant"], r["seed"]) for r in read_rows(results)}
    results.parent.mkdir(parents=True, exist_ok=True)
    worlds: dict[str, EmbeddedWorld] = {}
    try:
        for task, path in files.items():
            robot = get_task(task).robot
            for variant in variants:
                todo = [s for s in seeds if (task, variant, s) not in done]
                if not todo:
                    continue
                world = worlds.get(robot) or worlds.setdefault(robot, EmbeddedWorld(robot))
                t0 = time.perf_counter()
                wins = 0
                for seed in todo:
                    row = run_one(world, path, task, variant, seed, keep)
                    if row["end_reason"] == "crashed" and KERNEL_NOT_STARTED in row["last_line"]:
                        restart(row)
                    os.environ[RESTARTS_ENV] = "0"
                    wins += row["success"]
                    with results.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")
                    if not row["success"]:
                        why = f"{row['end_reason']} score {row['score']}; {row['last_line']}"
                        print(f"    failed: {task} {variant} seed {seed}: {why}", flush=True)
                print(f"  {task} {variant}: {wins}/{len(todo)} ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        for world in worlds.values():
            world.close()


def restart(row: dict[str, Any]) -> None:
    """Run this script again in a fresh process (exec: the same pid, arguments and results file)."""
    restarts = int(os.environ.get(RESTARTS_ENV, "0")) + 1
    print(f"  {row['task']} {row['variant']} seed {row['seed']}: {row['last_line']}", flush=True)
    if restarts > RESTARTS_MAX:
        raise SystemExit(f"kernels do not start even in a fresh process ({RESTARTS_MAX} restarts): stopping")
    print(f"  starting again in a fresh process (restart {restarts})", flush=True)
    os.environ[RESTARTS_ENV] = str(restarts)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *sys.argv])


def tally(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """(task, variant) -> (successes, episodes), the last row of each seed counting."""
    last = {(r["task"], r["variant"], r["seed"]): r for r in rows}
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for (task, variant, _seed), r in last.items():
        wins, n = counts.get((task, variant), (0, 0))
        counts[(task, variant)] = (wins + bool(r["success"]), n + 1)
    return counts


def cell(counts: dict[tuple[str, str], tuple[int, int]], task: str, variant: str) -> str:
    if (task, variant) not in counts:
        return "-"
    wins, n = counts[(task, variant)]
    return f"{wins}/{n}" + (" *" if wins < SUCCESS_TARGET * n else "")


def report(rows: list[dict[str, Any]], before: list[dict[str, Any]] | None) -> int:
    """Print the table; the number of (task, variant) rows under the target."""
    counts = tally(rows)
    old = tally(before) if before is not None else None
    tasks = sorted({t for t, _ in counts} | ({t for t, _ in old} if old else set()))
    header = ["task", *VARIANTS]
    if old is not None:
        header = ["task"] + [f"{v} {when}" for v in VARIANTS for when in ("before", "after")]
    lines = []
    for task in tasks:
        if old is not None:
            lines.append([task] + [c for v in VARIANTS for c in (cell(old, task, v), cell(counts, task, v))])
        else:
            lines.append([task] + [cell(counts, task, v) for v in VARIANTS])
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in lines:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    below = [(t, v) for (t, v), (wins, n) in sorted(counts.items()) if wins < SUCCESS_TARGET * n]
    total_wins, total = sum(w for w, _ in counts.values()), sum(n for _, n in counts.values())
    names = ": " + ", ".join(f"{t} {v}" for t, v in below) if below else ""
    print(f"\n{total_wins}/{total} episodes solved; {len(below)} task-variant rows under {SUCCESS_TARGET:.0%}{names}")
    return len(below)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells-dir", type=Path, default=PACKAGE_ROOT / "examples" / "cells")
    parser.add_argument("--tasks", default="", help="comma-separated tasks (default: every task with cells)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds 0 .. N-1 per task and variant")
    parser.add_argument("--results", type=Path, required=True, help="JSON lines, one per episode (appended)")
    parser.add_argument("--keep", type=Path, help="failed episodes' folders (default: beside --results)")
    parser.add_argument("--report", action="store_true", help="print the table of --results and run nothing")
    parser.add_argument("--before", type=Path, help="an earlier results file to show beside --results")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; variants: {', '.join(VARIANTS)}")
    if not args.report:
        files = cells_files(args.cells_dir, [t.strip() for t in args.tasks.split(",") if t.strip()] or None)
        keep = args.keep or args.results.with_suffix("").with_name(args.results.stem + "_failures")
        print(f"{len(files)} tasks x {len(variants)} variants x {args.seeds} seeds from {args.cells_dir}", flush=True)
        run_grid(files, variants, list(range(args.seeds)), args.results, keep)
    rows = read_rows(args.results)
    before = read_rows(args.before) if args.before else None
    report(rows, before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
