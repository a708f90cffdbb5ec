"""Hostile and broken cells inside a real episode: each is contained, the episode goes on, the record is complete."""

from __future__ import annotations

import json

from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EndReason, EpisodeSpec, WorldHost, run_episode

HOSTILE_CELLS = [
    "import os\nos.kill(os.getppid(), 9)",
    "import subprocess\nsubprocess.run(['ls'])",
    "import socket\nsocket.create_connection(('127.0.0.1', 80))",
    "import mujoco",
    "import robodojo.sim.world",
    "import os\nos.environ.get('OPENAI_API_KEY')",
    "x = bytearray(10 * 2**30)",
    "print('y' * 50_000_000)",
    "robo.move_to = lambda *a, **k: 'fake'\nrobo.move_to('left', (0, 0, 1))",
    "robo.move_to('left', 'up')",
    "import sys\nsys.exit(3)",
    "import os\nos._exit(1)",
    "import sys\nsys.modules['numpy'] = None",
    "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()",
    "s = robo.state()\nprint('alive', round(s.left.tcp_pos[2], 2))",
]


def test_hostile_cells_are_contained_and_recorded(dual_world, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    script = tmp_path / "hostile.py"
    script.write_text("".join(f"# %%\n{cell}\n" for cell in HOSTILE_CELLS))
    agent = CodeCellAgent()
    try:
        with open_llm(f"replay:{script}") as llm:
            result = run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec("general_pickup", 0), tmp_path / "eps")
    finally:
        agent.close()
    assert result.end_reason is EndReason.FINISHED and result.llm_calls == len(HOSTILE_CELLS) + 1
    turns = [json.loads(line) for line in (result.folder / "turns.jsonl").read_text().splitlines()]
    texts = [t["tool_results"][0] for t in turns]
    assert len(turns) == len(HOSTILE_CELLS) + 1
    assert "PermissionError" in texts[0] or "blocked" in texts[0].lower()
    assert "sk-parent-secret" not in json.dumps(turns)
    assert "ImportError" in texts[3] and "ImportError" in texts[4]
    assert "MemoryError" in texts[6] or "memory" in texts[6]
    assert len(texts[7]) < 100_000 and "characters omitted" in texts[7]
    assert "TypeError" in texts[9] or "ValueError" in texts[9]
    assert "SystemExit" in texts[10] or "exit" in texts[10]
    assert "namespace was reset" in texts[11]
    assert "broke modules the kernel itself needs" in texts[12] and "sys.modules['numpy']" in texts[12]
    assert "left threads running" in texts[13] and "namespace was reset" in texts[13]
    assert texts[14].startswith("alive ")  # the robot is still reachable after all of it
    assert dual_world.step_count == 0  # nothing moved the robot
    metrics = json.loads((result.folder / "metrics.json").read_text())
    assert metrics["end_reason"] == "finished" and metrics["llm_calls"] == len(HOSTILE_CELLS) + 1
