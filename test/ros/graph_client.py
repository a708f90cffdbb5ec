"""The test client's side of the ROS graph tests: recording topics and sending MoveEef goals."""

from __future__ import annotations

import collections
import threading
import time

from robodojo.nodes import topics

CAMERAS = ("head", "left_wrist", "right_wrist")
CONTROLLERS = tuple(
    name for arm in ("left", "right") for name in (topics.arm_controller_name(arm), topics.gripper_controller_name(arm))
)
# How long a server takes, on these 2 loaded cores, to match the endpoints of an action client just made.
DISCOVERY_SETTLE_S = 1.0


class Recorder:
    """Every message of some topics, with the wall time it arrived."""

    def __init__(self) -> None:
        self.messages: dict[str, list[tuple[float, object]]] = collections.defaultdict(list)
        self.lock = threading.Lock()

    def callback(self, topic: str):
        def on_message(msg: object) -> None:
            with self.lock:
                self.messages[topic].append((time.monotonic(), msg))

        return on_message

    def count(self, topic: str) -> int:
        with self.lock:
            return len(self.messages[topic])

    def last(self, topic: str):
        with self.lock:
            return self.messages[topic][-1][1] if self.messages[topic] else None

    def all(self, topic: str) -> list:
        with self.lock:
            return [m for _, m in self.messages[topic]]

    def clear(self) -> None:
        with self.lock:
            self.messages.clear()

    def snapshot(self) -> dict[str, list[tuple[float, object]]]:
        with self.lock:
            return {k: list(v) for k, v in self.messages.items()}


def stamp_of(t) -> float:
    """A builtin_interfaces/Time in seconds."""
    return t.sec + t.nanosec * 1e-9


def stamp(msg: object) -> float:
    return stamp_of(msg.header.stamp)  # type: ignore[attr-defined]


def subscribe(graph, recorder: Recorder, *, cameras: bool = True) -> None:
    """Record the simulator's topics; without ``cameras`` (640x480 images cost this process most of a core)."""
    from agent_bringup.msg import EpisodeStatus, TrajectoryStatus
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import CameraInfo, Image, JointState

    c = graph.client
    for cam in CAMERAS if cameras else ():
        # deep: under load this process falls behind 25 Hz of 640x480 images, and a reader drops what overflows
        c.create_subscription(Image, topics.camera_image(cam), recorder.callback(topics.camera_image(cam)), 60)
        c.create_subscription(CameraInfo, topics.camera_info(cam), recorder.callback(topics.camera_info(cam)), 20)
        c.create_subscription(PoseStamped, topics.camera_pose(cam), recorder.callback(topics.camera_pose(cam)), 20)
    c.create_subscription(JointState, topics.JOINT_STATES, recorder.callback(topics.JOINT_STATES), 200)
    for arm in ("left", "right"):
        c.create_subscription(PoseStamped, topics.tcp_pose(arm), recorder.callback(topics.tcp_pose(arm)), 50)
    for controller in CONTROLLERS:
        topic = topics.trajectory_status(controller)
        c.create_subscription(TrajectoryStatus, topic, recorder.callback(topic), 200)
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    c.create_subscription(EpisodeStatus, topics.EPISODE_STATUS, recorder.callback(topics.EPISODE_STATUS), latched)


def joints(msg) -> dict[str, float]:
    return dict(zip(msg.name, msg.position, strict=True))


def move_eef_client(graph, queue_depth: int = 10):
    """A MoveEef action client; ``queue_depth`` > rclpy's default 10 for a client that sends goals in bursts (its own
    request writer keeps only that many unacknowledged requests)."""
    from agent_bringup.action import MoveEef
    from rclpy.action import ActionClient
    from rclpy.qos import QoSProfile

    qos = QoSProfile(depth=queue_depth)
    client = ActionClient(
        graph.client, MoveEef, topics.MOVE_EEF, goal_service_qos_profile=qos, result_service_qos_profile=qos
    )
    graph.wait(lambda: client.wait_for_server(timeout_sec=0.5), 40, "the MoveEef action server")
    # This client knows the long-running server at once; the server meets the client's new endpoints a moment later,
    # and Fast DDS drops a response to a reader not yet matched (rclpy: "Failed to send goal response"), the goal with
    # it. Nothing on this side shows the server's matches, so a goal waits out the discovery.
    time.sleep(DISCOVERY_SETTLE_S)
    return client


def wait_future(graph, future, timeout_s: float, what: str):
    graph.wait(future.done, timeout_s, what)
    return future.result()


def goal(names: list[str], values: list[float], mode: int = 0):
    from agent_bringup.action import MoveEef

    return MoveEef.Goal(mode=mode, names=names, values=values, note="test")


def send(graph, client, goal, timeout_s: float = 40.0, feedback: list | None = None):
    on_feedback = feedback.append if feedback is not None else None
    sent = graph.call(lambda: client.send_goal_async(goal, feedback_callback=on_feedback))
    handle = wait_future(graph, sent, 20, "goal acceptance")
    assert handle.accepted
    return wait_future(graph, graph.call(handle.get_result_async), timeout_s, "the MoveEef result").result


# The motion server's allowance for a silent simulator (config/nodes.yaml: 0.5 s). On these 2 shared cores sim_node,
# flooded with malformed trajectories, once went silent for over 0.5 s mid-goal in a whole make test, and the goal
# ended backend_lost. The frozen- and killed-simulator tests stop it for longer than this.
JOINT_STATE_TIMEOUT_S = 2.0
# The agent node's allowance for the cameras (config/nodes.yaml: 2 s, image_timeout_s). sim_node renders three
# cameras on the CPU; in a whole make test a frame once took longer than 2 s and the episode ended backend_lost.
AGENT_SLACK = {"image_timeout_s": 15.0}


def start_sim_and_motion(graph, motion_params: dict | None = None, motion_remaps: dict | None = None, **sim_params):
    rec = Recorder()
    subscribe(graph, rec, cameras=False)
    graph.start("sim_node", **sim_params)
    params = {"use_sim_time": True, "joint_state_timeout_s": JOINT_STATE_TIMEOUT_S, **(motion_params or {})}
    graph.start("motion_server_node", remaps=motion_remaps, **params)
    client = move_eef_client(graph)
    graph.wait(
        lambda: all(rec.count(t) for t in (topics.JOINT_STATES, topics.EPISODE_STATUS, topics.tcp_pose("left"),
                                            topics.tcp_pose("right"))),
        30,
        "joint states, TCP poses and the episode status",
    )  # fmt: skip
    return rec, client
