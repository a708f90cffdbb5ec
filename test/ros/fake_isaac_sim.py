"""A FAKE of Isaac Sim for the graph tests: a stand-in for the GPU simulator, which cannot run on these machines.

Isaac Sim 6.x needs an RTX GPU (shared/HARDWARE.md); what the project runs there is scripts/isaac_sim_robodojo.py.
This process speaks the same topics as that script's OmniGraph, so the ROS side (isaac_bridge_node, camera_node,
the motion server) can be tested against something that behaves like it:

- ``/clock`` and ``/isaac/joint_states`` (every movable joint of the scene URDF, mimic fingers included, stamped with
  simulation time) once per rendered frame, ``--frame-hz`` frames per second of simulation time, paced on the wall
  clock in real time; after a stall (SIGSTOP) it goes on from where it stopped, as Isaac's timeline does;
- ``/isaac/joint_command``: position targets by joint name, which each joint follows as a first-order position drive
  (time constant ``--drive-tau-s``), the articulation controller's stiff PD drives reduced to their step response;
- ``/isaac/cameras/<camera>/image_raw`` (rgb8, the robot config's size, a fixed test pattern) and ``camera_info`` at
  ``--image-hz``.

No physics beyond that, no rendering of the scene: it is a boundary fake, named as such, never a simulator.

    python test/ros/fake_isaac_sim.py --robot dual_arx_x5
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState

from robodojo.nodes import convert, topics
from robodojo.robots.config import load_robot_config
from robodojo.robots.urdf import load_urdf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="dual_arx_x5")
    parser.add_argument("--frame-hz", type=float, default=60.0, help="rendered frames per second of simulation time")
    parser.add_argument("--image-hz", type=float, default=2.0, help="camera frames per second of simulation time")
    parser.add_argument("--drive-tau-s", type=float, default=0.03, help="the position drives' time constant [s]")
    args = parser.parse_args(argv)

    robot = load_robot_config(args.robot)
    urdf = load_urdf(robot.scene_urdf)
    q = {j.name: 0.0 for j in urdf.movable_joints}
    for arm in robot.arms:
        q.update(zip(arm.joints, arm.home_joints_rad, strict=True))
        q[arm.gripper_joint] = arm.gripper_max_m
    for j in urdf.movable_joints:  # the scene as described: mimic fingers where their leader puts them
        if j.mimic is not None:
            q[j.name] = j.mimic.multiplier * q[j.mimic.joint] + j.mimic.offset
    names = list(q)
    positions = np.array([q[n] for n in names])
    targets = positions.copy()
    index = {n: i for i, n in enumerate(names)}
    lock = threading.Lock()

    rclpy.init()
    node = rclpy.create_node("fake_isaac_sim")

    def on_command(msg: JointState) -> None:
        with lock:
            for name, value in zip(msg.name, msg.position, strict=False):
                if name in index and math.isfinite(value):
                    targets[index[name]] = value

    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(JointState, topics.ISAAC_JOINT_COMMAND, on_command, qos)
    clock_pub = node.create_publisher(Clock, topics.CLOCK, 10)
    state_pub = node.create_publisher(JointState, topics.ISAAC_JOINT_STATES, 10)
    cameras = []
    for cam in robot.cameras:
        pattern = np.zeros((cam.height, cam.width, 3), np.uint8)
        pattern[..., 0] = np.linspace(0, 255, cam.width, dtype=np.uint8)[None, :]
        pattern[..., 1] = np.linspace(0, 255, cam.height, dtype=np.uint8)[:, None]
        f = cam.height / 2 / math.tan(math.radians(cam.fovy_deg) / 2)
        info = CameraInfo(width=cam.width, height=cam.height, distortion_model="plumb_bob")
        info.k = [f, 0.0, cam.width / 2, 0.0, f, cam.height / 2, 0.0, 0.0, 1.0]
        cameras.append(
            (
                cam,
                pattern,
                info,
                node.create_publisher(Image, topics.isaac_camera_image(cam.name), qos),
                node.create_publisher(CameraInfo, topics.isaac_camera_info(cam.name), qos),
            )
        )

    frame_s = 1.0 / args.frame_hz
    follow = 1.0 - math.exp(-frame_s / args.drive_tau_s)  # a first-order drive's step over one frame
    frames_per_image = max(1, round(args.frame_hz / args.image_hz))
    running = True

    def simulate() -> None:
        sim_s, frame = 0.0, 0
        next_wall = time.monotonic()
        previous = positions.copy()
        while running and rclpy.ok():
            sim_s += frame_s
            frame += 1
            with lock:
                positions[:] += follow * (targets - positions)
                velocities = (positions - previous) / frame_s
                previous[:] = positions
                state = JointState(header=convert.header(sim_s, ""), name=names, position=positions.tolist())
                state.velocity = velocities.tolist()
            clock_pub.publish(Clock(clock=convert.time_msg(sim_s)))
            state_pub.publish(state)
            if frame % frames_per_image == 0:
                for cam, pattern, info, image_pub, info_pub in cameras:
                    info.header = convert.header(sim_s, cam.frame)
                    info_pub.publish(info)
                    image_pub.publish(convert.image_msg(pattern, sim_s, cam.frame))
            next_wall += frame_s
            delay = next_wall - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * frame_s:  # stalled (or stopped): go on from here, as a paused timeline does
                next_wall = time.monotonic()

    thread = threading.Thread(target=simulate, daemon=True)
    thread.start()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        running = False
        thread.join(timeout=2.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
