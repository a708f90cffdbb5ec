"""ROS 2 node adapters: the only part of robodojo that imports rclpy.

Each module is one executable of the agent_bringup package (``ros2 run agent_bringup <module>``) and a thin adapter
over the library: it turns messages into library calls and library results into messages. Topic names are in
:mod:`robodojo.nodes.topics`; parameters and their defaults in config/nodes.yaml.
"""
