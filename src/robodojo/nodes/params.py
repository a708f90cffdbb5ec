"""Node parameters on ROS: each node's typed parameters (robodojo.nodes.parameters) declared with their defaults from
config/nodes.yaml and their descriptions (``ros2 param describe``); overrides from launch, ``--params-file`` or
``-p name:=value`` are coerced and checked, and a bad one raises ConfigError naming it before the node does anything.
"""

from __future__ import annotations

from typing import TypeVar

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from robodojo.nodes.parameters import build_params, parameter_specs

P = TypeVar("P")


def declare_parameters(node: Node, params_type: type[P]) -> P:
    """Declare every parameter of ``params_type`` (e.g. SimNodeParams) on ``node`` and return them, overrides
    applied."""
    values = {}
    for spec in parameter_specs(params_type):
        # dynamic typing so that `-p rate:=30` (an int) reaches the coercion instead of failing inside rclpy
        descriptor = ParameterDescriptor(description=spec.description, dynamic_typing=True)
        node.declare_parameter(spec.name, spec.default, descriptor)
        values[spec.name] = node.get_parameter(spec.name).value
    return build_params(params_type, values)
