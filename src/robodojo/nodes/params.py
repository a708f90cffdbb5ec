"""Node parameters: defaults from config/nodes.yaml, overrides from ROS (launch, --params-file, -p name:=value).

Every parameter is declared with its default from the file; an override of the wrong type or an unknown node name
raises ConfigError with the parameter's name, before the node does anything.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError

NODES_CONFIG = CONFIG_DIR / "nodes.yaml"
_TYPES = (bool, int, float, str)


@cache
def node_defaults(node_name: str) -> dict[str, Any]:
    """The ``ros__parameters`` of ``node_name`` in config/nodes.yaml."""
    root = Section(load_yaml(NODES_CONFIG), str(NODES_CONFIG))
    if node_name not in root.data:
        raise ConfigError(f"{NODES_CONFIG}: no section for node {node_name!r}; nodes: {', '.join(root.names())}")
    params = root.section(node_name).section("ros__parameters")
    for key, value in params.data.items():
        if not isinstance(value, _TYPES):
            raise ConfigError(f"{params.where}.{key}: expected a bool, number or string, got {value!r}")
    return dict(params.data)


def _coerce(name: str, value: Any, default: Any) -> Any:
    """``value`` as the default's type; an int may stand for a float, nothing else converts."""
    if isinstance(default, bool) or isinstance(value, bool):
        if isinstance(default, bool) and isinstance(value, bool):
            return value
    elif isinstance(default, float) and isinstance(value, int | float):
        return float(value)
    elif isinstance(value, type(default)):
        return value
    raise ConfigError(f"parameter {name!r} must be a {type(default).__name__} (default {default!r}), got {value!r}")


def declare_parameters(node: Node, node_name: str) -> dict[str, Any]:
    """Declare every parameter of ``node_name`` on ``node`` and return their values, overrides applied."""
    values = {}
    for name, default in node_defaults(node_name).items():
        # dynamic typing so that `-p rate:=30` (an int) reaches _coerce instead of failing inside rclpy
        node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True))
        values[name] = _coerce(name, node.get_parameter(name).value, default)
    return values
