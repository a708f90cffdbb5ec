"""What episode.mcap adds to the episode recorder per turn: write time percentiles and file size per turn.

What is measured, in one process with ``time.perf_counter``, on general_pickup in the embedded world
(``EmbeddedWorld('dual_arx_x5')``, 3 cameras of 640x480):

Turn data is prepared first and is the same for every variant: ``--layouts`` (5) scenes (seeds of general_pickup),
each observed once with all three cameras (what the move_eef agent takes each turn) and once state-only (what the
runner records after a turn), and per turn a move_eef TurnRecord whose request carries the three frames as the agent
sends them (base64 JPEG data URLs at quality 85, new every turn, so the recorder decodes, hashes and stores them as it
does in an episode). ``--turns`` (30) turns cycle through the layouts.

Each variant then records the same ``--turns`` turns into a fresh folder, as the runner does each turn: first one
``record_tick`` per control step of the turn's motion (20; with MCAP: joint states and the moving links' /tf), then
``record_observation`` (the agent's observation; with MCAP: 3 JPEG encodes at quality 85, CameraInfo and camera
pose), ``record_turn`` (requests, responses, turns.jsonl; with MCAP: tool call and result, grasp-point poses, and
the chunk written and flushed) and ``write_metrics``. Variants: the recorder without MCAP (``mcap=False``,
the baseline), with MCAP as shipped (chunks not compressed), and with MCAP and zstd chunks (the benchmark sets
``mcap_record.COMPRESSION``, only to show why it is off). ``--repeats`` (3) rounds, variants interleaved; percentiles
over every turn of every round. Printed: per-turn time p50 / p95 / max [ms] of each variant and of its MCAP parts,
the added time (MCAP minus baseline, medians), episode.mcap's size per turn, and for scale the median of one
three-camera render (``EmbeddedWorld.observe``), which every recorded frame already paid for.

Run: ``make bench`` or ``.venv/bin/python benchmarks/mcap_record.py [--turns 30] [--layouts 5] [--repeats 3]
[--smoke] [--json out.json]``. On a 2-core CPU the default takes about 10 s; ``--smoke`` (2 turns over 1 layout,
1 round; the test suite runs it) a few seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, version, write_figures
from mcap.writer import CompressionType

import robodojo.episodes.mcap_record as mcap_record
from robodojo.agents.base import TurnRecord
from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
from robodojo.episodes.record import RecordMeta
from robodojo.episodes.recorder import EpisodeRecorder
from robodojo.episodes.spec import EndReason, EpisodeOutcome
from robodojo.observation import Observation
from robodojo.sim.render import select_gl_backend
from robodojo.sim.world import EmbeddedWorld

ROBOT = "dual_arx_x5"
TASK = "general_pickup"
DEFAULT_TURNS = 30
DEFAULT_LAYOUTS = 5
DEFAULT_REPEATS = 3
JPEG_QUALITY = 85  # what the move_eef agent sends (config/agents/move_eef.yaml)
RENDERS_TIMED = 10
SMOKE_SIZES = (2, 1, 1)  # --smoke: turns, layouts, repeats
STEPS_PER_TURN = 20  # env steps a turn's motion takes (the replayed general_pickup moves take 12 to 24)
BASELINE, SHIPPED, ZSTD = "recorder, no MCAP", "with MCAP (as shipped)", "with MCAP, zstd chunks"
VARIANTS = {BASELINE: None, SHIPPED: mcap_record.COMPRESSION, ZSTD: CompressionType.ZSTD}
ARGUMENTS = '{"targets": {"right_x": 0.137, "right_z": 0.885, "right_gripper": 1.0}, "note": "above the block"}'
TOOL_TEXT = "Accepted: playing 24 waypoints (0.96s). The next observation reports how close the grasp point landed."


@dataclasses.dataclass(frozen=True)
class TurnData:
    obs: Observation  # all cameras, as the agent observes
    state: Observation  # state only, as the runner records after a turn
    record: TurnRecord


def _turn_record(turn: int, obs: Observation) -> TurnRecord:
    """A move_eef turn whose request carries the observation's frames as fresh data URLs (as the agent sends them)."""
    images = [image_part(frame.rgb, JPEG_QUALITY) for frame in obs.cameras.values()]
    request = [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": [{"type": "text", "text": f"observation {turn}"}, *images]},
    ]
    reply = ChatReply(
        content=None, tool_calls=(ToolCall(f"call_{turn}", "move_eef", ARGUMENTS),), usage=Usage(1000, 0, 50),
        model="bench", finish_reason="tool_calls", latency_s=0.5, attempts=1,
    )  # fmt: skip
    return TurnRecord(turn=turn, request=request, reply=reply, tool_results=[TOOL_TEXT], action="move_eef")


def prepare(world: EmbeddedWorld, turns: int, layouts: int) -> tuple[list[TurnData], list[float]]:
    """The turns every variant records, and the wall times [s] of three-camera renders."""
    scenes = []
    for seed in range(layouts):
        world.reset(TASK, seed=seed)
        scenes.append((world.observe(), world.observe(cameras=())))
    renders = []
    for _ in range(RENDERS_TIMED):
        t0 = time.perf_counter()
        world.observe()
        renders.append(time.perf_counter() - t0)
    data = []
    for turn in range(1, turns + 1):
        obs, state = scenes[(turn - 1) % layouts]
        # each turn begins where the last ended (the record keeps one frame per camera and step)
        obs = dataclasses.replace(obs, step=STEPS_PER_TURN * (turn - 1))
        state = dataclasses.replace(state, step=STEPS_PER_TURN * turn)
        data.append(TurnData(obs, state, _turn_record(turn, obs)))
    return data, renders


@contextlib.contextmanager
def compression(kind: CompressionType | None) -> Iterator[None]:
    """mcap_record.COMPRESSION set to ``kind`` while a variant records (None: nothing to set)."""
    shipped = mcap_record.COMPRESSION
    if kind is not None:
        mcap_record.COMPRESSION = kind
    try:
        yield
    finally:
        mcap_record.COMPRESSION = shipped


def record(folder: Path, robot, data: list[TurnData], kind: CompressionType | None) -> dict:
    """Record ``data`` as the runner does; per-turn times [s] of the observation, the turn (with metrics), the
    total, and episode.mcap's size."""
    obs_s, turn_s, tick_s = [], [], []
    with compression(kind):
        recorder = EpisodeRecorder(folder, RecordMeta(task=TASK, robot=ROBOT), robot, mcap=kind is not None)
        recorder.record_start(data[0].state, "pick up the block")
        for i, turn in enumerate(data):
            for k in range(STEPS_PER_TURN, 0, -1):  # the world's control steps while the turn's motion plays
                state = dataclasses.replace(turn.state, step=turn.state.step - k + 1)
                t_tick = time.perf_counter()
                recorder.record_tick(state)
                tick_s.append(time.perf_counter() - t_tick)
            t0 = time.perf_counter()
            recorder.record_observation(turn.obs)
            t1 = time.perf_counter()
            recorder.record_turn(turn.record, turn.state)
            outcome = EpisodeOutcome(end_reason=EndReason.RUNNING, llm_calls=i + 1, steps_used=turn.state.step)
            recorder.write_metrics(outcome, turn.state.step + turn.state.steps_left)
            t2 = time.perf_counter()
            obs_s.append(t1 - t0)
            turn_s.append(t2 - t1)
        recorder.close()
    path = folder / mcap_record.MCAP_FILE
    return {
        "observation_s": obs_s,
        "turn_s": turn_s,
        "total_s": [a + b for a, b in zip(obs_s, turn_s, strict=True)],
        "tick_s": tick_s,
        "mcap_bytes": path.stat().st_size if path.exists() else 0,
    }


def percentiles_ms(values: list[float]) -> dict[str, float]:
    a = np.asarray(values) * 1e3
    return {"p50": float(np.median(a)), "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS, help="turns per recorded episode")
    parser.add_argument("--layouts", type=int, default=DEFAULT_LAYOUTS, help="distinct scenes the turns cycle through")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="rounds of every variant")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.turns, args.layouts, args.repeats = SMOKE_SIZES
    t_all = time.perf_counter()

    backend = select_gl_backend()
    world = EmbeddedWorld(ROBOT)
    data, renders = prepare(world, args.turns, args.layouts)
    cams = ", ".join(f"{c.name} {c.width}x{c.height}" for c in world.robot.cameras)
    print(f"machine: {nproc()} cores, {cpu_model()}, Python {platform.python_version()}, GL {backend}")
    print(f"mcap {version('mcap')}, mcap-ros2-support {version('mcap-ros2-support')}; cameras: {cams}")
    print(f"{args.turns} turns over {args.layouts} layouts, {args.repeats} rounds per variant\n")

    runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench_mcap_") as tmp:
        for r in range(args.repeats):
            for name, kind in VARIANTS.items():
                runs[name].append(record(Path(tmp) / f"{r}_{len(runs[name])}_{name[:4]}", world.robot, data, kind))
    world.close()

    def pooled(name: str, key: str) -> list[float]:
        return [v for run in runs[name] for v in run[key]]

    figures: dict = {"per_turn_ms": {}, "mcap_bytes_per_turn": {}}
    rows = []
    for name in VARIANTS:
        for key, label in (("total_s", name), ("observation_s", "  record_observation"), ("turn_s", "  record_turn")):
            p = percentiles_ms(pooled(name, key))
            figures["per_turn_ms"][f"{name}: {key.removesuffix('_s')}"] = p
            rows.append((label, f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{p['max']:.2f}"))
    print("per-turn write time [ms] (percentiles over every turn of every round)")
    table(("", "p50", "p95", "max"), rows, "<>>>")

    base = percentiles_ms(pooled(BASELINE, "total_s"))["p50"]
    render = percentiles_ms(renders)["p50"]
    print()
    size_rows = []
    for name in (SHIPPED, ZSTD):
        added = percentiles_ms(pooled(name, "total_s"))["p50"] - base
        per_turn = float(np.mean([run["mcap_bytes"] for run in runs[name]])) / args.turns
        figures["mcap_bytes_per_turn"][name] = per_turn
        figures["per_turn_ms"][f"{name}: added p50"] = added
        size_rows.append((name, f"{added:.2f}", f"{added / base:.1f}x", f"{per_turn / 1024:.1f}"))
    table(("", "added p50 [ms]", "added / baseline", "episode.mcap per turn [KiB]"), size_rows, "<>>>")
    tick_rows = []
    for name in (SHIPPED, ZSTD):
        p = percentiles_ms(pooled(name, "tick_s"))
        figures["per_turn_ms"][f"{name}: record_tick"] = p
        tick_rows.append((name, f"{p['p50']:.3f}", f"{p['p95']:.3f}", f"{p['max']:.3f}"))
    print(f"\nper control step [ms]: record_tick (joint states and /tf), {STEPS_PER_TURN} steps per turn")
    table(("", "p50", "p95", "max"), tick_rows, "<>>>")
    print(f"\nfor scale: one three-camera render (EmbeddedWorld.observe), paid before recording: p50 {render:.1f} ms")
    print(f"benchmark wall time {time.perf_counter() - t_all:.1f} s")

    if args.json is not None:
        figures.update(
            machine={"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            gl_backend=backend, turns=args.turns, layouts=args.layouts, repeats=args.repeats,
            render_p50_ms=render, versions={d: version(d) for d in ("mcap", "mcap-ros2-support")},
        )  # fmt: skip
        write_figures(args.json, json.loads(json.dumps(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
