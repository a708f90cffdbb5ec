"""The Franka FR3 driver: a real arm (or franky-sim) on the graph in the simulator node's place.

Everything on the graph (topics, services, lost contact, faults) is :mod:`robodojo.nodes.arm_driver_node`'s; this
node connects the FR3 at ``robot_ip`` (default: config/hardware/fr3.yaml's) through franky.
"""

from __future__ import annotations

import sys

from robodojo.hardware.arm_service import DrivenArm, ServiceRates, check_robot, driven_arm
from robodojo.hardware.franka import FrankaArm
from robodojo.hardware.settings import load_fr3_settings
from robodojo.nodes import topics
from robodojo.nodes.arm_driver_node import ArmDriverNode
from robodojo.nodes.parameters import Fr3DriverParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import run_node

NODE_NAME = "fr3_driver_node"


class Fr3DriverNode(ArmDriverNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, Fr3DriverParams)
        self.params = p
        settings = load_fr3_settings(p.hardware_config or None)
        check_robot(p.robot, settings.robot.name)
        self.ip = p.robot_ip or settings.robot_ip
        self.settings = settings.for_address(self.ip)  # a real arm's safety settings, or a refusal in one line
        arm = self.settings.arm
        self.start(
            [driven_arm(arm, FrankaArm(self.settings), f"fr3@{self.ip}", topics.controller_names(arm))],
            ServiceRates(self.settings.state_rate_hz, p.status_rate_hz, p.gripper_rate_hz, p.reconnect_period_s),
        )
        self.get_logger().info(
            f"FR3 at {self.ip} ({self.settings.realtime_config} real-time, dynamics factor "
            f"{self.settings.relative_dynamics_factor:g}): joint states at {self.settings.state_rate_hz:g} Hz, "
            f"controllers {', '.join(self.status_pubs)}"
        )

    def connect_arm(self, arm: DrivenArm) -> None:
        assert isinstance(arm.adapter, FrankaArm)
        arm.adapter.connect(self.ip)

    def diagnostic_values(self, arm: DrivenArm) -> dict[str, object]:
        return {"robot_ip": self.ip}


def main() -> int:
    # One executor thread: rclpy's multi-threaded executor busy-waited at 90 % of a core here (a message waiting
    # for a busy callback group). The e-stop has a thread of its own (operator_services).
    return run_node(Fr3DriverNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
