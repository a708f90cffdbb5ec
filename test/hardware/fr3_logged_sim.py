#!/usr/bin/env python3
"""franky-sim as its command line runs it (one FR3, MuJoCo, the same defaults), with every physics step's joints
logged: what a drill records from outside, here as a file a test reads.

    python test/hardware/fr3_logged_sim.py --host 127.0.0.6 --log FILE [--slowdown 2]

Each physics step (1 ms of simulated time) appends one row of :data:`ROW_FLOATS` little-endian float64 to FILE:
the simulation time [s], the 7 measured joint positions [rad] and the 7 joint velocities [rad/s] (MuJoCo's qpos and
qvel of fr3_joint1..7), the 7 joint positions franky-sim's joint controller was told to track in that step [rad]
(libfranka's commanded q_c while a motion runs, the held position when idle; NaN under another control mode),
1.0 where that step's command came as a real-time loop delivers it (exactly one command arrived, the answer to the
state franky-sim sent last; 0.0 where none came and franky-sim tracked the previous one again, where a late one
came, or two at once; 1.0 while idle), and the wall clock (time.time(), the ROS system clock) when the row was
written [s]. Rows are flushed every :data:`FLUSH_STEPS` steps, so a reader sees at most that many steps late. Prints
``fr3_logged_sim: ready <host>`` once it serves; SIGINT or SIGTERM end it with exit code 0.

franky-sim reports RobotState.dq_d and ddq_d as libfranka documents them unless ``--as-shipped``
(:func:`report_desired_state`).
"""

from __future__ import annotations

import argparse
import signal
import struct
import sys
import threading
import time
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

N_JOINTS = 7
ROW_FLOATS = 3 + 3 * N_JOINTS  # time, positions, velocities, tracked positions, new-command flag, wall clock
MESSAGE_ID = struct.Struct("<Q")  # the first field of libfranka's robot command
FLUSH_STEPS = 20  # 20 ms of simulated time: a test waiting for the log waits no longer


@dataclass(frozen=True)
class JointLog:
    """The rows logged so far, one per physics step."""

    time_s: np.ndarray  #: (n,) simulation time
    positions_rad: np.ndarray  #: (n, 7) measured
    velocities_rad_s: np.ndarray  #: (n, 7) measured
    tracked_rad: np.ndarray  #: (n, 7) what the joint controller tracked (commanded or held)
    new_command: np.ndarray  #: (n,) bool: the step's command came in sequence (one, answering the last state)
    wall_s: np.ndarray  #: (n,) the system clock when the row was written

    def since(self, time_s: float) -> JointLog:
        """The rows from simulation time ``time_s`` on."""
        keep = self.time_s >= time_s
        return JointLog(*(field[keep] for field in astuple(self)))

    def until(self, time_s: float) -> JointLog:
        """The rows up to simulation time ``time_s``."""
        keep = self.time_s <= time_s
        return JointLog(*(field[keep] for field in astuple(self)))


def read_log(path: Path) -> JointLog:
    """The rows written so far (a partly written last row is left out)."""
    raw = np.frombuffer(path.read_bytes(), dtype="<f8")
    rows = raw[: len(raw) // ROW_FLOATS * ROW_FLOATS].reshape(-1, ROW_FLOATS)
    n = N_JOINTS
    return JointLog(rows[:, 0], rows[:, 1 : 1 + n], rows[:, 1 + n : 1 + 2 * n], rows[:, 1 + 2 * n : 1 + 3 * n],
                    rows[:, 1 + 3 * n] > 0.5, rows[:, 2 + 3 * n])  # fmt: skip


class StepLog:
    """The post-step callback: one row per physics step, written by franky-sim's own loop thread."""

    def __init__(self, sim: Any, server: Any, out: BinaryIO) -> None:
        import mujoco

        model, self._data = sim.model, sim.data
        joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"robot0_fr3_joint{i}") for i in range(1, 8)]
        if min(joints) < 0:
            raise SystemExit("fr3_logged_sim: the FR3's joints are not in franky-sim's model")
        self._qpos = np.array([model.jnt_qposadr[j] for j in joints])
        self._qvel = np.array([model.jnt_dofadr[j] for j in joints])
        self._row = np.zeros(ROW_FLOATS, dtype="<f8")
        self._out = out
        self._steps = 0
        self._tracked = np.full(N_JOINTS, np.nan)
        self._new_command = False
        robot = sim.robots[0]
        tracking = robot.joint_position_control  # franky-sim's joint controller: record what it is told, then do it

        def joint_position_control(target_q: Any, has_new_command: bool = True) -> None:
            self._tracked[:] = target_q
            self._new_command = has_new_command
            tracking(target_q, has_new_command=has_new_command)

        robot.joint_position_control = joint_position_control
        # The commands of each step: how many, and which state the last one answered (libfranka's command carries the
        # message id of the state it answers; franky-sim numbers its states from 0 on each connection).
        self._server = server.robot_servers[0]
        self._packets = 0
        self._answered = -1
        receive = self._server._handle_udp_command

        def handle_udp_command(data: bytes) -> None:
            self._packets += 1
            self._answered = MESSAGE_ID.unpack_from(data)[0]
            receive(data)

        self._server._handle_udp_command = handle_udp_command

    def __call__(self, sim) -> None:
        data = self._data
        self._row[0] = data.time
        self._row[1 : 1 + N_JOINTS] = data.qpos[self._qpos]
        self._row[1 + N_JOINTS : 1 + 2 * N_JOINTS] = data.qvel[self._qvel]
        self._row[1 + 2 * N_JOINTS : 1 + 3 * N_JOINTS] = self._tracked
        last_state = self._server._FrankaServer__message_id - 1  # sent after the previous step, or -1
        in_sequence = self._packets == 1 and self._answered == last_state
        self._row[1 + 3 * N_JOINTS] = float(self._new_command and (in_sequence or self._packets == 0))
        self._row[2 + 3 * N_JOINTS] = time.time()
        self._tracked[:] = np.nan  # until told again
        self._new_command = False
        self._packets = 0
        self._out.write(self._row.tobytes())
        self._steps += 1
        if self._steps % FLUSH_STEPS == 0:
            self._out.flush()


def report_desired_state(robot: Any) -> None:
    """Make franky-sim's RobotState.dq_d and ddq_d what libfranka documents, the desired (commanded) joint velocity and
    acceleration: franky-sim 1.0.4 reports dq_d as an exponential average (weight 0.95 on the last value, ~20 ms) of
    q_d's differences and ddq_d as the same average of the *measured* dq's. franky starts every motion that replaces
    a running one (a stop's brake, a new trajectory) from dq_d and ddq_d, so franky-sim as shipped puts a step of
    velocity and acceleration into every replacement: measured here, -13.8 rad/s^2 for one step when a brake took
    over at 0.81 rad/s. With this, dq_d is the last step's commanded velocity and ddq_d the change of that over the
    step, as a real FR3 reports them."""
    from franky_sim.base_simulator import FiniteDifferenceTracker, TrackedStateComponent

    components = robot._tracked_state_components
    for name in ("q_d", "dq_d"):
        components[name].observers["fd"] = FiniteDifferenceTracker(alpha=0.0)  # the last difference, unaveraged
    dq_d = components["dq_d"]
    components["ddq_d"] = TrackedStateComponent(
        lambda time, state: dq_d.observers["fd"].last_derivative.copy(), depends_on=(dq_d,)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", required=True, help="the loopback address to serve (FCI port 1337)")
    parser.add_argument("--log", required=True, type=Path, help="the file the joint rows are appended to")
    parser.add_argument(
        "--as-shipped",
        action="store_true",
        help="keep franky-sim's own dq_d and ddq_d (averaged; see report_desired_state) instead of the desired ones",
    )
    parser.add_argument(
        "--slowdown", type=float, default=1.0, help="wall time per simulated time, at least (franky-sim's realtime)"
    )
    args = parser.parse_args(argv)

    from franky_sim import SimulationServer
    from franky_sim.mujoco_simulator import MujocoSimulator

    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    with args.log.open("wb") as out, MujocoSimulator() as sim:
        robot = sim.add_robot()
        if not args.as_shipped:
            report_desired_state(robot)
        with SimulationServer(sim, hostname_candidates=[args.host]) as server:
            sim.register_post_step_callback(StepLog(sim, server, out))
            server.run_async(realtime=args.slowdown)
            print(f"fr3_logged_sim: ready {args.host}", flush=True)
            done.wait()
            server.running = False
            if server.async_thread is not None:
                server.async_thread.join(timeout=5.0)
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
