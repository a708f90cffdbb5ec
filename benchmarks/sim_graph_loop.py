"""The simulator node's real-time loop with cameras: rendered by a worker thread against the old serial design.

sim_node runs one loop thread (``robodojo.sim.sim_loop.SimLoop`` on a ``ControlledWorld``): a 25 Hz control step
(physics in ``joint_state_slices`` slices), then, at ``camera_rate_hz``, every subscribed camera's image. This script
runs that loop, the library's own, without ROS, in one process, with the node's rates (config/nodes.yaml) and the arms
swaying under their trajectory controllers, and its outputs doing what the node does apart from building and publishing
messages (the joint state after every slice, the TCP poses and the episode state after every step). The cameras two
ways:

- ``serial`` (the old design, the baseline): the loop renders every camera itself (``world.render``) and converts the
  image to bytes as a sensor_msgs/Image would, so a slow render stretches the control period;
- ``worker`` (the design now in sim_node): the loop captures the cameras' scenes (``RenderWorker.capture``) and a
  worker thread with its own GL context renders and converts them; captures it cannot keep up with are dropped.

Each design runs twice: unpaced (the loop's real-time factor target set so high that its pacer never sleeps: the
achievable real-time factor of the control loop) and paced at real time as the node paces itself (``Pacer``: sleep until
the step's wall time; more than 5 steps late, the loop restarts its clock rather than catching up). A run starts after
the loop's first step (each period then is a step and a wait). Reported: control-loop RTF, control period p50/p95/max,
images per second per camera, image age (capture -> image ready to publish) p50/p95, captures dropped, and
worker/serial ratios (measured in the same process, so they say more than the absolute figures on a shared machine).

Emulating a slower machine (issue 18's: 17k physics steps/s where this machine does ~38k). As root on a machine with
the cgroup v1 cpu controller, run the benchmark in a CPU-limited cgroup, then remove it::

    mkdir /sys/fs/cgroup/cpu/slow
    echo 10000 > /sys/fs/cgroup/cpu/slow/cpu.cfs_period_us   # a short period: CFS throttling is bursty
    echo 6600 > /sys/fs/cgroup/cpu/slow/cpu.cfs_quota_us     # 0.66 CPU: 6.6 ms of CPU time per 10 ms; see below
    bash -c 'echo $$ > /sys/fs/cgroup/cpu/slow/cgroup.procs; exec .venv/bin/python benchmarks/sim_graph_loop.py'
    rmdir /sys/fs/cgroup/cpu/slow                            # empty again once the benchmark has exited

The quota caps the group's total CPU time per period, not each core's speed, so it cannot slow single-threaded physics
and llvmpipe's threads alike. Calibrate it on the "physics alone" line printed first and on the serial loop's RTF: on
the README's 2-core machine (shared, load ~3) 8800 gave physics 31,000 steps/s, RGB 12 ms and the serial loop at
0.84-1.10x; 6600 gave 20,000 steps/s and 0.78-0.84x; 4400 gave 10,000-15,000 steps/s and 0.46-0.58x (issue 18's
machine: 17,000 steps/s, RGB 12-13 ms, 1.02x). Nothing else, and no test, depends on cgroups.

Run: ``.venv/bin/python benchmarks/sim_graph_loop.py [--seconds 10] [--task general_pickup] [--smoke]
[--json out.json]``; ``--smoke`` runs every part at its smallest (1 simulated second per run, a 1 s physics line,
0.25 s GIL probes; the test suite runs it).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from _common import cpu_model, nproc, table, write_figures
from sim import Command, bench_physics, keep_episode_open, sway_commands

from robodojo.control.trajectory_controller import TrajectoryReport
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.nodes import topics
from robodojo.nodes.parameters import node_defaults
from robodojo.sim.controlled_world import ARM, ControlledWorld, StepProblem
from robodojo.sim.render import select_gl_backend
from robodojo.sim.render_worker import RenderedFrame, RenderWorker, camera_shots
from robodojo.sim.sim_loop import RealTimeFactor, SimLoop, SimRates
from robodojo.sim.world import EmbeddedWorld

PHYSICS_S = 4.0  # simulated seconds of the physics-alone line (for calibrating the slow-machine emulation)
GIL_PROBE_S = 1.0  # wall seconds of each GIL measurement
SMOKE_SIZES = (1.0, 1.0, 0.25)  # --smoke: simulated seconds per run, of the physics-alone line, GIL probe seconds
UNPACED_RTF = 1e6  # the loop's real-time factor target when unpaced: its pacer never sleeps
WARMUP_TIMEOUT_S = 30.0  # the render worker's first images (GL context, model upload)
RUN_TIMEOUT_S = 60.0  # a run's wall time allowed beyond RUN_TIMEOUT_PER_STEP_S per control step
RUN_TIMEOUT_PER_STEP_S = 1.0  # 25x a control period: a loop slower than that is broken, not slow


@dataclass
class LoopRun:
    """What one run of the loop measured."""

    design: str
    paced: bool
    steps: int = 0
    sim_s: float = 0.0
    wall_s: float = 0.0
    periods_s: list[float] = field(default_factory=list)
    ages_s: list[float] = field(default_factory=list)
    images: dict[str, int] = field(default_factory=dict)
    captures: int = 0
    dropped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def image(self, camera: str, age_s: float) -> None:
        with self.lock:
            self.images[camera] = self.images.get(camera, 0) + 1
            self.ages_s.append(age_s)

    def figures(self) -> dict[str, object]:
        periods = np.asarray(self.periods_s) * 1e3
        ages = np.asarray(self.ages_s) * 1e3
        return {
            "design": self.design,
            "paced": self.paced,
            "steps": self.steps,
            "sim_s": self.sim_s,
            "wall_s": self.wall_s,
            "rtf": self.sim_s / self.wall_s,
            "period_p50_ms": float(np.median(periods)),
            "period_p95_ms": float(np.percentile(periods, 95)),
            "period_max_ms": float(periods.max()),
            "images_per_s": {c: n / self.wall_s for c, n in sorted(self.images.items())},
            "image_age_p50_ms": float(np.median(ages)) if ages.size else float("nan"),
            "image_age_p95_ms": float(np.percentile(ages, 95)) if ages.size else float("nan"),
            "captures": self.captures,
            "dropped": self.dropped,
        }


def gil_probe(world: EmbeddedWorld, seconds: float) -> dict[str, float]:
    """How much a pure-Python counter thread progresses while this thread runs each call in a loop, as a fraction
    of its progress alone. Near 1: the call releases the GIL (what is lost is CPU shared with llvmpipe's threads); a
    C call that holds the GIL is the reference for one that does not release it."""
    cam = world.robot.cameras[0]
    renderer = world._renderer(cam.width, cam.height)
    cid = world.camera_ids[cam.name]
    renderer.rgb(world.data, cid)
    scene = renderer._scene
    assert scene is not None
    calls = {
        "mjr_render + mjr_readPixels": lambda: renderer.rgb_of_scene(scene),
        "mj_step": lambda: mujoco.mj_step(world.model, world.data),
        "sum(range(10**6)) (a C call that holds the GIL)": lambda: sum(range(10**6)),
    }

    def count(seconds: float, busy: Callable[[], object] | None) -> int:
        counter, stop = [0], threading.Event()

        def run() -> None:
            while not stop.is_set():
                counter[0] += 1

        thread = threading.Thread(target=run)
        thread.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if busy is not None:
                busy()
            else:
                time.sleep(0.01)
        stop.set()
        thread.join()
        return counter[0]

    alone = count(seconds, None)
    return {name: count(seconds, fn) / alone for name, fn in calls.items()}


def publish_bytes(rgb: np.ndarray) -> bytes:
    """What sim_node does to an image before publishing it (convert.image_msg's copy), without rclpy."""
    return np.ascontiguousarray(rgb).tobytes()


class LoopOutputs:
    """The outputs of one run of the node's loop (:class:`robodojo.sim.sim_loop.SimOutputs`, called in the loop
    thread): what sim_node computes before it builds its messages (the joint state after every slice, the TCP poses
    and the episode state after every step), the cameras of one design, the sway handed to the arms' controllers
    (the grippers hold), and the run's figures, until as many control steps as the sway has points have run."""

    def __init__(self, run: LoopRun, commands: list[Command], *, slices: int) -> None:
        self.run, self.commands, self.slices = run, commands, slices
        self.sim: ControlledWorld | None = None
        self.worker: RenderWorker | None = None
        self.done = threading.Event()
        self.errors: list[str] = []
        self.problems: list[str] = []
        self._next_command = 0
        self._wall0 = self._last = self._sim0 = math.nan  # set by the first control step

    def build(self, robot: str, task: str, seed: int) -> ControlledWorld:
        """The world and, for the worker design, the render worker, warmed up (in the loop thread, as sim_node's
        setup: the world's GL context is bound to it); the measurement starts as the loop does."""
        sim = self.sim = ControlledWorld(
            robot, task, "standard", seed, topics.controller_names, joint_state_slices=self.slices
        )
        world, names, run = sim.world, sim.robot.camera_names, self.run
        for name in names:  # the serial design's renderer, outside the measurement
            world.render(name)
        if run.design == "worker":

            def on_frame(f: RenderedFrame) -> None:
                publish_bytes(f.frame.rgb)
                run.image(f.frame.name, time.monotonic() - f.captured_s)

            def on_error(exc: BaseException) -> None:
                print(f"render worker: {exc!r}", file=sys.stderr)

            self.worker = RenderWorker(world.settings.render, on_frame, on_error, name="bench_render")
            # warm up: the worker's GL context and model upload, outside the measurement
            self.worker.capture(world.model, world.data, 0.0, camera_shots(world, names))
            deadline = time.monotonic() + WARMUP_TIMEOUT_S
            while self.worker.stats.images < len(names) and time.monotonic() < deadline:
                time.sleep(0.01)
            with run.lock:
                run.images.clear()
                run.ages_s.clear()
        self._submit_sway()
        return sim

    def _submit_sway(self) -> None:
        """The next chunk of the sway (at most a trajectory's worth of points) to each arm's controller."""
        assert self.sim is not None
        sim, k0 = self.sim, self._next_command
        chunk = self.commands[k0 : k0 + sim.trajectory_limits.max_points(sim.control_dt_s)]
        if not chunk:
            return
        times = tuple((k + 1) * sim.control_dt_s for k in range(len(chunk)))
        for arm in sim.robot.arms:
            points = tuple(tuple(float(v) for v in joints[arm.name]) for joints, _ in chunk)
            sim.submit(arm.name, ARM, TrajectoryCommand(arm.joints, times, points))
        self._next_command = k0 + len(chunk)

    # -- SimOutputs ---------------------------------------------------------------------------------------------
    def joint_state(self) -> None:
        assert self.sim is not None
        self.sim.joint_state()

    def control_step(self, t_s: float, reports: list[TrajectoryReport], status_due: bool) -> None:
        sim, run = self.sim, self.run
        assert sim is not None
        if self.done.is_set():
            return
        for arm in sim.robot.arm_names:
            sim.world.arm_state(arm)
        sim.episode_state()
        keep_episode_open(sim.world)
        if not any(sim.controller(arm, ARM).playing for arm in sim.robot.arm_names):
            self._submit_sway()  # the last chunk ended: the next one
        now = time.monotonic()
        if math.isnan(self._wall0):  # the run starts after the first step: each period it measures is a wait and a
            self._wall0 = self._last = now  # step, whatever the loop did before its first step
            self._sim0 = t_s
            return
        run.periods_s.append(now - self._last)
        self._last = now
        run.steps += 1
        if run.steps >= len(self.commands):
            run.wall_s, run.sim_s = now - self._wall0, t_s - self._sim0
            self.done.set()

    def cameras(self, t_s: float) -> None:
        sim, run = self.sim, self.run
        assert sim is not None
        if self.done.is_set():
            return
        names = sim.robot.camera_names
        if self.worker is not None:
            self.worker.capture(sim.world.model, sim.world.data, t_s, camera_shots(sim.world, names))
        else:
            captured = time.monotonic()
            for name in names:
                publish_bytes(sim.world.render(name).rgb)
                run.image(name, time.monotonic() - captured)

    def real_time_factor(self, rtf: RealTimeFactor) -> None:
        """The run's real-time factor is measured over the whole run instead."""

    def step_problem(self, problem: StepProblem) -> None:
        self.problems.append(problem.text)

    def loop_error(self, text: str) -> bool:
        self.errors.append(text)
        self.done.set()
        return False  # a benchmark of a failing loop measures nothing: the loop ends


def run_loop(args: argparse.Namespace, design: str, commands: list[Command], *, paced: bool, camera_rate_hz: float,
             status_rate_hz: float, slices: int) -> LoopRun:  # fmt: skip
    """One run of the node's loop (:class:`SimLoop` on a :class:`ControlledWorld` of ``args``' robot, task and seed)
    for as many control steps as ``commands`` (the sway: each arm's joints at each step); ``design`` is 'serial' or
    'worker'."""
    run = LoopRun(design, paced)
    outputs = LoopOutputs(run, commands, slices=slices)
    rates = SimRates(1.0 if paced else UNPACED_RTF, camera_rate_hz, status_rate_hz)
    loop = SimLoop(lambda: outputs.build(args.robot, args.task, args.seed), outputs, rates)
    try:
        finished = outputs.done.wait(RUN_TIMEOUT_S + RUN_TIMEOUT_PER_STEP_S * len(commands))
    finally:
        stopped = loop.close()
        worker, sim = outputs.worker, outputs.sim
        if worker is not None:
            with run.lock:  # images still being rendered after the last step are not counted
                images, ages = dict(run.images), list(run.ages_s)
            stats = worker.stats
            worker.close()
            run.images, run.ages_s = images, ages
            run.captures, run.dropped = stats.captured - 1, stats.dropped  # the warm-up capture aside
        elif sim is not None:
            run.captures = sum(run.images.values()) // max(len(sim.robot.camera_names), 1)
        if sim is not None and stopped:
            sim.close()
    if outputs.errors:
        raise SystemExit(f"the loop failed ({design}, {'paced' if paced else 'unpaced'}):\n{outputs.errors[0]}")
    if not finished:
        raise SystemExit(f"the loop ({design}) did not run {len(commands)} steps within the time allowed")
    for problem in sorted(set(outputs.problems)):
        print(f"  {design}: {problem}", file=sys.stderr)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per run (default 10)")
    parser.add_argument("--task", default="general_pickup")
    parser.add_argument("--robot", default="dual_arx_x5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    physics_s, gil_probe_s = PHYSICS_S, GIL_PROBE_S
    if args.smoke:
        args.seconds, physics_s, gil_probe_s = SMOKE_SIZES

    node = node_defaults("sim_node")  # the node's rates, as launched
    camera_rate_hz, slices = float(node["camera_rate_hz"]), int(node["joint_state_slices"])
    status_rate_hz = float(node["status_rate_hz"])
    backend = select_gl_backend()
    world = EmbeddedWorld(args.robot)
    world.reset(args.task, seed=args.seed)
    cams = ", ".join(f"{c.name} {c.width}x{c.height}" for c in world.robot.cameras)
    smoke = " (smoke: every part at its smallest)" if args.smoke else ""
    print(f"robodojo graph-loop benchmark{smoke}: task {args.task} (seed {args.seed}), robot {args.robot}")
    print(f"  machine : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}; GL {backend}")
    print(f"  mujoco  : {mujoco.__version__}; control {world.control_dt_s * 1e3:g} ms in {slices} slices")
    print(f"  cameras : {cams} at {camera_rate_hz:g} Hz, all subscribed")
    physics = bench_physics(world, max(1, round(physics_s / world.control_dt_s)))
    print(f"  physics alone: {physics['steps_per_s']:,.0f} steps/s (RTF {physics['rtf']:.1f})", flush=True)
    gil = gil_probe(world, gil_probe_s)
    print(
        "  GIL: a pure-Python counter thread keeps "
        + ", ".join(f"{v:.0%} of its speed beside {k}" for k, v in gil.items())
    )

    commands = sway_commands(world, max(1, round(args.seconds / world.control_dt_s)))
    world.close()

    runs: dict[tuple[str, bool], dict[str, object]] = {}
    for paced in (False, True):
        for design in ("serial", "worker"):
            run = run_loop(args, design, commands, paced=paced, camera_rate_hz=camera_rate_hz,
                           status_rate_hz=status_rate_hz, slices=slices)  # fmt: skip
            runs[design, paced] = run.figures()

    print()
    header = ("design", "pacing", "RTF", "period p50", "p95", "max ms", "img/s per camera", "age p50", "p95 ms",
              "dropped")  # fmt: skip
    rows = []
    for (design, paced), f in runs.items():
        per_cam = f["images_per_s"]
        assert isinstance(per_cam, dict)
        rows.append(
            (
                design,
                "real time" if paced else "unpaced",
                f"{f['rtf']:.2f}",
                f"{f['period_p50_ms']:.1f}",
                f"{f['period_p95_ms']:.1f}",
                f"{f['period_max_ms']:.1f}",
                " ".join(f"{v:.1f}" for v in per_cam.values()),
                f"{f['image_age_p50_ms']:.0f}",
                f"{f['image_age_p95_ms']:.0f}",
                f"{f['dropped']}/{f['captures']}",
            )
        )
    table(header, rows, "<<>>>>>>><")
    ratios = {
        "unpaced_rtf_worker_over_serial": float(runs["worker", False]["rtf"]) / float(runs["serial", False]["rtf"]),
        "paced_p95_period_worker_over_serial": float(runs["worker", True]["period_p95_ms"])
        / float(runs["serial", True]["period_p95_ms"]),
        "paced_images_per_s_worker_over_serial": _mean_rate(runs["worker", True]) / _mean_rate(runs["serial", True]),
    }
    print(
        f"worker / serial (same process): unpaced RTF {ratios['unpaced_rtf_worker_over_serial']:.2f}x, paced period "
        f"p95 {ratios['paced_p95_period_worker_over_serial']:.2f}x, "
        f"paced images/s {ratios['paced_images_per_s_worker_over_serial']:.2f}x"
    )
    if args.json is not None:
        write_figures(
            args.json,
            {
                "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
                "mujoco": mujoco.__version__,
                "gl_backend": backend,
                "task": args.task,
                "physics": physics,
                "gil_counter_progress": gil,
                "camera_rate_hz": camera_rate_hz,
                "runs": [dict(f) for f in runs.values()],
                "ratios": ratios,
            },
        )
    return 0


def _mean_rate(figures: dict[str, object]) -> float:
    per_cam = figures["images_per_s"]
    assert isinstance(per_cam, dict)
    return float(np.mean(list(per_cam.values()))) if per_cam else float("nan")


if __name__ == "__main__":
    sys.exit(main())
