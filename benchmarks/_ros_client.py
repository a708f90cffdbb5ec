"""An rclpy node in the benchmark's own process, in one graph's domain, spun by a single-threaded executor in a thread.

Shared by the benchmarks that measure a graph from outside (cameras, fr3_graph, lost_arm). Sends from other threads go
through executor tasks (robodojo.nodes.runtime.call_in_executor): rclpy's action client is not thread-safe.
"""

from __future__ import annotations

import threading

SPIN_TIMEOUT_S = 0.05  # how often the spin thread looks at its stop flag
JOIN_TIMEOUT_S = 5.0


class SpunNode:
    """``self.node`` in a context of its own on ``domain_id``; :meth:`close` stops the executor, then the context."""

    def __init__(self, domain_id: int, name: str) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.setup()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin_until_stopped, name="client_spin", daemon=True)
        self._thread.start()

    def setup(self) -> None:
        """Create the node's subscriptions and clients (a subclass's), before the executor spins."""

    def _spin_until_stopped(self) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self.context.ok() and not self._stop.is_set():
                self.executor.spin_once(timeout_sec=SPIN_TIMEOUT_S)
        except (ExternalShutdownException, RuntimeError):
            pass  # the context ended under it

    def close(self) -> None:
        """Executor first, then the context (ROS_ON_PYPI.md: the other order can abort the process)."""
        self._stop.set()
        self._thread.join(timeout=JOIN_TIMEOUT_S)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()
