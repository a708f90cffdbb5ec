"""fr3_world.py against the project's own pieces: franky connects to it as to an FR3, camera_node republishes its
frames with our calibration, and the cube it simulates lands where that calibration projects it and can be picked up.

Real processes throughout (fr3_world, camera_node) and a real rclpy client here; franky talks to franky-sim over the
libfranka protocol. Simulated time runs at 0.5-0.9x wall time: waits are generous and nothing asserts a duration.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
franky = pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")

import fr3_scene as scene  # noqa: E402  (test/hardware/fr3_scene.py, beside this file)
import mujoco  # noqa: E402
from conftest import Fr3World  # noqa: E402
from fr3_cameras import CUBE_POSE_TOPIC  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402

from robodojo.geometry import transform  # noqa: E402
from robodojo.nodes import convert, topics  # noqa: E402
from robodojo.nodes.process_graph import NodeProcess, wait_until  # noqa: E402
from robodojo.perception.camera import CameraModel  # noqa: E402
from robodojo.perception.mounted_camera import load_mounted_camera  # noqa: E402
from robodojo.robots.config import load_robot_config  # noqa: E402
from robodojo.robots.ik import ArmKinematics  # noqa: E402

pytestmark = pytest.mark.ros

ROBOT = load_robot_config("fr3")
ARM = ROBOT.arms[0]
HOME_RAD = np.array(ARM.home_joints_rad)
CAMERAS = ("head", "wrist")
START_S = 60.0  # node start-up and discovery on a loaded 2-core machine
MOTION_TIMEOUT_S = 60.0
JOINT_STATE_PERIOD_S = 0.02
DYNAMICS_FACTOR = 0.25  # of the FR3's velocity, acceleration and jerk limits
HOME_TOLERANCE_RAD = 0.01
GRIPPER_TIMEOUT_S = 30.0
OPEN_WIDTH_M = 0.08
GRIPPER_SPEED_M_S = 0.05
GRASP_FORCE_N = 20.0
PRE_GRASP_HEIGHT_M = 0.10  # above the cube's centre
LIFT_M = 0.10
LIFTED_M = 0.08  # what the cube must rise for a lift to count
WORLD_STOP_S = 30.0
SETTLE_S = 0.5  # franky-sim keeps converging on the last target after a motion reports done
RED_MIN_FRACTION = 0.8  # of the pixels around the cube's projected centre
KEEP_MESSAGES = 50  # per topic: 2 s of cube poses at 25 Hz, to pair with a frame camera_node relayed late


# -- the client -----------------------------------------------------------------------------------------------------
class Client:
    """An rclpy node in fr3_world's domain, spun in a thread, keeping the latest messages of the topics it records.

    Topics are recorded only while a test needs them: 640x480 images at 25 a second cost this process (and the
    publishers' DDS repairs when it falls behind) more CPU than a 2-core machine spares beside the simulator.
    """

    def __init__(self, domain_id: int) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("test_fr3_world_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._lock = threading.Lock()
        self._messages: dict[str, deque] = defaultdict(lambda: deque(maxlen=KEEP_MESSAGES))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self.context.ok() and not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    @contextlib.contextmanager
    def recording(self, subscriptions: dict[str, type]) -> Iterator[None]:
        """Keep the latest KEEP_MESSAGES messages of each topic while the block runs (from an empty record)."""
        with self._lock:
            for topic in subscriptions:
                self._messages[topic].clear()
        subs = [
            self.node.create_subscription(kind, topic, functools.partial(self._keep, topic), 10)
            for topic, kind in subscriptions.items()
        ]
        try:
            yield
        finally:
            for sub in subs:
                self.node.destroy_subscription(sub)

    def _keep(self, topic: str, msg) -> None:
        with self._lock:
            self._messages[topic].append(msg)

    def messages(self, topic: str) -> list:
        with self._lock:
            return list(self._messages[topic])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def camera_topics(camera: str) -> dict[str, type]:
    return {
        topics.camera_image(camera): Image,
        topics.camera_info(camera): CameraInfo,
        topics.camera_pose(camera): PoseStamped,
    }


def wait(predicate: Callable[[], bool], timeout_s: float, what: str, world: Fr3World, *nodes: NodeProcess) -> None:
    if not wait_until(predicate, timeout_s, interval_s=0.05):
        logs = "\n".join(f"--- {n.node} (alive={n.alive}):\n{n.output()[-2000:]}" for n in nodes)
        pytest.fail(
            f"timed out after {timeout_s} s waiting for {what}\n--- fr3_world:\n{world.output()[-2000:]}\n{logs}"
        )


@pytest.fixture(scope="module")
def client(fr3_world: Fr3World) -> Iterator[Client]:
    c = Client(fr3_world.domain_id)
    yield c
    c.close()


@pytest.fixture(scope="module")
def camera_nodes(fr3_world: Fr3World, tmp_path_factory) -> Iterator[dict[str, NodeProcess]]:
    """camera_node for each camera, fed by fr3_world's raw topics (started at once: they load in parallel)."""
    logs = tmp_path_factory.mktemp("camera_nodes")
    nodes = {
        c: NodeProcess(
            "camera_node",
            {"robot": "fr3", "camera": c, "input_topic": f"/{c}/image_raw"},
            fr3_world.env,
            logs / f"{c}.log",
        )
        for c in CAMERAS
    }
    yield nodes
    for node in nodes.values():
        node.stop()


@pytest.fixture(scope="module")
def robot(fr3_world: Fr3World):
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    r = franky.Robot(fr3_world.host, realtime_config=franky.RealtimeConfig.Ignore)
    os.sched_setscheduler(0, policy, param)  # franky.Robot() makes its caller SCHED_FIFO 99 (conftest says why)
    r.relative_dynamics_factor = DYNAMICS_FACTOR
    return r


@pytest.fixture(scope="module")
def kinematics() -> ArmKinematics:
    return ArmKinematics(ROBOT)


class JointStateFeed:
    """/joint_states from franky's robot state at 50 Hz, as the FR3 driver will publish them (the wrist camera's
    pose needs them). Runs only while the robot is idle: each read is one libfranka readOnce."""

    def __init__(self, client: Client, robot) -> None:
        self.robot = robot
        self.pub = client.node.create_publisher(JointState, topics.JOINT_STATES, 10)
        self.clock = client.node.get_clock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(JOINT_STATE_PERIOD_S):
            q = self.robot.state.q
            msg = JointState(name=list(ARM.joints), position=[float(v) for v in q])
            msg.header.stamp = self.clock.now().to_msg()
            self.pub.publish(msg)

    def __enter__(self) -> JointStateFeed:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def latest_view(client: Client, camera: str):
    """The newest recorded image of ``camera`` with its CameraInfo, its pose and the cube's pose of the same stamp
    (fr3_world stamps a tick's frame and cube pose alike, camera_node keeps the stamp), or None."""
    infos = {_key(m): m for m in client.messages(topics.camera_info(camera))}
    poses = {_key(m): m for m in client.messages(topics.camera_pose(camera))}
    cubes = {_key(m): m for m in client.messages(CUBE_POSE_TOPIC)}
    for image in reversed(client.messages(topics.camera_image(camera))):
        key = _key(image)
        if key in infos and key in poses and key in cubes:
            return image, infos[key], poses[key], convert.pose_matrix(cubes[key].pose)
    return None


def _key(msg) -> tuple[int, int]:
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def cube_pose(client: Client) -> np.ndarray | None:
    """The cube's latest recorded world pose."""
    poses = client.messages(CUBE_POSE_TOPIC)
    return convert.pose_matrix(poses[-1].pose) if poses else None


def current_cube_pose(client: Client, world: Fr3World) -> np.ndarray:
    """The cube's world pose now, from fr3_world's /fr3_world/cube_pose."""
    with client.recording({CUBE_POSE_TOPIC: PoseStamped}):
        wait(lambda: cube_pose(client) is not None, START_S, "a cube pose", world)
    T = cube_pose(client)
    assert T is not None
    return T


def red_fraction_at_projection(image: Image, info: CameraInfo, pose: PoseStamped, point_m: np.ndarray) -> float:
    """How much of a small window around ``point_m``'s projection through the published calibration is cube-red."""
    model = CameraModel.from_calibration(pose.header.frame_id, convert.calibration_from(info, pose))
    (uv,), (in_front,) = model.project_uv(point_m[None, :])
    assert in_front
    u, v = np.round(uv).astype(int)
    assert 0 <= u < image.width and 0 <= v < image.height, f"the cube projects to ({u}, {v}), outside the image"
    rgb = convert.image_rgb(image).astype(int)
    window = rgb[max(v - 3, 0) : v + 4, max(u - 3, 0) : u + 4]
    red = (window[..., 0] > 120) & (window[..., 1] < 0.5 * window[..., 0]) & (window[..., 2] < 0.5 * window[..., 0])
    return float(red.mean())


def move_to(robot, q: np.ndarray) -> None:
    robot.move(franky.JointMotion(q.tolist()), asynchronous=True)
    assert robot.join_motion(MOTION_TIMEOUT_S), f"the move to {np.round(q, 3).tolist()} did not end"


def finished(future, what: str) -> bool:
    """A gripper command's result; fails the test if it takes longer than GRIPPER_TIMEOUT_S (franky's blocking calls
    have no timeout: a stalled simulator would hang the test)."""
    assert future.wait(GRIPPER_TIMEOUT_S), f"{what} did not finish within {GRIPPER_TIMEOUT_S} s"
    return future.get()


def tcp_target(kinematics: ArmKinematics, xyz_m: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Joint angles putting the TCP at ``xyz_m``, pointing straight down as at home (fingers along world x)."""
    _, R_down = kinematics.tcp_pose(ARM.name, HOME_RAD)
    solution = kinematics.solve(ARM.name, xyz_m, R_down, seed)
    assert solution.converged, f"no IK solution for the TCP at {xyz_m}: {solution}"
    return solution.q


# -- the scene ------------------------------------------------------------------------------------------------------
def test_scene_kinematics_and_cameras_match_our_config():
    """franky-sim's model agrees with our URDF (FK within 2 mm), and its cameras sit where the calibration files say."""
    cameras = tuple(load_mounted_camera(ROBOT, c) for c in CAMERAS)
    sim, handle = scene.build_simulator(ROBOT, scene.WorldLayout(scene.DEFAULT_CUBE_XY_M, cameras))
    sim.init()
    sim.start()  # compiles the scene and settles it at the initial pose
    try:
        agreement = scene.check_kinematics(sim.model, handle, ARM, ROBOT)
        assert agreement.ok, str(agreement)
        m, d = sim.model, mujoco.MjData(sim.model)
        qadr = [m.joint(f"{scene.PREFIX}{j}").qposadr[0] for j in ARM.joints]
        d.qpos[qadr] = HOME_RAD
        mujoco.mj_forward(m, d)
        pos, R = ArmKinematics(ROBOT).tcp_pose(ARM.name, HOME_RAD)
        for camera in cameras:
            cid = m.camera(camera.name).id
            T_mj = transform(d.cam_xmat[cid].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0]), d.cam_xpos[cid])
            T_file = camera.T_world_cam(transform(R, pos) if camera.arm else None)
            np.testing.assert_allclose(T_mj, T_file, atol=1e-6, err_msg=camera.name)
        cube = m.body("cube").id
        # the cube rests on the table top after the settling steps
        assert sim.data.xpos[cube][2] == pytest.approx(ROBOT.table.top_z_m + scene.CUBE_SIZE_M / 2, abs=1e-3)
    finally:
        sim.cleanup()


# -- franky and the cameras -----------------------------------------------------------------------------------------
def test_franky_reads_the_home_pose(robot):
    q = np.array(robot.state.q)
    assert np.abs(q - HOME_RAD).max() < HOME_TOLERANCE_RAD, q


def test_head_camera_sees_the_cube_where_its_calibration_projects_it(fr3_world, client, camera_nodes):
    calibration = load_mounted_camera(ROBOT, "head")
    with client.recording({**camera_topics("head"), CUBE_POSE_TOPIC: PoseStamped}):
        node = camera_nodes["head"]
        wait(lambda: latest_view(client, "head") is not None, START_S, "head camera topics", fr3_world, node)
    image, info, pose, T_cube = latest_view(client, "head")
    assert (image.encoding, image.width, image.height) == ("rgb8", calibration.width, calibration.height)
    assert info.header.frame_id == image.header.frame_id == calibration.frame
    np.testing.assert_allclose(np.array(info.k).reshape(3, 3), calibration.file.model.K)
    np.testing.assert_allclose(convert.pose_matrix(pose.pose), calibration.T_world_cam(), atol=1e-9)
    np.testing.assert_allclose(T_cube[:2, 3], scene.DEFAULT_CUBE_XY_M, atol=0.005)
    assert red_fraction_at_projection(image, info, pose, T_cube[:3, 3]) > RED_MIN_FRACTION


def test_wrist_camera_follows_the_arm_to_the_cube(fr3_world, client, camera_nodes, robot, kinematics):
    """Above the cube (the arm moved by franky), the wrist camera's pose from /joint_states puts the cube on red."""
    T_cube = current_cube_pose(client, fr3_world)
    above = tcp_target(kinematics, T_cube[:3, 3] + [0.0, 0.0, PRE_GRASP_HEIGHT_M], HOME_RAD)
    move_to(robot, above)
    time.sleep(SETTLE_S)
    with JointStateFeed(client, robot), client.recording({**camera_topics("wrist"), CUBE_POSE_TOPIC: PoseStamped}):
        node = camera_nodes["wrist"]
        wait(lambda: latest_view(client, "wrist") is not None, START_S, "wrist camera topics", fr3_world, node)
    image, info, pose, T_cube = latest_view(client, "wrist")
    assert red_fraction_at_projection(image, info, pose, T_cube[:3, 3]) > RED_MIN_FRACTION


# -- the pick-up an agent episode will do ---------------------------------------------------------------------------
def test_the_cube_is_grasped_and_lifted(fr3_world, client, robot, kinematics):
    """Open, above the cube, down, grasp, up 10 cm, all through franky: the cube rises with the hand."""
    gripper = franky.Gripper(fr3_world.host)
    start = current_cube_pose(client, fr3_world)
    centre = start[:3, 3]
    above = tcp_target(kinematics, centre + [0.0, 0.0, PRE_GRASP_HEIGHT_M], np.array(robot.state.q))
    grasp = tcp_target(kinematics, centre, above)
    lifted = tcp_target(kinematics, centre + [0.0, 0.0, LIFT_M], grasp)
    assert finished(gripper.move_async(OPEN_WIDTH_M, GRIPPER_SPEED_M_S), "opening")
    move_to(robot, above)
    move_to(robot, grasp)
    grasped = gripper.grasp_async(0.0, GRIPPER_SPEED_M_S, GRASP_FORCE_N, epsilon_inner=0.01, epsilon_outer=0.08)
    assert finished(grasped, "the grasp")
    assert gripper.width == pytest.approx(scene.CUBE_SIZE_M, abs=0.005)
    move_to(robot, lifted)
    time.sleep(SETTLE_S)
    end = current_cube_pose(client, fr3_world)
    assert end[2, 3] - start[2, 3] >= LIFTED_M, f"the cube rose {end[2, 3] - start[2, 3]:.3f} m"
    assert gripper.is_grasped


# -- last: the module's world ends here -----------------------------------------------------------------------------
def test_sigterm_ends_the_world_cleanly(fr3_world):
    """SIGTERM (as SIGINT, which the fixture sends) stops the camera process and franky-sim, and exits 0."""
    fr3_world.process.send_signal(signal.SIGTERM)
    assert fr3_world.process.wait(timeout=WORLD_STOP_S) == 0, fr3_world.output()[-2000:]
    assert "fr3_world: stopped (exit code 0)" in fr3_world.output()
