"""The ARX X5 hardware layer against the bus emulator with the real SDK: bus command rate, trajectory message to first
bus frame, /joint_states of the driver node, and tracking along a 30 cm move in both trajectory modes.

No CAN hardware: the project's motor-bus emulator (``python -m robodojo.hardware.x5_bus``) stands in for the motors,
and the SocketCAN shim (LD_PRELOAD, robodojo/hardware/x5_bus/shim.py) points the unmodified arx5-interface SDK's CAN
sockets at it. The script restarts itself with the shim preloaded (the adapter's bus monitor runs in this process),
then runs two phases, each against fresh emulator processes with the arms at the robot config's ready pose:

A. In this process, an ``Arx5Arm`` for the left arm (can0), connected once per trajectory mode, "stream" then
   "sdk_trajectory" (config/hardware/dual_arx_x5.yaml with only ``trajectory_mode`` changed, and no homing at close):
   part 4's moves from the hold connect() set up, then part 2's baseline.
B. The ROS 2 graph: ``arx5_driver_node`` (both arms, can0 and can1; the same config with ``home_before_damping:
   false``, so that it stops in seconds; it plays in the config's mode) in a private ROS domain (claimed with the
   tests' lock files), localhost discovery, and an rclpy client in this process.

Clocks: the emulator stamps each command frame with its own ``time.monotonic()`` as it arrives; this process uses
``time.monotonic()`` too, the same machine clock (CLOCK_MONOTONIC is system-wide).

What is measured:

1. Bus command rate per motor: from the emulator's command log (every frame the SDK sent), frames per motor id (1, 2,
   4: the EC joints; 5, 6, 7: the Damiao joints; 8: the gripper) while part 4's moves play (their planned spans), in
   each mode, and over 1 s of holding just before the first (the baseline): mean rate [Hz], the rate in each 100 ms
   (median and p5 [Hz]), the inter-frame gaps (median, p95, max [ms]) and how many exceed 10 ms (five SDK cycles
   missed: a stall of the SDK's loop, or of the emulator, on a loaded machine); frames to any other id are counted.
2. Trajectory message to first bus frame: ``--trajectories`` trajectory_msgs/JointTrajectory published on
   /left_arm_controller/joint_trajectory (stamp 0: now; left_joint1..6; 12 points at 25 Hz), each after the previous
   one's FINISHED report and 0.2 s of holding. Each is a ramp at 0.25 rad/s on every joint from the joints last read
   on /joint_states, alternating in sign so the arm stays put (its first point is 0.01 rad from there). Measured from
   ``time.monotonic()`` just before ``publish()`` to the first command frame in the emulator's log that carries a joint
   position other than the one that motor held before the publish: median, p95, max [ms]. Beside it: the driver's own
   ``received_to_sdk_ms`` (its /diagnostics: its callback to ``Arx5Arm.play()`` returned) and publish -> the PLAYING
   report arriving here, and how often the first new frame came more than 10 ms after that report (the SDK
   process's streaming thread starting late). Baseline, phase A: the same trajectories without the graph, from
   reading the joint state, ``TrajectoryGuard.check`` and ``Arx5Arm.play()`` to the same first frame, and from play()
   returned to it, in each mode; the ratio graph / direct.
   Also per mode, what the SDK held between two of them (each ramp ends moving): the velocity field of the held
   command and the joints' distance from its position.
   Why a ramp and not a cosine: command positions are 16-bit fields (0.38 mrad a step), and the trajectory is linear
   between its points from the measured start; a ramp leaves the held position by a step within 1.5 ms of its start,
   while a small cosine's slow start would add 10-50 ms of its own (0.1 to 0.02 rad over 0.48 s).
3. /joint_states of arx5_driver_node over ``--state-window`` s, both arms holding: messages per second (the config
   asks for 100 Hz) and the jitter of the 10 ms period, p50/p95/max of |interval - 10 ms|, from the header stamps (the
   driver's system clock when it read the arms) and from the arrival times in this process's callback; and the CPU
   each process of the graph used over the window (% of one core: the emulator, the driver, its two SDK processes).
4. Tracking along a 30 cm TCP move, per mode: a straight line 0.3 m along world +x (towards the table's middle) from
   the left arm's ready pose, then the same line back, orientation kept, each solved to joints by the project's IK at
   every 25 Hz tick with cosine timing over ``--move-s``, checked by the guard and played with ``Arx5Arm.play``. The
   emulated joints are polled from the emulator's control socket at about 100 Hz (each sample stamped at the middle
   of its request). Against the plan as the adapter plays it (the guard's polyline from the start the adapter
   recorded, linear between points, the last point after the end), pooled over both moves: the joint error at the
   same time (max over joints; max and p95 over the samples [rad]), for the emulated joints and for the positions
   commanded on the bus (stamped when the emulator received them), each with the delay that best aligns it with the
   plan (least squares, 0-200 ms) and where each move's largest error fell; the TCP's distance from the straight line
   (forward kinematics of the emulated joints; max and p95 [mm]; the plan's own at the same instants as the
   baseline); the end error after settling (TCP from the line's end [mm], joints [rad], the worse move); the wall time
   from play() until the adapter reports the end (settled or its settle timeout); and the ratio sdk_trajectory /
   stream of each. Which mode tracks better is decided on the p95 joint error (the max is set by single stalls, see
   part 1). The emulated motors are first-order lags (kd / kp: 25-35 ms with the config's gains) that take the
   commanded velocity as feedforward, without inertia or gravity: the figures compare the two ways of commanding, not
   a real arm's dynamics. The CPU the emulator, the SDK's process and this one used during the moves is printed.

5. E-stop latency through the graph (issue 32's goal: <= 10 ms for every arm, median and max): ``--estops`` times,
   both arms ramp joints 1, 4 and 6 at 0.3 rad/s (towards the middle of their range), 0.3 s in /hardware/estop is
   called (std_srvs/Trigger, from an executor task here), and from ``time.monotonic()`` at the call to the first frame
   from which every joint command of that arm keeps the position it ends at (the emulator's log): median, p95, max per
   arm and for the later of the two (an arm whose commands had not changed for 50 ms before the call is left out and
   counted); then /hardware/release. Then the same under a trajectory flood (``--estop-flood-hz``, default 100; issue
   34's figure): each arm's ramp sent again from its latest joints at that rate until after the e-stop's answer, every
   one checked by the driver's guard; the ratio of the service's answer, flooded / quiet.

Run: ``.venv/bin/python benchmarks/x5.py [--trajectories 20] [--move-s 3.0] [--state-window 5.0] [--estops 20]
[--json out.json]``; about 2 minutes on 2 cores; ``--smoke`` runs every part at its smallest (test/hardware runs it).
Needs arx5-interface, a C compiler (the shim) and the ROS wheels (phase B). Other engineers' test runs may share the
machine: the load average is printed at each stage.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import yaml
from _common import cpu_model, nproc, table, version, write_figures

from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import HardwareError
from robodojo.hardware.x5_bus.emulator import LoggedCommand
from robodojo.hardware.x5_bus.frames import X5_LAYOUT, MitCommand
from robodojo.hardware.x5_bus.shim import SOCKET_DIR_ENV, preloaded, reexec_with_shim

ROBOT = "dual_arx_x5"
ARM = "left"
INTERFACE = "can0"  # the left arm's, config/hardware/dual_arx_x5.yaml
INTERFACES = ("can0", "can1")
MODES = ("stream", "sdk_trajectory")
JOINT_MOTORS = X5_LAYOUT.joint_motor_ids  # joint1..6
GRIPPER_MOTOR = X5_LAYOUT.gripper_motor_id
MOTOR_NAMES = {**{m: f"joint{i + 1}" for i, m in enumerate(JOINT_MOTORS)}, GRIPPER_MOTOR: "gripper"}
MOVE_M = 0.3
DIRECTION = (1.0, 0.0, 0.0)  # world +x: the left arm towards the table's middle
POLL_S = 0.01  # emulated joints polled at about 100 Hz
SETTLE_S = 0.5  # after the adapter reports the end, before the end error is read
HOLD_WINDOW_S = 1.0  # the bus while holding, before the move: part 1's baseline
RAMP_POINTS = 12  # at 25 Hz: 0.48 s
RAMP_SPEED_RAD_S = 0.25
HOLD_BETWEEN_S = 0.2  # after one trajectory ended, before the next (the motors settle, the log is flushed)
LOOKBACK_FRAMES = 2000  # log records read before a trajectory's publish (the log file is flushed every 20 ms)
STEADY_S = 0.05  # the held positions must not change in this long before a publish
LAGS_S = np.arange(0.0, 0.2005, 0.001)
RATE_BIN_S = 0.1  # part 1: frames counted per 100 ms
CONNECT_HOLD_S = 0.5  # after connect(), before the first trajectory (the hold command reaches the bus)
STARTUP_TIMEOUT_S = 90.0  # the driver up and publishing (the wheels' .pth restarts every process once; two SDKs)
REPORT_TIMEOUT_S = 5.0
ESTOP_RAMP_S = 0.8  # part 5: both arms ramp this long at ESTOP_SPEED_RAD_S ...
ESTOP_SPEED_RAD_S = 0.3  # ... (a new position step in nearly every 2 ms frame) ...
ESTOP_JOINTS = (0, 3, 5)  # ... on joints 1, 4 and 6 (turns that keep the TCP's height: the guard's table margin) ...
ESTOP_AFTER_S = 0.3  # ... and the e-stop comes this far into it
ESTOP_SETTLE_S = 0.3  # after the e-stop's answer, before its frames are read (flushed every 20 ms)
SMOKE_SIZES = (2, 1.0, 1.0, 2)  # --smoke: trajectories, move [s], state window [s], e-stops
ARM_BACK_TIMEOUT_S = 20.0  # after a lost contact the driver reconnects every second; a new SDK takes a few


# -- the emulator ------------------------------------------------------------------------------------------------------
class Emulator:
    """A bus emulator process for ``interfaces`` in ``socket_dir`` and its control client."""

    def __init__(self, socket_dir: Path, interfaces: Sequence[str], home: Sequence[float], log: Path) -> None:
        from robodojo.hardware.x5_bus.server import EmulatorClient, start_emulator_process

        socket_dir.mkdir(parents=True, exist_ok=True)
        self.process = start_emulator_process(socket_dir, {name: home for name in interfaces}, log=log)
        self.client = EmulatorClient(socket_dir)

    def joints(self, interface: str = INTERFACE) -> np.ndarray:
        return np.array(self.client.state()[interface]["joints_rad"], dtype=float)

    def close(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session (start_emulator_process)
            try:
                self.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5.0)


def joint_frames(frames: Sequence[LoggedCommand]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per joint motor: the times and positions of its MIT commands."""
    out: dict[int, tuple[list[float], list[float]]] = {m: ([], []) for m in JOINT_MOTORS}
    for f in frames:
        if f.motor_id in out and isinstance(f.command, MitCommand):
            out[f.motor_id][0].append(f.time_s)
            out[f.motor_id][1].append(f.command.position_rad)
    return {m: (np.array(t), np.array(q)) for m, (t, q) in out.items()}


def bus_rates(frames: Sequence[LoggedCommand], windows: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Part 1 over ``windows`` [t0, t1): per motor id, frames, mean rate [Hz], the rate in each RATE_BIN_S of the
    windows (median, p5 [Hz]) and the inter-frame gaps inside a window [ms]; frames to other ids."""
    times: dict[int, list[list[float]]] = {m: [[] for _ in windows] for m in MOTOR_NAMES}
    others = 0
    for f in frames:
        for i, (t0, t1) in enumerate(windows):
            if t0 <= f.time_s < t1:
                if f.motor_id in times:
                    times[f.motor_id][i].append(f.time_s)
                else:
                    others += 1
    total_s = sum(t1 - t0 for t0, t1 in windows)
    motors = {}
    for motor, per_window in times.items():
        gaps = np.concatenate([np.diff(w) for w in per_window]) * 1e3
        bins = np.concatenate(
            [
                np.histogram(w, bins=np.arange(t0, t1 - RATE_BIN_S / 2, RATE_BIN_S))[0] / RATE_BIN_S
                for w, (t0, t1) in zip(per_window, windows, strict=True)
            ]
        )
        motors[motor] = {
            "frames": sum(len(w) for w in per_window),
            "rate_hz": sum(len(w) for w in per_window) / total_s,
            "binned_hz": stats(bins.tolist()),
            "gap_ms": stats(gaps.tolist()),
            "gaps_over_10ms": int(np.sum(gaps > 10.0)),
        }
    return {"window_s": total_s, "motors": motors, "other_ids": others}


def held_command(frames: Sequence[LoggedCommand], t0: float) -> dict[int, MitCommand]:
    """Per joint motor: the last MIT command it was sent before ``t0``."""
    held = {}
    for f in frames:
        if f.time_s < t0 and f.motor_id in JOINT_MOTORS and isinstance(f.command, MitCommand):
            held[f.motor_id] = f.command
    return held


def first_new_frame(frames: Sequence[LoggedCommand], t0: float) -> tuple[float | None, bool]:
    """The time of the first joint command at or after ``t0`` whose position differs from what that motor was
    commanded last before ``t0`` (None: none), and whether the held positions were steady for STEADY_S before."""
    held: dict[int, float] = {}
    steady = True
    for f in frames:
        if f.motor_id not in JOINT_MOTORS or not isinstance(f.command, MitCommand):
            continue
        position = f.command.position_rad
        if f.time_s < t0:
            if f.time_s >= t0 - STEADY_S and f.motor_id in held and held[f.motor_id] != position:
                steady = False
            held[f.motor_id] = position
        elif f.motor_id in held and position != held[f.motor_id]:
            return f.time_s, steady
    return None, steady


def frozen_at(frames: Sequence[LoggedCommand], t0: float) -> float | None:
    """When every joint motor's command stopped changing after ``t0``: per motor, the first frame from which its
    position stays what it ends at; the latest of those (None: no frame after ``t0``)."""
    by_motor: dict[int, list[tuple[float, float]]] = {}
    for f in frames:
        if f.time_s >= t0 and f.motor_id in JOINT_MOTORS and isinstance(f.command, MitCommand):
            by_motor.setdefault(f.motor_id, []).append((f.time_s, f.command.position_rad))
    if len(by_motor) < len(JOINT_MOTORS):
        return None
    frozen = []
    for items in by_motor.values():
        final = items[-1][1]
        k = len(items) - 1
        while k > 0 and items[k - 1][1] == final:
            k -= 1
        frozen.append(items[k][0])
    return max(frozen)


# -- statistics --------------------------------------------------------------------------------------------------------
def stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return {"n": 0, "median": math.nan, "p5": math.nan, "p95": math.nan, "max": math.nan, "min": math.nan}
    return {
        "n": int(a.size),
        "median": float(np.median(a)),
        "p5": float(np.percentile(a, 5)),
        "p95": float(np.percentile(a, 95)),
        "max": float(a.max()),
        "min": float(a.min()),
    }


def f1(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def f2(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def ratio(a: float, b: float) -> str:
    return "-" if not (math.isfinite(a) and math.isfinite(b)) or b == 0 else f"{a / b:.2f}"


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def others_text() -> str:
    """Other engineers' robodojo processes (test graphs, emulators, SDK hosts) that share the machine right now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "robodojo." in cmd or "pytest" in cmd:
            found.append(cmd.split(" -m ")[-1].split()[0] if " -m " in cmd else cmd.split()[-1])
    return f"{len(found)} other robodojo/pytest processes running" + (
        f" ({', '.join(sorted(found))[:200]})" if found else ""
    )


def cpu_s(pid: int) -> float:
    """CPU time [s] a process used so far (user + system, all its threads); NaN once it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
    return out


class CpuMeter:
    """The share of one core [%] that some processes used between start() and stop()."""

    def __init__(self, processes: dict[str, int]) -> None:
        self.processes = processes

    def start(self) -> CpuMeter:
        self._t0 = time.monotonic()
        self._cpu0 = {name: cpu_s(pid) for name, pid in self.processes.items()}
        return self

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        return {name: (cpu_s(pid) - self._cpu0[name]) / wall * 100 for name, pid in self.processes.items()}


# -- trajectories ------------------------------------------------------------------------------------------------------
def ramp(q0: Sequence[float], sign: float, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Part 2's trajectory: RAMP_POINTS points at 25 Hz moving every joint at RAMP_SPEED_RAD_S from ``q0``."""
    times = np.arange(1, RAMP_POINTS + 1) * dt_s
    return times, np.asarray(q0, dtype=float) + np.outer(times, np.full(len(q0), sign * RAMP_SPEED_RAD_S))


def line_plan(
    kin: Any, q0: np.ndarray, direction: np.ndarray, move_s: float, dt_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Part 4's plan: (times, joint points, line start) for the straight TCP line from ``q0`` along ``direction``."""
    p0, R0 = kin.tcp_pose(ARM, q0)
    times = np.arange(1, round(move_s / dt_s) + 1) * dt_s
    s = (1 - np.cos(np.pi * times / move_s)) / 2
    q, points = q0, []
    for sk in s:
        sol = kin.solve(ARM, p0 + sk * MOVE_M * direction, R0, q)
        if not sol.converged:
            raise SystemExit(f"IK did not converge at s={sk:.3f} ({sol.pos_error_m * 1e3:.2f} mm)")
        q = sol.q
        points.append(q)
    return times, np.array(points), p0


def plan_at(times: np.ndarray, points: np.ndarray, start_rad: np.ndarray, start_s: float, t: np.ndarray) -> np.ndarray:
    """The played polyline (robodojo.hardware.arx5_host.position_at) at monotonic times ``t``: (len(t), joints)."""
    xp = np.concatenate(([start_s], start_s + times))
    fp = np.vstack((start_rad, points))
    return np.column_stack([np.interp(t, xp, fp[:, j]) for j in range(fp.shape[1])])


def squared_errors_by_lag(t: np.ndarray, q: np.ndarray, plan: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """For each delay in LAGS_S: the sum of squared errors of ``q`` (samples at ``t``) against ``plan`` that much
    earlier."""
    return np.array([float(np.sum((q - plan(t - lag)) ** 2)) for lag in LAGS_S])


def line_distance(p: np.ndarray, p0: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Distance [m] of TCP positions ``p`` (n, 3) from the segment p0 .. p0 + MOVE_M * direction."""
    along = np.clip((p - p0) @ direction, 0.0, MOVE_M)
    return np.linalg.norm(p - (p0 + along[:, None] * direction), axis=1)


class SdkEcho:
    """This process's stdout with the SDK's echoed log lines (robodojo.hardware.arx5_host.SdkHost, "[arx5 can0] ...")
    sent to a file instead; its warnings and errors reach the adapter's on_sdk_log all the same."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0

    def __enter__(self) -> SdkEcho:
        self._stdout, self._file = sys.stdout, self.path.open("a")
        sys.stdout = self  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._stdout
        self._file.close()

    def write(self, text: str) -> int:
        if text.startswith("[arx5 "):
            self.lines += 1
            with contextlib.suppress(ValueError):  # a last line after the phase ended: the file is closed
                return self._file.write(text)
            return 0
        return self._stdout.write(text)

    def flush(self) -> None:
        self._stdout.flush()
        with contextlib.suppress(ValueError):
            self._file.flush()


# -- phase A: Arx5Arm in this process ----------------------------------------------------------------------------------
def recover(arm: Any, incidents: list[str], what: str, exc: Exception) -> None:
    """A fault in the middle of a measurement (lost contact: the SDK's loop stalled for longer than the config's
    bus.silent_after_s, which a loaded 2-core machine does): noted, and the arm connected again (a new SDK process
    that holds where the arm stands)."""
    incidents.append(f"{what}: {type(exc).__name__}: {str(exc)[:160]}")
    arm.connect()
    time.sleep(CONNECT_HOLD_S)


def go_to(arm: Any, q_target: np.ndarray, duration_s: float = 2.0) -> None:
    """A cosine joint move to ``q_target`` (back to a move's start after a fault)."""
    q0 = np.array(arm.joint_state().positions_rad)
    times = np.arange(1, round(duration_s / arm.guard.dt_s) + 1) * arm.guard.dt_s
    points = q0 + np.outer((1 - np.cos(np.pi * times / duration_s)) / 2, q_target - q0)
    arm.play(arm.guard.check(TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points))), q0))
    arm.wait(duration_s + 5.0)
    time.sleep(SETTLE_S)


def direct_latency(arm: Any, emulator: Emulator, n: int, incidents: list[str]) -> list[dict[str, Any]]:
    """Part 2's baseline: state read + guard check + play() -> the first new frame, ``n`` times."""
    dt = arm.guard.dt_s
    records = []
    for k in range(n):
        try:
            records.append(direct_once(arm, emulator, k, dt))
        except HardwareError as exc:
            recover(arm, incidents, f"direct trajectory {k}", exc)
    return records


def direct_once(arm: Any, emulator: Emulator, k: int, dt: float) -> dict[str, Any]:
    """One of part 2's baseline trajectories (ramp sign ``(-1) ** k``)."""
    q0 = arm.joint_state().positions_rad
    times, points = ramp(q0, (-1) ** k, dt)
    cmd = TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points)))
    n0 = emulator.client.command_count(INTERFACE)
    t0 = time.monotonic()
    reading = arm.joint_state()
    arm.play(arm.guard.check(cmd, reading.positions_rad, reading.velocities_rad_s))
    t_play = time.monotonic()
    ended = arm.wait(5.0)
    time.sleep(HOLD_BETWEEN_S)
    frames = emulator.client.commands(INTERFACE, since=max(0, n0 - LOOKBACK_FRAMES))
    first, steady = first_new_frame(frames, t0)
    held = held_command(frames, t0)
    commanded = np.array([held[m].position_rad for m in JOINT_MOTORS])
    return {
        # What the SDK held before this trajectory: its velocity field, and the joints' distance from its position.
        "held_velocity_rad_s": max(abs(held[m].velocity_rad_s) for m in JOINT_MOTORS),
        "held_offset_rad": float(np.abs(np.array(reading.positions_rad) - commanded).max()),
        "play_ms": (t_play - t0) * 1e3,
        "first_frame_ms": math.nan if first is None else (first - t0) * 1e3,
        "steady_before": steady,
        "ended": ended,
    }


def one_move(
    arm: Any, emulator: Emulator, kin: Any, direction: np.ndarray, move_s: float, hold_s: float
) -> dict[str, Any]:
    """One straight 30 cm line from where the arm stands along ``direction``, played after ``hold_s`` of holding:
    the raw material of part 4 (and part 1's windows)."""
    dt = arm.guard.dt_s
    q0 = np.array(arm.joint_state().positions_rad)
    t_ik = time.perf_counter()
    times, points, p0 = line_plan(kin, q0, direction, move_s, dt)
    ik_s = time.perf_counter() - t_ik
    checked = arm.guard.check(TrajectoryCommand(arm.joint_names, tuple(times), tuple(map(tuple, points))), q0)
    n0 = emulator.client.command_count(INTERFACE)
    hold0 = time.monotonic()
    time.sleep(hold_s)
    hold1 = time.monotonic()
    arm.play(checked)
    playing = arm._playing  # the adapter's own record of the start (a benchmark of the adapter: read, not changed)
    start_s, start_rad = playing.start_s, np.array(playing.start_rad)
    samples: list[tuple[float, list[float]]] = []
    ended_s = math.nan
    next_s = time.monotonic()
    while True:
        ta = time.monotonic()
        q = emulator.client.state()[INTERFACE]["joints_rad"]
        samples.append(((ta + time.monotonic()) / 2, q))
        if math.isnan(ended_s):
            arm.feed()
            if not arm.is_playing():
                ended_s = time.monotonic()
        elif time.monotonic() > ended_s + SETTLE_S:
            break
        next_s += POLL_S
        time.sleep(max(0.0, next_s - time.monotonic()))
    final = emulator.joints()
    time.sleep(0.05)  # the log file's last flush
    frames = emulator.client.commands(INTERFACE, since=max(0, n0 - LOOKBACK_FRAMES))

    def plan(t: np.ndarray) -> np.ndarray:
        return plan_at(times, points, start_rad, start_s, t)

    t = np.array([s[0] for s in samples])
    q = np.array([s[1] for s in samples])
    moving = t <= ended_s
    by_motor = joint_frames([f for f in frames if start_s <= f.time_s <= ended_s])
    cmd_t = np.concatenate([by_motor[m][0] for m in JOINT_MOTORS])
    cmd_j = np.concatenate([np.full(by_motor[m][0].size, j) for j, m in enumerate(JOINT_MOTORS)])
    cmd_q = np.concatenate([by_motor[m][1] for m in JOINT_MOTORS])

    def cmd_plan(t_cmd: np.ndarray) -> np.ndarray:
        return plan(t_cmd)[np.arange(t_cmd.size), cmd_j]

    tcp = np.array([kin.tcp_pose(ARM, qi)[0] for qi in q[moving]])
    planned_tcp = np.array([kin.tcp_pose(ARM, qi)[0] for qi in plan(t[moving])])
    p_end = kin.tcp_pose(ARM, final)[0]
    joint_errors = np.abs(q[moving] - plan(t[moving]))
    command_errors = np.abs(cmd_q - cmd_plan(cmd_t))
    i, j = np.unravel_index(int(np.argmax(joint_errors)), joint_errors.shape)
    k = int(np.argmax(command_errors))
    return {
        "ik_s": ik_s,
        "planned_s": float(times[-1]),
        "ended_after_s": ended_s - start_s,
        "joint_errors": joint_errors.max(axis=1),
        "joint_worst": (float(joint_errors[i, j]), float(t[moving][i] - start_s), f"joint{j + 1}"),
        "command_worst": (float(command_errors[k]), float(cmd_t[k] - start_s), f"joint{cmd_j[k] + 1}"),
        "joint_sq_by_lag": (squared_errors_by_lag(t[moving], q[moving], plan), q[moving].size),
        "command_errors": command_errors,
        "command_sq_by_lag": (squared_errors_by_lag(cmd_t, cmd_q, cmd_plan), cmd_q.size),
        "off_line": line_distance(tcp, p0, direction),
        "plan_off_line": line_distance(planned_tcp, p0, direction),
        "end_error_mm": float(np.linalg.norm(p_end - (p0 + MOVE_M * direction))) * 1e3,
        "end_joint_error_rad": float(np.abs(final - points[-1]).max()),
        "start_rad": q0,
        "target_rad": points[-1],
        "poll_hz": (len(samples) - 1) / (t[-1] - t[0]),
        "hold_window": (hold0, hold1),
        "move_window": (start_s, start_s + float(times[-1])),
        "frames": frames,
    }


def tracking(arm: Any, emulator: Emulator, kin: Any, move_s: float, incidents: list[str]) -> dict[str, Any]:
    """Part 4 (and part 1's windows) for one mode: the line out along DIRECTION and back, pooled. A move a fault
    interrupts is played again once, from its start."""
    direction = np.array(DIRECTION)
    moves: list[dict[str, Any]] = []
    start = np.array(arm.joint_state().positions_rad)
    for n, (sign, hold_s) in enumerate(((1.0, HOLD_WINDOW_S), (-1.0, SETTLE_S))):
        for attempt in range(2):
            try:
                moves.append(one_move(arm, emulator, kin, sign * direction, move_s, hold_s))
                break
            except HardwareError as exc:
                if attempt:
                    raise
                recover(arm, incidents, f"move {n + 1}", exc)
                go_to(arm, start if n == 0 else moves[0]["target_rad"])

    def pooled(key: str) -> np.ndarray:
        return np.concatenate([m[key] for m in moves])

    def lag_ms(key: str) -> float:
        total = sum(m[key][0] for m in moves)
        return float(LAGS_S[int(np.argmin(total))]) * 1e3

    out: dict[str, Any] = {"planned_s": moves[0]["planned_s"], "moves": len(moves)}
    out["ik_s"] = max(m["ik_s"] for m in moves)
    out["ended_after_s"] = max(m["ended_after_s"] for m in moves)
    for key in ("joint_errors", "command_errors"):
        errors = pooled(key)
        out[f"{key}_max_rad"] = float(errors.max())
        out[f"{key}_p95_rad"] = float(np.percentile(errors, 95))
    for key in ("joint_worst", "command_worst"):
        out[key] = [(f"move {n + 1}", *m[key]) for n, m in enumerate(moves)]
    out["joint_lag_ms"] = lag_ms("joint_sq_by_lag")
    out["command_lag_ms"] = lag_ms("command_sq_by_lag")
    for key in ("off_line", "plan_off_line"):
        distances = pooled(key) * 1e3
        out[f"{key}_max_mm"] = float(distances.max())
        out[f"{key}_p95_mm"] = float(np.percentile(distances, 95))
    out["end_error_mm"] = max(m["end_error_mm"] for m in moves)
    out["end_joint_error_rad"] = max(m["end_joint_error_rad"] for m in moves)
    out["poll_hz"] = float(np.mean([m["poll_hz"] for m in moves]))
    out["bus_hold"] = bus_rates(moves[0]["frames"], [moves[0]["hold_window"]])
    last_s = moves[0]["frames"][-1].time_s  # the second move's log may start before the first one's ended
    frames = moves[0]["frames"] + [f for f in moves[1]["frames"] if f.time_s > last_s]
    out["bus_move"] = bus_rates(frames, [m["move_window"] for m in moves])
    return out


def arm_phase(mode: str, socket_dir: Path, log_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Phase A for one trajectory mode: a fresh emulator, a fresh Arx5Arm, parts 2 (baseline), 4 and 1."""
    from robodojo.hardware.arx5 import Arx5Arm
    from robodojo.hardware.settings import load_arx5_settings
    from robodojo.robots.ik import ArmKinematics

    base = load_arx5_settings().arm(ARM)
    settings = replace(base, trajectory_mode=mode, home_before_damping=False)
    home = settings.robot.arm(ARM).home_joints_rad
    out: dict[str, Any] = {"mode": mode, "sdk_log": [], "incidents": []}
    emulator = Emulator(socket_dir, [INTERFACE], home, log_dir / f"emulator_{mode}.log")
    arm = Arx5Arm(settings, on_sdk_log=lambda level, message: out["sdk_log"].append(f"{level}: {message}"))
    try:
        t0 = time.perf_counter()
        arm.connect()
        out["connect_s"] = time.perf_counter() - t0
        time.sleep(CONNECT_HOLD_S)
        # The moves first, from the hold connect() set up: part 2's ramps end moving, and the SDK's trajectory mode
        # then holds with their last velocity as feedforward (part 2 prints it).
        processes = {"emulator": emulator.process.pid}
        processes |= {f"SDK host {pid}": pid for pid in children(os.getpid()) if pid != emulator.process.pid}
        meter = CpuMeter({**processes, "this process": os.getpid()}).start()
        out["move"] = tracking(arm, emulator, ArmKinematics(settings.robot), args.move_s, out["incidents"])
        out["cpu_percent_moves"] = meter.stop()
        out["load_move"] = load_text()
        out["latency"] = direct_latency(arm, emulator, args.trajectories, out["incidents"])
        out["load_latency"] = load_text()
    except HardwareError as exc:
        out["failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        t0 = time.perf_counter()
        arm.close()
        out["close_s"] = time.perf_counter() - t0
        emulator.close()
    return out


# -- phase B: the driver node on the graph -----------------------------------------------------------------------------
def driver_config(log_dir: Path) -> Path:
    """config/hardware/dual_arx_x5.yaml with home_before_damping false (the node then stops in seconds)."""
    from robodojo.hardware.settings import HARDWARE_DIR

    data = yaml.safe_load((HARDWARE_DIR / "dual_arx_x5.yaml").read_text())
    data["shutdown"]["home_before_damping"] = False
    path = log_dir / "dual_arx_x5_no_homing.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def joint_state_figures(items: Sequence[tuple[float, Any]], t0: float, t1: float, period_s: float) -> dict[str, Any]:
    """Part 3: rate and period jitter of the /joint_states that arrived in [t0, t1) (wall clock)."""
    window = [(a, r[0]) for a, r in items if t0 <= a < t1]
    out: dict[str, Any] = {"messages": len(window), "rate_hz": len(window) / (t1 - t0), "window_s": t1 - t0}
    out["names"] = sorted({len(r[1]) for a, r in items if t0 <= a < t1})
    for key, times in (("stamp", np.array([s for _, s in window])), ("arrival", np.array([a for a, _ in window]))):
        periods = np.diff(times) if times.size > 1 else np.zeros(0)
        out[key] = stats((np.abs(periods - period_s) * 1e3).tolist())
        out[key]["late_2x"] = int(np.sum(periods > 2 * period_s))
    out["period_ms"] = period_s * 1e3
    return out


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def graph_trajectories(client: Any, emulator: Emulator, joints: Any, node: Any, n: int) -> list[dict[str, Any]]:
    """Part 2 on the graph: ``n`` trajectories published to the driver's left arm controller."""
    from agent_bringup.msg import TrajectoryStatus
    from builtin_interfaces.msg import Duration
    from diagnostic_msgs.msg import DiagnosticArray
    from fr3_graph import Log, stamp_s
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_graph import wait_for
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from robodojo.hardware.settings import load_arx5_settings
    from robodojo.nodes import topics
    from robodojo.robots.config import load_robot_config

    robot = load_robot_config(ROBOT)
    names = list(load_arx5_settings().arm(ARM).joint_names)
    status = Log(lambda m: (int(m.state), m.reason))

    def left_diagnostics(msg: Any) -> tuple[float, dict[str, str]] | None:
        for s in msg.status:
            if s.name.endswith(f": {ARM}"):
                return stamp_s(msg.header.stamp), {kv.key: kv.value for kv in s.values}
        return None

    diagnostics = Log(left_diagnostics)
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    node_ros = client.node
    node_ros.create_subscription(
        TrajectoryStatus, topics.trajectory_status(topics.arm_controller_name(ARM)), status, qos
    )
    node_ros.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, diagnostics, QoSProfile(depth=10))
    pub = node_ros.create_publisher(JointTrajectory, topics.arm_controller(ARM), 10)
    wait_for(lambda: pub.get_subscription_count() > 0, 30.0, "the driver's left arm trajectory subscription", [node])
    wait_for(lambda: diagnostics.count() > 0, 10.0, "/diagnostics from arx5_driver_node", [node])
    time.sleep(0.5)  # the status subscription matched too
    terminal = {TrajectoryStatus.FINISHED, TrajectoryStatus.STOPPED, TrajectoryStatus.REPLACED}
    terminal |= {TrajectoryStatus.EXPIRED, TrajectoryStatus.REFUSED}
    records: list[dict[str, Any]] = []
    for k in range(n):
        # An arm that lost contact (see the driver's log) leaves /joint_states until the driver reconnected it.
        if not wait_until(lambda: all(name in joints.last()[1] for name in names), ARM_BACK_TIMEOUT_S):
            records.append({"k": k, "failed": f"the left arm not on /joint_states for {ARM_BACK_TIMEOUT_S:g} s"})
            break
        latest = joints.last()[1]
        times, points = ramp([latest[name] for name in names], (-1) ** k, robot.control_dt_s)
        msg = JointTrajectory(joint_names=names)  # header.stamp 0: start now
        msg.points = [
            JointTrajectoryPoint(
                positions=[float(v) for v in p], time_from_start=Duration(sec=int(t), nanosec=round((t % 1) * 1e9))
            )
            for t, p in zip(times, points, strict=True)
        ]
        mark = status.mark()
        n0 = emulator.client.command_count(INTERFACE)
        t_wall = time.time()
        t0 = time.monotonic()
        pub.publish(msg)
        record: dict[str, Any] = {"k": k, "publish_s": t0}
        first = status.wait(mark, lambda r: r[0] in (TrajectoryStatus.PLAYING, TrajectoryStatus.REFUSED), 5.0)
        if first is None or first[2][0] != TrajectoryStatus.PLAYING:
            record["failed"] = "no PLAYING report within 5 s" if first is None else f"REFUSED: {first[2][1]}"
        else:
            record["publish_to_playing_ms"] = (first[1] - t_wall) * 1e3
            end = status.wait(first[0] + 1, lambda r: r[0] in terminal, REPORT_TIMEOUT_S)
            if end is None or end[2][0] != TrajectoryStatus.FINISHED:
                record["failed"] = f"did not finish within {REPORT_TIMEOUT_S:g} s ({end and end[2]})"
            diag = diagnostics.wait(0, lambda d, after=first[1]: d[0] > after and "received_to_sdk_ms" in d[1], 3.0)
            if diag is not None:
                record["received_to_sdk_ms"] = float(diag[2][1]["received_to_sdk_ms"])
        time.sleep(HOLD_BETWEEN_S)
        frames = emulator.client.commands(INTERFACE, since=max(0, n0 - LOOKBACK_FRAMES))
        first_s, steady = first_new_frame(frames, t0)
        record["steady_before"] = steady
        if first_s is not None:
            record["first_frame_ms"] = (first_s - t0) * 1e3
        records.append(record)
    node_ros.destroy_publisher(pub)
    return records


def graph_estops(
    client: Any, emulator: Emulator, joints: Any, node: Any, n: int, flood_hz: float = 0.0
) -> list[dict[str, Any]]:
    """Part 5 on the graph: ``n`` e-stops (/hardware/estop) while both arms ramp; each released after. With
    ``flood_hz``, each arm's ramp is sent again from its latest joints at that rate until the e-stop was answered (a
    stream of trajectories, every one checked by the guard, as a teleoperation client sends them)."""
    from builtin_interfaces.msg import Duration
    from ros_graph import Pending, wait_for
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from robodojo.hardware.settings import load_arx5_settings
    from robodojo.hardware.trajectory_guard import TrajectoryGuard
    from robodojo.nodes import topics
    from robodojo.nodes.arm_driver_node import ESTOP, RELEASE
    from robodojo.robots.config import load_robot_config

    dt = load_robot_config(ROBOT).control_dt_s
    settings = load_arx5_settings().arms
    arms = {a.arm: (a.interface, list(a.joint_names)) for a in settings}
    middle = {}  # of each joint's range: the ramps head there, so that the guard accepts them whatever the drift
    for a in settings:
        limits = TrajectoryGuard(a).limits
        middle[a.arm] = np.array([(limits[n].lower + limits[n].upper) / 2.0 for n in a.joint_names])
    node_ros = client.node
    estop, release = node_ros.create_client(Trigger, ESTOP), node_ros.create_client(Trigger, RELEASE)
    pubs = {arm: node_ros.create_publisher(JointTrajectory, topics.arm_controller(arm), 10) for arm in arms}
    wait_for(lambda: estop.service_is_ready() and release.service_is_ready(), 30.0, "the e-stop services", [node])
    wait_for(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()), 30.0, "both controllers", [node])
    times = np.arange(1, round(ESTOP_RAMP_S / dt) + 1) * dt
    records: list[dict[str, Any]] = []
    names = [name for _, arm_names in arms.values() for name in arm_names]

    def ramp_msg(arm_names: list[str], q0: np.ndarray, direction: np.ndarray) -> Any:
        msg = JointTrajectory(joint_names=arm_names)
        msg.points = [
            JointTrajectoryPoint(
                positions=[float(v) for v in q0 + direction * ESTOP_SPEED_RAD_S * t],
                time_from_start=Duration(sec=int(t), nanosec=round((t % 1) * 1e9)),
            )
            for t in times
        ]
        return msg

    def flood(directions: dict[str, np.ndarray], stop: threading.Event) -> None:
        while not stop.wait(1.0 / flood_hz):
            latest = joints.last()[1]
            for arm, (_, arm_names) in arms.items():
                if all(name in latest for name in arm_names):
                    q = np.array([latest[name] for name in arm_names])
                    pubs[arm].publish(ramp_msg(arm_names, q, directions[arm]))

    for k in range(n):
        if not wait_until(lambda: all(name in joints.last()[1] for name in names), ARM_BACK_TIMEOUT_S):
            records.append({"k": k, "failed": f"an arm not on /joint_states for {ARM_BACK_TIMEOUT_S:g} s"})
            break
        latest = joints.last()[1]
        directions = {}
        for arm, (_, arm_names) in arms.items():
            q0 = np.array([latest[name] for name in arm_names])
            direction = np.zeros(len(q0))
            moved = list(ESTOP_JOINTS)
            direction[moved] = np.where(q0[moved] < middle[arm][moved], 1.0, -1.0)
            directions[arm] = direction
            pubs[arm].publish(ramp_msg(arm_names, q0, direction))
        flooding = threading.Event()
        flooder = threading.Thread(target=flood, args=(directions, flooding), daemon=True)
        if flood_hz > 0:
            flooder.start()
        time.sleep(ESTOP_AFTER_S)
        counts = {iface: emulator.client.command_count(iface) for iface, _ in arms.values()}
        sent: dict[str, float] = {}

        def call(service: Any = estop, sent: dict[str, float] = sent) -> Any:
            sent["s"] = time.monotonic()
            return service.call_async(Trigger.Request())

        pending = Pending(client, call)
        record: dict[str, Any] = {"k": k}
        if not pending.wait(5.0):
            record["failed"] = "no answer to the e-stop within 5 s"
        else:
            record["answer_ms"] = (pending.done_s - pending.sent_s) * 1e3
        time.sleep(ESTOP_SETTLE_S)  # the flood goes on meanwhile: the e-stop refuses it
        flooding.set()
        if flooder.is_alive():
            flooder.join()
        for arm, (iface, _) in arms.items():
            frames = emulator.client.commands(iface, since=max(0, counts[iface] - LOOKBACK_FRAMES))
            frozen = frozen_at(frames, sent["s"])
            _, steady = first_new_frame(frames, sent["s"])  # steady: its commands did not change for STEADY_S
            if steady:
                record[f"{arm}_not_moving"] = True  # its trajectory was refused or ended: nothing to measure
            elif frozen is not None:
                record[f"{arm}_frozen_ms"] = (frozen - sent["s"]) * 1e3
        records.append(record)
        done = Pending(client, lambda: release.call_async(Trigger.Request()))
        if not done.wait(5.0) or not done.future.result().success:  # type: ignore[attr-defined]
            records.append({"k": k, "failed": "the release was not answered or refused"})
            break
        time.sleep(HOLD_BETWEEN_S)
    for pub in pubs.values():
        node_ros.destroy_publisher(pub)
    return records


def graph_phase(socket_dir: Path, log_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Phase B: parts 3 and 2 through arx5_driver_node."""
    from fr3_graph import Client, Log, stamp_s
    from ros_graph import GraphDown, build, wait_for

    from robodojo.hardware.settings import load_arx5_settings
    from robodojo.hardware.x5_bus.shim import preload_environment
    from robodojo.nodes.process_graph import NodeProcess, claim_ros_domain, ros_environment
    from robodojo.robots.config import load_robot_config

    out: dict[str, Any] = {}
    try:
        out["build_s"] = build(log_dir)
    except GraphDown as exc:
        out["failed"] = str(exc)
        return out
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState

    from robodojo.nodes import topics

    home = load_robot_config(ROBOT).arm(ARM).home_joints_rad
    settings = load_arx5_settings().arm(ARM)
    names = (*settings.joint_names, settings.robot.arm(ARM).gripper_joint)
    out["mode"] = settings.trajectory_mode
    emulator = Emulator(socket_dir, INTERFACES, home, log_dir / "emulator_graph.log")
    try:
        domain_id, lock = claim_ros_domain()
    except BaseException:
        emulator.close()
        raise
    out["domain_id"] = domain_id
    env = {**ros_environment(domain_id=domain_id, log_dir=log_dir / "ros_log"), **preload_environment(socket_dir)}
    params = {"robot": ROBOT, "hardware_config": str(driver_config(log_dir))}
    t0 = time.perf_counter()
    node = NodeProcess("arx5_driver_node", params, env, log_dir / "arx5_driver_node.log", cwd=log_dir)
    client = Client(domain_id)
    try:
        joints = Log(lambda m: (stamp_s(m.header.stamp), dict(zip(m.name, m.position, strict=False))))
        client.node.create_subscription(JointState, topics.JOINT_STATES, joints, QoSProfile(depth=50))
        wait_for(lambda: joints.count() > 0, STARTUP_TIMEOUT_S, "/joint_states from arx5_driver_node", [node])
        out["up_s"] = time.perf_counter() - t0

        def both_arms_for_1_s() -> bool:  # an arm that lost contact leaves /joint_states until it reconnects
            with joints.cond:
                recent = [r for a, r in joints.items if a > time.time() - 1.0]
            return len(recent) > 50 and all(len(r[1]) == expected for r in recent)

        expected = 2 * len(names)  # both arms' joints and one finger each
        wait_for(both_arms_for_1_s, 30.0, "/joint_states with both arms for 1 s", [node])
        out["stable_s"] = time.perf_counter() - t0
        processes = {"emulator": emulator.process.pid, "arx5_driver_node": node.pid}
        processes |= {f"SDK host {pid}": pid for pid in children(node.pid)}
        meter = CpuMeter({**processes, "this process": os.getpid()}).start()
        w0 = time.time()
        time.sleep(args.state_window)
        out["cpu_percent"] = meter.stop()
        with joints.cond:
            items = list(joints.items)
        out["joint_states"] = joint_state_figures(items, w0, time.time(), 1.0 / settings.state_rate_hz)
        out["load_states"] = load_text()
        out["trajectories"] = graph_trajectories(client, emulator, joints, node, args.trajectories)
        out["load_trajectories"] = load_text()
        out["estops"] = graph_estops(client, emulator, joints, node, args.estops)
        out["load_estops"] = load_text()
        if args.estop_flood_hz > 0:
            out["flood_hz"] = args.estop_flood_hz
            out["flooded_estops"] = graph_estops(client, emulator, joints, node, args.estops, args.estop_flood_hz)
            out["load_flooded_estops"] = load_text()
    except GraphDown as exc:
        out["failed"] = str(exc)
    finally:
        t1 = time.perf_counter()
        out["exit_code"] = node.stop()
        out["stop_s"] = time.perf_counter() - t1
        out["driver_log"] = [line for line in node.output().splitlines() if "ERROR" in line or "WARN" in line]
        client.close()
        lock.close()
        emulator.close()
    return out


# -- report ------------------------------------------------------------------------------------------------------------
def bus_table(arms: dict[str, dict[str, Any]]) -> None:
    rows: list[tuple[str, ...]] = []
    for mode, a in arms.items():
        if "move" not in a:
            continue
        move = a["move"]
        windows = (("holding 1 s", "bus_hold"), (f"{move['moves']} x {move['planned_s']:g} s moves", "bus_move"))
        for label, key in windows:
            bus = move[key]
            for motor, m in bus["motors"].items():
                g, b = m["gap_ms"], m["binned_hz"]
                rows.append(
                    (mode, label, f"{motor} {MOTOR_NAMES[motor]}", str(m["frames"]), f1(m["rate_hz"]))
                    + (f1(b["median"]), f1(b["p5"]), f2(g["median"]), f2(g["p95"]), f2(g["max"]))
                    + (str(m["gaps_over_10ms"]),)
                )
            rows.append((mode, label, "other ids", str(bus["other_ids"]), *[""] * 7))
    table(
        ("mode", "window", "motor", "frames", "Hz", "Hz/100ms med", "p5", "gap med ms", "p95", "max", "> 10 ms"),
        rows,
        "<<<>>>>>>>>",
    )


def print_arms(arms: dict[str, dict[str, Any]], graph: dict[str, Any]) -> None:
    for mode, a in arms.items():
        print(
            f"phase A, {mode}: Arx5Arm.connect {a.get('connect_s', math.nan):.2f} s, close {a['close_s']:.2f} s (no "
            f"homing); SDK warnings/errors: {len(a['sdk_log'])}"
            f"{' ' + '; '.join(a['sdk_log'][:3]) if a['sdk_log'] else ''}"
        )
        cpu = ", ".join(f"{name} {pct:.0f}%" for name, pct in a.get("cpu_percent_moves", {}).items())
        print(f"   CPU during part 4's moves, % of one core: {cpu}")
        for incident in a["incidents"]:
            print(f"   FAULT, measurement repeated after a new connect(): {incident}")
        if "failed" in a:
            print(f"   phase A, {mode} FAILED: {a['failed']}")
    print(
        f"1. bus command rate per motor on can0 while holding and while part 4's moves play (emulator log; "
        f"{' / '.join(a.get('load_move', '-') for a in arms.values())})"
    )
    bus_table(arms)
    print()
    rows: list[tuple[str, ...]] = []
    for mode, a in arms.items():
        recs = a.get("latency", [])
        unsteady = sum(1 for r in recs if not r["steady_before"])
        s = stats([r["first_frame_ms"] for r in recs])
        p = stats([r["play_ms"] for r in recs])
        rows.append((f"direct {mode}: state + check + play() -> first new frame", str(s["n"]))
                    + (f2(s["median"]), f2(s["p95"]), f2(s["max"]), str(unsteady)))  # fmt: skip
        rows.append((f"direct {mode}: state + check + play() returned", str(p["n"]))
                    + (f2(p["median"]), f2(p["p95"]), f2(p["max"]), ""))  # fmt: skip
        d = stats([r["first_frame_ms"] - r["play_ms"] for r in recs])
        rows.append((f"direct {mode}: play() returned -> first new frame", str(d["n"]))
                    + (f2(d["median"]), f2(d["p95"]), f2(d["max"]), ""))  # fmt: skip
    recs = graph.get("trajectories", [])
    if recs:
        for label, key in (
            (f"graph ({graph.get('mode', '?')}): publish -> first new frame", "first_frame_ms"),
            ("graph: driver received_to_sdk_ms (callback -> play() returned)", "received_to_sdk_ms"),
            ("graph: publish -> PLAYING report here", "publish_to_playing_ms"),
        ):
            s = stats([r[key] for r in recs if key in r])
            unsteady = sum(1 for r in recs if not r["steady_before"]) if key == "first_frame_ms" else ""
            rows.append((label, str(s["n"]), f2(s["median"]), f2(s["p95"]), f2(s["max"]), str(unsteady)))
    print(
        f"2. trajectory -> first bus frame carrying it ({RAMP_POINTS} points at 25 Hz, a {RAMP_SPEED_RAD_S:g} rad/s "
        f"ramp on every joint, alternating; direct: {' / '.join(a.get('load_latency', '-') for a in arms.values())}; "
        f"graph: {graph.get('load_trajectories', '-')})"
    )
    table(("ms", "n", "median", "p95", "max", "not steady before"), rows, "<>>>>>")
    for mode, a in arms.items():
        direct_recs = a.get("latency", [])
        if direct_recs:
            v = stats([r["held_velocity_rad_s"] for r in direct_recs])
            off = stats([r["held_offset_rad"] for r in direct_recs])
            print(
                f"   direct {mode}, held between two trajectories: velocity field of the held command median "
                f"{v['median']:.3f}, max {v['max']:.3f} rad/s; joints off the held position median "
                f"{off['median']:.4f}, max {off['max']:.4f} rad"
            )
    direct = {mode: stats([r["first_frame_ms"] for r in a.get("latency", [])])["median"] for mode, a in arms.items()}
    line = f"   median direct sdk_trajectory / stream: {ratio(direct['sdk_trajectory'], direct['stream'])}"
    if recs:
        via = stats([r["first_frame_ms"] for r in recs if "first_frame_ms" in r])["median"]
        line += (
            f"; graph / direct ({graph.get('mode', '?')}): {ratio(via, direct.get(graph.get('mode', ''), math.nan))}"
        )
    print(line)
    late = [r for r in recs if r.get("first_frame_ms", 0.0) - r.get("publish_to_playing_ms", math.inf) > 10.0]
    if recs:
        print(
            f"   graph: {len(late)} of {len(recs)} first new frames more than 10 ms after the PLAYING report (sent "
            f"after play() returned) arrived here, by "
            + (", ".join(f"{r['first_frame_ms'] - r['publish_to_playing_ms']:.0f}" for r in late) or "-")
            + " ms"
        )
    for r in recs:
        if "failed" in r:
            print(f"   graph trajectory {r['k']}: {r['failed']}")
    print()


def print_graph(graph: dict[str, Any]) -> None:
    if "up_s" in graph:
        print(
            f"phase B: interfaces ready in {graph['build_s']:.1f} s; arx5_driver_node ({graph['mode']} mode, "
            f"ROS_DOMAIN_ID {graph['domain_id']}) publishing /joint_states {graph['up_s']:.1f} s after start, both "
            f"arms for 1 s at {graph.get('stable_s', math.nan):.1f} s; stopped in "
            f"{graph.get('stop_s', math.nan):.1f} s with exit code {graph.get('exit_code')}"
        )
    js = graph.get("joint_states")
    if js is not None:
        print(
            f"3. /joint_states over {js['window_s']:g} s, both arms holding ({graph['load_states']}): {js['messages']} "
            f"messages, {js['rate_hz']:.1f} msg/s (config {1e3 / js['period_ms']:g} Hz); names per message: "
            f"{js['names']}"
        )
        rows = [
            (
                f"|interval - {js['period_ms']:g} ms| from {key} times",
                f2(js[key]["median"]),
                f2(js[key]["p95"]),
                f2(js[key]["max"]),
            )
            + (str(js[key]["late_2x"]),)
            for key in ("stamp", "arrival")
        ]
        table(("ms", "p50", "p95", "max", f"> {2 * js['period_ms']:g} ms"), rows, "<>>>>")
        cpu = ", ".join(f"{name} {pct:.0f}%" for name, pct in graph.get("cpu_percent", {}).items())
        print(f"   CPU over the window, % of one core (of {nproc()}): {cpu}")
    quiet = graph.get("estops", [])
    if quiet:
        print_estops(quiet, f"while both arms ramp at {ESTOP_SPEED_RAD_S:g} rad/s", graph.get("load_estops", "-"))
    flooded = graph.get("flooded_estops", [])
    if flooded:
        print_estops(
            flooded, f"the same under a {graph.get('flood_hz', 0):g} Hz trajectory flood on both arms",
            graph.get("load_flooded_estops", "-"),
        )  # fmt: skip
        answer = [stats([r["answer_ms"] for r in recs if "answer_ms" in r]) for recs in (flooded, quiet)]
        print(
            f"   flooded / quiet: service answer median {ratio(answer[0]['median'], answer[1]['median'])}, max "
            f"{ratio(answer[0]['max'], answer[1]['max'])}"
        )
    if graph.get("driver_log"):
        lost = sum(1 for line in graph["driver_log"] if "lost contact" in line)
        print(f"   arx5_driver_node ERROR/WARN lines ({len(graph['driver_log'])}, {lost} lost contact), the first 5:")
        for line in graph["driver_log"][:5]:
            print(f"     {line[:240]}")
    if "failed" in graph:
        print(f"phase B FAILED: {graph['failed']}")
    print()


def print_estops(estops: list[dict[str, Any]], what: str, load: str) -> None:
    """Part 5's table for one run of e-stops."""
    print(f"5. e-stop (/hardware/estop) {what} -> every joint command of the arm frozen (emulator log; {load})")
    rows = []
    for label, key in (("left arm frozen", "left_frozen_ms"), ("right arm frozen", "right_frozen_ms")):
        e = stats([r[key] for r in estops if key in r])
        rows.append((label, str(e["n"]), f2(e["median"]), f2(e["p95"]), f2(e["max"])))
    both = stats([max(r["left_frozen_ms"], r["right_frozen_ms"]) for r in estops if "right_frozen_ms" in r and
                  "left_frozen_ms" in r])  # fmt: skip
    rows.append(("every arm frozen (the later one)", str(both["n"]), f2(both["median"]), f2(both["p95"]),
                 f2(both["max"])))  # fmt: skip
    e = stats([r["answer_ms"] for r in estops if "answer_ms" in r])
    rows.append(("the service's answer here", str(e["n"]), f2(e["median"]), f2(e["p95"]), f2(e["max"])))
    table(("ms", "n", "median", "p95", "max"), rows, "<>>>>")
    idle = {arm: sum(1 for r in estops if r.get(f"{arm}_not_moving")) for arm in ("left", "right")}
    if any(idle.values()):
        print(f"   not moving at the e-stop (its ramp refused or over), left out: {idle}")
    for r in estops:
        if "failed" in r:
            print(f"   e-stop {r['k']}: {r['failed']}")


def print_tracking(arms: dict[str, dict[str, Any]]) -> None:
    if any("move" not in m for m in arms.values()):
        print(f"4. not measured in both modes: {[mode for mode, m in arms.items() if 'move' not in m]} failed\n")
        return
    a, b = arms["stream"]["move"], arms["sdk_trajectory"]["move"]
    print(
        f"4. 30 cm TCP line along world +x from the left arm's ready pose and back ({a['moves']} moves per mode), "
        f"{a['planned_s']:g} s cosine timing, {round(a['planned_s'] * 25)} IK points each (IK {a['ik_s']:.2f} s); "
        f"emulated joints polled at {a['poll_hz']:.0f} / {b['poll_hz']:.0f} Hz"
    )
    rows: list[tuple[str, ...]] = []
    for label, key, fmt in (
        ("emulated joints vs plan at the same time, max [rad]", "joint_errors_max_rad", "{:.4f}"),
        ("  p95 over the samples [rad]", "joint_errors_p95_rad", "{:.4f}"),
        ("  delay behind the plan, best fit [ms]", "joint_lag_ms", "{:.0f}"),
        ("commanded positions on the bus vs plan, max [rad]", "command_errors_max_rad", "{:.4f}"),
        ("  p95 over the frames [rad]", "command_errors_p95_rad", "{:.4f}"),
        ("  delay behind the plan, best fit [ms]", "command_lag_ms", "{:.0f}"),
        ("TCP off the straight line, max [mm]", "off_line_max_mm", "{:.2f}"),
        ("  p95 over the samples [mm]", "off_line_p95_mm", "{:.2f}"),
        ("  the plan's own at the same instants, max [mm]", "plan_off_line_max_mm", "{:.2f}"),
        ("end error after settling, TCP, worse move [mm]", "end_error_mm", "{:.2f}"),
        ("end error after settling, joints, worse move [rad]", "end_joint_error_rad", "{:.4f}"),
        ("play() -> the adapter reports the end, longer move [s]", "ended_after_s", "{:.2f}"),
    ):
        rows.append((label, fmt.format(a[key]), fmt.format(b[key]), ratio(b[key], a[key])))
    table(("", "stream", "sdk_trajectory", "sdk_trajectory / stream"), rows, "<>>>")
    for mode, m in arms.items():
        for key in ("joint_worst", "command_worst"):
            where = ", ".join(f"{n} {e:.4f} rad at {at:.2f} s ({joint})" for n, e, at, joint in m["move"][key])
            print(f"   {mode}: largest {key.split('_')[0]} error per move: {where}")
    print(f"   {verdict(a, b)}; the config's default is {default_mode()!r}")
    print()


def verdict(a: dict[str, Any], b: dict[str, Any]) -> str:
    """Which mode follows the plan better, by the p95 of the emulated joints' error against the plan at the same time
    (the max is set by single stalls of the SDK's loop on a loaded machine: part 1's gaps > 10 ms), then the p95 of the
    TCP's distance from the line."""
    names = {"joint_errors_p95_rad": "p95 joint error", "off_line_p95_mm": "p95 TCP off the line"}
    names |= {"joint_errors_max_rad": "max joint error", "off_line_max_mm": "max TCP off the line"}
    better = {k: ("stream" if a[k] < b[k] else "sdk_trajectory" if b[k] < a[k] else "neither") for k in names}
    main = better["joint_errors_p95_rad"]
    agree = [names[k] for k, mode in better.items() if mode == main]
    disagree = [names[k] for k, mode in better.items() if mode != main]
    text = f"{main} tracks better: {', '.join(agree)}"
    if disagree:
        text += f" (not on {', '.join(disagree)})"
    return text


def default_mode() -> str:
    from robodojo.hardware.settings import load_arx5_settings

    return load_arx5_settings().arm(ARM).trajectory_mode


# -- main --------------------------------------------------------------------------------------------------------------
def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the finally clauses stop the node, the SDK processes and the emulators


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=20, help="part 2's trajectories per run (default 20)")
    parser.add_argument("--move-s", type=float, default=3.0, help="part 4's move duration [s] (default 3.0)")
    parser.add_argument("--state-window", type=float, default=5.0, help="part 3's window [s] (default 5.0)")
    parser.add_argument("--estops", type=int, default=20, help="part 5's e-stops (default 20)")
    parser.add_argument(
        "--estop-flood-hz", type=float, default=100.0, help="part 5 again under a trajectory flood [Hz] (0: not)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.trajectories, args.move_s, args.state_window, args.estops = SMOKE_SIZES
    if preloaded():
        base = Path(os.environ[SOCKET_DIR_ENV])
    else:
        base = Path(tempfile.mkdtemp(prefix="x5b-"))  # short: Unix socket paths have at most 107 bytes
        reexec_with_shim(base)  # no return: this script again, with the shim preloaded
    signal.signal(signal.SIGTERM, _terminate)
    t_all = time.perf_counter()
    log_dir = base / "logs"
    log_dir.mkdir(exist_ok=True)
    print(
        f"robodojo X5 benchmark: arx5-interface {version('arx5-interface')} against the bus emulator; "
        f"{args.trajectories} trajectories per run, {args.move_s:g} s move"
    )
    print(
        f"  machine: {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}; {load_text()}; "
        f"{others_text()}; logs in {log_dir}"
    )
    print(flush=True)
    with SdkEcho(log_dir / "sdk_phase_a.log"):
        arms = {mode: arm_phase(mode, base, log_dir, args) for mode in MODES}
    graph = graph_phase(base / "g", log_dir, args)
    print_arms(arms, graph)
    print_graph(graph)
    print_tracking(arms)
    print(f"{load_text()} at the end, {others_text()}; benchmark wall time {time.perf_counter() - t_all:.1f} s")
    if args.json is not None:
        write_figures(args.json, {"arms": arms, "graph": graph})
    with contextlib.suppress(OSError):
        for name in (*INTERFACES, "control"):
            (base / name).unlink(missing_ok=True)
    return 1 if "failed" in graph else 0


if __name__ == "__main__":
    sys.exit(main())
