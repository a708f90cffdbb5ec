"""Scripted code cells for the tasks issue 17 added last (textured choices, fixtures, bimanual, long-horizon, dynamic
and the FR3's) and issue 18's lab ware solve their task through the real code-cell agent, two seeds each.

Each episode replays examples/cells/<task>.py with the replay LLM (one python tool call per cell, then finish) on
the sandboxed kernel and the robo API, as `robodojo run --agent code_cell --llm replay:...` does.
"""

from __future__ import annotations

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode
from robodojo.sim.tasks import get_task

CELLS = PACKAGE_ROOT / "examples" / "cells"
TASKS = (
    "press_by_number", "pick_matching_picture", "match_tile",  # open: a generated texture decides
    "block_into_slot", "peg_in_hole", "push_into_corner",  # fixtures
    "lift_tray", "pass_through_middle",  # bimanual
    "swap_places", "stack_by_size", "restore_moved_block",  # long_horizon
    "stop_rolling_ball", "pick_from_conveyor",  # dynamic
    "fr3_push_to_pad", "fr3_stack_two", "fr3_sort_two",  # the FR3
    "mug_on_coaster", "tube_into_rack",  # lab ware
)  # fmt: skip
WORLD_FIXTURE = {"dual_arx_x5": "dual_world", "fr3": "fr3_world"}  # one shared world per robot (conftest.py)


@pytest.mark.parametrize(("task", "seed"), [(task, seed) for task in TASKS for seed in (0, 1)])
def test_scripted_cells_solve_the_task(request, tmp_path, task, seed):
    world = request.getfixturevalue(WORLD_FIXTURE[get_task(task).robot])
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{CELLS / f'{task}.py'}") as llm:
            result = run_episode(WorldHost(world), agent, llm, EpisodeSpec(task, seed), tmp_path)
    finally:
        agent.close()
    assert result.success and result.end_reason is EndReason.SUCCESS, (
        result,
        (result.folder / "turns.jsonl").read_text()[-3000:],
    )
