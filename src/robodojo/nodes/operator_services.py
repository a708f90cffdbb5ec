"""The operator's ``/hardware/estop`` and ``/hardware/release`` on a node and a thread of their own.

A driver node spins its trajectory and lease callbacks in one executor thread: an e-stop served there waits behind
every trajectory callback already taken from the wait set (one per controller topic in a flood, each checked by the
guard). Served here, it waits at most for the one check that holds the arms' lock. The node ignores the process's
global ROS arguments (a ``__node`` remap would give it the driver's name).
"""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_srvs.srv import Trigger

from robodojo.nodes.runtime import EXECUTOR_STOP_S, Spinner

ESTOP = "/hardware/estop"
RELEASE = "/hardware/release"
TriggerCallback = Callable[[Trigger.Request, Trigger.Response], Trigger.Response]


class OperatorServices:
    """``ESTOP`` and ``RELEASE`` served by ``on_estop`` and ``on_release`` in a thread of their own."""

    def __init__(self, parent: Node, on_estop: TriggerCallback, on_release: TriggerCallback) -> None:
        name = f"{parent.get_name()}_operator"
        self.node = rclpy.create_node(name, context=parent.context, use_global_arguments=False)
        self.node.create_service(Trigger, ESTOP, on_estop)
        self.node.create_service(Trigger, RELEASE, on_release)
        self.executor = SingleThreadedExecutor(context=parent.context)
        self.executor.add_node(self.node)
        self._spinner = Spinner(self.executor, name)

    def close(self) -> None:
        """Stop serving (before rclpy shuts down: never under a callback that still runs)."""
        if self._spinner.stop(EXECUTOR_STOP_S) and self.executor.shutdown(timeout_sec=EXECUTOR_STOP_S):
            self.node.destroy_node()
