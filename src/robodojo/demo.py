"""`robodojo demo`: short scripted episodes in the embedded world, moved through the motion server.

The script reads the object's privileged pose (it is a demo, not an agent) and sends Cartesian targets to the motion
server, which plans and plays 25 Hz trajectories; the images, the motion server's texts and the summary show what a
newcomer should see: the scene, the cameras, a grasp and lift, and the task's own success signal.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from robodojo.geometry import quat_from_matrix
from robodojo.motion.server import MotionServer
from robodojo.sim.render import select_gl_backend
from robodojo.sim.scripted import plan_top_down_grasp
from robodojo.sim.world import EmbeddedWorld

DEMO_EPISODES = (("dual_arx_x5", "general_pickup", "target"), ("fr3", "fr3_pick_cube", "target"))
SHEET_EVERY_STEPS = 8
SHEET_COLUMNS = 4
SHEET_TILE_WIDTH = 320
LIFT_M = 0.12


@dataclass(frozen=True)
class DemoEpisode:
    robot: str
    task: str
    seed: int
    instruction: str
    success: bool
    score: float
    steps_used: int
    sim_time_s: float
    wall_time_s: float
    folder: str
    moves: list[dict]


def _write_rgb(path: Path, rgb: np.ndarray) -> None:
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))


def _contact_sheet(frames: list[np.ndarray]) -> np.ndarray:
    h, w = frames[0].shape[:2]
    tile_h = round(h * SHEET_TILE_WIDTH / w)
    tiles = [cv2.resize(f, (SHEET_TILE_WIDTH, tile_h), interpolation=cv2.INTER_AREA) for f in frames]
    while len(tiles) % SHEET_COLUMNS:
        tiles.append(np.zeros_like(tiles[0]))
    rows = [np.hstack(tiles[i : i + SHEET_COLUMNS]) for i in range(0, len(tiles), SHEET_COLUMNS)]
    return np.vstack(rows)


def pick_with_motion_server(world: EmbeddedWorld, object_name: str) -> list[dict]:
    """Approach, descend, close, lift: four targets for the motion server; returns what it said about each."""
    server = MotionServer(world)
    grasp = plan_top_down_grasp(world, object_name)
    quat = quat_from_matrix(grasp.rotation)
    truth = world.privileged()
    steps = [
        ("approach", grasp.pregrasp_pos_m, 1.0),
        ("descend", grasp.grasp_pos_m, None),
        ("close", grasp.grasp_pos_m, 0.0),
        ("lift", grasp.grasp_pos_m + np.array([0, 0, LIFT_M]), None),
    ]
    moves = []
    for name, xyz, gripper in steps:
        report = server.move_to(grasp.arm, xyz, quat, gripper, is_success=truth.success)
        moves.append(
            {
                "move": name,
                "tool_text": report.tool_text,
                "arrival": report.arrival_text,
                "stop_reason": report.stop_reason.value,
                "steps_used": report.steps_used,
            }
        )
        print(f"    {name:8s} {report.tool_text.split('. The next')[0]} -> {report.arrival_text or '-'}")
        if not report.accepted or report.stop_reason.value == "task_success":
            break
    return moves


def run_demo_episode(robot: str, task: str, object_name: str, seed: int, out_dir: Path) -> DemoEpisode:
    folder = out_dir / f"{task}_seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    world = EmbeddedWorld(robot)
    try:
        start = time.perf_counter()
        obs = world.reset(task, seed=seed)
        for name, frame in obs.cameras.items():
            _write_rgb(folder / f"{name}_start.png", frame.rgb)
        sheet = [obs.camera("head").rgb]

        def capture(w: EmbeddedWorld) -> None:
            if w.step_count % SHEET_EVERY_STEPS == 0:
                sheet.append(w.render("head").rgb)

        world.step_observers.append(capture)
        moves = pick_with_motion_server(world, object_name)
        truth = world.privileged()
        end = world.observe()
        for name, frame in end.cameras.items():
            _write_rgb(folder / f"{name}_end.png", frame.rgb)
        _write_rgb(folder / "head_sheet.png", _contact_sheet([*sheet, end.camera("head").rgb]))
        episode = DemoEpisode(
            robot=robot,
            task=task,
            seed=seed,
            instruction=world.instruction,
            success=truth.success(),
            score=truth.score(),
            steps_used=world.step_count,
            sim_time_s=round(end.time_s, 3),
            wall_time_s=round(time.perf_counter() - start, 3),
            folder=str(folder),
            moves=moves,
        )
        (folder / "summary.json").write_text(json.dumps(episode.__dict__, indent=2) + "\n")
        return episode
    finally:
        world.close()


def run_demo(out_dir: Path, seed: int = 0) -> list[DemoEpisode]:
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"robodojo demo: rendering headless with {select_gl_backend()}")
    episodes = []
    for robot, task, obj in DEMO_EPISODES:
        print(f"  {task} (robot {robot}, seed {seed}), moving through the motion server:")
        ep = run_demo_episode(robot, task, obj, seed, out_dir)
        status = "success" if ep.success else "FAILED"
        print(
            f"    {ep.instruction!r}: {status}, score {ep.score:.2f}, {ep.steps_used} env steps "
            f"({ep.sim_time_s:.2f} s simulated) in {ep.wall_time_s:.2f} s wall\n    images and summary: {ep.folder}/"
        )
        episodes.append(ep)
    (out_dir / "summary.json").write_text(json.dumps([e.__dict__ for e in episodes], indent=2) + "\n")
    print(f"Summary: {out_dir / 'summary.json'}  (contact sheets: {out_dir}/*/head_sheet.png)")
    return episodes
