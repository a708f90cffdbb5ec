"""A node run by the package's runtime whose timer callback, once a stop signal has come, keeps running for
``sys.argv[1]`` seconds: a callback the spin thread cannot leave while the process shuts down (test_shutdown.py)."""

from __future__ import annotations

import sys
import time

from robodojo.nodes.runtime import GraphNode, run_node

BUSY_S = float(sys.argv[1])
TICK_S = 0.01


class SlowCallbackNode(GraphNode):
    def __init__(self) -> None:
        super().__init__("slow_callback_node")
        self.create_timer(TICK_S, self._tick)
        self.get_logger().info("ready")

    def _tick(self) -> None:
        if self.stop_signaled:
            time.sleep(BUSY_S)


if __name__ == "__main__":
    sys.exit(run_node(SlowCallbackNode, "slow_callback_node", threads=1))
