"""Start, spin and stop a node the same way in every executable.

Bad configuration ends the process with exit code 2 and one line on stderr; SIGINT/SIGTERM end it with 0. The
executor is shut down before rclpy (ROS_ON_PYPI.md: otherwise the process can abort).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

from robodojo.errors import RobodojoError


class GraphNode(Node):
    """A node that can end its own process (``finish``) and release resources on the way out (``close``)."""

    exit_code: int | None = None

    def finish(self, exit_code: int = 0) -> None:
        """Ask :func:`run_node` to stop spinning and exit with ``exit_code``."""
        self.exit_code = exit_code

    def close(self) -> None:
        """Release what the node holds (threads, renderers); called once, before the node is destroyed."""


def run_node(factory: Callable[[], GraphNode], name: str, *, threads: int = 4) -> int:
    """Build the node with ``factory`` and spin it until shutdown; the process exit code."""
    rclpy.init(args=sys.argv)
    try:
        node = factory()
    except RobodojoError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = MultiThreadedExecutor(num_threads=threads)
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
