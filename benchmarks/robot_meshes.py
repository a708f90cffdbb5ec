"""What the robots' visual meshes (robodojo.robots.meshes) cost the embedded world's cameras, against the primitive
visuals, and at which decimation.

Settings compared (``config/sim.yaml`` render section with ``robot_meshes`` / ``robot_mesh_face_fraction``
changed): primitives only (the baseline), and the meshes at each ``--fractions`` of their faces (1 = franky-sim's
source meshes). One world per setting on ``--task`` (default fr3_pick_cube, robot fr3), all kept open.

1. Triangles the meshes add (the visual mesh geoms' faces) and the model build time (``EmbeddedWorld`` and its first
   reset; the first build of a fraction also prepares its meshes into the cache, so it is shown separately from a
   second reset).
2. RGB time per image of each camera (640x480 as the robot config sets them), ``CameraRenderer.rgb``: the settings
   are interleaved round by round (one image per camera of each setting per round, ``--rounds`` rounds after a
   warm-up), so a shared machine's load drifts over all of them alike; median and p95 [ms] and the ratio of the
   medians to the primitives'. Target: under 15 ms.
3. Full loop (``world.step()`` with a gentle sway, then ``world.observe()`` of every camera) for ``--steps`` control
   steps, primitives and the configured fraction alternating in blocks of 10 steps: real-time factor (target >= 1.5).

Run: ``.venv/bin/python benchmarks/robot_meshes.py [--fractions 0.05 0.1 0.2 1] [--rounds 60] [--smoke]
[--json out.json]``. ``--smoke`` runs every part at its smallest (the fraction 0.1 only, 2 rounds, 4 steps; the test
suite runs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

import mujoco
import numpy as np
from _common import cpu_model, gl_renderer_string, nproc, table, write_figures
from sim import keep_episode_open, stats_ms, sway_commands

from robodojo.robots.mujoco_model import VISUAL_GROUP
from robodojo.sim.render import select_gl_backend
from robodojo.sim.settings import SimSettings, load_sim_settings
from robodojo.sim.world import EmbeddedWorld

RGB_TARGET_MS = 15.0
RTF_TARGET = 1.5
WARMUP_ROUNDS = 5
LOOP_BLOCK_STEPS = 10
SMOKE_SIZES = ([0.1], 2, 4)  # --smoke: fractions, rounds, full-loop steps
PRIMITIVES = "primitives"


def settings_for(base: SimSettings, fraction: float | None) -> SimSettings:
    render = dataclasses.replace(
        base.render, robot_meshes=fraction is not None, robot_mesh_face_fraction=fraction or 1.0
    )
    return dataclasses.replace(base, render=render)


def visual_mesh_triangles(model: mujoco.MjModel) -> int:
    total = 0
    for g in range(model.ngeom):
        if model.geom_group[g] == VISUAL_GROUP and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
            total += int(model.mesh_facenum[model.geom_dataid[g]])
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="fr3_pick_cube")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.05, 0.1, 0.2, 1.0])
    parser.add_argument("--rounds", type=int, default=60, help="images per camera and setting (default 60)")
    parser.add_argument("--steps", type=int, default=200, help="control steps per full-loop setting (default 200)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.fractions, args.rounds, args.steps = SMOKE_SIZES

    base = load_sim_settings()
    configured = base.render.mesh_face_fraction
    backend = select_gl_backend()
    labels: list[str] = [PRIMITIVES, *(f"meshes x{f:g}" for f in args.fractions)]
    fractions: list[float | None] = [None, *args.fractions]
    worlds: dict[str, EmbeddedWorld] = {}
    build: dict[str, dict[str, float]] = {}
    for label, fraction in zip(labels, fractions, strict=True):
        t0 = time.perf_counter()
        world = EmbeddedWorld(settings=settings_for(base, fraction), robot=_robot_of(args.task))
        world.reset(args.task, seed=args.seed)
        t1 = time.perf_counter()
        world.reset(args.task, seed=args.seed)
        t2 = time.perf_counter()
        worlds[label] = world
        build[label] = {
            "first_build_s": t1 - t0,
            "reset_s": t2 - t1,
            "mesh_triangles": visual_mesh_triangles(world.model),
            "visual_geoms": int(np.sum(world.model.geom_group == VISUAL_GROUP)),
        }

    first = next(iter(worlds.values()))
    cameras = [c.name for c in first.robot.cameras]
    renderers = {
        label: {c.name: (w._renderer(c.width, c.height), w.camera_ids[c.name]) for c in w.robot.cameras}
        for label, w in worlds.items()
    }
    times: dict[str, dict[str, list[float]]] = {label: {c: [] for c in cameras} for label in worlds}
    for i in range(WARMUP_ROUNDS + args.rounds):
        for label, world in worlds.items():
            for cam, (renderer, cid) in renderers[label].items():
                t0 = time.perf_counter()
                renderer.rgb(world.data, cid)
                dt = time.perf_counter() - t0
                if i >= WARMUP_ROUNDS:
                    times[label][cam].append(dt)
    gl = gl_renderer_string()
    rgb = {label: {c: stats_ms(ts) for c, ts in per.items()} for label, per in times.items()}

    # Full loop: primitives vs the configured setting, alternating blocks.
    loop_labels = [PRIMITIVES]
    if configured is not None:
        loop_labels.append(f"configured x{configured:g}")
        worlds[loop_labels[1]] = EmbeddedWorld(settings=base, robot=_robot_of(args.task))
        worlds[loop_labels[1]].reset(args.task, seed=args.seed)
    commands = sway_commands(first, args.steps)
    walls = dict.fromkeys(loop_labels, 0.0)
    for start in range(0, args.steps, LOOP_BLOCK_STEPS):
        for label in loop_labels:
            world = worlds[label]
            t0 = time.perf_counter()
            for joints, grippers in commands[start : start + LOOP_BLOCK_STEPS]:
                keep_episode_open(world)
                world.step(joints, grippers)
                world.observe()
            walls[label] += time.perf_counter() - t0
    rtf = {label: args.steps * first.control_dt_s / wall for label, wall in walls.items()}
    for world in worlds.values():
        world.close()

    print(f"robodojo robot-mesh benchmark: task {args.task} (seed {args.seed}), sim.yaml fraction {configured}")
    print(f"machine: {cpu_model()}, {nproc()} CPUs, Python {platform.python_version()}, MuJoCo {mujoco.__version__}")
    print(f"GL: {backend} ({gl}); timings on a possibly shared machine: compare ratios, not absolute figures\n")
    print("1. Scene")
    table(
        ("setting", "mesh triangles", "visual geoms", "first build [s]", "reset [s]"),
        [
            (
                label,
                str(b["mesh_triangles"]),
                str(b["visual_geoms"]),
                f"{b['first_build_s']:.2f}",
                f"{b['reset_s']:.3f}",
            )
            for label, b in build.items()
        ],
        "<>>>>",
    )
    print(f"\n2. RGB per image, {args.rounds} rounds interleaved (target median < {RGB_TARGET_MS:g} ms)")
    rows = []
    for label in labels:
        for cam in cameras:
            s, ref = rgb[label][cam], rgb[PRIMITIVES][cam]
            rows.append(
                (
                    label,
                    cam,
                    f"{s['median_ms']:.2f}",
                    f"{s['p95_ms']:.2f}",
                    f"{s['median_ms'] / ref['median_ms']:.2f}",
                )
            )
    table(("setting", "camera", "median [ms]", "p95 [ms]", "x primitives"), rows, "<<>>>")
    print(f"\n3. Full loop (step + observe {len(cameras)} cameras), {args.steps} steps, blocks of {LOOP_BLOCK_STEPS}")
    table(
        ("setting", "RTF", "x primitives"),
        [(label, f"{rtf[label]:.2f}", f"{rtf[label] / rtf[PRIMITIVES]:.2f}") for label in loop_labels],
        "<>>",
    )
    if args.json:
        write_figures(args.json, {"build": build, "rgb": rgb, "rtf": rtf, "gl": gl, "backend": backend})
    return 0


def _robot_of(task: str) -> str:
    from robodojo.sim.tasks import get_task

    return get_task(task).robot


if __name__ == "__main__":
    sys.exit(main())
