#!/usr/bin/env python3
"""A dual-X5 test world: the motor-bus emulator for both arms, and the embedded MuJoCo world following the emulated
joints so that the robot's cameras see what the arms do.

    python test/hardware/x5_world.py --socket-dir DIR --log-dir DIR [--task general_pickup] [--seed 0] [--fps 25]
        [--camera-drivers config/camera_inputs/dual_arx_x5_realsense_usb_cam.yaml]

- The bus emulator (``python -m robodojo.hardware.x5_bus``) serves can0 (left) and can1 (right) in ``--socket-dir``,
  both arms at the robot config's ready pose; the driver's SDK reaches it through the SocketCAN shim.
- The embedded world (robodojo.sim.world, robot dual_arx_x5) holds the task's seeded layout. Every tick (``--fps``)
  it reads the emulated joints and commanded gripper widths from the emulator's control socket and makes them its
  servos' targets and steps its physics one tick; at ``--render-fps`` it renders one camera in turn: frames on
  /<camera>/image_raw (rgb8, the raw driver topic camera_node republishes with calibration and pose), stamped with
  the ROS system clock. With ``--camera-drivers FILE`` (a camera inputs file, config/camera_inputs/) each camera with
  a ``driver`` entry is published by a stand-in of that driver instead (standin_publishers.py: realsense2_camera's or
  usb_cam's topics, encodings, QoS and CameraInfo), rendered at the driver's size (the camera's vertical field of
  view kept, driver_standins.view_K).
- Grasps close the loop: the emulator's gripper motor knows no objects, so the emulator is told (its
  ``block_gripper`` op) to stop its gripper at the width of whatever lies between a world gripper's pads (rays across
  the gap), and at the world's finger width while the fingers squeeze an object. The emulated fingers then stop on
  the object when they close, even when this world's ticks lag behind the emulated motors (a starved process), and
  the SDK reads the width of what it holds, as on a real arm.
- Ground truth for tests that must not take the driver's word: /x5_world/joint_states (the world's arm and finger
  joints) and /x5_world/target_pose (the task's target object, world frame). /x5_world/reset (std_srvs/Trigger)
  puts the layout back (the operator's hands between two episodes).
- Prints ``x5_world: ready <socket dir> emulator pid <pid>`` once the emulator serves and every camera has published
  a frame. SIGINT or SIGTERM end it (and the emulator) with exit code 0.

Test support (test/hardware/test_x5_graph.py): it uses rclpy directly, not the package's node runtime.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

from robodojo.hardware.x5_bus.server import EmulatorClient, start_emulator_process
from robodojo.perception.calibrate.sim_board import calibration_board
from robodojo.robots.config import load_robot_config
from robodojo.sim.privileged import PrivilegedView
from robodojo.sim.render import CameraRenderer
from robodojo.sim.world import EmbeddedWorld

ROBOT = "dual_arx_x5"
INTERFACES = {"left": "can0", "right": "can1"}  # config/hardware/dual_arx_x5.yaml
TRUE_JOINTS_TOPIC = "/x5_world/joint_states"
TARGET_POSE_TOPIC = "/x5_world/target_pose"
RESET_SERVICE = "/x5_world/reset"
WORLD_FRAME = "world"
# Control steps one tick may catch up with (a world starved beside the graph on 2 cores ticks 2-9 times a second,
# measured): more makes the arm jump further per tick, shaking a held object loose, and costs the graph CPU.
MAX_STEPS_PER_TICK = 5
RAY_GEOM_GROUPS = np.array([1, 0, 0, 1, 0, 0], dtype=np.uint8)  # collision geoms: objects and table 0, robot 3
RATE_LOG_S = 2.0  # how often the log says how many ticks a second the world achieved, and where the target is


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket-dir", required=True)
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("--task", default="general_pickup")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", default="standard")
    parser.add_argument("--fps", type=float, default=25.0, help="ticks a second: the world follows the emulator")
    parser.add_argument(
        "--render-fps", type=float, default=8.0,
        help="frames a second, one camera in turn (rendering is most of this process's CPU, on machines that share 2 "
        "cores with the whole graph)",
    )  # fmt: skip
    parser.add_argument(
        "--camera-drivers",
        metavar="FILE",
        help="a camera inputs file (config/camera_inputs/): cameras with a driver entry are published by a stand-in "
        "of that driver (realsense2_camera, usb_cam) at its size, encoding and topics",
    )
    parser.add_argument(
        "--calibration-board", action="store_true", help="the board of config/calibration.yaml on the table"
    )
    args = parser.parse_args()
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))

    robot = load_robot_config(ROBOT)
    home = {arm.name: arm.home_joints_rad for arm in robot.arms}
    log_dir = Path(args.log_dir)
    emulator = start_emulator_process(
        args.socket_dir, {INTERFACES[a]: q for a, q in home.items()}, log=log_dir / "x5_bus_emulator.log"
    )
    bus = EmulatorClient(args.socket_dir)
    extras = [calibration_board(ROBOT)] if args.calibration_board else []
    world = EmbeddedWorld(ROBOT, scene_extras=extras)
    world.reset(args.task, args.seed, args.variant)
    view = world.privileged()  # one per layout: building it walks the model (a quarter of a tick's CPU, measured)

    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import Image, JointState
    from std_srvs.srv import Trigger

    from robodojo.geometry import transform
    from robodojo.nodes import convert

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("x5_world")
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)  # as sim_node's images
    cameras = list(robot.cameras)
    standins = StandinCameras(world, args.camera_drivers, node) if args.camera_drivers else None
    image_pubs = {
        c.name: node.create_publisher(Image, f"/{c.name}/image_raw", qos)
        for c in cameras
        if standins is None or c.name not in standins.publishers
    }
    joints_pub = node.create_publisher(JointState, TRUE_JOINTS_TOPIC, qos)
    target_pub = node.create_publisher(PoseStamped, TARGET_POSE_TOPIC, qos)
    resets = {"asked": False}

    def on_reset(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        resets["asked"] = True  # done between two ticks, on the loop's thread
        response.success, response.message = True, "the layout is put back at the next tick"
        return response

    node.create_service(Trigger, RESET_SERVICE, on_reset)
    published: set[str] = set()
    period_s = 1.0 / args.fps
    render_every = max(1, round(args.fps / args.render_fps))
    next_s, tick, ready = time.monotonic(), 0, False
    stepped_s = next_s  # the world's time, on the wall clock
    names = [j for arm in robot.arms for j in (*arm.joints, arm.gripper_joint)]
    blocked: dict[str, float | None] = {}
    logged = (next_s, 0)  # (when, tick) of the last rate line
    try:
        while not stop["now"] and emulator.poll() is None:
            rclpy.spin_once(node, timeout_sec=0.0)
            if resets["asked"]:
                resets["asked"] = False
                keep = {a: world.data.qpos[world.arm_qpos_adr[a]].copy() for a in robot.arm_names}
                world.reset(args.task, args.seed, args.variant)
                for a, q in keep.items():  # the arms stay where the emulator has them
                    world.data.qpos[world.arm_qpos_adr[a]] = q
                view = world.privileged()
                print(f"x5_world: the layout put back; {where(world, view, robot, blocked)}", flush=True)
            # The world keeps to wall time, as the emulated motors do: as many control steps as time went by (a
            # world that fell behind would close its fingers after the emulator's, on nothing).
            now_s = time.monotonic()
            steps = min(MAX_STEPS_PER_TICK, max(1, round((now_s - stepped_s) / world.control_dt_s)))
            stepped_s += steps * world.control_dt_s
            if now_s - stepped_s > world.control_dt_s * MAX_STEPS_PER_TICK:
                stepped_s = now_s  # far behind (a stalled process): drop the backlog
            follow(world, view, bus, robot, steps, blocked)
            stamp_s = time.time()
            tick += 1
            if now_s - logged[0] >= RATE_LOG_S:
                rate = (tick - logged[1]) / (now_s - logged[0])
                print(
                    f"x5_world: {rate:.1f} ticks/s (asked {args.fps:g}); {where(world, view, robot, blocked)}",
                    flush=True,
                )
                logged = (now_s, tick)
            if tick % render_every == 0:
                camera = cameras[(tick // render_every) % len(cameras)]
                if standins is not None and camera.name in standins.publishers:
                    standins.publish(camera.name, convert.time_msg(stamp_s))
                else:
                    frame = world.render(camera.name)
                    image_pubs[camera.name].publish(convert.image_msg(frame.rgb, stamp_s, camera.frame))
                published.add(camera.name)
            d = world.data
            q = [float(d.qpos[world.model.joint(n).qposadr[0]]) for n in names]
            truth = JointState(name=names, position=q, header=convert.header(stamp_s, WORLD_FRAME))
            joints_pub.publish(truth)
            if "target" in view.object_names:
                pos = view.object_pos("target")
                target_pub.publish(convert.pose_stamped(transform(np.eye(3), pos), stamp_s, WORLD_FRAME))
            if not ready and len(published) == len(cameras):
                ready = True
                print(f"x5_world: ready {args.socket_dir} emulator pid {emulator.pid}", flush=True)
            next_s += period_s
            delay = next_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * period_s:
                next_s = time.monotonic()
    finally:
        if standins is not None:
            standins.close()
        node.destroy_node()
        rclpy.try_shutdown()
        world.close()
        bus.close()
        if emulator.poll() is None:
            emulator.terminate()
            emulator.wait(timeout=10)
    return 0


class StandinCameras:
    """The cameras a camera inputs file gives a driver stand-in: rendered at the stand-in's size from the world's
    model (re-bound after a reset recompiles it) and published as that driver does."""

    def __init__(self, world: EmbeddedWorld, path: str, node) -> None:
        from standin_publishers import StandinPublisher, load_standins

        self.world = world
        views = {c.name: (world.calibration(c.name).K, c.width, c.height) for c in world.robot.cameras}
        standins = load_standins(path, ROBOT, views)
        self.publishers = {s.camera: StandinPublisher(node, s) for s in standins}
        self.sizes = {s.camera: s.profile.size for s in standins}
        self.renderers = {size: CameraRenderer(*size, world.settings.render) for size in set(self.sizes.values())}
        for standin in standins:
            print(f"x5_world: {standin.describe()}", flush=True)

    def publish(self, camera: str, stamp) -> None:
        renderer = self.renderers[self.sizes[camera]]
        model = self.world.model
        if renderer.model is not model:  # the first frame, or a reset compiled a new model
            # the offscreen buffer holds the largest stand-in image (the scene sizes it for the config's cameras)
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, *(w for w, _ in self.renderers))
            model.vis.global_.offheight = max(model.vis.global_.offheight, *(h for _, h in self.renderers))
            renderer.bind(model)
        rgb = renderer.rgb(self.world.data, self.world.camera_ids[camera])
        self.publishers[camera].publish(rgb, stamp)

    def close(self) -> None:
        for renderer in self.renderers.values():
            renderer.close()


def follow(
    world: EmbeddedWorld, view: PrivilegedView, bus: EmulatorClient, robot, steps: int, blocked: dict[str, float | None]
) -> None:
    """One tick: the world's servos to the emulated joints and commanded grippers, physics, and the grasp fed back
    (``blocked``: each arm's gripper block as last sent; only a change is sent, the emulator is busy enough)."""
    state = bus.state()
    for arm in robot.arms:
        emulated = state[INTERFACES[arm.name]]
        world.data.ctrl[world.arm_ctrl_ids[arm.name]] = emulated["joints_rad"]
        # The fingers push towards the commanded width (the motor's spring does, on a real gripper), not to where
        # the emulated motor stands: that grip force is what holds an object.
        command = emulated["gripper_command_m"]
        width = emulated["gripper_width_m"] if command is None else command
        world.set_gripper_target(arm.name, float(np.clip(width / (2 * arm.gripper_max_m), 0.0, 1.0)))
    for _ in range(steps):
        world.step(counted=False)
    for arm in robot.arms:
        emulated = state[INTERFACES[arm.name]]
        command = emulated["gripper_command_m"]
        finger_m = 2.0 * float(world.data.qpos[world.gripper_qpos_adr[arm.name]])
        touching = any(view.touching_gripper(o, arm.name) for o in view.object_names)
        squeezing = touching and command is not None and command < finger_m
        # Squeezing: the fingers stand where the object stops them. Else whatever lies between the pads stops the
        # emulated fingers as soon as they close, however far this world's ticks lag behind the emulator's motors.
        stop_m = finger_m if squeezing else straddled_width_m(world, view, arm.name, finger_m)
        width_m = None if stop_m is None else round(stop_m, 4)  # 0.1 mm: what the SDK's reading resolves
        if arm.name not in blocked or blocked[arm.name] != width_m:
            bus.request("block_gripper", interface=INTERFACES[arm.name], width_m=width_m)
            blocked[arm.name] = width_m


def where(world: EmbeddedWorld, view: PrivilegedView, robot, blocked: dict[str, float | None]) -> str:
    """The target's height and each gripper's finger width and emulated block, for the log."""
    target = f"target z {view.object_pos('target')[2]:.3f} m" if "target" in view.object_names else "no target"
    fingers = ", ".join(
        f"{arm.name} fingers {2.0 * float(world.data.qpos[world.gripper_qpos_adr[arm.name]]):.3f} m"
        f" block {blocked.get(arm.name)}"
        for arm in robot.arms
    )
    return f"{target}; {fingers}"


def straddled_width_m(world: EmbeddedWorld, view: PrivilegedView, arm: str, finger_m: float) -> float | None:
    """The finger width [m] at which ``arm``'s fingers, closing from ``finger_m``, would stop on an object that lies
    between their pads; None when nothing does. Rays across the gap from a grid of points on each pad's inner face
    (collision geoms only): the object's thickest chord between the pads stops them."""
    m, d = world.model, world.data
    left, right = view.finger_pad_geoms(arm)  # one collision box per finger
    centre_l, centre_r = d.geom_xpos[left], d.geom_xpos[right]
    gap = centre_r - centre_l
    span_m = float(np.linalg.norm(gap))
    if span_m < 1e-6:
        return None
    axis = gap / span_m
    objects = {m.body(name).id for name in view.object_names}
    geomid = np.zeros(1, dtype=np.int32)
    closing_m = math.inf  # the least closure that makes a line across the gap touch an object from both sides
    xmat, size = d.geom_xmat[left].reshape(3, 3), m.geom_size[left]
    for u in (-0.6, 0.0, 0.6):
        for v in (-0.6, 0.0, 0.6):
            offset = xmat[:, 0] * size[0] * u + xmat[:, 2] * size[2] * v  # across the pad's face
            hits = []
            for start, direction, pad in ((centre_l + offset, axis, left), (centre_r + offset, -axis, right)):
                own = int(m.geom_bodyid[pad])  # the ray starts inside its own pad
                dist = mujoco.mj_ray(m, d, start, direction, RAY_GEOM_GROUPS, 1, own, geomid)
                hit = int(geomid[0])
                hits.append((dist, -1 if hit < 0 else int(m.geom_bodyid[hit])))
            (dist_l, body_l), (dist_r, body_r) = hits
            if body_l in objects and body_l == body_r and 0.0 <= dist_l + dist_r < span_m:
                closing_m = min(closing_m, dist_l + dist_r - 2 * size[1])  # from the pads' faces, not centres
    return None if math.isinf(closing_m) else max(0.0, finger_m - max(0.0, closing_m))


if __name__ == "__main__":
    sys.exit(main())
