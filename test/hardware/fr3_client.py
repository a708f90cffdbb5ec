"""The test side of the FR3 graph tests: an rclpy client in fr3_world's ROS domain, and waiting with the logs."""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from robodojo.nodes import convert, topics
from robodojo.nodes.process_graph import NodeProcess, wait_until
from robodojo.nodes.runtime import call_in_executor
from robodojo.robots.config import load_robot_config

SERVICE_TIMEOUT_S = 30.0
FR3 = load_robot_config("fr3")


class Client:
    """An rclpy node in ``domain_id``, spun in a thread, keeping the messages of the topics it subscribes."""

    def __init__(self, domain_id: int) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("test_fr3_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._lock = threading.Lock()
        self._messages: dict[str, list] = defaultdict(list)
        self._publishers: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()
        # Made now, long before its first goal: a server that meets an action client only as its goal arrives may not
        # yet have matched the client's response reader, and Fast DDS then drops the response (rclpy logs "Failed to
        # send goal response") and the goal with it, while the client, which knew the server, waits forever.
        self.move_eef_action = self.call(self._make_move_eef_action)

    def _make_move_eef_action(self) -> Any:
        from agent_bringup.action import MoveEef
        from rclpy.action import ActionClient

        return ActionClient(self.node, MoveEef, topics.MOVE_EEF)

    def _spin(self) -> None:
        while self.context.ok() and not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def subscribe(self, kind: type, topic: str, *, depth: int = 10, latched: bool = False) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile

        def keep(msg) -> None:
            with self._lock:
                self._messages[topic].append(msg)

        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL) if latched else depth
        self.call(lambda: self.node.create_subscription(kind, topic, keep, qos))

    def messages(self, topic: str) -> list:
        with self._lock:
            return list(self._messages[topic])

    def clear(self, topic: str | None = None) -> None:
        with self._lock:
            if topic is None:
                self._messages.clear()
            else:
                self._messages[topic].clear()

    def publish(self, topic: str, msg: Any) -> None:
        if topic not in self._publishers:
            self._publishers[topic] = self.call(lambda: self.node.create_publisher(type(msg), topic, 10))
        self._publishers[topic].publish(msg)

    def call(self, fn: Callable[[], Any], timeout_s: float = SERVICE_TIMEOUT_S) -> Any:
        """``fn`` in the client's executor thread (rclpy's clients are not thread-safe)."""
        return call_in_executor(self.node, fn, timeout_s)

    def service(self, kind: type, name: str, request: Any, timeout_s: float = SERVICE_TIMEOUT_S) -> Any:
        """Call service ``name`` once; its response (pytest.fail on no answer)."""
        client = self.call(lambda: self.node.create_client(kind, name))
        if not client.wait_for_service(timeout_sec=timeout_s):
            pytest.fail(f"no service {name} within {timeout_s} s")
        future = self.call(lambda: client.call_async(request))
        if not wait_until(future.done, timeout_s):
            pytest.fail(f"{name} did not answer within {timeout_s} s")
        return future.result()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def wait(
    predicate: Callable[[], bool],
    timeout_s: float,
    what: str,
    world: Any,
    *nodes: NodeProcess,
    seen: Callable[[], str] | None = None,
) -> None:
    """Wait for ``predicate``; on timeout fail with ``what``, what ``seen`` says was seen instead, and the last output
    of the world and the nodes."""
    if not wait_until(predicate, timeout_s, interval_s=0.05):
        logs = "\n".join(f"--- {n.node} (alive={n.alive}):\n{n.output()[-2000:]}" for n in nodes)
        instead = f"\nseen instead: {seen()}" if seen is not None else ""
        pytest.fail(
            f"timed out after {timeout_s} s waiting for {what}{instead}\n--- world:\n{world.output()[-2000:]}\n{logs}"
        )


def move_eef(client: Client, dims: dict[str, float], timeout_s: float) -> Any:
    """One MoveEef goal (mode MOVE_EEF) to the motion server; its result."""
    from agent_bringup.action import MoveEef

    action = client.move_eef_action
    if not action.wait_for_server(timeout_sec=timeout_s):
        pytest.fail("no MoveEef action server")
    goal = MoveEef.Goal(mode=MoveEef.Goal.MOVE_EEF, names=list(dims), values=[float(v) for v in dims.values()])
    sent = client.call(lambda: action.send_goal_async(goal))
    assert wait_until(sent.done, timeout_s), "the goal was not answered"
    handle = sent.result()
    assert handle.accepted
    result = client.call(handle.get_result_async)
    assert wait_until(result.done, timeout_s), "no MoveEef result"
    return result.result().result


def trajectory(start_q, end_q, duration_s: float, start_s: float, names=FR3.arms[0].joints) -> Any:
    """A smooth (cosine) JointTrajectory message from ``start_q`` to ``end_q`` at the FR3's control rate, stamped
    ``start_s``."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    dt = FR3.control_dt_s
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = convert.time_msg(start_s)
    n = max(1, round(duration_s / dt))
    for k in range(1, n + 1):
        s = (1 - math.cos(math.pi * k / n)) / 2
        q = np.asarray(start_q) + s * (np.asarray(end_q) - np.asarray(start_q))
        msg.points.append(
            JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=convert.duration_msg(k * dt))
        )
    return msg
