"""Latency and timing of the real ROS 2 graph: camera images across processes, MoveEef overhead, 25 Hz jitter.

The graph runs as it does on a robot: ``sim_node`` (defaults from config/nodes.yaml: general_pickup seed 0, three
cameras at 25 Hz, four /joint_states per 25 Hz step) and ``motion_server_node`` (``use_sim_time:=true``), each in its
own process (``robodojo.nodes.process_graph.NodeProcess``), in a private ROS_DOMAIN_ID (60 + pid % 30) with
localhost discovery. This process holds an rclpy client node spun by a MultiThreadedExecutor in a thread.

What is measured:

1. Cross-process latency of /cameras/head/image_raw (640x480 rgb8, 25 Hz) and, as the small-message baseline in the
   same window, /joint_states (100 Hz), with the robot idle for ``--window`` s. The images are stamped in simulation
   time, so the DDS timestamps are used (subscription callbacks taking ``(msg, info)``, all wall clock, ns):
   ``source_timestamp`` (set by the publisher's DataWriter) to ``received_timestamp`` (the sample reached this
   process's DataReader) is the transport latency; to the moment the Python callback runs (``time.time_ns()``) it
   also includes the executor and deserialisation. Frames: received in the window, expected at 25 Hz of wall time,
   and published by the simulator (from the span of the received header stamps, 40 ms of simulation time apart):
   published - received are transport drops, expected - published are frames the simulator did not make in time.
2. MoveEef goal overhead on the graph against the in-process motion server. One warm-up goal (not counted: the node
   builds its MotionServer at the first goal), then ``--goals`` MOVE_EEF goals cycling through small reachable
   moves about the home pose read from /left/tcp_pose and /right/tcp_pose (left_z 0.95 / 0.88, +/- 4 cm in x or y,
   both arms' z at once). Per goal: wall time from send_goal to the result, the result's duration_s (points played x
   40 ms), overhead = round trip - duration_s (it contains the node's start_lead_s by design, see nodes.yaml). The
   graph runs in real time: a 1 s trajectory takes 1 s. The same targets then go through
   ``MotionServer(EmbeddedWorld(robot))`` in this process (world reset to general_pickup seed 0), which steps the
   simulator as fast as it can: the time of ``server.plan(...)`` alone and of the full ``move_eef`` call.
3. Period of the simulator's 25 Hz control loop: the DDS source timestamps (wall clock at publish in the simulator
   process) of /left/tcp_pose, which the simulator publishes once per control step, right after the step. Periods
   between consecutive messages while goals run, and while idle (part 1): median, p5, p95, max, standard deviation
   (the jitter) and how many exceed 1.5 x 40 ms.

Run: ``.venv/bin/python benchmarks/ros_graph.py [--quick] [--smoke] [--json out.json]``. The default run takes about
60-70 s (10 s image window, 20 goals), ``--quick`` about 35 s (4 s, 6 goals), ``--smoke`` (every part at its smallest: a
1 s window, 2 goals after the warm-up, a shorter settling; the test suite runs it) about 12 s, most of it start-up. The
machine has 2 cores that the simulator (physics and three renders at 25 Hz), the motion server and this client share,
and other engineers may be running graph tests on other domains at the same time: the figures vary with the load printed
in the header.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, version, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.nodes import topics
from robodojo.nodes.process_graph import (
    InterfaceBuildError,
    NodeProcess,
    build_interfaces,
    ros_environment,
    use_interfaces_here,
)

ROBOT = "dual_arx_x5"
TASK = "general_pickup"
CAMERA = "head"
CAMERA_HZ = 25.0
CONTROL_DT_S = 0.04
#: The parts of a goal's overhead, from its feedback (points played): their JSON keys and row labels.
PHASES = {
    "before_motion_ms": "before the first point (plan, start lead)",
    "during_motion_ms": "while playing (beyond the points' time)",
    "after_motion_ms": "after the last point (arrival, result)",
}
STARTUP_TIMEOUT_S = 60.0  # node processes up and publishing (the wheels' .pth restarts every process once)
SERVER_TIMEOUT_S = 30.0
GOAL_TIMEOUT_S = 30.0
RESET_BELOW_STEPS = 80  # reset the episode (both worlds) before a goal when fewer env steps are left
LATE_FACTOR = 1.5
SETTLE_S = 1.0  # after start-up, before part 1: past the first renders and the discovery of late readers
SIZES = {"default": (20, 10.0, SETTLE_S), "quick": (6, 4.0, SETTLE_S), "smoke": (2, 1.0, 0.3)}  # goals, window, settle
DOMAIN_PROBE_S = 1.5  # listen this long for foreign nodes before using a domain
DOMAIN_TRIES = 5
STILL_MOVING_MM = 2.0  # a TCP that moves more than this after its goal's result had not arrived


class GraphDown(RuntimeError):
    """The graph did not come up (or went away)."""


# -- statistics ------------------------------------------------------------------------------------------------
def stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {
            "n": 0,
            "median": math.nan,
            "p5": math.nan,
            "p95": math.nan,
            "max": math.nan,
            "min": math.nan,
            "mean": math.nan,
            "std": math.nan,
        }
    return {
        "n": int(a.size),
        "median": float(np.median(a)),
        "p5": float(np.percentile(a, 5)),
        "p95": float(np.percentile(a, 95)),
        "max": float(a.max()),
        "min": float(a.min()),
        "mean": float(a.mean()),
        "std": float(a.std()),
    }


def f2(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def f1(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def other_graph_processes(mine: set[int]) -> int:
    """Processes of robodojo nodes on this machine that this benchmark did not start (other engineers' tests)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"robodojo.nodes." in cmd:
            count += 1
    return count


# -- the client ------------------------------------------------------------------------------------------------
class Recorder:
    """Timestamps of one topic's messages: DDS source and reception, callback entry (all wall clock, ns)."""

    def __init__(self, keep: Callable[[object], object] | None = None) -> None:
        self.lock = threading.Lock()
        self.source: list[int] = []
        self.received: list[int] = []
        self.callback: list[int] = []
        self.kept: list[object] = []
        self.keep = keep
        self.last: object = None

    def __call__(self, msg, info) -> None:
        now = time.time_ns()
        with self.lock:
            self.source.append(int(info["source_timestamp"]))
            self.received.append(int(info["received_timestamp"]))
            self.callback.append(now)
            if self.keep is not None:
                self.kept.append(self.keep(msg))
            self.last = msg

    def count(self) -> int:
        with self.lock:
            return len(self.source)

    def window(self, t0_ns: int, t1_ns: int) -> dict[str, np.ndarray]:
        """The messages published in [t0, t1) (by source timestamp)."""
        with self.lock:
            src = np.array(self.source, dtype=np.int64)
            rec = np.array(self.received, dtype=np.int64)
            cb = np.array(self.callback, dtype=np.int64)
            kept = list(self.kept)
        sel = (src >= t0_ns) & (src < t1_ns)
        out = {"source": src[sel], "received": rec[sel], "callback": cb[sel]}
        if self.keep is not None:
            out["kept"] = np.array([k for k, s in zip(kept, sel, strict=True) if s])
        return out


class Client:
    """An rclpy node in this process, in the graph's domain, spun in a thread."""

    def __init__(self, domain_id: int, executor: str) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(f"ros_graph_bench_{os.getpid()}", context=self.context)
        if executor == "multi":
            self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        else:
            self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._spin = threading.Thread(target=self._spin_until_stopped, name="client_spin", daemon=True)
        self._spin.start()

    def _spin_until_stopped(self) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self.context.ok() and not self._stop.is_set():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, RuntimeError):
            pass

    def subscribe(self, msg_type, topic: str, qos, recorder: Recorder):
        from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

        return self.node.create_subscription(
            msg_type, topic, recorder, qos, callback_group=MutuallyExclusiveCallbackGroup()
        )

    def others(self) -> list[str]:
        """The other nodes in this domain."""
        return sorted(
            f"{ns.rstrip('/')}/{n}" for n, ns in self.node.get_node_names_and_namespaces() if n != self.node.get_name()
        )

    def close(self) -> None:
        """Executor first, then the context (ROS_ON_PYPI.md: the other order can abort the process)."""
        self._stop.set()
        self._spin.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def free_domain(first: int, executor: str, *, fixed: bool) -> tuple[Client, int, list[int]]:
    """A client in the first domain from ``first`` on (60..89) where no other node is seen after DOMAIN_PROBE_S.

    Other engineers' graph tests pick their domains from their pid too; a shared domain would mix two graphs.
    """
    skipped = []
    domain = first
    for _ in range(DOMAIN_TRIES):
        client = Client(domain, executor)
        time.sleep(DOMAIN_PROBE_S)
        if fixed or not client.others():
            return client, domain, skipped
        client.close()
        skipped.append(domain)
        domain = 60 + (domain - 60 + 7) % 30
    raise GraphDown(f"every ROS domain tried is in use by other nodes: {skipped}")


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, nodes: Sequence[NodeProcess]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        dead = [n for n in nodes if not n.alive]
        if dead:
            break
        time.sleep(0.02)
    if predicate():
        return
    logs = "\n".join(f"--- {n.node} (alive={n.alive}, log {n.log_path}):\n{n.output()[-2000:]}" for n in nodes)
    raise GraphDown(f"timed out after {timeout_s:g} s waiting for {what}\n{logs}")


class Pending:
    """An rclpy future made in the executor's thread, with the perf_counter times it was sent and completed.

    rclpy 7.1.6's ActionClient.send_goal_async and get_result_async send the request before they register its
    sequence number, without a lock: when the executor thread takes the server's (fast) response in between, it logs
    "Ignoring unexpected goal response. There may be more than one action server" and the future never completes.
    Making the request from the executor's own thread (a task) closes that window, and the done callback is attached
    before any response can be processed.
    """

    def __init__(self, client: Client, make: Callable[[], object]) -> None:
        self.done = threading.Event()
        self.sent_s = math.nan
        self.done_s = math.nan
        self.future = None

        def task() -> None:
            self.sent_s = time.perf_counter()
            self.future = make()
            self.future.add_done_callback(self._on_done)

        started = client.executor.create_task(task)
        if wait_future(started, 10.0) is None:
            raise GraphDown("the client's executor did not run a task within 10 s")

    def _on_done(self, _future) -> None:
        self.done_s = time.perf_counter()
        self.done.set()

    def wait(self, timeout_s: float) -> bool:
        return self.done.wait(timeout_s)


def wait_future(future, timeout_s: float) -> float | None:
    """Wait for an rclpy future completed by the executor thread; perf_counter time it completed, or None."""
    done = threading.Event()
    stamp: list[float] = []

    def on_done(_f) -> None:
        stamp.append(time.perf_counter())
        done.set()

    future.add_done_callback(on_done)
    if not done.wait(timeout_s):
        return None
    return stamp[0]


# -- targets ---------------------------------------------------------------------------------------------------
def target_cycle(home: dict[str, tuple[float, float, float]]) -> list[dict[str, float]]:
    """Small reachable MOVE_EEF targets about the home poses; every target is absolute, so the cycle repeats."""
    (lx, ly, _), (rx, ry, _) = home["left"], home["right"]
    return [
        {"left_z": 0.95},
        {"left_z": 0.88},
        {"left_x": lx + 0.04},
        {"left_x": lx, "left_z": 0.92},
        {"left_z": 0.95, "right_z": 0.95},
        {"left_z": 0.88, "right_z": 0.88},
        {"right_y": ry + 0.04},
        {"right_y": ry, "right_z": 0.92},
        {"left_y": ly - 0.04, "right_x": rx - 0.04},
        {"left_y": ly, "right_x": rx, "left_z": 0.9, "right_z": 0.9},
    ]


def goal_sequence(home: dict[str, tuple[float, float, float]], n: int) -> list[dict[str, float]]:
    cycle = target_cycle(home)
    return [cycle[i % len(cycle)] for i in range(n + 1)]  # the first is the warm-up


def describe(dims: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in dims.items())


# -- part 1 ----------------------------------------------------------------------------------------------------
def latency_figures(rec: Recorder, t0_ns: int, t1_ns: int) -> dict:
    w = rec.window(t0_ns, t1_ns)
    dds = (w["received"] - w["source"]) / 1e6
    cb = (w["callback"] - w["source"]) / 1e6
    return {"messages": int(w["source"].size), "dds_ms": stats(dds), "callback_ms": stats(cb), "window": w}


# -- part 2 ----------------------------------------------------------------------------------------------------
def send_goal(client: Client, action_client, dims: dict[str, float]) -> dict:
    from agent_bringup.action import MoveEef

    goal = MoveEef.Goal(mode=MoveEef.Goal.MOVE_EEF, names=list(dims), values=[float(v) for v in dims.values()])
    goal.note = "benchmarks/ros_graph.py"
    wall0 = time.time_ns()
    played_at: dict[int, float] = {}  # points played -> perf_counter time of the first feedback saying so

    def on_feedback(msg) -> None:
        played_at.setdefault(msg.feedback.waypoints_played, time.perf_counter())

    sending = Pending(client, lambda: action_client.send_goal_async(goal, feedback_callback=on_feedback))
    if not sending.wait(GOAL_TIMEOUT_S):
        raise GraphDown(f"no response to a MoveEef goal within 30 s; nodes in the domain: {client.others()}")
    t0, t_acc = sending.sent_s, sending.done_s
    handle = sending.future.result()
    if not handle.accepted:
        return {"rejected_by_server": True, "wall0_ns": wall0, "wall1_ns": time.time_ns()}
    result = Pending(client, handle.get_result_async)
    if not result.wait(GOAL_TIMEOUT_S):
        raise GraphDown(f"no MoveEef result within 30 s; nodes in the domain: {client.others()}")
    t1 = result.done_s
    result_future = result.future
    wall1 = time.time_ns()
    result = result_future.result().result
    round_trip = t1 - t0
    # Where the overhead goes: before the first point plays (goal transport, planning, the start lead), while it
    # plays (wall time beyond the points' duration), after the last point (arrival check, the result's transport).
    played = [n for n in played_at if n > 0]
    first_s = played_at[min(played)] - CONTROL_DT_S if played else math.nan  # a point's report comes a tick in
    last_s = played_at[max(played)] if played else math.nan
    steps = max(played, default=0)
    return {
        "rejected_by_server": False,
        "accepted": result.accepted,
        "stop_reason": result.stop_reason,
        "error": result.error,
        "waypoints": result.waypoints,
        "steps_used": result.steps_used,
        "duration_s": result.duration_s,
        "goal_response_ms": (t_acc - t0) * 1e3,
        "round_trip_ms": round_trip * 1e3,
        "overhead_ms": (round_trip - result.duration_s) * 1e3,
        "before_motion_ms": (first_s - t0) * 1e3,
        "during_motion_ms": (last_s - first_s - steps * CONTROL_DT_S) * 1e3,
        "after_motion_ms": (t1 - last_s) * 1e3,
        "pos_error_mm": max((a.pos_error_mm for a in result.arms), default=math.nan),
        "wall0_ns": wall0,
        "wall1_ns": wall1,
    }


def reset_episode(client: Client, reset_client) -> None:
    from agent_bringup.srv import ResetEpisode

    future = reset_client.call_async(ResetEpisode.Request(task=TASK, variant="standard", seed=0))
    if wait_future(future, 15.0) is None or not future.result().success:
        raise GraphDown("the simulator's /episode/reset did not answer or refused")


def bench_in_process(sequence: Sequence[dict[str, float]]) -> dict:
    from robodojo.motion.server import MotionServer
    from robodojo.motion.targets import parse_move_eef
    from robodojo.sim.world import EmbeddedWorld

    world = EmbeddedWorld(ROBOT)
    world.reset(TASK, seed=0)
    server = MotionServer(world)
    robot = world.robot
    records = []
    resets = 0
    try:
        for i, dims in enumerate(sequence):
            if world.steps_left < RESET_BELOW_STEPS:
                world.reset(TASK, seed=0)
                server.reset()
                resets += 1
            target = parse_move_eef(dims, robot, world.observe(cameras=()).arms)
            t0 = time.perf_counter()
            plan = server.plan(target)
            plan_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            report = server.move_eef(dims)
            move_s = time.perf_counter() - t0
            if i == 0:
                continue  # the warm-up, as on the graph
            records.append(
                {
                    "plan_ms": plan_s * 1e3,
                    "move_eef_ms": move_s * 1e3,
                    "accepted": report.accepted,
                    "waypoints": report.waypoints,
                    "steps_used": report.steps_used,
                    "duration_s": report.steps_used * world.control_dt_s,
                    "stop_reason": report.stop_reason.value,
                    "plan_ok": plan.ok,
                }
            )
    finally:
        world.close()
    return {"records": records, "resets": resets}


def moved_after_result(tcp: dict[str, Recorder], records: Sequence[dict]) -> list[float]:
    """Per goal: how far a TCP moved [mm] between the result and the next goal (or 0.3 s), the larger arm's."""
    out = []
    for i, r in enumerate(records):
        if "wall1_ns" not in r or "round_trip_ms" not in r:
            out.append(math.nan)
            continue
        end = records[i + 1]["wall0_ns"] if i + 1 < len(records) else r["wall1_ns"] + 300_000_000
        moved = 0.0
        for rec in tcp.values():
            w = rec.window(r["wall1_ns"], end)
            if len(w["kept"]) > 1:
                moved = max(moved, float(np.linalg.norm(np.subtract(w["kept"][-1], w["kept"][0]))) * 1e3)
        out.append(moved)
    return out


# -- part 3 ----------------------------------------------------------------------------------------------------
def periods_in(source_ns: np.ndarray, windows: Sequence[tuple[int, int]]) -> np.ndarray:
    """Periods [ms] between consecutive source stamps whose both ends lie in one of ``windows``."""
    src = np.sort(source_ns)
    out = []
    for a, b in windows:
        s = src[(src >= a) & (src < b)]
        if s.size > 1:
            out.append(np.diff(s) / 1e6)
    return np.concatenate(out) if out else np.zeros(0)


def jitter_row(label: str, periods_ms: np.ndarray) -> tuple[dict, tuple[str, ...]]:
    s = stats(periods_ms)
    late = int(np.sum(periods_ms > LATE_FACTOR * CONTROL_DT_S * 1e3))
    fig = {**s, "late": late, "late_threshold_ms": LATE_FACTOR * CONTROL_DT_S * 1e3}
    row = (label, str(s["n"]), f2(s["median"]), f2(s["p5"]), f2(s["p95"]), f2(s["max"]), f2(s["std"]), str(late))
    return fig, row


# -- main ------------------------------------------------------------------------------------------------------
def build(log_dir: Path) -> float:
    """Build the interfaces and make them usable in this process; the build time [s]."""
    t0 = time.perf_counter()
    with (log_dir / "colcon.log").open("w") as log:
        try:
            build_interfaces(PACKAGE_ROOT, log=log)
        except (InterfaceBuildError, OSError, subprocess.TimeoutExpired) as exc:
            raise GraphDown(f"the package's interfaces could not be built (log {log.name}): {exc}") from exc
    use_interfaces_here(PACKAGE_ROOT)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return time.perf_counter() - t0


def run(args: argparse.Namespace, n_goals: int, window_s: float, settle_s: float, log_dir: Path) -> dict:
    t_all = time.perf_counter()
    domain_id = args.domain_id if args.domain_id is not None else 60 + os.getpid() % 30
    build_s = build(log_dir)
    client, domain_id, skipped = free_domain(domain_id, args.executor, fixed=args.domain_id is not None)
    env = ros_environment(PACKAGE_ROOT, domain_id=domain_id, log_dir=log_dir / "ros_log")
    import rclpy
    from agent_bringup.action import MoveEef
    from agent_bringup.msg import EpisodeStatus
    from agent_bringup.srv import ResetEpisode
    from geometry_msgs.msg import PoseStamped
    from rclpy.action import ActionClient
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image, JointState

    from robodojo.nodes.parameters import node_defaults

    start_lead_ms = float(node_defaults("motion_server_node")["start_lead_s"]) * 1e3
    slices = int(node_defaults("sim_node")["joint_state_slices"])
    load0 = os.getloadavg()

    size = " (smoke)" if args.smoke else " (quick)" if args.quick else ""
    print(f"robodojo ROS graph benchmark: {ROBOT}, {TASK} seed 0{size}")
    print(
        f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}; "
        f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}"
    )
    print(
        f"  versions : rclpy {version('ros-jazzy-rclpy')}, rmw {rclpy.get_rmw_implementation_identifier()}, "
        f"sensor_msgs {version('ros-jazzy-sensor-msgs')}"
    )
    busy = f" (skipped, in use by other nodes: {skipped})" if skipped else ""
    print(
        f"  graph    : sim_node (defaults: {CAMERA_HZ:g} Hz cameras, {slices} joint states per 40 ms step) and "
        f"motion_server_node (use_sim_time) as processes; ROS_DOMAIN_ID {domain_id}{busy}, localhost discovery; "
        f"client {args.executor}-threaded executor; interfaces ready in {build_s:.1f} s; logs in {log_dir}"
    )

    nodes: list[NodeProcess] = []
    figures: dict = {
        "machine": {
            "nproc": nproc(),
            "cpu_model": cpu_model(),
            "python": platform.python_version(),
            "loadavg_start": list(load0),
        },
        "versions": {"rclpy": version("ros-jazzy-rclpy"), "rmw": rclpy.get_rmw_implementation_identifier()},
        "domain_id": domain_id,
        "domains_in_use": skipped,
        "executor": args.executor,
        "quick": args.quick,
    }
    try:
        t0 = time.perf_counter()
        nodes.append(NodeProcess("sim_node", {}, env, log_dir / "sim_node.log", cwd=log_dir))
        nodes.append(
            NodeProcess(
                "motion_server_node", {"use_sim_time": True}, env, log_dir / "motion_server_node.log", cwd=log_dir
            )
        )
        node = client.node
        image = Recorder(keep=lambda m: m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)
        joints = Recorder()
        tcp = {
            a: Recorder(keep=lambda m: (m.pose.position.x, m.pose.position.y, m.pose.position.z))
            for a in ("left", "right")
        }
        status = Recorder(keep=lambda m: m.steps_left)
        image_sub = client.subscribe(
            Image, topics.camera_image(CAMERA), QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE), image
        )
        joints_sub = client.subscribe(JointState, topics.JOINT_STATES, QoSProfile(depth=50), joints)
        for arm, rec in tcp.items():
            client.subscribe(PoseStamped, topics.tcp_pose(arm), QoSProfile(depth=50), rec)
        client.subscribe(
            EpisodeStatus,
            topics.EPISODE_STATUS,
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL),
            status,
        )
        action_client = ActionClient(node, MoveEef, topics.MOVE_EEF)
        reset_client = node.create_client(ResetEpisode, topics.EPISODE_RESET)

        wait_for(
            lambda: joints.count() > 0 and all(r.count() > 0 for r in tcp.values()),
            STARTUP_TIMEOUT_S,
            "/joint_states and the TCP poses from sim_node",
            nodes,
        )
        wait_for(lambda: image.count() > 0, 15.0, f"{topics.camera_image(CAMERA)}", nodes)
        wait_for(lambda: action_client.server_is_ready(), SERVER_TIMEOUT_S, "the MoveEef action server", nodes)
        wait_for(lambda: reset_client.service_is_ready(), SERVER_TIMEOUT_S, "the /episode/reset service", nodes)
        wait_for(lambda: status.count() > 0, 10.0, "/episode/status", nodes)
        up_s = time.perf_counter() - t0
        print(
            f"  graph up in {up_s:.1f} s (processes started to first image, action server and status seen); "
            f"other robodojo node processes on this machine: {other_graph_processes({n.proc.pid for n in nodes})}"
        )
        print(flush=True)
        figures["graph_up_s"] = up_s
        time.sleep(settle_s)  # past the start-up transient (first renders, discovery of late readers)

        # -- 1. image latency, robot idle
        w0 = time.time_ns()
        time.sleep(window_s)
        w1 = time.time_ns()
        img = latency_figures(image, w0, w1)
        js = latency_figures(joints, w0, w1)
        stamps = img["window"]["kept"]
        expected = round(window_s * CAMERA_HZ)
        published = round(float(stamps.max() - stamps.min()) * CAMERA_HZ) + 1 if stamps.size else 0
        received = img["messages"]
        dropped = max(0, published - received)
        js_expected = round(window_s * slices / CONTROL_DT_S)
        ratio_dds = img["dds_ms"]["median"] / js["dds_ms"]["median"]
        ratio_cb = img["callback_ms"]["median"] / js["callback_ms"]["median"]
        print(
            f"1. cross-process latency, robot idle, {window_s:g} s window (DDS source timestamp in the publisher "
            "to reception in this process's DataReader, and to the Python callback; wall clock)"
        )
        rows = []
        for label, fig in (
            (f"{topics.camera_image(CAMERA)} 640x480 rgb8", img),
            (f"{topics.JOINT_STATES} (small)", js),
        ):
            for what, key in (("DDS", "dds_ms"), ("callback", "callback_ms")):
                s = fig[key]
                rows.append(
                    (
                        label if what == "DDS" else "",
                        what,
                        str(fig["messages"]),
                        f2(s["median"]),
                        f2(s["p95"]),
                        f2(s["max"]),
                    )
                )
        table(("topic", "to", "msgs", "median ms", "p95 ms", "max ms"), rows, "<<>>>>")
        print(
            f"images: {received} received, {expected} expected at {CAMERA_HZ:g} Hz of wall time, {published} "
            f"published by the simulator (header stamps span), dropped in transport {dropped}; joint states "
            f"{js['messages']} received of {js_expected} expected"
        )
        print(
            f"image / joint state median latency: {ratio_dds:.1f}x to the DataReader, {ratio_cb:.1f}x to the callback"
        )
        print(flush=True)
        for fig in (img, js):
            fig.pop("window")
        figures["latency"] = {
            "window_s": window_s,
            "image": img,
            "joint_states": js,
            "image_frames": {
                "received": received,
                "expected_wall": expected,
                "published": published,
                "dropped": dropped,
            },
            "joint_states_expected": js_expected,
            "ratio_dds_median": ratio_dds,
            "ratio_callback_median": ratio_cb,
        }
        idle_window = (w0, w1)
        # Parts 2 and 3 need neither: fewer callbacks leave this process's executor free for the action client.
        node.destroy_subscription(image_sub)
        node.destroy_subscription(joints_sub)

        # -- 2. MoveEef overhead on the graph
        home = {a: tuple(float(v) for v in rec.kept[-1]) for a, rec in tcp.items()}
        sequence = goal_sequence(home, n_goals)
        graph_records, resets = [], 0
        warmup: dict = {}
        for i, dims in enumerate(sequence):
            left = status.kept[-1] if status.kept else None
            if left is not None and left < RESET_BELOW_STEPS:
                reset_episode(client, reset_client)
                wait_for(lambda: status.kept[-1] >= RESET_BELOW_STEPS, 5.0, "the status of the new episode", nodes)
                time.sleep(0.3)
                resets += 1
            for _attempt in range(5):  # the server may not have joint states yet right after start-up
                r = send_goal(client, action_client, dims)
                if i > 0 or r.get("stop_reason") != "backend_lost":
                    break
                time.sleep(0.5)
            r["target"] = dims
            if r.get("rejected_by_server"):
                print(f"   goal {i}: rejected by the action server (another motion running?)")
            if i == 0:
                warmup = r
            else:
                graph_records.append(r)
        ok = [
            r
            for r in graph_records
            if not r["rejected_by_server"] and r["accepted"] and r["stop_reason"] == "completed"
        ]
        g_rt = stats([r["round_trip_ms"] for r in ok])
        g_oh = stats([r["overhead_ms"] for r in ok])
        g_resp = stats([r["goal_response_ms"] for r in ok])
        phases = {k: stats([r[k] for r in ok]) for k in PHASES}
        g_dur = stats([r["duration_s"] * 1e3 for r in ok])
        g_err = stats([r["pos_error_mm"] for r in ok])

        t_in = time.perf_counter()
        inproc = bench_in_process(sequence)
        inproc_s = time.perf_counter() - t_in
        ip = inproc["records"]
        ip_ok = [r for r in ip if r["accepted"] and r["stop_reason"] == "completed"]
        i_plan = stats([r["plan_ms"] for r in ip_ok])
        i_move = stats([r["move_eef_ms"] for r in ip_ok])
        i_dur = stats([r["duration_s"] * 1e3 for r in ip_ok])

        print(
            f"2. MoveEef goals: {len(graph_records)} on the graph (after one warm-up goal), the same targets through "
            "the in-process MotionServer(EmbeddedWorld)"
        )
        print(
            "   The graph runs in REAL TIME (a 1 s trajectory takes 1 s of wall time); the in-process server steps the "
            "simulator as fast as it can, so its move_eef time is planning plus simulation, not trajectory time."
        )
        print(
            f"   graph: {len(ok)}/{len(graph_records)} completed ({resets} episode resets); in process: "
            f"{len(ip_ok)}/{len(ip)} completed ({inproc['resets']} resets, {inproc_s:.1f} s with world set-up)"
        )
        rows: list[tuple[str, ...]] = [
            ("graph: round trip send_goal -> result", f1(g_rt["median"]), f1(g_rt["p95"]), f1(g_rt["max"])),
            ("graph: trajectory duration_s (real time)", f1(g_dur["median"]), f1(g_dur["p95"]), f1(g_dur["max"])),
            ("graph: overhead = round trip - duration_s", f1(g_oh["median"]), f1(g_oh["p95"]), f1(g_oh["max"])),
            ("graph: goal accepted (send -> response)", f1(g_resp["median"]), f1(g_resp["p95"]), f1(g_resp["max"])),
            *(
                (f"graph: overhead {label}", *(f1(phases[k][q]) for q in ("median", "p95", "max")))
                for k, label in PHASES.items()
            ),
            ("in process: server.plan()", f2(i_plan["median"]), f2(i_plan["p95"]), f2(i_plan["max"])),
            ("in process: move_eef() (plan + sim steps)", f2(i_move["median"]), f2(i_move["p95"]), f2(i_move["max"])),
            ("in process: trajectory duration (sim time)", f1(i_dur["median"]), f1(i_dur["p95"]), f1(i_dur["max"])),
        ]
        table(("ms", "median", "p95", "max"), rows, "<>>>")
        oh_less_lead = g_oh["median"] - start_lead_ms
        print(
            f"graph overhead median {f1(g_oh['median'])} ms (p95 {f1(g_oh['p95'])}) vs in-process planning median "
            f"{f2(i_plan['median'])} ms (p95 {f2(i_plan['p95'])}); the overhead holds the motion server's "
            f"start_lead_s of {start_lead_ms:g} ms by design (trajectories start that long after the latest joint "
            f"state, on the 40 ms tick grid); median beyond it {f1(oh_less_lead)} ms of planning, transport and "
            "polling. It can be under the lead: the lead counts from the latest joint state the node has seen, which "
            "may lag the simulator, and after a stall the simulator plays up to 5 steps back to back to catch up."
        )
        if warmup and not warmup.get("rejected_by_server"):
            print(
                f"warm-up goal (server built at the first goal, not counted): round trip "
                f"{warmup['round_trip_ms']:.1f} ms, overhead {warmup['overhead_ms']:.1f} ms, {warmup['stop_reason']}"
            )
        bad = [r for r in graph_records if r not in ok]
        for r in bad:
            why = "rejected by the action server" if r["rejected_by_server"] else f"{r['stop_reason']} {r['error']}"
            print(f"   not completed on the graph: {describe(r['target'])}: {why}")
        after = moved_after_result(tcp, [warmup, *graph_records])
        for r, mm in zip(graph_records, after[1:], strict=True):
            r["tcp_moved_after_result_mm"] = mm
        still = [mm for mm in after[1:] if mm > STILL_MOVING_MM]
        print(
            f"arrival on the graph: max position error per goal median {f2(g_err['median'])} mm, "
            f"p95 {f2(g_err['p95'])} mm, max {f2(g_err['max'])} mm; goals after whose result a TCP still moved by "
            f"> {STILL_MOVING_MM:g} mm (before the next goal): {len(still)}"
            + (f" (max {max(still):.1f} mm)" if still else "")
        )
        print(flush=True)
        figures["move_eef"] = {
            "goals": len(graph_records),
            "completed": len(ok),
            "resets": resets,
            "start_lead_ms": start_lead_ms,
            "graph": {
                "round_trip_ms": g_rt,
                "duration_ms": g_dur,
                "overhead_ms": g_oh,
                **phases,
                "goal_response_ms": g_resp,
                "pos_error_mm": g_err,
                "warmup": warmup,
                "records": graph_records,
            },
            "in_process": {"plan_ms": i_plan, "move_eef_ms": i_move, "duration_ms": i_dur, **inproc},
        }

        # -- 3. control period jitter
        move_windows = [(r["wall0_ns"], r["wall1_ns"]) for r in graph_records]
        src = tcp["left"].window(0, 2**62)["source"]
        p_move = periods_in(src, move_windows)
        p_idle = periods_in(src, [idle_window])
        print(
            f"3. simulator control period: DDS source timestamps of {topics.tcp_pose('left')} (published once per "
            f"40 ms control step, after the step); late: > {LATE_FACTOR:g} x 40 ms"
        )
        fig_move, row_move = jitter_row("during goals", p_move)
        fig_idle, row_idle = jitter_row("idle (part 1)", p_idle)
        table(("period ms", "n", "median", "p5", "p95", "max", "std", "late"), [row_move, row_idle], "<>>>>>>>")
        figures["control_period"] = {"during_goals_ms": fig_move, "idle_ms": fig_idle}
        load1 = os.getloadavg()
        print(f"\nload average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        figures["machine"]["loadavg_end"] = list(load1)
    finally:
        # nodes first (SIGINT, clean shutdown), then this process's executor and context
        codes = {}
        for n in nodes:
            try:
                codes[n.node] = n.stop()
            except Exception as exc:  # keep stopping the others
                codes[n.node] = f"stop failed: {exc}"
        foreign = [n for n in client.others() if n.rsplit("/", 1)[-1] not in ("sim_node", "motion_server_node")]
        client.close()
    figures["node_exit_codes"] = codes
    if foreign:
        print(f"WARNING: foreign nodes joined domain {domain_id} during the run (figures may be mixed): {foreign}")
    figures["foreign_nodes"] = foreign
    print(f"node exit codes: {codes}")
    total = time.perf_counter() - t_all
    figures["benchmark_wall_s"] = total
    print(f"benchmark wall time {total:.1f} s")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goals", type=int, help="MoveEef goals measured (default 20; 6 with --quick, 2 with --smoke)")
    parser.add_argument(
        "--window", type=float, help="image latency window [s] (default 10; 4 with --quick, 1 with --smoke)"
    )
    parser.add_argument(
        "--executor",
        choices=("single", "multi"),
        default="single",
        help="executor of this process's client node (default single: less overhead per callback)",
    )
    parser.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default 60 + pid %% 30)")
    parser.add_argument("--quick", action="store_true", help="fewer samples: a run of about 35 s")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    goals, window, settle_s = SIZES["smoke" if args.smoke else "quick" if args.quick else "default"]
    n_goals, window_s = args.goals or goals, args.window or window
    try:
        log_dir = Path(tempfile.mkdtemp(prefix="ros_graph_bench_"))
        figures = run(args, n_goals, window_s, settle_s, log_dir)
    except GraphDown as exc:
        print(f"ros_graph benchmark: the graph did not come up or failed: {exc}", file=sys.stderr)
        return 1
    if args.json is not None:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
