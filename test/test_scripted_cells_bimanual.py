"""Scripted code cells for the bimanual tasks of issue 17 (lift_tray, pass_through_middle) solve their task through the
real code-cell agent.

Each episode replays examples/cells/<task>.py with the replay LLM (one python tool call per cell, then finish) on
the sandboxed kernel and the robo API, as `robodojo run --agent code_cell --llm replay:...` does.
"""

from __future__ import annotations

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode

CELLS = PACKAGE_ROOT / "examples" / "cells"


@pytest.mark.parametrize(
    ("task", "seed"),
    [(task, seed) for task in ("lift_tray", "pass_through_middle") for seed in (0, 1)],
)
def test_scripted_cells_solve_the_task(dual_world, tmp_path, task, seed):
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{CELLS / f'{task}.py'}") as llm:
            result = run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec(task, seed), tmp_path)
    finally:
        agent.close()
    assert result.success and result.end_reason is EndReason.SUCCESS, (
        result,
        (result.folder / "turns.jsonl").read_text()[-3000:],
    )
