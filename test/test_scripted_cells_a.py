"""Scripted code cells (examples/cells) solve their tasks through the real code-cell agent: replayed as LLM replies,
run in the sandboxed kernel against robo, two standard seeds per task."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode

CELLS = PACKAGE_ROOT / "examples" / "cells"
CASES = [
    (task, seed) for task in ("general_pickup", "stack_blocks", "bowl_on_plate", "fr3_pick_cube") for seed in (0, 1)
]


def _run(world, task: str, seed: int, out: Path):
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{CELLS / f'{task}.py'}") as llm:
            return run_episode(WorldHost(world), agent, llm, EpisodeSpec(task, seed, "standard"), out)
    finally:
        agent.close()


@pytest.mark.parametrize(("task", "seed"), CASES)
def test_scripted_cells_solve_the_task(task, seed, dual_world, fr3_world, tmp_path):
    world = fr3_world if task.startswith("fr3") else dual_world
    result = _run(world, task, seed, tmp_path)
    turns = (result.folder / "turns.jsonl").read_text() if (result.folder / "turns.jsonl").exists() else ""
    assert result.success and result.end_reason is EndReason.SUCCESS, (result, turns[-3000:])
