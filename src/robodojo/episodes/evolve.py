"""Seed 003's repair loop (``robodojo evolve``): tools that grow from failures, then a frozen retest.

Layout by layout (seeds ``first_seed`` .. ``first_seed + layouts - 1``), the acting agent (the shell agent, or a
coding-agent CLI) attempts the layout with the task's current tools. On success the optimizer adds an entry to
``playbook.md``; on failure it reads the episode, writes a diagnosis to ``skill.md`` and adds or fixes one tool with
its tests (robodojo.agents.shell.optimizer); the delivery check runs (robodojo.agents.shell.delivery) and a failing
edit is reverted; the layout is attempted again, up to ``max_edits`` edits. Then the tools are frozen and every
development layout and ``retest_layouts`` new ones are attempted once with no optimizer.

Everything is recorded under ``out``:
    tools/<task>/          the task's tool folder as the loop leaves it (skill.md, playbook.md, enabled_tools.txt)
    frozen/<task>/         the frozen copy the retest used
    episodes/layout<k>/attempt<j>/   every attempt, recorded like any episode
    retest/{dev,new}/seed<s>/        the frozen retest's episodes
    rounds.jsonl           every optimizer round: its commands and outputs, calls, usage, wall time, delivery verdict
    evolve.json            the summary: attempts, edits kept and reverted, retest success rates
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from robo_shell.paths import POOL_DIR
from robodojo.agents.base import LlmCaller
from robodojo.agents.shell.delivery import check_task_tools, task_words
from robodojo.agents.shell.optimizer import Optimizer
from robodojo.agents.shell.settings import ShellSettings, load_shell_settings
from robodojo.agents.shell.workspace import ENABLED_FILE
from robodojo.episodes.factory import make_agent
from robodojo.episodes.hosts import WorldHost
from robodojo.episodes.mcap_record import MCAP_FILE, NS_PER_S, camera_frames
from robodojo.episodes.record import METRICS_FILE, ROBO_CALLS_FILE, TURNS_FILE, read_meta
from robodojo.episodes.runner import run_episode
from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET, EpisodeResult, EpisodeSpec
from robodojo.robots.config import RobotConfig

FRAMES_DIR = "frames"  #: written into an attempt's record folder for the optimizer (write_frames)
#: what the optimizer is told of an attempt's folder: the shell agent's record and the frames
EVIDENCE_GUIDE = (
    f"{TURNS_FILE} (each shell command and its output), {ROBO_CALLS_FILE} (every robot command with its JSON record; "
    f"`step` is the env step after it), {FRAMES_DIR}/ (step<N>_<camera>.jpg: every camera after each motion and at "
    f"each `robo obs`), {METRICS_FILE}"
)
#: opens the acting agent's LLM for one attempt (a context manager, as robodojo.agents.llm.client.open_llm)
OpenLlm = Callable[[], Any]


@dataclass(frozen=True)
class EvolvePlan:
    task: str
    out: Path
    layouts: int = 10
    retest_layouts: int = 10
    first_seed: int = 0
    variant: str = "standard"
    max_edits: int | None = None  # None: config/agents/shell.yaml optimizer.max_edits_per_layout
    llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET
    coding_agent: str | None = None
    seed_tools: Path | None = None  # a tool folder to start from (copied), else the default tools


@dataclass
class Attempt:
    layout: int
    seed: int
    attempt: int
    success: bool
    end_reason: str
    steps_used: int
    llm_calls: int
    folder: str
    round: dict[str, Any] | None = None  # the optimizer round that followed, if any


@dataclass
class EvolveSummary:
    task: str
    attempts: list[Attempt] = field(default_factory=list)
    edits_kept: int = 0
    edits_reverted: int = 0
    repair_round_wall_s: list[float] = field(default_factory=list)
    retest: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    wall_s: float = 0.0

    def retest_rate(self, which: str) -> float:
        rows = self.retest.get(which, [])
        return sum(r["success"] for r in rows) / len(rows) if rows else 0.0


def run_evolve(
    plan: EvolvePlan,
    world: Any,
    open_acting_llm: OpenLlm,
    optimizer_llm: LlmCaller,
    *,
    settings: ShellSettings | None = None,
    log: Callable[[str], None] = print,
) -> EvolveSummary:
    """Run the loop on ``world`` (an EmbeddedWorld for the task's robot); see the module docstring."""
    from robodojo.sim.tasks import get_task

    settings = settings or load_shell_settings()
    max_edits = settings.optimizer.max_edits_per_layout if plan.max_edits is None else plan.max_edits
    started = time.monotonic()
    out = plan.out
    tools_root = out / "tools"
    task_dir = tools_root / plan.task
    if plan.seed_tools is not None and not task_dir.exists():
        shutil.copytree(plan.seed_tools, task_dir)
    task_dir.mkdir(parents=True, exist_ok=True)
    if not (task_dir / ENABLED_FILE).exists():
        (task_dir / ENABLED_FILE).write_text("".join(f"{t}\n" for t in settings.agent.default_tools))
    task = get_task(plan.task)(world.robot.table.top_z_m)
    all_seeds = range(plan.first_seed, plan.first_seed + plan.layouts + plan.retest_layouts)
    words = task_words(plan.task, [task.layout(s, plan.variant) for s in all_seeds])
    optimizer = Optimizer(settings, optimizer_llm)
    summary = EvolveSummary(plan.task)
    rounds = (out / "rounds.jsonl").open("a", encoding="utf-8")

    def episode(seed: int, folder: Path, root: Path) -> EpisodeResult:
        spec = EpisodeSpec(task=plan.task, seed=seed, variant=plan.variant, llm_call_budget=plan.llm_call_budget)
        agent = make_agent("shell", tools_root=root, coding_agent=plan.coding_agent)
        try:
            with open_acting_llm() as llm:
                return run_episode(WorldHost(world), agent, llm, spec, folder, model=getattr(llm, "model", ""))
        finally:
            getattr(agent, "close", lambda: None)()

    try:
        for k in range(plan.layouts):
            seed = plan.first_seed + k
            for attempt in range(max_edits + 1):
                result = episode(seed, out / "episodes" / f"layout{k}" / f"attempt{attempt}", tools_root)
                row = Attempt(k, seed, attempt, result.success, result.end_reason.value, result.steps_used,
                              result.llm_calls, str(result.folder.relative_to(out)))  # fmt: skip
                summary.attempts.append(row)
                log(f"layout {k} (seed {seed}) attempt {attempt}: "
                    f"{'success' if result.success else 'failure'} ({result.end_reason.value})")  # fmt: skip
                instruction = read_meta(result.folder).instruction
                write_frames(result.folder, result.folder / FRAMES_DIR, world.robot)
                if result.success:
                    record = optimizer.run_round("playbook", task_dir, result.folder, instruction, EVIDENCE_GUIDE)
                    row.round = _round_row(record, None, kept=True)
                    rounds.write(json.dumps({"layout": k, "attempt": attempt, **row.round}) + "\n")
                    break
                if attempt == max_edits:
                    break
                snapshot = out / ".snapshot"
                shutil.rmtree(snapshot, ignore_errors=True)
                shutil.copytree(task_dir, snapshot)
                record = optimizer.run_round("repair", task_dir, result.folder, instruction, EVIDENCE_GUIDE)
                report = check_task_tools(task_dir, settings, words, pool=[POOL_DIR])
                if report.ok:
                    summary.edits_kept += 1
                else:  # the edit is reverted: the next attempt runs the tools as they were
                    shutil.rmtree(task_dir)
                    shutil.copytree(snapshot, task_dir)
                    summary.edits_reverted += 1
                summary.repair_round_wall_s.append(record.wall_s)
                row.round = _round_row(record, report, kept=report.ok)
                rounds.write(json.dumps({"layout": k, "attempt": attempt, **row.round}) + "\n")
                rounds.flush()
                log(f"  repair round: {record.calls} calls, {record.wall_s:.1f} s, delivery check "
                    f"{'passed' if report.ok else 'failed (reverted): ' + '; '.join(report.problems)}")  # fmt: skip
        frozen_root = out / "frozen"
        shutil.rmtree(frozen_root, ignore_errors=True)
        shutil.copytree(task_dir, frozen_root / plan.task)
        dev = range(plan.first_seed, plan.first_seed + plan.layouts)
        new = range(plan.first_seed + plan.layouts, plan.first_seed + plan.layouts + plan.retest_layouts)
        for which, seeds in (("dev", dev), ("new", new)):
            summary.retest[which] = []
            for seed in seeds:
                result = episode(seed, out / "retest" / which / f"seed{seed}", frozen_root)
                summary.retest[which].append({"seed": seed, "success": result.success,
                                              "end_reason": result.end_reason.value, "steps_used": result.steps_used,
                                              "folder": str(result.folder.relative_to(out))})  # fmt: skip
            log(f"frozen retest on {which} layouts: {summary.retest_rate(which):.0%} of {len(seeds)}")
    finally:
        rounds.close()
        shutil.rmtree(out / ".snapshot", ignore_errors=True)
        summary.wall_s = time.monotonic() - started
        (out / "evolve.json").write_text(json.dumps(asdict(summary), indent=1))
    return summary


def _round_row(record: Any, report: Any, *, kept: bool) -> dict[str, Any]:
    row = {
        "kind": record.kind, "calls": record.calls, "wall_s": round(record.wall_s, 3),
        "declared_done": record.declared_done, "input_tokens": record.usage.input_tokens,
        "output_tokens": record.usage.output_tokens, "turns": record.turns, "kept": kept,
        "refused_files": record.refused_files,  # what the round left that was not brought back (links, FIFOs)
    }  # fmt: skip
    if report is not None:
        row["delivery"] = {"ok": report.ok, "problems": list(report.problems), "tools": list(report.tools),
                           "test_output": report.test_output}  # fmt: skip
    return row


def write_frames(episode: Path, folder: Path, robot: RobotConfig) -> int:
    """The camera frames the acting agent took in an episode's record (episode.mcap) as ``step<NNNNN>_<camera>.jpg``
    files in ``folder``, named by the env step they show (a robot command's record says its ``step``). Returns how
    many were written."""
    record = episode / MCAP_FILE
    if not record.is_file():
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for camera, stamp_ns, jpeg in camera_frames(record, robot.camera_names, seen_only=True):
        step = round(stamp_ns / NS_PER_S / robot.control_dt_s)
        (folder / f"step{step:05d}_{camera}.jpg").write_bytes(jpeg)
        written += 1
    return written
