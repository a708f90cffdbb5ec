"""What a flood of malformed joint trajectories costs the simulator: real-time factor, joint-state gaps, log lines.

Issue 12: 100 messages a second of bad JointTrajectory on a controller topic took the simulator down to 0.24 x real
time with 1.6 s gaps in /joint_states, and every refusal was logged in full. This benchmark reproduces that load and
measures it, so a change to the simulator node or the trajectory player can be judged by its figures.

``sim_node`` runs as on a robot (defaults from config/nodes.yaml: general_pickup seed 0, three cameras at 25 Hz,
joint states after every physics slice) in its own process (``robodojo.nodes.process_graph.NodeProcess``), in a
private ROS_DOMAIN_ID (60 + pid % 30, one without other nodes) with localhost discovery. This process holds an rclpy
client node (``ros_graph.Client``) that records /joint_states and publishes on the left arm's controller topic.

Three phases of ``--phase`` s each:

1. baseline: the robot idle, nothing published;
2. flood: this process publishes malformed trajectories at ``--rate`` Hz (100) on
   /left_arm_controller/joint_trajectory, cycling through eight kinds (:data:`KINDS`), all stamped 0 (start now):
   a NaN position; a missing joint; a 1 rad jump of joint1 in one 40 ms step; joint1 just outside its limits; a
   negative time_from_start; 10,000 points holding the home pose with a 1 rad jump in the last one (so a player
   that checks every tick walks all 10,000 before it refuses); a 10,000-character joint name; a value of 1e300.
   The messages are built and serialised once (rclpy publishes the bytes: serialising the 10,000-point message
   costs this process about 0.1 s, which would cap the rate), the publisher sleeps to a fixed schedule and reports
   the rate it reached;
3. recovery: idle again, as the baseline.

Per phase, from the /joint_states this process received (the simulator publishes one after every physics slice,
stamped with its simulation time; the DDS source timestamp is the wall clock in the simulator process at publish):

- real-time factor: simulation time advanced / wall time: the stamp of the last joint state published before the
  phase's end minus that of the last one before its start, over the phase's wall time (so a stall counts in full);
- gaps between consecutive joint states (source timestamps): p50, p95 and max [ms]. The simulator publishes a
  control step's slices back to back and then sleeps to real time, so p50 is small by design; p95 and max show
  stalls;
- the simulator's CPU use (its process and children, from /proc) and the lines and bytes it logged (its console log
  file, read at the phase boundaries).

Then the ratios flood / baseline. A good simulator node refuses a bad message at little cost and says so once in a
while: its flood figures stay near its baseline and its log grows by a few lines. Whether the arm moved during the
flood (it must not) is printed as the largest joint change seen.

Run: ``.venv/bin/python benchmarks/flood.py [--quick] [--smoke] [--json out.json]``. The default takes about 55 s (12 s
phases after a start-up of 10-20 s), ``--quick`` about 30 s (5 s phases), ``--smoke`` (every part at its smallest: 1.5 s
phases, a shorter settling; the test suite runs it) about 10 s, most of it the node's start-up. To measure another
checkout's simulator, put its src/ first on PYTHONPATH: the node process and this client both import robodojo from
there. The machine's load (printed in the header) moves the figures; compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, version, write_figures
from ros_graph import GraphDown, Recorder, build, f1, f2, free_domain, wait_for

from robodojo import PACKAGE_ROOT
from robodojo.nodes import topics
from robodojo.nodes.process_graph import NodeProcess, ros_environment
from robodojo.robots.config import load_robot_config

ROBOT = "dual_arx_x5"
ARM = "left"
CONTROL_DT_S = 0.04
STARTUP_TIMEOUT_S = 60.0
SETTLE_S = 1.0  # after start-up, before the baseline: first renders and late discovery pass
DRAIN_S = 0.5  # after the flood, before the recovery: what was queued in the simulator is not the recovery's
PHASE_S = {"default": 12.0, "quick": 5.0, "smoke": 1.5}  # length of each phase [s] by run size
SMOKE_SETTLE_S = (0.3, 0.2)  # --smoke: SETTLE_S and DRAIN_S
LONG_POINTS = 10_000
LONG_NAME_CHARS = 10_000
JUMP_RAD = 1.0
HUGE = 1e300
LIMIT_MARGIN_RAD = 0.3  # how far outside joint1's upper limit the out-of-limits point is
JOINT1_UPPER_RAD = 2.618  # urdf/arx_x5.urdf, joint1's upper limit
KINDS = (
    "nan_position",
    "missing_joint",
    "jump_1rad",
    "outside_limits",
    "negative_time",
    "points_10000",
    "name_10000_chars",
    "value_1e300",
)


@dataclass(frozen=True)
class Mark:
    """A phase boundary: the wall clock [ns], the simulator's log size and its CPU time so far."""

    t_ns: int
    log_lines: int
    log_bytes: int
    cpu_s: float


def trajectories(joints: tuple[str, ...], home: tuple[float, ...]) -> dict[str, bytes]:
    """One JointTrajectory message per kind in :data:`KINDS`, built and serialised once."""
    from builtin_interfaces.msg import Duration
    from rclpy.serialization import serialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    def point(positions, t_s: float) -> JointTrajectoryPoint:
        sec = math.floor(t_s)
        return JointTrajectoryPoint(
            positions=[float(v) for v in positions],
            time_from_start=Duration(sec=int(sec), nanosec=round((t_s - sec) * 1e9)),
        )

    def msg(points, names=joints) -> JointTrajectory:
        return JointTrajectory(joint_names=list(names), points=points)  # stamp 0: start now

    def with_joint1(value: float) -> list[float]:
        return [value, *home[1:]]

    long_points = [point(home, (k + 1) * CONTROL_DT_S) for k in range(LONG_POINTS - 1)]
    long_points.append(point(with_joint1(home[0] + JUMP_RAD), LONG_POINTS * CONTROL_DT_S))
    out = {
        "nan_position": msg([point(with_joint1(math.nan), CONTROL_DT_S)]),
        "missing_joint": msg([point(home[:-1], CONTROL_DT_S)], names=joints[:-1]),
        "jump_1rad": msg([point(with_joint1(home[0] + JUMP_RAD), CONTROL_DT_S)]),
        "outside_limits": msg([point(with_joint1(JOINT1_UPPER_RAD + LIMIT_MARGIN_RAD), 10.0)]),
        "negative_time": msg([point(home, -1.0)]),
        "points_10000": msg(long_points),
        "name_10000_chars": msg([point(home, CONTROL_DT_S)], names=("j" * LONG_NAME_CHARS, *joints[1:])),
        "value_1e300": msg([point(with_joint1(HUGE), CONTROL_DT_S)]),
    }
    assert tuple(out) == KINDS
    return {kind: serialize_message(m) for kind, m in out.items()}


class Flood:
    """Publishes the kinds in turn at ``rate_hz`` from a thread, to a fixed schedule (no catching up when late)."""

    def __init__(self, publish: Callable[[bytes], None], messages: dict[str, bytes], rate_hz: float) -> None:
        self.publish = publish
        self.messages = list(messages.items())
        self.period_s = 1.0 / rate_hz
        self.sent = dict.fromkeys(messages, 0)
        self.publish_s = dict.fromkeys(messages, 0.0)  # time spent in publish() per kind
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flood", daemon=True)
        self.wall_s = 0.0

    def _run(self) -> None:
        t0 = time.monotonic()
        next_t, i = t0, 0
        while not self._stop.is_set():
            kind, msg = self.messages[i % len(self.messages)]
            p0 = time.perf_counter()
            self.publish(msg)
            self.publish_s[kind] += time.perf_counter() - p0
            self.sent[kind] += 1
            i += 1
            next_t += self.period_s
            delay = next_t - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_t = time.monotonic()  # late (a slow publish): go on from now
        self.wall_s = time.monotonic() - t0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    @property
    def total(self) -> int:
        return sum(self.sent.values())


# -- measurements ----------------------------------------------------------------------------------------------
def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU time [s] of ``pid`` and its descendants (from /proc; 0 for what has gone)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parent[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    tree, frontier = {pid}, [pid]
    while frontier:
        p = frontier.pop()
        children = [c for c, pp in parent.items() if pp == p and c not in tree]
        tree.update(children)
        frontier += children
    return sum(times.get(p, 0.0) for p in tree)


def log_size(path: Path) -> tuple[int, int]:
    """Lines and bytes of a log file so far."""
    data = path.read_bytes() if path.exists() else b""
    return data.count(b"\n"), len(data)


def phase_figures(joints: Recorder, start: Mark, end: Mark) -> dict:
    """Real-time factor, joint-state gaps and arm motion in [start, end), the simulator's log and CPU in between."""
    w = joints.window(start.t_ns, end.t_ns)
    order = np.argsort(w["source"])
    src = w["source"][order]
    kept = np.asarray(w["kept"], dtype=float).reshape(len(order), -1)[order]  # (stamp [s], arm joints [rad])
    stamps, positions = kept[:, 0], kept[:, 1:]
    wall_s = (end.t_ns - start.t_ns) / 1e9
    before = joints.window(0, start.t_ns)
    if src.size > 1:
        sim_t0 = before["kept"][np.argmax(before["source"])][0] if before["source"].size else stamps[0]
        rtf = float(stamps[-1] - sim_t0) / wall_s
        gaps = np.diff(src) / 1e6
        # the edges of the window count too: a simulator that stopped publishing shows as one long gap
        gaps = np.concatenate(([(src[0] - start.t_ns) / 1e6], gaps, [(end.t_ns - src[-1]) / 1e6]))
        moved = float(np.max(np.abs(positions - positions[0]))) if positions.size else math.nan
    else:
        rtf, gaps, moved = 0.0, np.array([wall_s * 1e3]), math.nan
    return {
        "wall_s": wall_s,
        "joint_states": int(src.size),
        "real_time_factor": rtf,
        "gap_ms": {
            "p50": float(np.percentile(gaps, 50)),
            "p95": float(np.percentile(gaps, 95)),
            "max": float(gaps.max()),
        },
        "sim_cpu_percent": 100.0 * (end.cpu_s - start.cpu_s) / wall_s,
        "log_lines": end.log_lines - start.log_lines,
        "log_bytes": end.log_bytes - start.log_bytes,
        "arm_moved_rad": moved,
    }


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


# -- main ------------------------------------------------------------------------------------------------------
def run(args: argparse.Namespace, phase_s: float, log_dir: Path) -> dict:
    t_all = time.perf_counter()
    settle_s, drain_s = SMOKE_SETTLE_S if args.smoke else (SETTLE_S, DRAIN_S)
    domain_id = args.domain_id if args.domain_id is not None else 60 + os.getpid() % 30
    build_s = build(log_dir)
    client, domain_id, skipped = free_domain(domain_id, "single", fixed=args.domain_id is not None)
    env = ros_environment(PACKAGE_ROOT, domain_id=domain_id, log_dir=log_dir / "ros_log")
    import rclpy
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    robot = load_robot_config(ROBOT)
    arm = robot.arm(ARM)
    load0 = os.getloadavg()
    smoke = " (smoke: every part at its smallest)" if args.smoke else ""
    print(f"robodojo flood benchmark{smoke}: {ROBOT}, malformed trajectories on {topics.arm_controller(ARM)}")
    print(
        f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}; "
        f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}"
    )
    print(f"  versions : rclpy {version('ros-jazzy-rclpy')}, rmw {rclpy.get_rmw_implementation_identifier()}")
    busy = f" (skipped, in use by other nodes: {skipped})" if skipped else ""
    print(
        f"  graph    : sim_node (defaults) as a process, robodojo from {PACKAGE_ROOT}; ROS_DOMAIN_ID "
        f"{domain_id}{busy}, localhost discovery; interfaces ready in {build_s:.1f} s; logs in {log_dir}"
    )
    print(
        f"  phases   : baseline, flood at {args.rate:g} Hz ({len(KINDS)} kinds in turn), recovery; {phase_s:g} s each"
    )
    figures: dict = {
        "machine": {
            "nproc": nproc(),
            "cpu_model": cpu_model(),
            "python": platform.python_version(),
            "loadavg_start": list(load0),
        },
        "versions": {"rclpy": version("ros-jazzy-rclpy"), "rmw": rclpy.get_rmw_implementation_identifier()},
        "robodojo": str(PACKAGE_ROOT),
        "domain_id": domain_id,
        "rate_hz": args.rate,
        "phase_s": phase_s,
        "kinds": list(KINDS),
    }
    sim: NodeProcess | None = None
    try:
        t0 = time.perf_counter()
        sim = NodeProcess("sim_node", {}, env, log_dir / "sim_node.log", cwd=log_dir)
        joints = Recorder(
            keep=lambda m: (m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, *m.position[: len(arm.joints)])
        )
        client.subscribe(JointState, topics.JOINT_STATES, QoSProfile(depth=100), joints)
        publisher = client.node.create_publisher(JointTrajectory, topics.arm_controller(ARM), 10)
        messages = trajectories(arm.joints, arm.home_joints_rad)
        if args.kinds:
            unknown = set(args.kinds) - set(KINDS)
            if unknown:
                parser_error = f"unknown kinds {sorted(unknown)}; choose from {', '.join(KINDS)}"
                raise SystemExit(parser_error)
            messages = {k: m for k, m in messages.items() if k in args.kinds}
        figures["message_bytes"] = {k: len(v) for k, v in messages.items()}
        wait_for(lambda: joints.count() > 0, STARTUP_TIMEOUT_S, f"{topics.JOINT_STATES} from sim_node", [sim])
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, "sim_node's trajectory subscription", [sim])
        print(
            f"  sim_node up in {time.perf_counter() - t0:.1f} s; serialised message sizes: "
            + ", ".join(f"{k} {n / 1e3:.1f} kB" for k, n in figures["message_bytes"].items()),
            flush=True,
        )
        time.sleep(settle_s)
        log_path, pid = sim.log_path, sim.proc.pid

        def mark() -> Mark:
            return Mark(time.time_ns(), *log_size(log_path), process_tree_cpu_s(pid))

        bounds: dict[str, tuple[Mark, Mark]] = {}
        baseline = mark()
        time.sleep(phase_s)
        bounds["baseline"] = (baseline, mark())
        flood = Flood(publisher.publish, messages, args.rate)
        flooding = mark()
        flood.start()
        time.sleep(phase_s)
        flood.stop()
        bounds["flood"] = (flooding, mark())
        time.sleep(drain_s)  # what was queued in the simulator when the flood stopped is not the recovery's
        recovery = mark()
        time.sleep(phase_s)
        bounds["recovery"] = (recovery, mark())
        if not sim.alive:
            raise GraphDown(f"sim_node exited ({sim.proc.returncode}); log {sim.log_path}")

        phases = {name: phase_figures(joints, *marks) for name, marks in bounds.items()}
        figures["phases"] = phases
        sent_rate = flood.total / flood.wall_s if flood.wall_s else 0.0
        figures["flood"] = {
            "sent": flood.sent,
            "sent_rate_hz": sent_rate,
            "publish_ms_mean": {k: 1e3 * flood.publish_s[k] / max(1, n) for k, n in flood.sent.items()},
        }
        print()
        rows = []
        for name, p in phases.items():
            g = p["gap_ms"]
            rows.append(
                (
                    name,
                    f"{p['wall_s']:.1f}",
                    f"{p['real_time_factor']:.2f}",
                    str(p["joint_states"]),
                    f1(g["p50"]),
                    f1(g["p95"]),
                    f1(g["max"]),
                    f"{p['sim_cpu_percent']:.0f}",
                    str(p["log_lines"]),
                    str(p["log_bytes"]),
                )
            )
        table(
            ("phase", "wall s", "RTF", "joint states", "gap p50 ms", "p95 ms", "max ms", "sim CPU %", "log lines",
             "log bytes"),
            rows,
            "<>>>>>>>>>",
        )  # fmt: skip
        b, f = phases["baseline"], phases["flood"]
        ratios = {
            "real_time_factor": ratio(f["real_time_factor"], b["real_time_factor"]),
            "gap_p95": ratio(f["gap_ms"]["p95"], b["gap_ms"]["p95"]),
            "gap_max": ratio(f["gap_ms"]["max"], b["gap_ms"]["max"]),
            "sim_cpu": ratio(f["sim_cpu_percent"], b["sim_cpu_percent"]),
        }
        figures["flood_over_baseline"] = ratios
        print(
            f"flood / baseline: real-time factor {f2(ratios['real_time_factor'])}x, gap p95 {f2(ratios['gap_p95'])}x, "
            f"gap max {f2(ratios['gap_max'])}x, simulator CPU {f2(ratios['sim_cpu'])}x"
        )
        print(
            f"flood: {flood.total} messages sent in {flood.wall_s:.1f} s ({sent_rate:.1f} Hz of {args.rate:g}); "
            f"the simulator logged {f['log_lines']} lines ({f['log_bytes']} bytes, "
            f"{ratio(f['log_lines'], flood.total):.2f} per message); publish cost per kind [ms]: "
            + ", ".join(f"{k} {v:.2f}" for k, v in figures["flood"]["publish_ms_mean"].items())
        )
        print(
            f"largest {ARM} arm joint change during the flood: {f['arm_moved_rad']:.2e} rad (bad input must not move "
            "it)"
        )
        load1 = os.getloadavg()
        print(f"load average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        figures["machine"]["loadavg_end"] = list(load1)
    finally:
        code = sim.stop() if sim is not None else None
        client.close()
    figures["sim_exit_code"] = code
    total = time.perf_counter() - t_all
    figures["benchmark_wall_s"] = total
    print(f"sim_node exit code {code}; benchmark wall time {total:.1f} s")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--phase", type=float, help="length of each phase [s] (default 12; 5 with --quick, 1.5 with --smoke)"
    )
    parser.add_argument("--rate", type=float, default=100.0, help="flood rate [Hz] (default 100)")
    parser.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default 60 + pid %% 30)")
    parser.add_argument("--quick", action="store_true", help="shorter phases: a run of about 30 s")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument(
        "--kinds",
        type=lambda v: v.split(","),
        help=f"comma-separated subset of the kinds (default all: {','.join(KINDS)})",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    phase_s = args.phase or PHASE_S["smoke" if args.smoke else "quick" if args.quick else "default"]
    try:
        log_dir = Path(tempfile.mkdtemp(prefix="flood_bench_"))
        figures = run(args, phase_s, log_dir)
    except GraphDown as exc:
        print(f"flood benchmark: the simulator did not come up or failed: {exc}", file=sys.stderr)
        return 1
    if args.json is not None:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
