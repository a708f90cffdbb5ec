"""sim:=isaac end to end, with Isaac Sim replaced by a FAKE (fake_isaac_sim.py: Isaac cannot run on these machines).

The nodes robodojo graph --hardware isaac starts (the same list as launch's sim:=isaac: isaac_bridge_node,
episode_node, tcp_state_publisher, one camera_node per camera, the motion server) run as real processes against the
fake, which speaks Isaac's topics (/clock, /isaac/joint_states, /isaac/joint_command, /isaac/cameras/...). Where an arm
went is judged from the fake's own joint states (/isaac/joint_states) and forward kinematics, never from what the
bridge reports. The module's tests share one graph and run in order; the last one freezes the fake.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import graph_client as gc
import numpy as np
import pytest

from robodojo.control.trajectory_controller import TrajectoryState
from robodojo.nodes import topics
from robodojo.nodes.process_graph import graph_nodes
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics

pytestmark = pytest.mark.ros

FAKE = Path(__file__).with_name("fake_isaac_sim.py")
ROBOT = load_robot_config("dual_arx_x5")
DT = ROBOT.control_dt_s
START_S = 90.0  # eight processes starting on a shared, loaded 2-core machine
POS_TOLERANCE_MM = 5.0
FROZEN_QUIET_S = 0.5  # no joint states from the fake for this long: it is frozen and its last state has arrived


class Isaac:
    """The fake Isaac Sim process."""

    def __init__(self, graph) -> None:
        self.log = graph.tmp_path / "fake_isaac_sim.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(FAKE), "--robot", ROBOT.name], env=graph.env, stdout=out, stderr=subprocess.STDOUT
            )

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        self.signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def isaac_graph(module_graph) -> Iterator[tuple[object, Isaac, gc.Recorder]]:
    from agent_bringup.msg import EpisodeStatus, TrajectoryStatus
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Image, JointState

    graph = module_graph
    rec = gc.Recorder()
    c = graph.client
    for topic in (topics.JOINT_STATES, topics.ISAAC_JOINT_STATES, topics.ISAAC_JOINT_COMMAND):
        c.create_subscription(JointState, topic, rec.callback(topic), 500)
    c.create_subscription(Clock, topics.CLOCK, rec.callback(topics.CLOCK), 100)
    c.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, rec.callback(topics.DIAGNOSTICS), 50)
    for controller in gc.CONTROLLERS:
        topic = topics.trajectory_status(controller)
        c.create_subscription(TrajectoryStatus, topic, rec.callback(topic), 200)
    for cam in gc.CAMERAS:
        c.create_subscription(PoseStamped, topics.camera_pose(cam), rec.callback(topics.camera_pose(cam)), 20)
        c.create_subscription(Image, topics.camera_image(cam), rec.callback(topics.camera_image(cam)), 5)
    for arm in ROBOT.arm_names:
        c.create_subscription(PoseStamped, topics.tcp_pose(arm), rec.callback(topics.tcp_pose(arm)), 50)
    from rclpy.qos import DurabilityPolicy, QoSProfile

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    c.create_subscription(EpisodeStatus, topics.EPISODE_STATUS, rec.callback(topics.EPISODE_STATUS), latched)
    isaac = Isaac(graph)
    try:
        starts = graph_nodes(
            robot=ROBOT.name, task="general_pickup", seed=0, variant="standard", agent="none", agent_params={},
            hardware="isaac",
        )  # fmt: skip
        for node, params, log in starts:
            if node == "motion_server_node":  # slack for the loaded machine, as the other graph tests give
                params.update(joint_state_timeout_s=gc.JOINT_STATE_TIMEOUT_S)
            graph.start(node, name=Path(log).stem, **params)
        # Each test may run first (-k): the bridge serves once it has Isaac's joint states and commands them
        graph.wait(
            lambda: rec.count(topics.JOINT_STATES) > 20 and rec.count(topics.ISAAC_JOINT_COMMAND) > 20,
            START_S,
            "the bridge's joint states and Isaac commands",
        )
        yield graph, isaac, rec
    finally:
        for node in graph.nodes:  # the bridge first notices Isaac gone otherwise, and says so in its log
            node.stop()
        isaac.stop()


def _fake_q(rec: gc.Recorder) -> dict[str, float]:
    return gc.joints(rec.last(topics.ISAAC_JOINT_STATES))


def _quiet_for(rec: gc.Recorder, topic: str) -> float:
    """How long ago the last message of ``topic`` arrived [s]."""
    with rec.lock:
        return time.monotonic() - rec.messages[topic][-1][0]


def _tick_counts(rec: gc.Recorder) -> tuple[float, int, int] | None:
    """The bridge's latest accounting on /diagnostics: (simulation time [s], control ticks commanded, ticks skipped)."""
    for diagnostics in reversed(rec.all(topics.DIAGNOSTICS)):
        for status in diagnostics.status:
            values = {v.key: v.value for v in status.values}
            if "control_ticks_skipped" in values:
                return (
                    float(values["simulation_time_s"]),
                    int(values["control_ticks_commanded"]),
                    int(values["control_ticks_skipped"]),
                )
    return None


def _reports(rec: gc.Recorder, controller: str) -> list:
    return rec.all(topics.trajectory_status(controller))


def _trajectory(arm: str, start_q: np.ndarray, offsets_rad: np.ndarray, duration_s: float):
    """A cosine move from ``start_q``, one point per control tick, stamped 0 (start now)."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    times = np.arange(1, round(duration_s / DT) + 1) * DT
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    msg = JointTrajectory(joint_names=list(ROBOT.arm(arm).joints))
    for t, q in zip(times, start_q + np.outer(s, offsets_rad), strict=True):
        sec = int(t)
        at = Duration(sec=sec, nanosec=round((t - sec) * 1e9))
        msg.points.append(JointTrajectoryPoint(positions=q.tolist(), time_from_start=at))
    return msg


def test_bridge_republishes_joint_states_on_isaac_time_and_commands_every_joint_each_tick(isaac_graph):
    graph, _, rec = isaac_graph
    graph.wait(lambda: _tick_counts(rec) is not None, 10.0, "the bridge's diagnostics")
    before = _tick_counts(rec)
    rec.clear()
    time.sleep(3.0)
    got = rec.snapshot()
    states = [m for _, m in got[topics.JOINT_STATES]]
    arm_joints = {j for arm in ROBOT.arms for j in (*arm.joints, arm.gripper_joint)}
    assert set(states[-1].name) == arm_joints  # arms and gripper joints, as sim_node publishes them
    # stamped with Isaac's simulation time (the fake's /clock), not the system clock
    clock = gc.stamp_of(got[topics.CLOCK][-1][1].clock)
    assert abs(gc.stamp(states[-1]) - clock) < 0.5 and clock < 1e6
    # /isaac/joint_command: at most one message per 40 ms tick of simulation time, naming every movable joint
    commands = [m for _, m in got[topics.ISAAC_JOINT_COMMAND]]
    all_joints = set(gc.joints(got[topics.ISAAC_JOINT_STATES][-1][1]))
    assert all(set(m.name) == all_joints for m in commands)
    ticks = np.floor(np.array([gc.stamp(m) for m in commands]) / DT + 1e-6)
    assert ticks[-1] - ticks[0] > 1.0 / DT
    assert (np.diff(ticks) >= 1).all(), "a control tick was commanded twice"
    # and every tick of simulation time was commanded, or skipped and counted on /diagnostics: its Isaac joint state
    # was lost on the way (best effort) or came late, and the bridge skipped its target rather than play it late
    rec.clear()
    graph.wait(lambda: _tick_counts(rec) is not None, 10.0, "the bridge's diagnostics after the window")
    after = _tick_counts(rec)
    elapsed = round(after[0] / DT) - round(before[0] / DT)
    commanded, skipped = after[1] - before[1], after[2] - before[2]
    assert abs(commanded + skipped - elapsed) <= 1, f"{commanded} commanded + {skipped} skipped of {elapsed} ticks"
    assert len(commands) <= commanded
    # nothing plays: the held position is sent, where the fake's arms stand
    held, q = gc.joints(commands[-1]), _fake_q(rec)
    assert max(abs(held[j] - q[j]) for j in ROBOT.arm("left").joints) < 0.01


def test_move_eef_goal_plays_through_the_bridge_and_the_arm_arrives(isaac_graph):
    graph, _, rec = isaac_graph
    client = gc.move_eef_client(graph)
    graph.wait(lambda: rec.last(topics.tcp_pose("right")) is not None, START_S, "the TCP poses")
    start = rec.last(topics.tcp_pose("right")).pose.position
    target = (start.x, start.y + 0.03, start.z - 0.05)
    result = gc.send(graph, client, gc.goal(["right_y", "right_z"], [target[1], target[2]]), timeout_s=60)
    assert result.accepted and result.error == "", result.error
    assert result.stop_reason == "completed" and result.steps_used == result.waypoints > 5
    assert result.arms[0].reached and result.arms[0].pos_error_mm < POS_TOLERANCE_MM

    def finished() -> list:
        return [m for m in _reports(rec, "right_arm_controller") if m.state == TrajectoryState.FINISHED]

    # the result and the bridge's report travel on different topics: on a loaded machine the report may come second
    graph.wait(lambda: bool(finished()), 10.0, "the bridge's FINISHED report")
    end = finished()[-1]
    assert end.points_played == end.points == result.waypoints
    # judged from the fake's own joints: the grasp point is where the goal asked
    time.sleep(0.3)
    q = _fake_q(rec)
    pos, _ = ArmKinematics(ROBOT).tcp_pose("right", np.array([q[j] for j in ROBOT.arm("right").joints]))
    assert np.linalg.norm(pos - np.array(target)) * 1e3 < POS_TOLERANCE_MM


def test_an_out_of_limit_trajectory_is_refused_and_no_target_of_it_is_sent(isaac_graph):
    from trajectory_msgs.msg import JointTrajectory

    graph, _, rec = isaac_graph
    left = ROBOT.arm("left")
    q0 = np.array([_fake_q(rec)[j] for j in left.joints])
    held = gc.joints(rec.last(topics.ISAAC_JOINT_COMMAND))
    publisher = graph.client.create_publisher(JointTrajectory, topics.arm_controller("left"), 10)
    graph.wait(lambda: publisher.get_subscription_count() > 0, 20, "the bridge's subscription")
    offsets = np.zeros(len(left.joints))
    offsets[3] = -0.5  # joint4 from home's -1.31 past its -1.6 rad limit
    before = rec.count(topics.ISAAC_JOINT_COMMAND)
    publisher.publish(_trajectory("left", q0, offsets, 1.0))
    graph.wait(
        lambda: any(m.state == TrajectoryState.REFUSED for m in _reports(rec, "left_arm_controller")),
        10,
        "the refusal",
    )
    refused = [m for m in _reports(rec, "left_arm_controller") if m.state == TrajectoryState.REFUSED][-1]
    assert "left_joint4" in refused.reason and refused.points_played == 0
    time.sleep(1.5)  # longer than the trajectory: had any of it played, it would show
    sent = rec.all(topics.ISAAC_JOINT_COMMAND)[before:]
    assert len(sent) > 10
    for msg in sent:
        command = gc.joints(msg)
        assert all(command[j] == held[j] for j in left.joints), "a target of the refused trajectory was sent"


def test_a_gripper_trajectory_moves_the_fingers_and_their_mimic_and_finishes(isaac_graph):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    graph, _, rec = isaac_graph
    left = ROBOT.arm("left")
    publisher = graph.client.create_publisher(JointTrajectory, topics.gripper_controller("left"), 10)
    graph.wait(lambda: publisher.get_subscription_count() > 0, 20, "the bridge's subscription")
    start = _fake_q(rec)[left.gripper_joint]
    goal_m = 0.01  # per finger
    msg = JointTrajectory(joint_names=[left.gripper_joint])
    for k in range(1, 13):  # 0.48 s, the planner's full stroke
        at = Duration(sec=0, nanosec=round(k * DT * 1e9))
        msg.points.append(JointTrajectoryPoint(positions=[start + (goal_m - start) * k / 12], time_from_start=at))
    reports_before = len(_reports(rec, "left_gripper_controller"))
    publisher.publish(msg)
    graph.wait(
        lambda: any(
            m.state == TrajectoryState.FINISHED for m in _reports(rec, "left_gripper_controller")[reports_before:]
        ),
        20,
        "the gripper trajectory to finish",
    )
    command = gc.joints(rec.last(topics.ISAAC_JOINT_COMMAND))
    q = _fake_q(rec)
    mimic = next(n for n in q if n != left.gripper_joint and n.startswith(left.prefix + "finger"))
    assert command[left.gripper_joint] == pytest.approx(goal_m) and command[mimic] == pytest.approx(goal_m)

    # The fake's own finger, and the same republished live. Waited for, not read once: on a loaded machine the
    # newest message this client has is older than the report it just read (seen: 13.0 mm with the finger at 10).
    def at_goal(topic: str) -> bool:
        return abs(gc.joints(rec.last(topic))[left.gripper_joint] - goal_m) < 0.002

    graph.wait(lambda: at_goal(topics.ISAAC_JOINT_STATES), 10, "the fake's finger at its goal")
    graph.wait(lambda: at_goal(topics.JOINT_STATES), 10, "the finger at its goal in /joint_states")


@pytest.mark.long  # a drill: make test-long (CI runs it after make test)
def test_an_operators_abuse_moves_nothing_unasked_and_every_request_is_answered(isaac_graph):
    """Malformed joint states flooding in beside Isaac's, a burst of goals, then a hundred e-stops on an arm at
    rest: the bridge serves on, each goal and each e-stop gets an answer, and the held arm does not move."""
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from robodojo.nodes.operator_services import ESTOP, RELEASE

    graph, _, rec = isaac_graph
    c = graph.client
    flood = c.create_publisher(JointState, topics.ISAAC_JOINT_STATES, 100)
    graph.wait(lambda: flood.get_subscription_count() > 0, 20, "the bridge's subscription")
    for k in range(500):  # names and positions of different lengths, and empty ones: dropped, logged once
        names = [f"j{i}" for i in range(k % 7 + 1)]
        flood.publish(JointState(name=names, position=[0.1] * (len(names) + 1)))
        flood.publish(JointState())
    graph.wait(lambda: _tick_counts(rec) is not None, 10, "the bridge's diagnostics after the flood")

    client = gc.move_eef_client(graph)
    graph.wait(lambda: rec.last(topics.tcp_pose("right")) is not None, START_S, "the TCP poses")
    z = rec.last(topics.tcp_pose("right")).pose.position.z
    sent = [graph.call(lambda dz=dz: client.send_goal_async(gc.goal(["right_z"], [z - dz]))) for dz in
            (0.02, 0.04, 0.03, 0.05, 0.01, 0.02)]  # fmt: skip
    handles = [gc.wait_future(graph, f, 30, "a goal's acceptance") for f in sent]
    results = [gc.wait_future(graph, graph.call(h.get_result_async), 90, "a goal's result").result for h in handles
               if h.accepted]  # fmt: skip
    assert results and all(r.stop_reason for r in results), [r.stop_reason for r in results]

    time.sleep(1.0)  # the last goal has ended: the arm holds
    left, right = ROBOT.arm("left").joints, ROBOT.arm("right").joints
    held = {j: _fake_q(rec)[j] for j in (*left, *right)}
    estop, release = c.create_client(Trigger, ESTOP), c.create_client(Trigger, RELEASE)
    graph.wait(lambda: estop.service_is_ready() and release.service_is_ready(), 20, "the operator services")

    def trigger(service) -> Trigger.Response:
        return gc.wait_future(graph, graph.call(lambda: service.call_async(Trigger.Request())), 20, "an answer")

    answers = [trigger(estop) for _ in range(100)]
    assert all(a.success and "stopped" in a.message for a in answers), answers[-1]
    time.sleep(1.0)
    assert max(abs(_fake_q(rec)[j] - q) for j, q in held.items()) < 1e-3  # a stop never moves an arm at rest
    assert trigger(release).success


def test_freezing_isaac_is_lost_contact_the_trajectory_stops_and_nothing_moves_after(isaac_graph):
    graph, isaac, rec = isaac_graph
    left = ROBOT.arm("left")
    q0 = np.array([_fake_q(rec)[j] for j in left.joints])
    offsets = np.zeros(len(left.joints))
    offsets[0] = 0.5
    from trajectory_msgs.msg import JointTrajectory

    publisher = graph.client.create_publisher(JointTrajectory, topics.arm_controller("left"), 10)
    graph.wait(lambda: publisher.get_subscription_count() > 0, 20, "the bridge's subscription")
    reports_before = len(_reports(rec, "left_arm_controller"))
    publisher.publish(_trajectory("left", q0, offsets, 4.0))
    joint = left.joints[0]
    graph.wait(lambda: _fake_q(rec)[joint] > q0[0] + 0.05, 20, "the slow move to start in the fake")
    isaac.signal(signal.SIGSTOP)
    try:
        graph.wait(
            lambda: any(
                m.state == TrajectoryState.STOPPED and m.reason.startswith("lost contact")
                for m in _reports(rec, "left_arm_controller")[reports_before:]
            ),
            10,
            "the trajectory stopped for lost contact",
        )
        graph.wait(
            lambda: any(
                s.message.startswith("lost contact") for s in rec.last(topics.DIAGNOSTICS).status if "left" in s.name
            ),
            10,
            "/diagnostics to say lost contact",
        )
        graph.wait(lambda: _quiet_for(rec, topics.ISAAC_JOINT_STATES) > FROZEN_QUIET_S, 10, "the fake to fall silent")
    finally:
        isaac.signal(signal.SIGCONT)
    ends = _reports(rec, "left_arm_controller")[reports_before:]
    stopped = next(m for m in ends if m.state == TrajectoryState.STOPPED)
    assert 0 < stopped.points_played < stopped.points
    # Isaac runs again: nothing of the stopped trajectory may play on. Judged against the stop report's own count,
    # not against a reading taken at the freeze (a starved test client reads the fake's states late: once 0.1 rad).
    time.sleep(1.0)
    settled = _fake_q(rec)[joint]
    time.sleep(1.0)
    q = _fake_q(rec)[joint]
    assert abs(q - settled) < 0.005, f"the arm went on from {settled:.3f} to {q:.3f} rad after the freeze"
    # the target sent at a tick is the trajectory one tick ahead; one more for a tick sent as the freeze landed
    reached = min(stopped.points_played + 2, stopped.points)
    bound = q0[0] + offsets[0] * (1 - np.cos(np.pi * reached / stopped.points)) / 2
    assert q < bound + 0.005, f"the arm stands at {q:.3f} rad, beyond the {bound:.3f} rad the report played"
    assert q < q0[0] + 0.45
    # contact is back: the bridge serves again (its joint states, diagnostics OK)
    graph.wait(
        lambda: any(
            s.message == "idle" for s in rec.last(topics.DIAGNOSTICS).status if s.name.endswith(": left")
        ),
        10,
        "contact restored",
    )  # fmt: skip
    assert not [m for m in _reports(rec, "left_arm_controller")[reports_before:] if m.state == TrajectoryState.FINISHED]


def test_camera_nodes_republish_isaac_images_with_poses(isaac_graph):
    graph, _, rec = isaac_graph
    graph.wait(
        lambda: all(rec.count(topics.camera_pose(c)) and rec.count(topics.camera_image(c)) for c in gc.CAMERAS),
        30,
        "every camera's pose and image under /cameras/",
    )
    for cam in gc.CAMERAS:
        pose, image = rec.last(topics.camera_pose(cam)), rec.last(topics.camera_image(cam))
        assert pose.header.frame_id == topics.WORLD_FRAME and image.header.frame_id == ROBOT.camera(cam).frame
        assert gc.stamp(pose) < 1e6  # Isaac's simulation time, carried over from its image
