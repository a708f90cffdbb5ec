"""Scripted code cells for the multi-step dual-arm tasks (sort_into_bowls, build_tower, sort_by_color) solve their
task through the real code-cell agent: replayed as LLM replies, run in the sandboxed kernel against robo, two
standard seeds per task. Each episode takes 3-5 s on one idle core (500-900 env steps; the six ~25 s with the world's
set-up); the durations are printed (pytest -s)."""

from __future__ import annotations

import time

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode

CELLS = PACKAGE_ROOT / "examples" / "cells"
CASES = [(task, seed) for task in ("sort_into_bowls", "build_tower", "sort_by_color") for seed in (0, 1)]


@pytest.mark.parametrize(("task", "seed"), CASES)
def test_scripted_cells_solve_the_task(dual_world, tmp_path, task, seed):
    agent = CodeCellAgent()
    start = time.monotonic()
    try:
        with open_llm(f"replay:{CELLS / f'{task}.py'}") as llm:
            result = run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec(task, seed, "standard"), tmp_path)
    finally:
        agent.close()
    print(f"{task} seed {seed}: {time.monotonic() - start:.1f} s, {result.steps_used} env steps")
    turns = (result.folder / "turns.jsonl").read_text() if (result.folder / "turns.jsonl").exists() else ""
    assert result.success and result.end_reason is EndReason.SUCCESS, (result, turns[-3000:])
