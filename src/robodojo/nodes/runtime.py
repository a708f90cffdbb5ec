"""Start, spin and stop a node the same way in every executable.

Bad configuration ends the process with exit code 2 and one line on stderr; SIGINT/SIGTERM end it with 0. The
executor is shut down before rclpy (ROS_ON_PYPI.md: otherwise the process can abort).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from robodojo.errors import BackendLostError, RobodojoError

T = TypeVar("T")
#: Status-like topics: late joiners get the last message (the episode status, the planned path).
LATCHED_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class GraphNode(Node):
    """A node that can end its own process (``finish``) and release resources on the way out (``close``)."""

    exit_code: int | None = None

    def finish(self, exit_code: int = 0) -> None:
        """Ask :func:`run_node` to stop spinning and exit with ``exit_code``."""
        self.exit_code = exit_code

    def close(self) -> None:
        """Release what the node holds (threads, renderers); called once, before the node is destroyed."""


def run_node(factory: Callable[[], GraphNode], name: str, *, threads: int = 4) -> int:
    """Build the node with ``factory`` and spin it until shutdown; the process exit code.

    ``threads=1`` spins a SingleThreadedExecutor: every callback, and every call_in_executor, in one thread.
    """
    rclpy.init(args=sys.argv)
    try:
        node = factory()
    except RobodojoError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = SingleThreadedExecutor() if threads == 1 else MultiThreadedExecutor(num_threads=threads)
    executor.add_node(node)
    try:
        while rclpy.ok() and node.exit_code is None:
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return node.exit_code or 0


def call_in_executor(node: Node, fn: Callable[[], T], timeout_s: float) -> T:
    """Run ``fn`` in the thread that spins ``node`` and return its result.

    rclpy 7.1's ActionClient records a goal or result request only after sending it, unlocked: sent from another
    thread, a fast response can arrive first, be dropped ("Ignoring unexpected goal response") and leave the future
    pending forever. With a SingleThreadedExecutor, running the send as an executor task closes that gap.
    """
    executor = node.executor
    if executor is None:
        raise RuntimeError(f"node {node.get_name()} is not spinning")
    task = executor.create_task(fn)
    done = threading.Event()
    task.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        raise BackendLostError(f"the node's executor did not run a call within {timeout_s:.0f} s")
    return task.result()
