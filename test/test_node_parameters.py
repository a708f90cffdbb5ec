"""Node parameters: typed and documented in robodojo.nodes.parameters, defaults in config/nodes.yaml."""

from __future__ import annotations

import dataclasses

import pytest

from robodojo.errors import ConfigError
from robodojo.nodes import parameters
from robodojo.nodes.parameters import (
    NODE_PARAMS,
    SimNodeParams,
    build_params,
    coerce,
    node_defaults,
    parameter_specs,
)


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [(30, float, 30.0), (2.5, float, 2.5), (7, int, 7), ("x", str, "x"), (False, bool, False), (True, bool, True)],
)
def test_coerce_accepts_the_type_and_int_for_float(value, kind, expected):
    out = coerce("rate", value, kind)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize(
    ("value", "kind"),
    [("30", float), (True, float), (True, int), (1, bool), (0, bool), (2.5, int), ("true", bool), (1.0, str)],
)
def test_coerce_rejects_other_types_naming_the_parameter(value, kind):
    with pytest.raises(ConfigError, match=rf"parameter 'camera_rate_hz' must be an? {kind.__name__}, got"):
        coerce("camera_rate_hz", value, kind)


def test_node_defaults_of_an_unknown_node_lists_the_nodes():
    with pytest.raises(ConfigError, match="no section for node 'nope'; nodes: ") as info:
        node_defaults("nope")
    for name in NODE_PARAMS:
        assert name in str(info.value)


@pytest.mark.parametrize("node", NODE_PARAMS)
def test_every_parameter_is_typed_documented_and_has_a_default(node):
    cls = NODE_PARAMS[node]
    specs = parameter_specs(cls)
    assert [s.name for s in specs] == [f.name for f in dataclasses.fields(cls)]
    assert set(node_defaults(node)) == {s.name for s in specs}  # nodes.yaml holds exactly these
    for spec in specs:
        assert spec.description and spec.type in (bool, int, float, str)
        assert type(spec.default) is spec.type
    defaults = build_params(cls, {})
    assert dataclasses.asdict(defaults) == {s.name: s.default for s in specs}


def test_overrides_are_coerced_and_checked():
    params = build_params(SimNodeParams, {"camera_rate_hz": 30, "seed": 4})
    assert params.camera_rate_hz == 30.0 and type(params.camera_rate_hz) is float and params.seed == 4
    with pytest.raises(ConfigError, match=r"parameter 'camera_rate_hz' must be > 0, got 0\.0"):
        build_params(SimNodeParams, {"camera_rate_hz": 0})
    with pytest.raises(ConfigError, match=r"parameter 'seed' must be an int, got 'four'"):
        build_params(SimNodeParams, {"seed": "four"})


def test_nodes_yaml_and_the_structure_must_agree(monkeypatch):
    full = node_defaults("tcp_state_publisher")
    monkeypatch.setattr(parameters, "node_defaults", lambda name: {"robot": full["robot"]})
    with pytest.raises(ConfigError, match=r"tcp_state_publisher\.ros__parameters has no default for 'max_rate_hz'"):
        parameter_specs(NODE_PARAMS["tcp_state_publisher"])
    monkeypatch.setattr(parameters, "node_defaults", lambda name: {**full, "max_rate": 5.0})
    with pytest.raises(ConfigError, match="tcp_state_publisher has unknown parameters: max_rate"):
        parameter_specs(NODE_PARAMS["tcp_state_publisher"])


def test_descriptions_reach_ros():
    """What `ros2 param describe` shows: the descriptor declared on a real rclpy node."""
    rclpy = pytest.importorskip("rclpy", reason="needs rclpy (the ROS wheels or a sourced ROS 2 install)")
    from robodojo.nodes.params import declare_parameters

    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-p", "max_rate_hz:=40"])
    try:
        node = rclpy.create_node("tcp_state_publisher", context=context)
        params = declare_parameters(node, NODE_PARAMS["tcp_state_publisher"])
        assert params.max_rate_hz == 40.0
        (descriptor,) = node.describe_parameters(["max_rate_hz"])
        assert descriptor.description.startswith("publish at most this often")
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
