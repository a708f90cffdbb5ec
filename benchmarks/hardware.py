"""The FR3 hardware layer against franky-sim: command latency and tracking along a 30 cm move.

What is measured (franky-sim started here on its own loopback address, killed at the end):

1. Trajectory to first SDK command: wall time from ``FrankaArm.follow(cmd)`` being called (state read, the guard's
   whole check with forward kinematics at every tick, building the waypoint motion) to franky's ``move`` returning,
   for ``--samples`` one-second trajectories of 25 points; median and p95 [ms]. Each is stopped before the next.
2. Tracking along a 30 cm Cartesian move: a straight TCP line 0.3 m along world x from the ready pose, solved to joints
   by the project's IK at every control tick (cosine timing over ``--move-s``), played as one trajectory. The arm's
   measured joints are read at about 100 Hz; each is put through forward kinematics and its distance to the planned
   straight line is the tracking error (max, mm; path error, so the simulator's slower-than-wall clock does not count).
   The end error is the TCP distance from the line's end after settling.
3. How to play a trajectory: the same 2 s move as one waypoint motion and as a JointMotion sequence (the figures
   quoted in robodojo/hardware/franka.py).
4. Joint-state reads on a fixed-rate loop at the configured state rate for 3 s: achieved rate, period jitter (p95 of
   the deviation from the period) and the median cost of one read.

Run: ``.venv/bin/python benchmarks/hardware.py [--samples 30] [--move-s 3.0] [--host 127.0.0.5] [--smoke]``; ``--smoke``
runs every part at its smallest (2 samples, a 1 s move, 1 s of reads, a 1 s cosine move; the test suite runs it).
``--robot dual_arx_x5`` runs ``benchmarks/x5.py`` instead (its options pass through). The same layer on the ROS 2 graph
(fr3_driver_node: its joint-state rate and stamp jitter, trajectory message to SDK, and MoveEef overhead on the FR3 path
against the simulated one in one run) is ``benchmarks/fr3_graph.py``. The ARX X5's figures (the real SDK against the
project's bus emulator: bus command rate, trajectory message to first bus frame, arx5_driver_node's /joint_states, and
this 30 cm move in both trajectory modes) are ``benchmarks/x5.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.hardware.franka import FrankaArm
from robodojo.hardware.settings import load_fr3_settings
from robodojo.robots.ik import ArmKinematics

HOST = "127.0.0.5"  # away from the tests' 127.0.0.3/4 and a franky-sim on 127.0.0.1
FCI_PORT = 1337
MOVE_M = 0.3
STATE_PERIOD_S = 0.01
SETTLE_S = 0.5
STATE_READS_S = 3.0  # wall seconds of part 4's fixed-rate reads
PLAYBACK_S = 2.0  # duration of part 3's cosine move
PLAYBACK_PEAK_RAD = 0.3  # part 3's largest joint amplitude: its planned peak speed is this x pi / (2 x duration)
SMOKE_SIZES = (2, 1.0, 1.0, 1.0)  # --smoke: samples, move [s], state reads [s], playback move [s]


def _serving(host: str) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, FCI_PORT)) == 0


def start_sim(host: str) -> subprocess.Popen[bytes]:
    if _serving(host):  # another franky-sim: this benchmark would measure (and move) that one
        raise SystemExit(f"something already serves {host}:{FCI_PORT}; stop it or pass another --host")
    exe = Path(sys.executable).with_name("franky-sim")
    cmd = [str(exe) if exe.exists() else (shutil.which("franky-sim") or "franky-sim")]
    proc = subprocess.Popen(
        [*cmd, "-s", "mujoco", "--hostname", host], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        if _serving(host):
            return proc
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("franky-sim did not start")


def cosine(start: np.ndarray, delta: np.ndarray, duration_s: float, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
    times = np.arange(1, round(duration_s / dt_s) + 1) * dt_s
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    return times, start + np.outer(s, delta)


def latency(arm: FrankaArm, samples: int) -> list[float]:
    dt = arm.guard.dt_s
    out = []
    for k in range(samples):
        q = np.array(arm.joint_state().positions_rad)
        times, points = cosine(q, np.full(7, 0.02 * (-1) ** k), 1.0, dt)
        cmd = TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points)))
        t0 = time.perf_counter()
        arm.follow(cmd)
        out.append((time.perf_counter() - t0) * 1e3)
        arm.wait(10.0)
    return out


def state_reads(arm: FrankaArm, seconds: float) -> tuple[float, float, float]:
    """Joint states read on a fixed-rate loop at the config's rate: (achieved Hz, period jitter p95 [ms], read
    median [ms]). What a driver publishing /joint_states from this adapter could sustain."""
    period_s = 1.0 / arm.settings.state_rate_hz
    stamps, reads = [], []
    next_s = time.perf_counter()
    end_s = next_s + seconds
    while next_s < end_s:
        t0 = time.perf_counter()
        arm.joint_state()
        reads.append((time.perf_counter() - t0) * 1e3)
        stamps.append(t0)
        next_s += period_s
        time.sleep(max(0.0, next_s - time.perf_counter()))
    periods = np.diff(stamps)
    jitter_ms = float(np.percentile(np.abs(periods - period_s), 95) * 1e3)
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), jitter_ms, float(np.median(reads))


def compare_playback(arm: FrankaArm, duration_s: float) -> list[tuple[str, float, float, float, float, float]]:
    """The same cosine move (0.2-0.3 rad per joint over ``duration_s``, a point per control period) played as one
    waypoint motion with pass-through velocities (what FrankaArm.play does) and as a sequence of JointMotions paced
    by this process's clock. Per way: (name, duration on the robot's clock [s], largest joint error against the plan
    at the same robot time [rad], max distance from the planned joint path [rad], peak joint speed [rad/s], end error
    after settling [rad])."""
    import franky

    dt = arm.guard.dt_s
    amplitude = np.array([0.3, 0.2, 0.2, 0.3, 0.3, 0.3, 0.3])
    assert amplitude.max() == PLAYBACK_PEAK_RAD
    rows = []
    for name in ("waypoint motion", "JointMotion sequence"):
        q0 = np.array(arm.joint_state().positions_rad)
        times, points = cosine(q0, amplitude, duration_s, dt)
        dense = q0 + np.outer(np.linspace(0.0, 1.0, 2000), amplitude)
        worst, peak, late = 0.0, 0.0, 0.0
        robot_t0 = arm.joint_state().robot_time_s
        t0 = time.monotonic()
        if name == "waypoint motion":
            cmd = TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points)))
            arm.follow(cmd)
        else:
            speeds = np.gradient(points, dt, axis=0)
            robot = arm._robot  # a benchmark of franky itself: the adapter plays only waypoint motions
            k = 0
        while True:
            reading = arm.joint_state()
            worst = max(worst, float(np.min(np.linalg.norm(dense - reading.positions_rad, axis=1))))
            peak = max(peak, float(np.abs(reading.velocities_rad_s).max()))
            tau = min(reading.robot_time_s - robot_t0, duration_s)
            planned = q0 + amplitude * (1 - np.cos(np.pi * tau / duration_s)) / 2
            late = max(late, float(np.abs(np.array(reading.positions_rad) - planned).max()))
            if name == "waypoint motion":
                arm.feed()
                if not arm.is_playing():
                    break
            else:
                while k < len(times) and time.monotonic() - t0 >= times[k] - dt:
                    robot.move(franky.JointMotion(franky.JointState(points[k], speeds[k])), asynchronous=True)
                    k += 1
                if k == len(times) and robot.join_motion(0.0):
                    break
            time.sleep(STATE_PERIOD_S / 2)
        robot_s = arm.joint_state().robot_time_s - robot_t0
        time.sleep(SETTLE_S)
        end = float(np.abs(np.array(arm.joint_state().positions_rad) - points[-1]).max())
        rows.append((name, robot_s, late, worst, peak, end))
        back_times, back = cosine(np.array(arm.joint_state().positions_rad), -amplitude, duration_s, dt)
        arm.follow(TrajectoryCommand(arm.joint_names, tuple(back_times), tuple(map(tuple, back))))
        arm.wait(20.0)
        time.sleep(SETTLE_S)
    return rows


def tracking(arm: FrankaArm, move_s: float) -> tuple[float, float, float]:
    settings = arm.settings
    kin = ArmKinematics(settings.robot)
    dt = arm.guard.dt_s
    q0 = np.array(arm.joint_state().positions_rad)
    p0, R0 = kin.tcp_pose(settings.arm, q0)
    direction = np.array([1.0, 0.0, 0.0])
    times = np.arange(1, round(move_s / dt) + 1) * dt
    s = (1 - np.cos(np.pi * times / move_s)) / 2
    q, points = q0, []
    for sk in s:
        sol = kin.solve(settings.arm, p0 + sk * MOVE_M * direction, R0, q)
        if not sol.converged:
            raise SystemExit(f"IK did not converge at s={sk:.3f}")
        q = sol.q
        points.append(q)
    arm.follow(TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points))))
    worst_m = 0.0
    while arm.is_playing():
        arm.feed()
        p, _ = kin.tcp_pose(settings.arm, np.array(arm.joint_state().positions_rad))
        along = float(np.clip(np.dot(p - p0, direction), 0.0, MOVE_M))
        worst_m = max(worst_m, float(np.linalg.norm(p - (p0 + along * direction))))
        time.sleep(STATE_PERIOD_S)
    time.sleep(SETTLE_S)
    p_end, _ = kin.tcp_pose(settings.arm, np.array(arm.joint_state().positions_rad))
    end_m = float(np.linalg.norm(p_end - (p0 + MOVE_M * direction)))
    travelled_m = float(np.linalg.norm(p_end - p0))
    return worst_m * 1e3, end_m * 1e3, travelled_m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--robot", choices=("fr3", "dual_arx_x5"), default="fr3",
        help="dual_arx_x5: run benchmarks/x5.py (the X5's figures against the bus emulator) with the other options",
    )  # fmt: skip
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--move-s", type=float, default=3.0)
    parser.add_argument("--host", default=HOST, help="loopback address franky-sim serves (default %(default)s)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    args, rest = parser.parse_known_args()
    reads_s, playback_s = STATE_READS_S, PLAYBACK_S
    if args.smoke:
        args.samples, args.move_s, reads_s, playback_s = SMOKE_SIZES
    if args.robot == "dual_arx_x5":
        x5 = Path(__file__).with_name("x5.py")
        smoke = ["--smoke"] if args.smoke else []
        os.execv(sys.executable, [sys.executable, str(x5), "--move-s", str(args.move_s), *smoke, *rest])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    sim = start_sim(args.host)
    arm = FrankaArm(load_fr3_settings())
    try:
        arm.connect(args.host)
        ms = latency(arm, args.samples)
        print(
            f"trajectory -> first SDK command: median {np.median(ms):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms "
            f"({args.samples} trajectories of 25 points, guard + waypoint motion + franky move)"
        )
        hz, jitter_ms, read_ms = state_reads(arm, reads_s)
        print(
            f"joint state at {arm.settings.state_rate_hz:g} Hz: achieved {hz:.1f} Hz, period jitter p95 "
            f"{jitter_ms:.2f} ms, one read median {read_ms:.3f} ms"
        )
        for name, robot_s, late, worst, peak, end in compare_playback(arm, playback_s):
            print(
                f"{playback_s:g} s cosine move as {name}: {robot_s:.2f} s on the robot's clock, error against the "
                f"plan in time {late:.4f} rad, off the planned path max {worst:.4f} rad, peak speed {peak:.2f} rad/s "
                f"(planned {PLAYBACK_PEAK_RAD * np.pi / (2 * playback_s):.2f}), end {end:.4f} rad after settling"
            )
        worst_mm, end_mm, travelled_m = tracking(arm, args.move_s)
        print(
            f"30 cm Cartesian move ({args.move_s:g} s planned, "
            f"dynamics factor {arm.settings.relative_dynamics_factor:g}): "
            f"TCP off the planned line max {worst_mm:.2f} mm, end {end_mm:.2f} mm from the target, "
            f"travelled {travelled_m * 100:.1f} cm"
        )
        print("the same on the ROS graph: benchmarks/fr3_graph.py; the ARX X5 (bus emulator): benchmarks/x5.py")
    finally:
        arm.close()
        sim.kill()
        sim.wait()


if __name__ == "__main__":
    main()
