"""A client of the running graph from the project's venv, which has rclpy but not the ``ros2`` command line.

Start a graph first (``.venv/bin/robodojo graph --agent none``, or ``ros2 launch ... agent:=none``), then::

    .venv/bin/python docs/examples/ros_client.py move-eef left_z=0.85 left_gripper=1   # one MoveEef goal
    .venv/bin/python docs/examples/ros_client.py move-to left 0.0 -0.2 0.9             # the robo API's move_to
    .venv/bin/python docs/examples/ros_client.py home                                  # MoveEef in HOME mode
    .venv/bin/python docs/examples/ros_client.py trigger /motion/stop                  # any std_srvs/Trigger service
    .venv/bin/python docs/examples/ros_client.py diagnostics                           # one /diagnostics message

What it stands in for: ``ros2 action send_goal /move_eef agent_bringup/action/MoveEef ...``,
``ros2 service call /motion/home std_srvs/srv/Trigger`` and ``ros2 topic echo /diagnostics``. It uses the interfaces
``robodojo graph`` (or ``make colcon``) built into install/, and the graph's discovery settings: localhost only, the
ROS_DOMAIN_ID of the environment (``--domain-id`` to give another).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

DISCOVERY_SETTLE_S = 1.0  # a server answers a just-made client only once it has matched it (Fast DDS drops it before)
WAIT_S = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: the environment's)")
    sub = parser.add_subparsers(dest="command", required=True)
    goal = sub.add_parser("move-eef", help="a MoveEef goal: NAME=VALUE per move_eef dimension")
    goal.add_argument("targets", nargs="+", metavar="NAME=VALUE", help="e.g. left_z=0.85 right_gripper=0")
    goal.add_argument("--note", default="ros_client.py")
    to = sub.add_parser("move-to", help="a MoveEef goal in MOVE_TO mode: one arm's grasp point to x y z [m]")
    to.add_argument("arm")
    to.add_argument("xyz", nargs=3, type=float)
    sub.add_parser("home", help="a MoveEef goal in HOME mode")
    trigger = sub.add_parser("trigger", help="call a std_srvs/Trigger service")
    trigger.add_argument("service", help="/motion/home, /motion/stop, /hardware/estop, /hardware/release")
    sub.add_parser("diagnostics", help="print one /diagnostics message")
    args = parser.parse_args(argv)

    from robodojo.nodes.process_graph import use_interfaces_here

    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # as robodojo graph's nodes
    if args.domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(args.domain_id)
    use_interfaces_here()  # the agent_bringup interfaces in install/ (built by robodojo graph or make colcon)

    import rclpy

    rclpy.init()
    node = rclpy.create_node("ros_client_example")
    try:
        if args.command == "trigger":
            return call_trigger(node, args.service)
        if args.command == "diagnostics":
            return print_diagnostics(node)
        return send_goal(node, args)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


# --8<-- [start:send_goal]
def send_goal(node, args: argparse.Namespace) -> int:
    import rclpy
    from agent_bringup.action import MoveEef
    from rclpy.action import ActionClient

    goal = MoveEef.Goal()
    if args.command == "move-eef":
        goal.mode = MoveEef.Goal.MOVE_EEF
        pairs = [item.split("=", 1) for item in args.targets]
        if any(len(pair) != 2 for pair in pairs):
            sys.exit(f"targets are NAME=VALUE, got {args.targets}")
        goal.names = [name for name, _ in pairs]
        goal.values = [float(value) for _, value in pairs]
        goal.note = args.note
    elif args.command == "move-to":
        goal.mode = MoveEef.Goal.MOVE_TO
        goal.arm = args.arm
        goal.position.x, goal.position.y, goal.position.z = args.xyz
    else:
        goal.mode = MoveEef.Goal.HOME
    client = ActionClient(node, MoveEef, "/move_eef")
    if not client.wait_for_server(timeout_sec=WAIT_S):
        sys.exit("no /move_eef action server: is a graph running (robodojo graph --agent none)?")
    time.sleep(DISCOVERY_SETTLE_S)
    sent = client.send_goal_async(goal)
    rclpy.spin_until_future_complete(node, sent)
    handle = sent.result()
    if handle is None or not handle.accepted:
        sys.exit("the goal was not accepted")
    done = handle.get_result_async()
    rclpy.spin_until_future_complete(node, done)
    result = done.result().result
    print(f"accepted {result.accepted}, stop_reason {result.stop_reason!r}, steps {result.steps_used}")
    print(result.tool_text if result.accepted else result.error)
    for arm in result.arms:
        print(f"  {arm}")
    return 0 if result.accepted else 1


# --8<-- [end:send_goal]


def call_trigger(node, service: str) -> int:
    import rclpy
    from std_srvs.srv import Trigger

    client = node.create_client(Trigger, service)
    if not client.wait_for_service(timeout_sec=WAIT_S):
        sys.exit(f"no service {service}")
    time.sleep(DISCOVERY_SETTLE_S)
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future)
    answer = future.result()
    print(f"success {answer.success}: {answer.message}")
    return 0 if answer.success else 1


def print_diagnostics(node) -> int:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray

    got: list[DiagnosticArray] = []
    node.create_subscription(DiagnosticArray, "/diagnostics", got.append, 10)
    deadline = time.monotonic() + WAIT_S
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    if not got:
        sys.exit("nothing on /diagnostics")
    level_names = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}
    for status in got[0].status:
        level = int.from_bytes(status.level, "little") if isinstance(status.level, bytes) else int(status.level)
        print(f"{level_names.get(level, level)}  {status.name}: {status.message}")
        for kv in status.values:
            print(f"    {kv.key}: {kv.value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
