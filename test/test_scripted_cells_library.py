"""The scripted cells' shared library (examples/cells/lib/): every cell's code, includes expanded as the replay LLM
sends it, defines or includes every name it uses; and the robot facts the library reads from robo (home poses, the
park poses made from them, the arm bases placed behind them, where a wrist camera looks from) agree with the robot
config.
"""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

import numpy as np
import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.agents.llm.replay_server import cells_script
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.robots.config import load_robot_config

CELLS = PACKAGE_ROOT / "examples" / "cells"
PREDEFINED = {"robo", "np", "math"}  # the kernel's namespace (agents/code_cell/kernel.py)
BASE_TOLERANCE_M = 0.005
VIEW_TOLERANCE_M = 0.003


def cell_codes(path: Path) -> list[str]:
    """The code of every python call the replay LLM sends for a cells file (includes expanded)."""
    replies = cells_script(path.read_text(), path.parent)
    return [r["tool_calls"][0]["arguments"]["code"] for r in replies if r["tool_calls"][0]["name"] == "python"]


def unresolved_names(code: str) -> set[str]:
    """Names the code reads that nothing in it binds (coarse: one scope for the whole namespace, as the cells share
    one), other than builtins and the kernel's predefined names."""
    tree = ast.parse(code)
    bound, read = set(PREDEFINED) | set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return read - bound


@pytest.mark.parametrize("path", sorted(CELLS.glob("*.py")), ids=lambda p: p.stem)
def test_every_name_a_cell_uses_is_defined_by_its_cells_or_includes(path):
    code = "\n\n".join(cell_codes(path))
    assert not unresolved_names(code), f"{path.name}: nothing defines {sorted(unresolved_names(code))}"


FACTS_CELL = """# %% the robot's facts as the library reads them
import json

# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/{robot_file}
# include: lib/wrist_views.py

TABLE_Z = measure_table()
facts = {{}}
for arm in ARMS:
    camera = WRIST_CAMERA[arm][0]
    view_point = wrist_view_point(arm, HOME_POS[arm][:2], 0.2)  # to look at the table under the home grasp point
    robo.move_to(arm, view_point, HOME_QUAT[arm])
    info = robo.camera(camera)
    hit = robo.back_project(info.height / 2, info.width / 2, camera, plane_z=TABLE_Z)  # the image's centre
    facts[arm] = {{
        "home": HOME_POS[arm].tolist(),
        "base": [float(v) for v in BASE_XY[arm]],
        "view_point": [float(v) for v in view_point],
        "reached": list(robo.state().arm(arm).tcp_pos),
        "seen": list(hit.xyz) if hit.found else None,
    }}
    robo.home()
print("FACTS " + json.dumps(facts))
"""


def printed_facts(folder: Path) -> dict:
    for line in (folder / "turns.jsonl").read_text().splitlines():
        for text in json.loads(line).get("tool_results") or []:
            for out in str(text).splitlines():
                if out.startswith("FACTS "):
                    return json.loads(out[len("FACTS ") :])
    raise AssertionError((folder / "turns.jsonl").read_text()[-3000:])


@pytest.mark.parametrize(
    ("robot", "robot_file", "task"),
    [("dual_arx_x5", "dual_arm.py", "general_pickup"), ("fr3", "fr3_arm.py", "fr3_pick_cube")],
)
def test_robot_facts_read_from_robo_agree_with_the_robot_config(request, tmp_path, robot, robot_file, task):
    """The arm bases (the one fact robo does not tell, placed behind the home grasp point) are the config's; a wrist
    camera brought over a point by wrist_view_point has that point in the middle of its image."""
    (tmp_path / "lib").symlink_to(CELLS / "lib", target_is_directory=True)
    script = tmp_path / "facts.py"
    script.write_text(FACTS_CELL.format(robot_file=robot_file))
    world = request.getfixturevalue({"dual_arx_x5": "dual_world", "fr3": "fr3_world"}[robot])
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{script}") as llm:
            result = run_episode(WorldHost(world), agent, llm, EpisodeSpec(task, 0), tmp_path / "out", mcap=False)
    finally:
        agent.close()
    facts = printed_facts(result.folder)
    config = load_robot_config(robot)
    assert set(facts) == set(config.arm_names)
    for arm, f in facts.items():
        base = np.asarray(config.arm(arm).base_xyz_m[:2])
        assert np.linalg.norm(np.asarray(f["base"]) - base) < BASE_TOLERANCE_M, (arm, f["base"], base)
        assert f["seen"] is not None, (arm, f)
        # the camera turns with the hand only as far as the hand missed its target: look for the home point shifted
        missed = np.asarray(f["reached"][:2]) - np.asarray(f["view_point"][:2])
        looked_for = np.asarray(f["home"][:2]) + missed
        assert np.linalg.norm(np.asarray(f["seen"][:2]) - looked_for) < VIEW_TOLERANCE_M, (arm, f)
