"""Speed of the embedded MuJoCo world on this machine: physics, control loop, rendering.

What is measured, in one process with ``time.perf_counter``, on the task scene (``--task``, ``--robot``):

1. Physics alone: raw ``mujoco.mj_step`` on ``world.model``/``world.data`` for ``--seconds`` of simulated
   time; steps per second and real-time factor (RTF = simulated seconds per wall second). The actuator
   targets are written straight into ``data.ctrl`` once per control step, following the motion below.
2. Control loop without rendering: ``world.step()`` calls per second and RTF (one call = one control step
   of ``substeps`` physics steps, plus the world's target validation).
3. Full loop: every control step followed by ``world.observe()`` (RGB of every camera), i.e. cameras at the
   control rate; RTF (target >= 1.5) and per-step wall time median / p95.
4. Render time per image, per camera, for RGB, depth and segmentation separately, timing the world's
   ``CameraRenderer`` methods directly (``world.render(depth=True)`` would draw the scene twice);
   median / p95 of ``--samples`` images each after a warm-up. Target: RGB median under 15 ms.
5. A baseline with the render settings the other way (MSAA 4 samples, shadows on) in a fresh world: the
   same full-loop RTF and the ratio fast / baseline. The baseline is slow on software GL, so it stops
   after ``--baseline-budget`` wall seconds if ``--seconds`` of simulated time would take longer; the
   number of steps it ran is printed.

During the loops both arms sway gently about their home pose (joints 1-3, +-0.15 rad, 4 s period) and
the grippers open and close, so the solver has moving bodies to handle rather than a scene at rest.

Run: ``make bench`` (every benchmark) or
``.venv/bin/python benchmarks/sim.py [--seconds 10] [--task general_pickup] [--smoke] [--json out.json]``;
``--smoke`` runs every part at its smallest (0.2 s simulated, 2 render samples; the test suite runs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
from _common import cpu_model, gl_renderer_string, mark, nproc, table, write_figures

from robodojo.sim.render import select_gl_backend
from robodojo.sim.settings import RenderSettings, SimSettings, load_sim_settings
from robodojo.sim.world import EmbeddedWorld

RTF_TARGET = 1.5
RGB_TARGET_MS = 15.0
WARMUP_IMAGES = 10
WARMUP_STEPS = 3
MIN_BASELINE_STEPS = 5
SWAY_RAD = 0.15
SWAY_PERIOD_S = 4.0
SWAY_JOINTS = 3
SMOKE_SIZES = (0.2, 2, 1.0)  # --smoke: simulated seconds per loop, render samples, baseline budget [s]

Command = tuple[dict[str, np.ndarray], dict[str, float]]


# -- machine -------------------------------------------------------------------------------------------------


# -- workload ------------------------------------------------------------------------------------------------
def sway_commands(world: EmbeddedWorld, n_steps: int) -> list[Command]:
    """Targets for ``n_steps`` control steps: a gentle sway about home, far below the speed limits."""
    dt = world.control_dt_s
    commands = []
    for k in range(1, n_steps + 1):
        t = k * dt
        joints: dict[str, np.ndarray] = {}
        grippers: dict[str, float] = {}
        for i, arm in enumerate(world.robot.arms):
            phase = math.pi * i  # the arms move in opposition
            q = np.array(arm.home_joints_rad, dtype=float)
            q[:SWAY_JOINTS] += SWAY_RAD * math.sin(2 * math.pi * t / SWAY_PERIOD_S + phase)
            for j, name in enumerate(arm.joints):
                lower, upper, _ = world.joint_limits[name]
                q[j] = min(max(q[j], lower + 1e-3), upper - 1e-3)
            joints[arm.name] = q
            grippers[arm.name] = 0.5 + 0.5 * math.cos(2 * math.pi * t / SWAY_PERIOD_S + phase)
        commands.append((joints, grippers))
    return commands


def ctrl_vectors(world: EmbeddedWorld, commands: list[Command]) -> list[np.ndarray]:
    """The full ``data.ctrl`` vector each command amounts to, for the physics-alone loop."""
    assert world.data is not None
    ctrl = world.data.ctrl.copy()
    out = []
    for joints, grippers in commands:
        for arm, q in joints.items():
            ctrl[world.arm_ctrl_ids[arm]] = q
        for arm, opening in grippers.items():
            ctrl[world.gripper_ctrl_ids[arm]] = opening * world.robot.arm(arm).gripper_max_m
        out.append(ctrl.copy())
    return out


def keep_episode_open(world: EmbeddedWorld) -> None:
    # The task's step budget may be shorter than --seconds; the benchmark ignores it.
    if world.task is not None and world.steps_left <= 0:
        world.step_count = 0


# -- measurements --------------------------------------------------------------------------------------------
def stats_ms(samples_s: list[float]) -> dict[str, float]:
    a = np.asarray(samples_s) * 1e3
    return {"median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)), "n": len(a)}


def bench_physics(world: EmbeddedWorld, n_control: int) -> dict[str, float]:
    m, d = world.model, world.data
    ctrls = ctrl_vectors(world, sway_commands(world, n_control))
    substeps = world.substeps
    step = mujoco.mj_step
    t0 = time.perf_counter()
    for ctrl in ctrls:
        d.ctrl[:] = ctrl
        for _ in range(substeps):
            step(m, d)
    wall = time.perf_counter() - t0
    n = n_control * substeps
    return {"steps": n, "wall_s": wall, "steps_per_s": n / wall, "rtf": n * m.opt.timestep / wall}


def bench_control(world: EmbeddedWorld, n_control: int) -> dict[str, float]:
    commands = sway_commands(world, n_control)
    t0 = time.perf_counter()
    for joints, grippers in commands:
        keep_episode_open(world)
        world.step(joints, grippers)
    wall = time.perf_counter() - t0
    return {
        "calls": n_control,
        "wall_s": wall,
        "calls_per_s": n_control / wall,
        "rtf": n_control * world.control_dt_s / wall,
    }


def bench_full_loop(world: EmbeddedWorld, n_control: int, budget_s: float = math.inf) -> dict[str, float]:
    """step + observe per control step; stops early once ``budget_s`` wall seconds are spent (min 5 steps)."""
    commands = sway_commands(world, n_control + WARMUP_STEPS)
    for joints, grippers in commands[:WARMUP_STEPS]:
        keep_episode_open(world)
        world.step(joints, grippers)
        world.observe()
    times = []
    t_start = time.perf_counter()
    for joints, grippers in commands[WARMUP_STEPS:]:
        keep_episode_open(world)
        t0 = time.perf_counter()
        world.step(joints, grippers)
        world.observe()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        if t1 - t_start > budget_s and len(times) >= MIN_BASELINE_STEPS:
            break
    wall = time.perf_counter() - t_start
    n = len(times)
    return {
        "steps": n,
        "sim_s": n * world.control_dt_s,
        "wall_s": wall,
        "rtf": n * world.control_dt_s / wall,
        "step_median_ms": float(np.median(times) * 1e3),
        "step_p95_ms": float(np.percentile(times, 95) * 1e3),
    }


def bench_render(world: EmbeddedWorld, samples: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per image kind and camera: median/p95 ms. Cameras are interleaved, as observe() renders them."""
    cams = []
    for cam in world.robot.cameras:
        renderer = world._renderer(cam.width, cam.height)
        cams.append((cam.name, renderer, world.camera_ids[cam.name]))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for kind in ("rgb", "depth", "segmentation"):
        times: dict[str, list[float]] = {name: [] for name, _, _ in cams}
        calls: list[tuple[str, Callable, int]] = [(name, getattr(r, kind), cid) for name, r, cid in cams]
        for i in range(WARMUP_IMAGES + samples):
            for name, fn, cid in calls:
                t0 = time.perf_counter()
                fn(world.data, cid)
                dt = time.perf_counter() - t0
                if i >= WARMUP_IMAGES:
                    times[name].append(dt)
        out[kind] = {name: stats_ms(ts) for name, ts in times.items()}
    return out


# -- report --------------------------------------------------------------------------------------------------
def render_desc(r: RenderSettings) -> str:
    onoff = {True: "on", False: "off"}
    return (
        f"MSAA {r.msaa_samples} samples, shadows {onoff[r.shadows]}, reflections {onoff[r.reflections]}, "
        f"skybox {onoff[r.skybox]}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per loop (default 10)")
    parser.add_argument("--task", default="general_pickup")
    parser.add_argument("--robot", default="dual_arx_x5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=100, help="render samples per camera and image kind")
    parser.add_argument(
        "--baseline-budget", type=float, default=25.0, help="wall seconds the slow baseline loop may take (default 25)"
    )
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.samples, args.baseline_budget = SMOKE_SIZES

    t_all = time.perf_counter()
    backend = select_gl_backend()
    settings: SimSettings = load_sim_settings()
    world = EmbeddedWorld(args.robot, settings=settings)
    world.reset(args.task, seed=args.seed)  # also renders every camera once: creates the GL context
    gl_string = gl_renderer_string()
    n_control = max(1, round(args.seconds / world.control_dt_s))
    sim_s = n_control * world.control_dt_s
    m = world.model
    cams = ", ".join(f"{c.name} {c.width}x{c.height}" for c in world.robot.cameras)

    print(f"robodojo sim benchmark: task {args.task} (seed {args.seed}), robot {args.robot}, {sim_s:g} s simulated")
    print(f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(
        f"  mujoco   : {mujoco.__version__}; timestep {settings.timestep_s * 1e3:g} ms, "
        f"{world.substeps} substeps per {world.control_dt_s * 1e3:g} ms control step, "
        f"{settings.integrator}, {settings.cone} cones, "
        f"{settings.iterations} iterations; nbody {m.nbody}, ngeom {m.ngeom}, nv {m.nv}"
    )
    print(f"  GL       : {backend} ({gl_string})")
    print(f"  render   : {render_desc(settings.render)}")
    print(f"  cameras  : {cams}")
    print(flush=True)

    world.reset(args.task, seed=args.seed)
    physics = bench_physics(world, n_control)
    world.reset(args.task, seed=args.seed)
    control = bench_control(world, n_control)
    world.reset(args.task, seed=args.seed)
    full = bench_full_loop(world, n_control)
    render = bench_render(world, args.samples)
    world.close()

    base_settings = dataclasses.replace(settings, render=RenderSettings(msaa_samples=4, shadows=True))
    base_world = EmbeddedWorld(args.robot, settings=base_settings)
    base_world.reset(args.task, seed=args.seed)
    baseline = bench_full_loop(base_world, n_control, budget_s=args.baseline_budget)
    base_world.close()
    ratio = full["rtf"] / baseline["rtf"]

    n_cams = len(world.robot.cameras)
    rows = [
        (
            "physics alone (mj_step)",
            f"{physics['steps_per_s']:,.0f} steps/s",
            f"{physics['rtf']:.2f}x",
            "",
            "",
            f"{physics['steps']} steps",
        ),
        (
            "control loop (world.step)",
            f"{control['calls_per_s']:,.1f} calls/s",
            f"{control['rtf']:.2f}x",
            "",
            "",
            f"{control['calls']} calls",
        ),
        (
            f"full loop (step + observe {n_cams} cams)",
            f"{full['steps'] / full['wall_s']:,.1f} steps/s",
            f"{full['rtf']:.2f}x",
            f"{full['step_median_ms']:.1f}",
            f"{full['step_p95_ms']:.1f}",
            f"{full['steps']} steps; RTF >= {RTF_TARGET}: {mark(full['rtf'] >= RTF_TARGET)}",
        ),
        (
            "baseline full loop (MSAA 4, shadows)",
            f"{baseline['steps'] / baseline['wall_s']:,.1f} steps/s",
            f"{baseline['rtf']:.2f}x",
            f"{baseline['step_median_ms']:.1f}",
            f"{baseline['step_p95_ms']:.1f}",
            f"{baseline['steps']} steps ({baseline['sim_s']:g} s simulated)",
        ),
    ]
    header = ("loop", "rate", "RTF", "median ms", "p95 ms", "notes")
    table(header, rows, "<>>>><")
    print(f"fast / baseline full-loop RTF: {ratio:.1f}x")
    print()

    kinds = ("rgb", "depth", "segmentation")
    rheader = ("camera", *(f"{k} {s}" for k in kinds for s in ("median", "p95")))
    rrows = [
        (name, *(f"{render[k][name][s]:.2f}" for k in kinds for s in ("median_ms", "p95_ms"))) for name in render["rgb"]
    ]
    print(f"render time per image [ms], {args.samples} samples per cell after {WARMUP_IMAGES} warm-up")
    table(rheader, rrows, "<" + ">" * (len(rheader) - 1))
    worst_rgb = max(s["median_ms"] for s in render["rgb"].values())
    rgb_ok = worst_rgb < RGB_TARGET_MS
    print(f"RGB median < {RGB_TARGET_MS:g} ms on every camera: {mark(rgb_ok)} (worst {worst_rgb:.2f} ms)")
    total = time.perf_counter() - t_all
    print(f"\nbenchmark wall time {total:.1f} s")

    if args.json is not None:
        figures = {
            "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            "mujoco": mujoco.__version__,
            "gl_backend": backend,
            "gl_renderer": gl_string,
            "task": args.task,
            "robot": args.robot,
            "seed": args.seed,
            "simulated_s": sim_s,
            "render_settings": dataclasses.asdict(settings.render),
            "baseline_render_settings": dataclasses.asdict(base_settings.render),
            "physics": physics,
            "control_loop": control,
            "full_loop": full,
            "baseline_full_loop": baseline,
            "fast_over_baseline_rtf": ratio,
            "render_ms": render,
            "targets": {
                "full_loop_rtf_min": RTF_TARGET,
                "full_loop_rtf_ok": full["rtf"] >= RTF_TARGET,
                "rgb_median_ms_max": RGB_TARGET_MS,
                "rgb_ok": rgb_ok,
            },
            "benchmark_wall_s": total,
        }
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
