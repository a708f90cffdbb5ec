#!/usr/bin/env python3
"""An FR3 test world: franky-sim serving the libfranka protocol on a MuJoCo scene laid out as config/robots/fr3.yaml,
with the robot's cameras rendered and published on ROS 2 as a camera driver would.

    python test/hardware/fr3_world.py --host 127.0.0.5 --log-dir DIR [--cube-xy-m X Y] [--fps 25] [--render alternate]
        [--camera-drivers config/camera_inputs/fr3_realsense_usb_cam.yaml]

- franky-sim (embedded: MujocoSimulator + SimulationServer) serves the FR3 on ``--host`` (FCI port 1337, gripper
  1338), its base at arms.arm.base_xyz_m / base_rpy_deg of the robot config, starting at arm.home_joints_rad (the
  motion server's home); a table with its top at table.top_z_m; one 4.5 cm red cube on the table at ``--cube-xy-m``
  (fr3_scene.py).
- Cameras from the calibration files (config/cameras/fr3/): ``head`` fixed at the file's T_world_cam, ``wrist`` on the
  hand at the file's T_tcp_cam, each with the file's pinhole intrinsics (the few-tenths-of-a-pixel distortion is not
  rendered). A child process renders them (fr3_cameras.py) from snapshots of the simulator's positions taken here
  between two physics steps at ``--fps``: frames on /<camera>/image_raw (rgb8, the raw driver topic camera_node
  republishes with CameraInfo and pose), the cube's world pose on /fr3_world/cube_pose, stamped alike with the ROS
  system clock at the snapshot. The service /fr3_world/place_cube puts the cube back where it started (the operator's
  hands between two episodes).
- ``--camera-drivers FILE`` (a camera inputs file, config/camera_inputs/): each camera with a ``driver`` entry is
  published by a stand-in of that driver instead (standin_publishers.py: realsense2_camera's or usb_cam's topics,
  encodings, QoS and CameraInfo), rendered at the driver's size with the same vertical field of view and pixel pitch
  as the file's intrinsics (driver_standins.view_K), so that camera's camera_node reads what it would on the rig.
- Prints ``fr3_world: ready <host>`` once franky-sim serves its port and every camera has published a frame, then the
  real-time factor of the simulation every few seconds. SIGINT or SIGTERM end it with exit code 0.

Startup checks that our URDF kinematics (robodojo.robots.ik, TCP link fr3_tcp) and franky-sim's model agree within
2 mm, since the wrist camera is placed on franky-sim's hand body from our URDF's hand-to-TCP transform.
Test support (test/hardware/test_fr3_world.py): it uses rclpy directly, not the package's node runtime.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import socket
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from fr3_cameras import CUBE_POSE_TOPIC, RENDER_MODES, CameraProcess, CameraSpec, Snapshot
from fr3_scene import (
    CUBE_BODY,
    CUBE_JOINT,
    DEFAULT_CUBE_XY_M,
    FK_TOLERANCE_M,
    FK_TOLERANCE_RAD,
    WorldLayout,
    build_simulator,
    check_kinematics,
    cube_start_xyz,
    ground_truth,
    with_camera_views,
)
from franky_sim import SimulationServer
from franky_sim.mujoco_simulator import MujocoSimulator
from standin_publishers import load_standins

from robodojo.perception.mounted_camera import load_mounted_camera
from robodojo.robots.config import load_robot_config

ROBOT = "fr3"
FCI_PORT = 1337  # libfranka's command port, fixed by the protocol
DEFAULT_FPS = 25.0
STATUS_PERIOD_S = 5.0  # how often the real-time factor is printed
START_TIMEOUT_S = 120.0  # to serve and to render the first frames; a loaded 2-core machine is slow at both
SNAPSHOT_TIMEOUT_S = 1.0  # franky-sim steps every millisecond; longer means its loop stalled or stopped
POLL_S = 0.1

_START_S = time.monotonic()


def say(text: str) -> None:
    print(f"fr3_world: {text}", flush=True)


def elapsed() -> str:
    return f"{time.monotonic() - _START_S:.1f} s after start"


class Snapshots:
    """Copies of the simulator's positions taken between two physics steps, in franky-sim's own thread, sent to the
    camera process at a steady rate from a thread of their own."""

    def __init__(self, sim: MujocoSimulator, cameras: CameraProcess, fps: float) -> None:
        assert sim.data is not None
        self._live = sim.data
        self._qpos = np.zeros_like(sim.data.qpos)
        self._stamp_ns = 0
        self._wanted = threading.Event()
        self._taken = threading.Event()
        self._lock = threading.Lock()
        self.steps = 0  # physics steps so far (franky-sim's loop steps once per millisecond of simulated time)
        self.stalls = 0  # snapshots that waited SNAPSHOT_TIMEOUT_S for a step in vain
        self.timestep_s = float(sim.model.opt.timestep) if sim.model is not None else math.nan
        self.cameras = cameras
        self.period_s = 1.0 / fps
        self.stop = threading.Event()
        self.error: BaseException | None = None
        sim.register_post_step_callback(self._after_step)
        self.thread = threading.Thread(target=self._run, name="fr3_world_snapshots", daemon=True)

    def _after_step(self, sim: MujocoSimulator) -> None:
        self.steps += 1
        if self._wanted.is_set():
            with self._lock:  # a sender that gave up waiting may be copying the previous snapshot
                self._wanted.clear()
                self._qpos[:] = self._live.qpos
                self._stamp_ns = time.time_ns()  # the ROS system clock (CLOCK_REALTIME)
            self._taken.set()

    def take(self) -> Snapshot | None:
        """The positions after the next physics step; None if no step came within SNAPSHOT_TIMEOUT_S."""
        self._taken.clear()
        self._wanted.set()
        if not self._taken.wait(SNAPSHOT_TIMEOUT_S):
            self._wanted.clear()
            return None
        with self._lock:
            return Snapshot(self._stamp_ns, self._qpos.copy())

    def _run(self) -> None:
        next_s = time.monotonic()
        try:
            while not self.stop.is_set():
                snapshot = self.take()
                if snapshot is None:  # franky-sim's loop stalled (a starved machine) or ended: the main thread judges
                    self.stalls += 1
                    continue
                self.cameras.send(snapshot)
                next_s += self.period_s
                delay = next_s - time.monotonic()
                if delay < -self.period_s:  # fell behind (a stalled loop): carry on from now, no burst
                    next_s = time.monotonic()
                self.stop.wait(max(0.0, delay))
        except BaseException as exc:  # reported by the main thread, which ends the process
            self.error = exc


class CubePlacer:
    """The operator's hands: puts the cube back at its start pose, at rest, between two physics steps in franky-sim's
    own thread, when the camera process's /fr3_world/place_cube service asks."""

    def __init__(self, sim: MujocoSimulator, cameras: CameraProcess, start_xyz: Sequence[float]) -> None:
        assert sim.model is not None and sim.data is not None
        joint = sim.model.joint(CUBE_JOINT)
        self._qpos = int(joint.qposadr[0])
        self._dof = int(joint.dofadr[0])
        self._pose = np.array([*start_xyz, 1.0, 0.0, 0.0, 0.0])  # position, then the identity quaternion (w x y z)
        self._data = sim.data
        self._cameras = cameras
        sim.register_post_step_callback(self._after_step)

    def _after_step(self, sim: MujocoSimulator) -> None:
        if not self._cameras.place_cube.is_set():
            return
        self._cameras.place_cube.clear()
        self._data.qpos[self._qpos : self._qpos + 7] = self._pose
        self._data.qvel[self._dof : self._dof + 6] = 0.0
        self._cameras.cube_placed.set()


# -- the process -----------------------------------------------------------------------------------------------------
class Stopped(Exception):
    """SIGINT or SIGTERM came while starting."""


def port_open(host: str, port: int = FCI_PORT) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def wait_for(predicate, timeout_s: float, what: str, alive=lambda: True) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if not alive():
            raise RuntimeError(f"gave up waiting for {what}: a thread died")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(POLL_S)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.5", help="loopback address franky-sim serves (default %(default)s)")
    parser.add_argument("--log-dir", type=Path, help="ROS logs and each camera's first frame (PNG) go here")
    parser.add_argument("--cube-xy-m", type=float, nargs=2, default=DEFAULT_CUBE_XY_M, metavar=("X", "Y"))
    parser.add_argument("--fps", type=float, default=DEFAULT_FPS, help="render ticks a second (default %(default)s)")
    parser.add_argument(
        "--render",
        choices=RENDER_MODES,
        default="alternate",
        help="one camera per tick in turn, or all cameras every tick (default %(default)s)",
    )
    parser.add_argument("--cameras", nargs="+", help="cameras to render (default: all of the robot's)")
    parser.add_argument(
        "--calibration-board", action="store_true", help="the board of config/calibration.yaml on the table"
    )
    parser.add_argument(
        "--camera-drivers",
        metavar="FILE",
        help="a camera inputs file (config/camera_inputs/): cameras with a driver entry are published by a stand-in "
        "of that driver (realsense2_camera, usb_cam) at its size, encoding and topics",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.log_dir is not None:
        args.log_dir.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("ROS_LOG_DIR", str(args.log_dir / "ros"))  # the camera process inherits it
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    robot = load_robot_config(ROBOT)
    names = args.cameras or list(robot.camera_names)
    mounted = tuple(load_mounted_camera(robot, n) for n in names)
    layout = WorldLayout(tuple(args.cube_xy_m), mounted, args.calibration_board)
    sim, handle = build_simulator(robot, layout)
    scene_xml = ET.tostring(sim.scene, encoding="unicode")  # what franky-sim compiles, for the camera process
    sim.init()
    server = SimulationServer(sim, hostname_candidates=[args.host])
    server.init()  # binds the ports and compiles the scene
    agreement = check_kinematics(sim.model, handle, robot.arms[0], robot)
    say(f"{agreement} ({elapsed()})")
    if not agreement.ok:
        say(f"kinematics disagree beyond {FK_TOLERANCE_M * 1e3:g} mm / {math.degrees(FK_TOLERANCE_RAD):g} deg")
        server.cleanup()
        return 1
    specs = [CameraSpec(c.name, c.frame) for c in layout.cameras]
    standins = []
    if args.camera_drivers:
        views = {c.name: (c.file.model.K, c.width, c.height) for c in layout.cameras}
        standins = [s for s in load_standins(args.camera_drivers, ROBOT, views) if s.camera in names]
        scene_xml = with_camera_views(scene_xml, {s.camera: (s.K, *s.profile.size) for s in standins})
        for standin in standins:
            say(standin.describe())
    cameras = CameraProcess(scene_xml, specs, args.render, CUBE_BODY, args.log_dir, ground_truth(robot), standins)
    snapshots = Snapshots(sim, cameras, args.fps)
    CubePlacer(sim, cameras, cube_start_xyz(robot, args.cube_xy_m))
    code = 0
    try:
        server.run_async()
        franky_alive = lambda: server.async_thread is not None and server.async_thread.is_alive()  # noqa: E731
        wait_for(lambda: port_open(args.host) or stop.is_set(), START_TIMEOUT_S, f"port {FCI_PORT}", franky_alive)
        snapshots.thread.start()
        started = lambda: cameras.process.is_alive() and snapshots.thread.is_alive()  # noqa: E731
        wait_for(lambda: cameras.first_frames.is_set() or stop.is_set(), START_TIMEOUT_S, "the first frames", started)
        if stop.is_set():
            raise Stopped
        say(
            f"cube at {np.round(args.cube_xy_m, 3).tolist()} m; cameras {', '.join(names)} at {args.fps:g} Hz "
            f"({args.render}); {CUBE_POSE_TOPIC}; {elapsed()}"
        )
        say(f"ready {args.host}")
        code = _run_until_stopped(stop, snapshots, franky_alive)
    except Stopped:
        say("stopped while starting")
    except RuntimeError as exc:
        say(f"error: {exc}")
        code = 1
    finally:
        snapshots.stop.set()
        if snapshots.thread.is_alive():
            snapshots.thread.join(timeout=5.0)
        cameras.stop()
        server.cleanup()
    say(f"stopped (exit code {code})")
    return code


def _run_until_stopped(stop: threading.Event, snapshots: Snapshots, franky_alive: Callable[[], bool]) -> int:
    """Print the real-time factor every STATUS_PERIOD_S until a signal; 1 if a part died first."""
    cameras = snapshots.cameras
    last_s, last_steps, last_frames = time.monotonic(), snapshots.steps, cameras.frames.value
    while not stop.wait(STATUS_PERIOD_S):
        if not franky_alive():
            say("error: franky-sim's loop ended")
            return 1
        if not snapshots.thread.is_alive():
            say(f"error: the snapshots ended: {snapshots.error!r}")
            return 1
        if not cameras.process.is_alive():
            say(f"error: the camera process ended with exit code {cameras.process.exitcode}")
            return 1
        now_s, steps, frames = time.monotonic(), snapshots.steps, cameras.frames.value
        wall_s = now_s - last_s
        stalls = f"; no step for {SNAPSHOT_TIMEOUT_S:g} s {snapshots.stalls} times so far" if snapshots.stalls else ""
        say(
            f"real-time factor {(steps - last_steps) * snapshots.timestep_s / wall_s:.2f} "
            f"({steps - last_steps} steps in {wall_s:.1f} s), {(frames - last_frames) / wall_s:.1f} frames/s{stalls}"
        )
        last_s, last_steps, last_frames = now_s, steps, frames
    return 0


if __name__ == "__main__":
    sys.exit(main())
