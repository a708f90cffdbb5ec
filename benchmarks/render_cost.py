"""Where the embedded world's camera rendering time goes on this machine, and what changes to the scene cost.

What is measured, with ``time.perf_counter`` on the task scene (``--task``, ``--variant``; default the heaviest,
``sort_into_bowls`` cluttered), median / p95 over ``--samples`` images after a warm-up. Per-image figures are for
the head camera (it sees the whole table) and the left wrist camera, both 640x480 RGB as the robot config sets them.
Every table's first row is its baseline, measured again in the same run, and the ratio column is median / that
baseline's median, so a drifting machine load moves both together.

1. Split of one RGB image: ``mjv_updateScene``, ``mjr_render``, ``mjr_readPixels``, ``np.flipud(...).copy()``,
   timed as ``CameraRenderer.rgb`` does them. llvmpipe queues GL commands, so a ``glFinish`` after ``mjr_render``
   puts the rasterisation in the render row (otherwise readPixels would absorb it); the total without that
   ``glFinish`` (``CameraRenderer.rgb`` itself) is printed too, and ``mjr_render`` of the scene emptied of geoms
   (the fixed cost of a frame: clear, lights, framebuffer).
2. llvmpipe threads: the RGB time with ``LP_NUM_THREADS`` 1, 2 and unset. Mesa reads it when GL initialises, so
   each setting runs in a child process (this script with a hidden flag) on the GL backend the parent chose.
3. Geometry: extra visual-only 2 cm boxes on the table in front of the head camera (0, 50, 200, 800, added through
   ``EmbeddedWorld(scene_extras=...)``), and the arms' visual geoms hidden (moved to geom group 5, which the
   default ``mjvOption`` does not draw); a least-squares slope gives the cost per extra geom.
4. Texture: the table's wood-grain texture vs ``table_texture: plain``.
5. Lights and shadows: 0, 2 (nominal) and 4 scene lights (the headlight stays on); shadows on with a shadow map of
   512, 1024 and 2048 texels (``spec.visual.quality.shadowsize``, scene flag ``mjRND_SHADOW``), and 1024 with only
   the key light casting; MSAA 0 vs 4 samples (``offsamples``).
6. Resolution: 320x240 and 160x120 from a ``CameraRenderer`` built at that size, rendering the same camera ids.
7. Cameras per control step: the full loop (``world.step()`` with a gentle arm sway, then ``world.observe()`` of 0,
   1, 2 or 3 cameras) as real-time factor (simulated / wall seconds; target >= 1.5 with all three).
8. GL backend: EGL vs OSMesa, each in a child process (``MUJOCO_GL``), where both can create a context.

Run: ``.venv/bin/python benchmarks/render_cost.py [--task sort_into_bowls] [--variant cluttered] [--samples 60]
[--smoke] [--json out.json]``. About 3-4 minutes with the defaults on a 2-core machine; ``--smoke`` runs every part at
its smallest (general_pickup standard, 2 images per cell after 1 warm-up, 2 control steps per full-loop row; the test
suite runs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import mujoco
import numpy as np
from _common import cpu_model, gl_renderer_string, nproc, table, write_figures
from sim import keep_episode_open, stats_ms, sway_commands

from robodojo.robots.mujoco_model import VISUAL_GROUP
from robodojo.sim.render import GL_BACKENDS, CameraRenderer, select_gl_backend
from robodojo.sim.settings import SimSettings, load_sim_settings
from robodojo.sim.world import EmbeddedWorld

RGB_TARGET_MS = 15.0
RTF_TARGET = 1.5
WARMUP_IMAGES = 5
WARMUP_STEPS = 3
CAMERAS = ("head", "left_wrist")
EXTRA_GEOMS = (0, 50, 200, 800)
EXTRA_BOX_HALF_M = 0.01
EXTRA_AREA_XY_M = ((-0.35, 0.35), (-0.40, 0.10))  # in front of the head camera, inside the table
HIDDEN_GROUP = 5  # not drawn by the default mjvOption (groups 0-2 are)
SHADOW_SIZES = (512, 1024, 2048)
LP_THREADS = ("1", "2", None)
CHILD_MARK = "RENDER_COST_CHILD "
CHILD_TIMEOUT_S = 180.0
SMOKE_SIZES = (2, 1, 2)  # --smoke: images per camera and setting, warm-up images, control steps per full-loop row
SMOKE_SCENE = ("general_pickup", "standard")  # --smoke: task, variant (a light scene: many worlds are built)

Extra = Callable[[mujoco.MjSpec], None]


# -- scene edits (scene_extras) ------------------------------------------------------------------------------
def extra_boxes(n: int, top_z_m: float) -> Extra:
    """``n`` small visual-only boxes in a grid on the table top."""

    def edit(spec: mujoco.MjSpec) -> None:
        if n == 0:
            return
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
        (x0, x1), (y0, y1) = EXTRA_AREA_XY_M
        for k in range(n):
            i, j = divmod(k, cols)
            x = x0 + (x1 - x0) * (j + 0.5) / cols
            y = y0 + (y1 - y0) * (i + 0.5) / rows
            spec.worldbody.add_geom(
                name=f"bench_box_{k}",
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=[EXTRA_BOX_HALF_M] * 3,
                pos=[x, y, top_z_m + EXTRA_BOX_HALF_M],
                rgba=[0.2 + 0.6 * (k % 3) / 2, 0.5, 0.8 - 0.6 * (k % 3) / 2, 1.0],
                contype=0,
                conaffinity=0,
                group=0,
            )

    return edit


def hide_arms(prefixes: Sequence[str]) -> Extra:
    """Move the arms' visual geoms to a geom group the renderer does not draw."""

    def edit(spec: mujoco.MjSpec) -> None:
        for geom in spec.geoms:
            if geom.group == VISUAL_GROUP and geom.parent.name.startswith(tuple(prefixes)):
                geom.group = HIDDEN_GROUP

    return edit


def set_lights(n: int) -> Extra:
    """Keep the first ``n`` of the nominal lights (2), or add copies turned about z to reach ``n``."""

    def edit(spec: mujoco.MjSpec) -> None:
        lights = list(spec.lights)
        for light in lights[n:]:
            spec.delete(light)
        for k in range(len(lights), n):
            src = lights[k % len(lights)]
            spec.worldbody.add_light(
                name=f"bench_light_{k}",
                pos=[-src.pos[0], -src.pos[1] - 0.3, src.pos[2]],
                dir=[-src.dir[0], -src.dir[1], src.dir[2]],
                diffuse=list(src.diffuse),
            )

    return edit


def set_shadows(size: int, casters: int | None = None) -> Extra:
    """Shadow map size; with ``casters`` only that many lights cast shadows."""

    def edit(spec: mujoco.MjSpec) -> None:
        spec.visual.quality.shadowsize = size
        if casters is not None:
            for k, light in enumerate(spec.lights):
                light.castshadow = k < casters

    return edit


# -- measurements --------------------------------------------------------------------------------------------
def make_world(args: argparse.Namespace, settings: SimSettings, extras: Sequence[Extra] = ()) -> EmbeddedWorld:
    world = EmbeddedWorld(args.robot, settings=settings, scene_extras=extras)
    world.reset(args.task, seed=args.seed, variant=args.variant)
    return world


def time_rgb(
    renderers: dict[str, tuple[CameraRenderer, int]], data: mujoco.MjData, samples: int, warmup: int = WARMUP_IMAGES
) -> dict[str, dict[str, float]]:
    """Median / p95 ms of ``CameraRenderer.rgb`` per camera, cameras interleaved as observe() renders them."""
    times: dict[str, list[float]] = {name: [] for name in renderers}
    for i in range(warmup + samples):
        for name, (renderer, cid) in renderers.items():
            t0 = time.perf_counter()
            renderer.rgb(data, cid)
            dt = time.perf_counter() - t0
            if i >= warmup:
                times[name].append(dt)
    return {name: stats_ms(ts) for name, ts in times.items()}


def world_renderers(world: EmbeddedWorld, cameras: Sequence[str]) -> dict[str, tuple[CameraRenderer, int]]:
    out = {}
    for name in cameras:
        cam = world.robot.camera(name)
        out[name] = (world._renderer(cam.width, cam.height), world.camera_ids[name])
    return out


def measure(
    args: argparse.Namespace, settings: SimSettings, extras: Sequence[Extra] = (), cameras: Sequence[str] = CAMERAS
) -> dict:
    """RGB time per camera in a fresh world with these settings and scene edits; also the scene's geom count."""
    world = make_world(args, settings, extras)
    try:
        renderers = world_renderers(world, cameras)
        figures = time_rgb(renderers, world.data, args.samples, args.warmup)
        first = next(iter(renderers.values()))[0]
        assert first._scene is not None
        return {"cams": figures, "scene_ngeom": first._scene.ngeom, "model_ngeom": world.model.ngeom}
    finally:
        world.close()


def measure_split(
    world: EmbeddedWorld, cameras: Sequence[str], samples: int, warmup: int = WARMUP_IMAGES
) -> dict[str, dict[str, dict]]:
    """Per camera: each stage of CameraRenderer.rgb timed on its own (glFinish after mjr_render), and the total."""
    from OpenGL import GL

    out: dict[str, dict[str, dict]] = {}
    for name in cameras:
        cam = world.robot.camera(name)
        renderer = world._renderer(cam.width, cam.height)
        cid = world.camera_ids[name]
        m, d = world.model, world.data
        scene, context, option, camera = renderer._scene, renderer._context, renderer._option, renderer._camera
        rect, rgb = renderer._rect, renderer._rgb
        stages: dict[str, list[float]] = {k: [] for k in ("updateScene", "render", "readPixels", "flip", "sum")}
        totals: list[float] = []
        empty: list[float] = []  # mjr_render of a scene with no geoms: the fixed cost of a frame
        for i in range(warmup + samples):
            renderer._gl.make_current()
            camera.fixedcamid = cid
            t0 = time.perf_counter()
            mujoco.mjv_updateScene(m, d, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene)
            t1 = time.perf_counter()
            mujoco.mjr_render(rect, scene, context)
            GL.glFinish()
            t2 = time.perf_counter()
            mujoco.mjr_readPixels(rgb, None, rect, context)
            t3 = time.perf_counter()
            np.flipud(rgb).copy()
            t4 = time.perf_counter()
            renderer.rgb(d, cid)
            t5 = time.perf_counter()
            mujoco.mjv_updateScene(m, d, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, scene)
            scene.ngeom = 0
            t6 = time.perf_counter()
            mujoco.mjr_render(rect, scene, context)
            GL.glFinish()
            t7 = time.perf_counter()
            if i >= warmup:
                for key, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
                    stages[key].append(dt)
                totals.append(t5 - t4)
                empty.append(t7 - t6)
        out[name] = {k: stats_ms(v) for k, v in stages.items()}
        out[name]["rgb_total"] = stats_ms(totals)
        out[name]["render_empty"] = stats_ms(empty)
    return out


def measure_resolution(args: argparse.Namespace, settings: SimSettings) -> dict[str, dict]:
    world = make_world(args, settings)
    out: dict[str, dict] = {}
    try:
        native = world.robot.camera(CAMERAS[0])
        renderers = world_renderers(world, CAMERAS)
        out[f"{native.width}x{native.height}"] = time_rgb(renderers, world.data, args.samples, args.warmup)
        for w, h in ((320, 240), (160, 120)):
            renderer = CameraRenderer(w, h, settings.render)
            renderer.bind(world.model)
            try:
                renderers = {name: (renderer, world.camera_ids[name]) for name in CAMERAS}
                out[f"{w}x{h}"] = time_rgb(renderers, world.data, args.samples, args.warmup)
            finally:
                renderer.close()
    finally:
        world.close()
    return out


def measure_cameras_per_step(args: argparse.Namespace, settings: SimSettings) -> dict[str, dict]:
    world = make_world(args, settings)
    names = world.robot.camera_names
    out: dict[str, dict] = {}
    try:
        for k in range(len(names) + 1):
            world.reset(args.task, seed=args.seed, variant=args.variant)
            cams = names[:k]
            commands = sway_commands(world, args.steps + WARMUP_STEPS)
            times = []
            for i, (joints, grippers) in enumerate(commands):
                keep_episode_open(world)
                t0 = time.perf_counter()
                world.step(joints, grippers)
                world.observe(cams)
                if i >= WARMUP_STEPS:
                    times.append(time.perf_counter() - t0)
            wall = sum(times)
            out[str(k)] = {
                "cameras": list(cams),
                "steps": len(times),
                "rtf": len(times) * world.control_dt_s / wall,
                **stats_ms(times),
            }
    finally:
        world.close()
    return out


# -- child processes (settings that must be in place before GL initialises) ----------------------------------
def child_main(args: argparse.Namespace) -> int:
    settings = load_sim_settings()
    world = make_world(args, settings)
    figures = time_rgb(world_renderers(world, CAMERAS), world.data, args.samples, args.warmup)
    result = {
        "cams": figures,
        "backend": select_gl_backend(),
        "gl": gl_renderer_string(),
        "lp_num_threads": os.environ.get("LP_NUM_THREADS"),
    }
    world.close()
    print(CHILD_MARK + json.dumps(result), flush=True)
    return 0


def run_child(args: argparse.Namespace, backend: str, lp_threads: str | None) -> dict:
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    env.pop("LP_NUM_THREADS", None)
    if lp_threads is not None:
        env["LP_NUM_THREADS"] = lp_threads
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        *("--task", args.task, "--variant", args.variant, "--robot", args.robot),
        *("--seed", str(args.seed), "--samples", str(args.samples), "--warmup", str(args.warmup)),
    ]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S:g} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(CHILD_MARK):
            return json.loads(line[len(CHILD_MARK) :])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail}"}


# -- report --------------------------------------------------------------------------------------------------
def cam_cells(figures: dict[str, dict], base: dict[str, dict] | None) -> tuple[str, ...]:
    cells: list[str] = []
    for name in CAMERAS:
        s = figures[name]
        cells += [f"{s['median_ms']:.2f}", f"{s['p95_ms']:.2f}"]
        if base is not None:
            cells.append(f"{s['median_ms'] / base[name]['median_ms']:.2f}x")
    return tuple(cells)


def cam_header(first: str) -> tuple[str, ...]:
    return (first, *(f"{c} {s}" for c in CAMERAS for s in ("med ms", "p95 ms", "ratio")))


def print_cam_table(title: str, rows: list[tuple[str, dict]], extra_col: tuple[str, list[str]] | None = None) -> None:
    """Rows of (label, {camera: stats}); the first row is the baseline."""
    if title:
        print(title)
    base = rows[0][1]
    header = cam_header("setting")
    body = [(label, *cam_cells(figs, base)) for label, figs in rows]
    if extra_col is not None:
        header = (*header, extra_col[0])
        body = [(*row, cell) for row, cell in zip(body, extra_col[1], strict=True)]
    table(header, body, "<" + ">" * (len(header) - 1))
    print(flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="sort_into_bowls")
    parser.add_argument("--variant", default="cluttered")
    parser.add_argument("--robot", default="dual_arx_x5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=60, help="images per camera and setting (default 60)")
    parser.add_argument("--steps", type=int, default=100, help="control steps per full-loop row (default 100)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP_IMAGES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.samples, args.warmup, args.steps = SMOKE_SIZES
        args.task, args.variant = SMOKE_SCENE
    if args.child:
        return child_main(args)

    t_all = time.perf_counter()
    backend = select_gl_backend()
    settings = load_sim_settings()
    render = settings.render
    world = make_world(args, settings)
    world.render(CAMERAS[0])  # creates the GL context
    gl_string = gl_renderer_string()
    m = world.model
    top_z = world.robot.table.top_z_m
    arm_prefixes = [a.prefix for a in world.robot.arms]
    print(f"robodojo render cost: task {args.task} ({args.variant}, seed {args.seed}), robot {args.robot}")
    print(f"  machine : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(f"  mujoco  : {mujoco.__version__}; ngeom {m.ngeom}, nlight {m.nlight}, ntex {m.ntex}")
    print(f"  GL      : {backend} ({gl_string}); LP_NUM_THREADS={os.environ.get('LP_NUM_THREADS', 'unset')}")
    print(
        f"  render  : MSAA {render.msaa_samples}, shadows {render.shadows}, table {render.table_texture}; "
        f"{args.samples} images per cell after {args.warmup} warm-up; cameras {', '.join(CAMERAS)} 640x480 RGB"
    )
    print(flush=True)
    figures: dict = {
        "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
        "mujoco": mujoco.__version__,
        "gl_backend": backend,
        "gl_renderer": gl_string,
        "task": args.task,
        "variant": args.variant,
        "samples": args.samples,
    }

    # 1. split
    split = measure_split(world, world.robot.camera_names, args.samples, args.warmup)
    world.close()
    figures["split"] = split
    print("1. one RGB image, by stage [ms] (glFinish after mjr_render, so render holds the rasterisation)")
    stages = ("updateScene", "render", "readPixels", "flip", "sum", "rgb_total", "render_empty")
    labels = {
        "updateScene": "mjv_updateScene",
        "render": "mjr_render + glFinish",
        "readPixels": "mjr_readPixels",
        "flip": "np.flipud().copy()",
        "sum": "sum of stages",
        "rgb_total": "CameraRenderer.rgb (no glFinish)",
        "render_empty": "mjr_render + glFinish, 0 geoms",
    }
    header = ("stage", *(f"{c} {s}" for c in split for s in ("med", "p95", "share")))
    rows = []
    for stage in stages:
        cells: list[str] = [labels[stage]]
        for name in split:
            s, total = split[name][stage], split[name]["sum"]["median_ms"]
            share = f"{s['median_ms'] / total:.0%}" if stage not in ("sum", "rgb_total", "render_empty") else ""
            cells += [f"{s['median_ms']:.2f}", f"{s['p95_ms']:.2f}", share]
        rows.append(tuple(cells))
    table(header, rows, "<" + ">" * (len(header) - 1))
    print(flush=True)

    # 2. llvmpipe threads (children)
    threads = {str(n): run_child(args, backend, n) for n in LP_THREADS}
    figures["lp_num_threads"] = threads
    ok = {k: v for k, v in threads.items() if "cams" in v}
    print(f"2. LP_NUM_THREADS (child processes, {backend}); ratio against unset")
    if "None" in ok:
        rows_t = [(f"LP_NUM_THREADS={'unset' if k == 'None' else k}", v["cams"]) for k, v in ok.items()]
        rows_t.sort(key=lambda r: r[0] != "LP_NUM_THREADS=unset")
        print_cam_table("", rows_t)
    for k, v in threads.items():
        if "error" in v:
            print(f"LP_NUM_THREADS={k}: {v['error']}")

    # 3. geometry
    geom_runs = {n: measure(args, settings, [extra_boxes(n, top_z)]) for n in EXTRA_GEOMS}
    arms_hidden = measure(args, settings, [hide_arms(arm_prefixes)])
    figures["extra_geoms"] = {str(n): r for n, r in geom_runs.items()}
    figures["arms_hidden"] = arms_hidden
    rows_g = [(f"+{n} boxes", r["cams"]) for n, r in geom_runs.items()] + [("arms hidden", arms_hidden["cams"])]
    ngeoms = [str(r["scene_ngeom"]) for r in geom_runs.values()] + [str(arms_hidden["scene_ngeom"])]
    print_cam_table("3. geometry: extra 2 cm visual-only boxes on the table; arms' visual geoms hidden", rows_g,
                    ("scene geoms", ngeoms))  # fmt: skip
    slopes = {}
    for name in CAMERAS:
        x = np.array([geom_runs[n]["scene_ngeom"] for n in EXTRA_GEOMS], dtype=float)
        y = np.array([geom_runs[n]["cams"][name]["median_ms"] for n in EXTRA_GEOMS])
        slope = float(np.polyfit(x, y, 1)[0])
        hidden_n = geom_runs[0]["scene_ngeom"] - arms_hidden["scene_ngeom"]
        arm_ms = geom_runs[0]["cams"][name]["median_ms"] - arms_hidden["cams"][name]["median_ms"]
        slopes[name] = {"ms_per_box": slope, "arm_geoms": hidden_n, "arms_ms": arm_ms}
        per_ms = f"{1 / slope:.0f}" if slope > 0 else "n/a"
        print(
            f"  {name}: {slope * 1e3:.2f} us per extra box ({slope * 100:.2f} ms per 100; {per_ms} boxes per ms); "
            f"the arms' {hidden_n} visual geoms cost {arm_ms:.2f} ms ({arm_ms / max(hidden_n, 1) * 1e3:.0f} us each)"
        )
    figures["geom_cost"] = slopes
    print(flush=True)

    # 4. texture
    plain = dataclasses.replace(settings, render=dataclasses.replace(render, table_texture="plain"))
    tex = {"wood_grain": measure(args, settings), "plain": measure(args, plain)}
    figures["texture"] = tex
    print_cam_table("4. table texture", [(f"table {k}", v["cams"]) for k, v in tex.items()])

    # 5. lights, shadows, MSAA
    lights = {n: measure(args, settings, [set_lights(n)]) for n in (2, 0, 4)}
    shadowed = dataclasses.replace(settings, render=dataclasses.replace(render, shadows=True))
    shadows = {"off": measure(args, settings)}
    for size in SHADOW_SIZES:
        shadows[f"{size}"] = measure(args, shadowed, [set_shadows(size)])
    shadows["1024 key only"] = measure(args, shadowed, [set_shadows(1024, casters=1)])
    msaa4 = dataclasses.replace(settings, render=dataclasses.replace(render, msaa_samples=4))
    msaa = {"0": measure(args, settings), "4": measure(args, msaa4)}
    figures["lights"] = {str(k): v for k, v in lights.items()}
    figures["shadows"] = shadows
    figures["msaa"] = msaa
    print_cam_table(
        "5a. scene lights (plus the headlight; 2 is nominal)", [(f"{n} lights", v["cams"]) for n, v in lights.items()]
    )
    print_cam_table(
        "5b. shadows (2 lights casting unless said)",
        [("shadows off" if k == "off" else f"shadows {k}", v["cams"]) for k, v in shadows.items()],
        ("<15 ms", [("yes" if v["cams"][CAMERAS[0]]["median_ms"] < RGB_TARGET_MS else "no") for v in shadows.values()]),
    )
    print_cam_table("5c. MSAA (offsamples)", [(f"MSAA {k}", v["cams"]) for k, v in msaa.items()])

    # 6. resolution
    res = measure_resolution(args, settings)
    figures["resolution"] = res
    print_cam_table("6. resolution (same cameras)", list(res.items()))

    # 7. cameras per control step
    loop = measure_cameras_per_step(args, settings)
    figures["cameras_per_step"] = loop
    print(f"7. full loop: world.step() + observe(k cameras), {args.steps} control steps each")
    base_rtf = loop[str(len(loop) - 1)]["rtf"]
    rows_l = [
        (
            k,
            ", ".join(v["cameras"]) or "(state only)",
            f"{v['rtf']:.2f}",
            f"{v['median_ms']:.1f}",
            f"{v['p95_ms']:.1f}",
            f"{v['rtf'] / base_rtf:.2f}x",
            "yes" if v["rtf"] >= RTF_TARGET else "no",
        )
        for k, v in loop.items()
    ]
    table(
        ("cams", "cameras", "RTF", "step med ms", "step p95 ms", "RTF vs 3 cams", f"RTF>={RTF_TARGET}"),
        rows_l,
        "><>>>>>",
    )
    print(flush=True)

    # 8. GL backend (children)
    backends = {b: run_child(args, b, None) for b in GL_BACKENDS}
    figures["backends"] = backends
    print(f"8. GL backend (child processes, LP_NUM_THREADS unset); ratio against {backend}")
    ok_b = [(b, v["cams"]) for b, v in backends.items() if "cams" in v]
    ok_b.sort(key=lambda r: r[0] != backend)
    if ok_b and ok_b[0][0] == backend:
        print_cam_table("", ok_b, ("GL_RENDERER", [backends[b]["gl"] for b, _ in ok_b]))
    for b, v in backends.items():
        if "error" in v:
            print(f"{b}: {v['error']}")

    total = time.perf_counter() - t_all
    figures["benchmark_wall_s"] = total
    print(f"benchmark wall time {total:.1f} s")
    if args.json is not None:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
