"""The FR3 test world's cameras: a child process that renders snapshots of franky-sim's state and publishes them.

Rendering runs in its own process because MuJoCo's renderer holds the GIL while it draws, and franky-sim's 1 kHz
loop is a Python thread. Measured on 2 cores, 25 ticks a second, one camera per tick (franky-sim alone: 0.83-0.90x
real time): rendered in a thread of franky-sim's process, 0.46-0.68x at 18-20 frames/s on an idle machine, the
process held to one core, and 0.14-0.24x at 3-6 frames/s (the process at 21-38 % of a core) on a loaded one; in this
child, 0.59-0.68x at 21-24 frames/s idle, 0.37x at 11 frames/s loaded. The simulator's process only copies its
positions between two physics steps (fr3_world.Snapshots) and sends them, stamped, through a pipe; this process
renders and publishes them:

- /<camera>/image_raw: sensor_msgs/Image rgb8, the raw driver topic camera_node republishes with CameraInfo and pose;
  or, for a camera with a driver stand-in (fr3_world.py ``--camera-drivers``, standin_publishers.py), what that driver
  publishes (realsense2_camera's or usb_cam's topics, encodings, QoS and CameraInfo) at its own size;
- /fr3_world/cube_pose: geometry_msgs/PoseStamped of the cube in the world, for every snapshot;
- /fr3_world/joint_states and /fr3_world/tcp_pose: franky-sim's own arm and finger joints (named as in our URDF) and
  its grasp point (the hand body moved by franky's TCP offset), for every snapshot: what the robot really did, for
  tests that must not take the driver's word for it;
- /fr3_world/place_cube (std_srvs/Trigger): the operator's hands between two episodes. franky-sim's process puts the
  cube back at its start pose between two physics steps (fr3_world.CubePlacer); the answer comes once it did.

Stamps are the snapshots' (the ROS system clock, read when the state was copied), so a frame and a cube pose of the
same stamp show the same instant. When rendering falls behind, older snapshots are published as cube poses only and
the newest is rendered.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
from standin_publishers import Standin, StandinPublisher

CUBE_POSE_TOPIC = "/fr3_world/cube_pose"
TRUE_JOINTS_TOPIC = "/fr3_world/joint_states"
TRUE_TCP_TOPIC = "/fr3_world/tcp_pose"
PLACE_CUBE_SERVICE = "/fr3_world/place_cube"
PLACE_CUBE_TIMEOUT_S = 5.0  # franky-sim steps every millisecond; a stalled loop is reported, not waited for
WORLD_FRAME = "world"
RENDER_MODES = ("alternate", "all")  # one camera per tick in turn (each at fps / cameras), or every camera each tick
IDLE_POLL_S = 0.05  # how often a child with nothing to render answers services and checks on its parent
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CameraSpec:
    """What the child needs to know of a camera: its MuJoCo name and the optical frame its images carry."""

    name: str
    frame: str


@dataclass(frozen=True)
class GroundTruth:
    """Where franky-sim's state is in its model, and the names our URDF gives it."""

    mujoco_joints: tuple[str, ...]  # franky-sim's arm joints then the first finger joint
    joint_names: tuple[str, ...]  # ours, in the same order
    hand_body: str
    T_hand_tcp: tuple[tuple[float, ...], ...]  # franky's TCP offset from the hand body (4x4)


@dataclass(frozen=True)
class Snapshot:
    """Positions after one physics step and the ROS system time [ns] when they were copied."""

    stamp_ns: int
    qpos: np.ndarray


class CameraProcess:
    """The child process, seen from franky-sim's process."""

    def __init__(
        self,
        scene_xml: str,
        cameras: Sequence[CameraSpec],
        mode: str,
        cube_body: str,
        log_dir: Path | None,
        truth: GroundTruth,
        standins: Sequence[Standin] = (),
    ) -> None:
        """``standins``: cameras published as a driver stand-in (``scene_xml`` renders them at the stand-in's size)."""
        ctx = multiprocessing.get_context("spawn")  # no fork of a process with franky-sim's threads and sockets
        child_conn, self._conn = ctx.Pipe(duplex=False)  # (receiving end, sending end)
        self.first_frames = ctx.Event()  # every camera has published a frame
        self.frames = ctx.Value("l", 0)  # frames published so far
        self.place_cube = ctx.Event()  # the service asks franky-sim's process to put the cube back ...
        self.cube_placed = ctx.Event()  # ... which says it did
        self.process = ctx.Process(
            target=run,
            args=(
                child_conn,
                scene_xml,
                tuple(cameras),
                mode,
                cube_body,
                log_dir,
                self.first_frames,
                self.frames,
                truth,
                self.place_cube,
                self.cube_placed,
                tuple(standins),
            ),
            name="fr3_world_cameras",
            daemon=True,
        )
        self.process.start()
        child_conn.close()  # the child's end: the child sees EOF once this process is gone

    def send(self, snapshot: Snapshot) -> None:
        self._conn.send(snapshot)

    def stop(self) -> None:
        """Ask the child to finish (None ends it), then end it if it does not."""
        with contextlib.suppress(OSError):  # already gone
            self._conn.send(None)
        self.process.join(STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self._conn.close()


def run(
    conn: Connection,
    scene_xml: str,
    cameras: tuple[CameraSpec, ...],
    mode: str,
    cube_body: str,
    log_dir: Path | None,
    first_frames: Any,
    frames: Any,
    truth: GroundTruth,
    place_cube: Any,
    cube_placed: Any,
    standins: tuple[Standin, ...] = (),
) -> None:
    """The child: render and publish every snapshot until None or the parent's end of the pipe closes."""
    # The parent decides when to stop (a terminal's Ctrl-C reaches the whole process group).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    import mujoco
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import Image, JointState
    from std_srvs.srv import Trigger

    from robodojo.geometry import matrix_from_quat, transform
    from robodojo.nodes import convert
    from robodojo.sim.render import CameraRenderer

    model = mujoco.MjModel.from_xml_string(scene_xml)
    data = mujoco.MjData(model)
    camera_ids = {c.name: model.camera(c.name).id for c in cameras}
    sizes = {c.name: tuple(int(v) for v in model.cam_resolution[camera_ids[c.name]]) for c in cameras}
    renderers = {size: CameraRenderer(*size) for size in set(sizes.values())}  # one GL context per image size
    for renderer in renderers.values():
        renderer.bind(model)
    cube = model.body(cube_body).id

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("fr3_world_cameras")
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)  # as sim_node's images
    by_camera = {s.camera: s for s in standins}
    image_pubs = {
        c.name: node.create_publisher(Image, f"/{c.name}/image_raw", qos) for c in cameras if c.name not in by_camera
    }
    standin_pubs = {name: StandinPublisher(node, s) for name, s in by_camera.items()}
    cube_pub = node.create_publisher(PoseStamped, CUBE_POSE_TOPIC, qos)
    joints_pub = node.create_publisher(JointState, TRUE_JOINTS_TOPIC, qos)
    tcp_pub = node.create_publisher(PoseStamped, TRUE_TCP_TOPIC, qos)
    qpos_adr = [int(model.joint(j).qposadr[0]) for j in truth.mujoco_joints]
    hand = model.body(truth.hand_body).id
    T_hand_tcp = np.asarray(truth.T_hand_tcp)
    published: set[str] = set()
    tick = 0

    def on_place_cube(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        cube_placed.clear()
        place_cube.set()
        response.success = bool(cube_placed.wait(PLACE_CUBE_TIMEOUT_S))
        response.message = (
            "the cube is back at its start pose"
            if response.success
            else f"franky-sim did not step within {PLACE_CUBE_TIMEOUT_S:g} s: the cube was not moved"
        )
        return response

    node.create_service(Trigger, PLACE_CUBE_SERVICE, on_place_cube)

    def pose(snapshot: Snapshot) -> None:
        data.qpos[:] = snapshot.qpos
        mujoco.mj_kinematics(model, data)
        msg = convert.pose_stamped(transform(matrix_from_quat(data.xquat[cube]), data.xpos[cube]), 0.0, WORLD_FRAME)
        msg.header.stamp = _stamp(snapshot.stamp_ns)
        cube_pub.publish(msg)
        q = [float(data.qpos[a]) for a in qpos_adr]
        joints = JointState(name=list(truth.joint_names), position=q)
        joints.header.stamp = msg.header.stamp
        joints_pub.publish(joints)
        T_world_tcp = transform(data.xmat[hand].reshape(3, 3), data.xpos[hand]) @ T_hand_tcp
        tcp = convert.pose_stamped(T_world_tcp, 0.0, WORLD_FRAME)
        tcp.header.stamp = msg.header.stamp
        tcp_pub.publish(tcp)

    try:
        while True:
            rclpy.spin_once(node, timeout_sec=0.0)  # the place_cube service
            if not conn.poll(IDLE_POLL_S):
                continue
            snapshot = conn.recv()
            while snapshot is not None and conn.poll():  # behind: the older ones as cube poses only
                pose(snapshot)
                snapshot = conn.recv()
            if snapshot is None:
                return
            pose(snapshot)  # leaves data at this snapshot's positions
            mujoco.mj_camlight(model, data)  # camera poses (mj_kinematics leaves them)
            chosen = [cameras[tick % len(cameras)]] if mode == "alternate" else list(cameras)
            tick += 1
            for camera in chosen:
                rgb = renderers[sizes[camera.name]].rgb(data, camera_ids[camera.name])
                if camera.name in standin_pubs:
                    standin_pubs[camera.name].publish(rgb, _stamp(snapshot.stamp_ns))
                else:
                    msg = convert.image_msg(rgb, 0.0, camera.frame)
                    msg.header.stamp = _stamp(snapshot.stamp_ns)
                    image_pubs[camera.name].publish(msg)
                with frames.get_lock():
                    frames.value += 1
                if camera.name not in published:
                    published.add(camera.name)
                    _save_first_frame(log_dir, camera.name, rgb)
                    if len(published) == len(cameras):
                        first_frames.set()
    except EOFError:
        return  # the parent is gone
    finally:
        for renderer in renderers.values():
            renderer.close()
        node.destroy_node()
        rclpy.try_shutdown()


def _stamp(stamp_ns: int):
    from builtin_interfaces.msg import Time

    return Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)


def _save_first_frame(log_dir: Path | None, camera: str, rgb: np.ndarray) -> None:
    """The first frame of each camera as a PNG in the log folder, for a person to look at."""
    if log_dir is None:
        return
    import cv2

    cv2.imwrite(str(log_dir / f"{camera}.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
