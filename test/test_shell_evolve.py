"""seed 003's repair loop with replayed agents: a failing tool is diagnosed, fixed with a test, passes the delivery
check and the retried layout succeeds; an edit that fails the delivery check is reverted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

EXAMPLE = PACKAGE_ROOT / "examples" / "shell" / "evolve"
BAD_EDIT = """\
replies:
  - tool_calls:
      - name: shell
        arguments:
          command: |
            echo 'the grab height is wrong' >> /opt/robo/tools/task/skill.md
            printf 'import mujoco\\n' >> /opt/robo/tools/task/grab/tool.py
            sed -i 's/return top_z + DEPTH_M/return top_z - DEPTH_M/' /opt/robo/tools/task/grab/tool.py
            ln -s /etc/hostname /opt/robo/tools/task/grab/notes.md; mkfifo /opt/robo/tools/task/pipe
  - tool_calls:
      - name: shell
        arguments: {command: "robo done"}
"""


def evolve(tmp_path, optimizer: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "evolve", "--task", "general_pickup", "--layouts", "1", "--retest", "1",
         "--llm", f"replay:{EXAMPLE / 'acting.yaml'}", "--optimizer-llm", f"replay:{optimizer}",
         "--tools", str(EXAMPLE / "general_pickup"), "--out", str(tmp_path), *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def rounds(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "rounds.jsonl").read_text().splitlines()]


def test_a_repair_round_fixes_the_tool_and_the_retried_layout_succeeds(tmp_path):
    result = evolve(tmp_path, str(EXAMPLE / "optimizer.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    run = tmp_path / "general_pickup"
    summary = json.loads((run / "evolve.json").read_text())
    assert [a["success"] for a in summary["attempts"]] == [False, True]
    assert summary["edits_kept"] == 1 and summary["edits_reverted"] == 0
    repair, playbook = rounds(run)
    assert repair["kind"] == "repair" and repair["kept"] and repair["declared_done"]
    assert repair["delivery"]["ok"] and repair["delivery"]["tools"] == ["grab"]
    assert "2 passed" in repair["delivery"]["test_output"]  # the new test ran in the sandbox with the old one
    assert playbook["kind"] == "playbook"
    tools = run / "tools" / "general_pickup"
    assert "return top_z - DEPTH_M" in (tools / "grab" / "tool.py").read_text()
    assert "test_the_fingers_close_below_the_top_face" in (tools / "grab" / "test_tool.py").read_text()
    assert "grasp_height adds DEPTH_M" in (tools / "skill.md").read_text()
    assert "grab" in (tools / "playbook.md").read_text()
    # the failed attempt's record is what the optimizer read: the grab call's record says where it closed
    failed = run / summary["attempts"][0]["folder"]
    grab = [json.loads(line) for line in (failed / "robo_calls.jsonl").read_text().splitlines()]
    assert any(c["argv"][:2] == ["move", "--arm"] for c in grab)
    # the frames of every command: each executed motion's step has a frame of every camera
    frames = {p.name for p in (failed / "frames").iterdir()}
    motions = [c for c in grab if c["argv"][0] in ("move", "rotate", "point", "gripper") and c["record"]["ok"]]
    assert motions and all(f"step{c['record']['step']:05d}_{cam}.jpg" in frames for c in motions
                           for cam in ("head", "left_wrist", "right_wrist"))  # fmt: skip
    # frozen, then retested once per development and new layout, with no optimizer round
    assert (run / "frozen" / "general_pickup" / "grab" / "tool.py").read_text() == (
        tools / "grab" / "tool.py"
    ).read_text()
    assert [r["seed"] for r in summary["retest"]["dev"]] == [0] and summary["retest"]["dev"][0]["success"]
    assert [r["seed"] for r in summary["retest"]["new"]] == [1]
    assert len(rounds(run)) == 2
    # the example's tools are untouched: the loop works on its own copy
    assert "return top_z + DEPTH_M" in (EXAMPLE / "general_pickup" / "grab" / "tool.py").read_text()


def test_an_edit_that_fails_the_delivery_check_is_reverted(tmp_path):
    script = tmp_path / "bad_optimizer.yaml"
    script.write_text(BAD_EDIT)
    result = evolve(tmp_path / "run", str(script), "--max-edits", "1", "--retest", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    run = tmp_path / "run" / "general_pickup"
    summary = json.loads((run / "evolve.json").read_text())
    assert [a["success"] for a in summary["attempts"]] == [False, False]  # the retry ran the old, reverted tool
    assert summary["edits_kept"] == 0 and summary["edits_reverted"] == 1
    (repair,) = rounds(run)
    assert not repair["kept"] and not repair["delivery"]["ok"]
    # what the round left that is no regular file or folder stayed in its copy, named in its record
    assert repair["refused_files"] == ["grab/notes.md: a symbolic link", "pipe: a FIFO"]
    assert any("grab: tool.py imports mujoco" in p for p in repair["delivery"]["problems"])
    tools = run / "tools" / "general_pickup"
    assert (tools / "grab" / "tool.py").read_text() == (EXAMPLE / "general_pickup" / "grab" / "tool.py").read_text()
    assert not (tools / "skill.md").exists()  # the whole edit is reverted, its notes included
