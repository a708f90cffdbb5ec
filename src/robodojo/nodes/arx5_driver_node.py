"""The ARX X5 driver: both arms of the dual X5 over CAN (or the bus emulator) on the graph in the simulator's place.

Everything on the graph (topics, services, lost contact, faults) is :mod:`robodojo.nodes.arm_driver_node`'s; this
node drives each arm of config/hardware/dual_arx_x5.yaml through :class:`~robodojo.hardware.arx5.Arx5Arm` (the SDK
in a process of its own per arm, a bus monitor beside it). The SDK's warnings and errors appear in this node's log and
in /diagnostics (``sdk_last``); each arm's diagnostics also carry its interface and what the bus monitor sees.
"""

from __future__ import annotations

import functools
import sys
import threading

from std_srvs.srv import Trigger

from robodojo.hardware.arm_service import DrivenArm, ServiceRates, check_robot, driven_arm
from robodojo.hardware.arx5 import Arx5Arm
from robodojo.hardware.settings import load_arx5_settings
from robodojo.nodes import topics
from robodojo.nodes.arm_driver_node import ESTOP, ArmDriverNode
from robodojo.nodes.parameters import Arx5DriverParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import run_node

NODE_NAME = "arx5_driver_node"


class Arx5DriverNode(ArmDriverNode):
    # Shutting down homes both arms at once (about 2.5 s) and damps them within the node's close deadline (3.5 s, so
    # that ros2 launch never escalates to SIGTERM); a homing still running then is abandoned: the process exits and
    # each SDK host, its driver gone, holds at zero velocity and damps (robodojo.hardware.arx5_host._Host.driver_gone).

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, Arx5DriverParams)
        self.params = p
        self.settings = load_arx5_settings(p.hardware_config or None)
        check_robot(p.robot, self.settings.robot.name)
        arms = []
        for arm_settings in self.settings.arms:
            name = arm_settings.arm
            adapter = Arx5Arm(arm_settings, on_sdk_log=functools.partial(self._sdk_logged, name))
            arms.append(driven_arm(name, adapter, f"arx_x5@{arm_settings.interface}", topics.controller_names(name)))
        self.start(
            arms, ServiceRates(self.settings.state_rate_hz, p.status_rate_hz, p.gripper_rate_hz, p.reconnect_period_s)
        )
        interfaces = ", ".join(f"{a.arm} on {a.interface}" for a in self.settings.arms)
        first = self.settings.arms[0]
        self.get_logger().info(
            f"ARX X5 ({first.sdk_profile} profile, {first.trajectory_mode}): {interfaces}; joint states at "
            f"{self.settings.state_rate_hz:g} Hz, controllers {', '.join(self.status_pubs)}"
        )

    def _on_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Every arm stopped at once, each on its own thread: one after the other, the second arm's stop waited for
        the first's round trip to its SDK process (3-43 ms measured, the second arm later). Then the base class's
        e-stop, which latches it and answers: its repeated stop of an arm that already holds moves nothing."""
        why = f"{ESTOP} called"
        stoppers = [
            threading.Thread(target=arm.driver.estop, args=(why,), name=f"estop-{arm.name}") for arm in self.arms
        ]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        return super()._on_estop(request, response)

    def _sdk_logged(self, arm: str, level: str, message: str) -> None:
        # Two call sites: rclpy's logger refuses a second severity from one line ("cannot be changed between calls").
        if level == "warning":
            self.get_logger().warning(f"{arm}: the SDK says: {message}")
        else:
            self.get_logger().error(f"{arm}: the SDK says: {message}")

    def diagnostic_values(self, arm: DrivenArm) -> dict[str, object]:
        adapter = arm.adapter
        assert isinstance(adapter, Arx5Arm)
        values: dict[str, object] = {"interface": adapter.interface}
        if adapter.sdk_log:
            level, message = adapter.sdk_log[-1]
            values["sdk_last"] = f"{level}: {message}"
        health = adapter.last_health
        if health is not None and health.commands_quiet_s is not None:
            quiet_ms, gap_s = health.commands_quiet_s * 1e3, health.longest_command_gap_s
            values["sdk_commands"] = f"last {quiet_ms:.0f} ms ago, longest gap {gap_s:.2f} s"
        if health is not None:
            for motor in health.motors:
                state = "never answered" if motor.silent_s is None else f"last answer {motor.silent_s * 1e3:.0f} ms ago"
                if motor.fault:
                    state += f", {motor.fault}"
                if motor.temperature_c is not None:
                    state += f", {motor.temperature_c:.0f} degC"
                values[f"motor{motor.motor_id}_{motor.name}"] = state
        return values


def main() -> int:
    # One executor thread, as fr3_driver_node (the e-stop has one of its own: operator_services).
    return run_node(Arx5DriverNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
