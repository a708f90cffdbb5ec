"""ROS 2 node adapters: the only part of robodojo that imports rclpy.

The executables of the agent_bringup package (``ros2 run agent_bringup <node>``) are ``sim_node``,
``motion_server_node``, ``agent_node``, ``camera_node``, ``device_camera_node`` (a camera without a ROS driver),
``tcp_state_publisher``, the arm drivers and ``episode_node``; each is a thin adapter over the
library that turns messages into library calls and library results into messages. Around them: ``agent_graph`` and
``controller_topics`` (what the agent and the motion server see of the graph), ``controller_commands`` and
``controller_executor`` (what the motion server sends the controllers, and how it follows a plan's play by their
reports), ``convert`` (messages <-> library
types), ``params`` (defaults from config/nodes.yaml), ``runtime`` (start, spin, stop), ``topics`` (names, importable
without ROS) and ``process_graph`` (nodes as processes where ``ros2 launch`` is missing: tests, benchmarks,
``robodojo graph``).
"""
