"""launch/robodojo.launch.py and rviz/<robot>.rviz agree with the package: executables, parameters, topics.

The launch file is read with `ast` (launch and launch_ros are not on PyPI, see ROS_ON_PYPI.md) and run against
stand-ins of the few launch classes it uses, which record what they are given: that checks its own decisions (which
nodes start, their parameters, the llm default, what ends the launch). Where launch is installed (the docker image)
it is also imported and its launch description built with the real classes.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from robodojo.agents.mcp.settings import TOOL_SETS
from robodojo.episodes.factory import AGENTS
from robodojo.errors import ConfigError, RobodojoError
from robodojo.nodes import topics
from robodojo.nodes.graph_choices import MCP_AGENT, NO_AGENT

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILE = ROOT / "launch" / "robodojo.launch.py"
RVIZ_DIR = ROOT / "rviz"
ROBOTS = sorted(p.stem for p in (ROOT / "config" / "robots").glob("*.yaml"))
NODES_YAML = ROOT / "config" / "nodes.yaml"
CMAKE = ROOT / "CMakeLists.txt"
PACKAGE = "agent_bringup"

# launch arguments that DESIGN.md and the issue name, with the defaults the issue asks for
REQUIRED_ARGUMENTS = {
    "robot": "dual_arx_x5",
    "sim": "",  # empty: none with hardware:=franka|arx5, else mujoco (graph_choices.backend)
    "agent": "move_eef",
    "task": "",  # empty: the robot's default_task
    "variant": "standard",
    "seed": "0",
    "llm": "",  # empty: the agent's replayed example for the task (graph_choices.llm_or_example)
    "base_url": "",
    "planner": "native",
    "rviz": "true",
    "robot_state_publisher": "true",
    "use_sim_time": "",  # empty: true with a simulator (graph_choices.sim_time)
    "out": "out/episodes",
    "shutdown_after_episode": "false",
}


# --- reading the launch file --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def launch_tree() -> ast.Module:
    assert LAUNCH_FILE.is_file(), f"{LAUNCH_FILE} is missing"
    return ast.parse(LAUNCH_FILE.read_text(), filename=str(LAUNCH_FILE))


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Every call of ``name(...)`` or ``something.name(...)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                found.append(node)
    return found


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _literal_str(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _package_nodes(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    """(executable, call) of every ``Node(package='agent_bringup', executable=...)``."""
    nodes = []
    for call in _calls(tree, "Node"):
        if _literal_str(_keyword(call, "package")) != PACKAGE:
            continue
        executable = _literal_str(_keyword(call, "executable"))
        assert executable is not None, f"line {call.lineno}: Node of {PACKAGE} without a literal executable"
        nodes.append((executable, call))
    return nodes


def _parameter_names(call: ast.Call) -> list[str]:
    """The keys of the dicts given as ``parameters=[{...}]``."""
    params = _keyword(call, "parameters")
    if params is None:
        return []
    names = []
    for node in ast.walk(params):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                name = _literal_str(key)
                assert name is not None, f"line {call.lineno}: parameter names must be literal strings"
                names.append(name)
    return names


def _declared_arguments(tree: ast.AST) -> dict[str, ast.Call]:
    declared = {}
    for call in _calls(tree, "DeclareLaunchArgument"):
        name = _literal_str(call.args[0]) if call.args else _literal_str(_keyword(call, "name"))
        assert name is not None, f"line {call.lineno}: DeclareLaunchArgument without a literal name"
        assert name not in declared, f"launch argument {name!r} is declared twice"
        declared[name] = call
    return declared


def _cmake_nodes() -> list[str]:
    match = re.search(r"set\(\s*ROBODOJO_NODES\s+([^)]*)\)", CMAKE.read_text())
    assert match, "CMakeLists.txt has no set(ROBODOJO_NODES ...)"
    return match.group(1).split()


def _nodes_yaml() -> dict:
    return yaml.safe_load(NODES_YAML.read_text())


def _robot_yaml(robot: str) -> dict:
    return yaml.safe_load((ROOT / "config" / "robots" / f"{robot}.yaml").read_text())


# --- launch file --------------------------------------------------------------------------------------------


def test_launch_file_compiles():
    compile(LAUNCH_FILE.read_text(), str(LAUNCH_FILE), "exec")


def test_nodes_are_installed_executables(launch_tree):
    installed = _cmake_nodes()
    started = {executable for executable, _ in _package_nodes(launch_tree)}
    assert started, "the launch file starts no agent_bringup node"
    unknown = started - set(installed)
    assert not unknown, f"executables not in CMakeLists.txt ROBODOJO_NODES {installed}: {sorted(unknown)}"
    # every node launcher is used by some backend (sim_node; tcp_state_publisher and camera_node for isaac/none)
    assert started == set(installed), f"node launchers never started by the launch file: {set(installed) - started}"


def test_node_modules_exist(launch_tree):
    """Each launcher runs robodojo.nodes.<executable>.main (cmake/node_launcher.py.in)."""
    missing = [
        executable
        for executable, _ in _package_nodes(launch_tree)
        if not (ROOT / "src" / "robodojo" / "nodes" / f"{executable}.py").is_file()
    ]
    assert not missing, f"no module src/robodojo/nodes/<name>.py for: {sorted(set(missing))}"


def test_node_parameters_are_in_nodes_yaml(launch_tree):
    config = _nodes_yaml()
    for executable, call in _package_nodes(launch_tree):
        assert executable in config, f"config/nodes.yaml has no section {executable!r}"
        known = set(config[executable]["ros__parameters"]) | {"use_sim_time"}
        names = _parameter_names(call)
        unknown = [n for n in names if n not in known]
        assert not unknown, f"line {call.lineno}: {executable} has no parameters {unknown} in config/nodes.yaml"
        assert "robot" in names or executable == "agent_node", f"line {call.lineno}: {executable} not told the robot"


def test_launch_arguments_are_declared_with_defaults(launch_tree):
    declared = _declared_arguments(launch_tree)
    missing = sorted(set(REQUIRED_ARGUMENTS) - set(declared))
    assert not missing, f"launch arguments not declared: {missing}"
    for name, default in REQUIRED_ARGUMENTS.items():
        value = _keyword(declared[name], "default_value")
        assert value is not None, f"launch argument {name!r} has no default"
        if default is not None:
            assert _literal_str(value) == default, f"launch argument {name!r}: default {ast.unparse(value)}"


def test_launch_argument_defaults_match_node_defaults(launch_tree):
    """The launch file's defaults are the nodes' own (config/nodes.yaml), so leaving an argument out changes nothing."""
    declared = _declared_arguments(launch_tree)
    agent = _nodes_yaml()["agent_node"]["ros__parameters"]
    for name in ("variant", "seed", "base_url", "out", "agent"):
        default = _literal_str(_keyword(declared[name], "default_value"))
        assert default == str(agent[name]), f"launch argument {name!r}: {default!r}, nodes.yaml: {agent[name]!r}"
    sim = _nodes_yaml()["sim_node"]["ros__parameters"]
    robot = _literal_str(_keyword(declared["robot"], "default_value"))
    assert robot == sim["robot"]
    # task:= left empty: the default robot's default task, the nodes' own default
    assert _robot_yaml(robot)["default_task"] == agent["task"] == sim["task"]


def test_choice_arguments_list_the_known_values(launch_tree):
    declared = _declared_arguments(launch_tree)
    expected = {
        "robot": sorted(p.stem for p in (ROOT / "config" / "robots").glob("*.yaml")),
        "sim": ["", "isaac", "mujoco", "none"],
        "agent": sorted({*AGENTS, MCP_AGENT, NO_AGENT}),  # mcp on the graph: agent_node serves an MCP client
        "mcp_tools": sorted(TOOL_SETS),
        "planner": ["moveit", "native"],
    }
    for name, values in expected.items():
        choices = _keyword(declared[name], "choices")
        assert choices is not None, f"launch argument {name!r} has no choices"
        assert sorted(ast.literal_eval(choices)) == values


def test_launch_file_starts_rsp_rviz_and_shuts_down_after_episode(launch_tree):
    source = LAUNCH_FILE.read_text()
    packages = {_literal_str(_keyword(call, "package")) for call in _calls(launch_tree, "Node")}
    assert {"robot_state_publisher", "rviz2", PACKAGE} <= packages
    assert 'f"{robot}.rviz"' in source  # the robot's own RViz config
    assert "get_package_share_directory" in source
    assert _calls(launch_tree, "OnProcessExit") and _calls(launch_tree, "Shutdown")
    # the scene URDF comes from the robot config, and every config names an existing URDF
    assert "scene_urdf" in source
    for config in (ROOT / "config" / "robots").glob("*.yaml"):
        urdf = yaml.safe_load(config.read_text())["scene_urdf"]
        assert (ROOT / urdf).is_file(), f"{config.name}: scene_urdf {urdf} does not exist"


def test_cmake_installs_launch_and_rviz():
    match = re.search(r"foreach\(\s*dir\s+([^)]*)\)", CMAKE.read_text())
    assert match, "CMakeLists.txt installs no share folders (foreach(dir ...))"
    assert {"urdf", "config", "launch", "rviz"} <= set(match.group(1).split())


# --- the launch file run against stand-ins of launch ---------------------------------------------------------


class _Recorded:
    """A stand-in for a launch action or helper: keeps what it was built with."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs


class _LaunchConfiguration(_Recorded):
    def perform(self, context) -> str:
        return context.launch_configurations[self.args[0]]


class _LaunchDescription(_Recorded):
    pass


def _stand_in_modules() -> dict[str, types.ModuleType]:
    names = {
        "launch": {},
        "launch.actions": {
            n: type(n, (_Recorded,), {})
            for n in (
                "DeclareLaunchArgument",
                "ExecuteProcess",
                "LogInfo",
                "OpaqueFunction",
                "RegisterEventHandler",
                "Shutdown",
            )
        },
        "launch.event_handlers": {"OnProcessExit": type("OnProcessExit", (_Recorded,), {})},
        "launch.launch_description": {"LaunchDescription": _LaunchDescription},
        "launch.substitutions": {
            "LaunchConfiguration": _LaunchConfiguration,
            "PythonExpression": type("PythonExpression", (_Recorded,), {}),
        },
        "launch_ros": {},
        "launch_ros.actions": {"Node": type("Node", (_Recorded,), {})},
        "launch_ros.parameter_descriptions": {"ParameterValue": type("ParameterValue", (_Recorded,), {})},
        "ament_index_python": {},
        # the installed share folder has the repository's layout (config/, urdf/, rviz/)
        "ament_index_python.packages": {"get_package_share_directory": lambda package: str(ROOT)},
    }
    modules = {}
    for name, attributes in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        modules[name] = module
    return modules


@pytest.fixture
def stand_in_launch(monkeypatch):
    """The launch file as a module, imported against the stand-ins (and only for this test)."""
    for name, module in _stand_in_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("robodojo_launch_stand_in", LAUNCH_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_setup(module, **arguments: str) -> list:
    """The actions of the launch file's OpaqueFunction for ``arguments`` over the declared defaults."""
    description = module.generate_launch_description()
    entities = description.args[0]
    configuration: dict[str, str] = {}
    for entity in entities:
        if type(entity).__name__ == "DeclareLaunchArgument" and isinstance(entity.kwargs["default_value"], str):
            configuration[entity.args[0]] = entity.kwargs["default_value"]
    configuration.update(arguments)
    context = types.SimpleNamespace(launch_configurations=configuration, is_shutdown=False)
    (opaque,) = [e for e in entities if type(e).__name__ == "OpaqueFunction"]
    return opaque.kwargs["function"](context)


def _nodes(actions: list) -> dict[str, _Recorded]:
    return {a.kwargs["executable"]: a for a in actions if type(a).__name__ == "Node"}


def _parameters(node: _Recorded) -> dict:
    merged: dict = {}
    for params in node.kwargs.get("parameters", []):
        merged.update({k: v.args[0] if type(v).__name__ == "ParameterValue" else v for k, v in params.items()})
    return merged


def _exit_handlers(actions: list) -> dict[str, object]:
    """executable -> the on_exit callback registered for it (RegisterEventHandler(OnProcessExit(...)))."""
    handlers = {}
    for action in actions:
        if type(action).__name__ == "RegisterEventHandler":
            (handler,) = action.args
            assert type(handler).__name__ == "OnProcessExit"
            handlers[handler.kwargs["target_action"].kwargs["executable"]] = handler.kwargs["on_exit"]
    return handlers


def _on_exit(callback, returncode: int, *, shutting_down: bool = False) -> list:
    event = types.SimpleNamespace(returncode=returncode)
    return callback(event, types.SimpleNamespace(is_shutdown=shutting_down)) or []


def _shutdown_reasons(actions: list) -> list[str]:
    return [a.kwargs["reason"] for a in actions if type(a).__name__ == "Shutdown"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "replay:examples/replay/general_pickup_seed0.yaml"),
        ({"agent": "code_cell"}, "replay:examples/cells/general_pickup.py"),
        ({"agent": "code_cell", "llm": "openai:gpt-4.1"}, "openai:gpt-4.1"),
        (
            {"agent": "move_eef", "llm": "replay:examples/cells/general_pickup.py"},
            "replay:examples/cells/general_pickup.py",
        ),
    ],
)
def test_default_llm_follows_the_agent_and_an_explicit_llm_wins(stand_in_launch, arguments, expected):
    agent = _nodes(_run_setup(stand_in_launch, **arguments))["agent_node"]
    assert _parameters(agent)["llm"] == expected


def test_default_llms_exist_and_match_the_node_default(stand_in_launch):
    from robodojo.nodes.graph_choices import REPLAY_EXAMPLES, llm_or_example

    assert set(REPLAY_EXAMPLES) == set(AGENTS) - {MCP_AGENT}  # every agent the launch file offers but none and mcp
    node = _nodes_yaml()["agent_node"]["ros__parameters"]
    for robot in ("dual_arx_x5", "fr3"):  # each robot's default task runs as given, with every agent
        task = _robot_yaml(robot)["default_task"]
        for agent in ("move_eef", "code_cell"):
            kind, _, path = llm_or_example(agent, "", task, 0).partition(":")
            assert kind == "replay" and (ROOT / path).is_file(), f"{agent} on {task}: {path} is not a file"
            llm = _parameters(_nodes(_run_setup(stand_in_launch, robot=robot, agent=agent))["agent_node"])["llm"]
            assert llm == f"replay:{path}"
    # agent:=move_eef without llm:= runs what agent_node runs without an llm parameter
    assert llm_or_example("move_eef", "", node["task"], node["seed"]) == node["llm"]


def test_robot_state_publisher_can_be_left_out(stand_in_launch):
    with_rsp = _nodes(_run_setup(stand_in_launch))
    without = _nodes(_run_setup(stand_in_launch, robot_state_publisher="false"))
    assert "robot_state_publisher" in with_rsp
    assert "robot_description" in _parameters(with_rsp["robot_state_publisher"])
    assert set(with_rsp) - set(without) == {"robot_state_publisher"}
    with pytest.raises(ValueError, match="true or false"):
        _run_setup(stand_in_launch, robot_state_publisher="maybe")


@pytest.mark.parametrize("node", ["sim_node", "motion_server_node"])
@pytest.mark.parametrize("returncode", [0, 1, 2])
def test_a_required_node_exiting_ends_the_launch_with_its_reason(stand_in_launch, node, returncode):
    on_exit = _exit_handlers(_run_setup(stand_in_launch, shutdown_after_episode="false"))[node]
    (reason,) = _shutdown_reasons(_on_exit(on_exit, returncode))
    assert node in reason and f"code {returncode}" in reason
    # logged too: launch keeps a Shutdown's reason to itself
    assert any(type(a).__name__ == "LogInfo" and a.kwargs["msg"] == reason for a in _on_exit(on_exit, returncode))
    # during a shutdown already under way (Ctrl-C) every node exits: nothing more to do
    assert _on_exit(on_exit, returncode, shutting_down=True) == []


@pytest.mark.parametrize(
    ("after_episode", "returncode", "ends"),
    [("false", 0, False), ("true", 0, True), ("false", 1, True), ("false", 3, True), ("true", 2, True)],
)
def test_the_agent_ends_the_launch_on_failure_or_when_asked(stand_in_launch, after_episode, returncode, ends):
    actions = _run_setup(stand_in_launch, shutdown_after_episode=after_episode)
    reasons = _shutdown_reasons(_on_exit(_exit_handlers(actions)["agent_node"], returncode))
    assert bool(reasons) == ends
    if ends and returncode:
        assert f"agent_node exited with code {returncode}" in reasons[0]


def test_every_started_package_node_has_a_known_exit_rule(stand_in_launch):
    """sim:=mujoco: the simulator, the motion server and the agent end the launch when they fail."""
    actions = _run_setup(stand_in_launch)
    assert set(_exit_handlers(actions)) == {"sim_node", "motion_server_node", "agent_node"}
    assert "agent_node" not in _nodes(_run_setup(stand_in_launch, agent="none"))
    assert set(_exit_handlers(_run_setup(stand_in_launch, agent="none"))) == {"sim_node", "motion_server_node"}


def test_franka_hardware_starts_the_fr3_driver_and_the_operators_episode(stand_in_launch):
    """robot:=fr3 sim:=none hardware:=franka: the FR3 driver (address given), the operator's episode, a camera node per
    FR3 camera, all on the system clock; the agent waits for a reset as long as an operator takes."""
    actions = _run_setup(
        stand_in_launch, robot="fr3", task="fr3_pick_cube", sim="none", hardware="franka", robot_ip="172.16.0.2",
        instruction="Pick up the red cube.", use_sim_time="false",
    )  # fmt: skip
    nodes = _nodes(actions)
    assert {"fr3_driver_node", "episode_node", "tcp_state_publisher", "motion_server_node", "agent_node"} <= set(nodes)
    assert "sim_node" not in nodes
    assert _parameters(nodes["fr3_driver_node"])["robot_ip"] == "172.16.0.2"
    episode = _parameters(nodes["episode_node"])
    assert (episode["robot"], episode["task"], episode["instruction"]) == (
        "fr3",
        "fr3_pick_cube",
        "Pick up the red cube.",
    )
    assert episode["confirm_reset"] is True and episode["observed_success"] is True
    off = _nodes(_run_setup(stand_in_launch, robot="fr3", task="fr3_pick_cube", sim="none", observed_success="false"))
    assert _parameters(off["episode_node"])["observed_success"] is False
    cameras = [a for a in actions if type(a).__name__ == "Node" and a.kwargs["executable"] == "camera_node"]
    assert sorted(_parameters(c)["camera"] for c in cameras) == sorted(_robot_yaml("fr3")["cameras"])
    agent = _parameters(nodes["agent_node"])
    assert agent["reset_timeout_s"] == stand_in_launch.OPERATOR_RESET_TIMEOUT_S and agent["use_sim_time"] is False
    assert "fr3_driver_node" in _exit_handlers(actions)
    # without hardware:=, sim:=none expects the user's own drivers: no driver node
    assert "fr3_driver_node" not in _nodes(_run_setup(stand_in_launch, robot="fr3", task="fr3_pick_cube", sim="none"))


def test_arx5_hardware_starts_the_dual_x5_driver_and_optionally_the_bus_emulator(stand_in_launch):
    """robot:=dual_arx_x5 sim:=none hardware:=arx5: the X5 driver for both arms; can_emulator:=true adds the bus
    emulator (one bus per arm of config/hardware/dual_arx_x5.yaml) and points the driver's SDK at it."""
    actions = _run_setup(stand_in_launch, robot="dual_arx_x5", sim="none", hardware="arx5", use_sim_time="false")
    nodes = _nodes(actions)
    assert {"arx5_driver_node", "episode_node", "tcp_state_publisher", "motion_server_node"} <= set(nodes)
    assert "robot_ip" not in _parameters(nodes["arx5_driver_node"])
    assert "arx5_driver_node" in _exit_handlers(actions)
    assert not nodes["arx5_driver_node"].kwargs.get("additional_env")
    assert not [a for a in actions if type(a).__name__ == "ExecuteProcess"]

    emulated = _run_setup(
        stand_in_launch, robot="dual_arx_x5", sim="none", hardware="arx5", can_emulator="true", use_sim_time="false"
    )
    (emulator,) = [a for a in emulated if type(a).__name__ == "ExecuteProcess"]
    cmd = " ".join(str(part) for part in emulator.kwargs["cmd"])
    assert "robodojo.hardware.x5_bus" in cmd and "can0=" in cmd and "can1=" in cmd
    env = _nodes(emulated)["arx5_driver_node"].kwargs["additional_env"]
    assert "robodojo_can_shim" in env["LD_PRELOAD"] and env["ROBODOJO_CAN_SOCKET_DIR"] in cmd


def test_camera_inputs_set_every_camera_node_as_the_file_says_and_graph_agrees(stand_in_launch):
    """camera_inputs:=<name>: each camera_node gets the file's topic, transport, reliability, intrinsics source and
    agent size (robodojo.perception.camera_inputs), as `robodojo graph`'s hardware graph does; with camera_topic or
    camera_sources beside it, the launch refuses in one line."""
    from robodojo.nodes.process_graph import graph_nodes
    from robodojo.perception.camera_inputs import load_camera_inputs

    name = "dual_arx_x5_realsense_usb_cam"
    actions = _run_setup(stand_in_launch, sim="none", hardware="arx5", camera_inputs=name)
    started = {
        _parameters(a)["camera"]: _parameters(a)
        for a in actions
        if type(a).__name__ == "Node" and a.kwargs["executable"] == "camera_node"
    }
    inputs = load_camera_inputs(name, "dual_arx_x5")
    expected = {c: inputs.camera_node_parameters(c) for c in _robot_yaml("dual_arx_x5")["cameras"]}
    assert {c: {k: p[k] for k in expected[c]} for c, p in started.items()} == expected
    assert started["right_wrist"]["input_transport"] == "compressed" and started["right_wrist"]["output_height"] == 360
    graph = graph_nodes(
        robot="dual_arx_x5", task="general_pickup", seed=0, variant="standard", agent="none", agent_params={},
        hardware="arx5", camera_inputs=name,
    )  # fmt: skip
    assert {str(p["camera"]): p for node, p, _ in graph if node == "camera_node"} == expected
    for wrong in ({"camera_topic": "/drv/{camera}/image_raw"}, {"camera_sources": "head=/dev/video0"}):
        with pytest.raises(ValueError, match="give it without camera_topic and camera_sources"):
            _run_setup(stand_in_launch, sim="none", hardware="arx5", camera_inputs=name, **wrong)
    with pytest.raises(ConfigError, match="the file is for robot 'dual_arx_x5', not 'fr3'"):
        _run_setup(stand_in_launch, robot="fr3", sim="none", hardware="franka", camera_inputs=name)
    with pytest.raises(RobodojoError, match="camera_inputs is for real hardware"):
        graph_nodes(
            robot="dual_arx_x5", task="general_pickup", seed=0, variant="standard", agent="none", agent_params={},
            camera_inputs=name,
        )  # fmt: skip


def test_isaac_starts_the_bridge_camera_nodes_and_the_operators_episode(stand_in_launch):
    """sim:=isaac: isaac_bridge_node (required) drives Isaac's articulation; a camera_node per camera reads Isaac's
    image topic (topic_names, the runner script's); episode_node runs the episode; all on Isaac's /clock by default;
    and process_graph starts the same nodes with the same inputs."""
    from robodojo.nodes.process_graph import graph_nodes
    from robodojo.robots import topic_names

    actions = _run_setup(stand_in_launch, sim="isaac", isaac_config="/tmp/isaac.yaml")
    nodes = _nodes(actions)
    assert {"isaac_bridge_node", "episode_node", "tcp_state_publisher", "motion_server_node", "agent_node"} <= set(
        nodes
    )
    assert "sim_node" not in nodes
    bridge = _parameters(nodes["isaac_bridge_node"])
    assert bridge == {"robot": "dual_arx_x5", "isaac_config": "/tmp/isaac.yaml", "use_sim_time": True}
    assert "isaac_bridge_node" in _exit_handlers(actions)
    cameras = {
        _parameters(a)["camera"]: _parameters(a)["input_topic"]
        for a in actions
        if type(a).__name__ == "Node" and a.kwargs["executable"] == "camera_node"
    }
    expected = {c: topic_names.isaac_camera_image(c) for c in _robot_yaml("dual_arx_x5")["cameras"]}
    assert cameras == expected
    assert _parameters(nodes["agent_node"])["reset_timeout_s"] == stand_in_launch.OPERATOR_RESET_TIMEOUT_S
    graph = graph_nodes(
        robot="dual_arx_x5", task="general_pickup", seed=0, variant="standard", agent="move_eef", agent_params={},
        hardware="isaac",
    )  # fmt: skip
    started = {(node, str(params.get("camera", ""))): params for node, params, _ in graph}
    assert {node for node, _ in started} == set(nodes) - {"robot_state_publisher", "rviz2"}
    assert all(params["use_sim_time"] is True for params in started.values())
    assert {c: started[("camera_node", c)]["input_topic"] for c in expected} == expected


def test_launch_traps_are_gone(stand_in_launch):
    """robot:=fr3 alone runs an FR3 task with its replayed example; hardware:=franka alone runs the driver, not MuJoCo,
    on the system clock; a simulator named beside a real arm's driver, or a driver of another robot, is refused."""
    from robodojo.errors import ConfigError

    nodes = _nodes(_run_setup(stand_in_launch, robot="fr3"))
    assert _parameters(nodes["sim_node"])["task"] == "fr3_pick_cube"
    assert _parameters(nodes["agent_node"])["llm"] == "replay:examples/replay/fr3_pick_cube_seed0.yaml"
    nodes = _nodes(_run_setup(stand_in_launch, robot="fr3", hardware="franka", agent="code_cell"))
    assert "sim_node" not in nodes and "fr3_driver_node" in nodes
    assert _parameters(nodes["episode_node"])["task"] == "fr3_pick_cube"
    assert all(_parameters(n)["use_sim_time"] is False for name, n in nodes.items() if name != "robot_state_publisher")
    with pytest.raises(ConfigError, match="needs sim:=none"):
        _run_setup(stand_in_launch, robot="fr3", hardware="franka", sim="mujoco")
    with pytest.raises(ConfigError, match="give robot:=dual_arx_x5"):
        _run_setup(stand_in_launch, hardware="arx5", robot="fr3")


def test_hardware_drivers_agree_between_launch_and_graph(stand_in_launch):
    from robodojo.nodes import process_graph

    description = stand_in_launch.generate_launch_description()
    (hardware,) = [e for e in description.args[0] if getattr(e, "args", ()) and e.args[0] == "hardware"]
    assert set(hardware.kwargs["choices"]) == {"none", *process_graph.HARDWARE_DRIVERS}
    assert {hw: node for hw, (node, _robot) in stand_in_launch.HARDWARE.items()} == process_graph.HARDWARE_DRIVERS
    assert stand_in_launch.OPERATOR_RESET_TIMEOUT_S == process_graph.OPERATOR_RESET_TIMEOUT_S


# --- RViz config --------------------------------------------------------------------------------------------


def _rviz_displays(displays: list[dict]) -> list[dict]:
    """Every display, groups flattened."""
    flat = []
    for display in displays:
        flat.append(display)
        flat.extend(_rviz_displays(display.get("Displays", [])))
    return flat


def _topic(display: dict, key: str = "Topic") -> str | None:
    value = display.get(key)
    return value.get("Value") if isinstance(value, dict) else value


@pytest.fixture(scope="module", params=ROBOTS)
def rviz(request) -> dict:
    path = RVIZ_DIR / f"{request.param}.rviz"
    assert path.is_file(), f"{path} is missing: scripts/generate_rviz.py writes it"
    config = yaml.safe_load(path.read_text())
    assert isinstance(config, dict)
    return {"robot": request.param, **config}


def test_rviz_files_are_what_the_robot_configs_make():
    """rviz/<robot>.rviz for every robot, as scripts/generate_rviz.py makes it (no hand edits drifting)."""
    from robodojo.nodes.rviz_config import render
    from robodojo.robots.config import load_robot_config

    assert sorted(p.stem for p in RVIZ_DIR.glob("*.rviz")) == ROBOTS
    for robot in ROBOTS:
        assert (RVIZ_DIR / f"{robot}.rviz").read_text() == render(load_robot_config(robot)), (
            f"rviz/{robot}.rviz is out of date: run scripts/generate_rviz.py"
        )


def test_rviz_config_layout(rviz):
    assert {"Panels", "Visualization Manager", "Window Geometry"} <= set(rviz)
    manager = rviz["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == topics.WORLD_FRAME
    assert manager["Views"]["Current"]["Class"] == "rviz_default_plugins/Orbit"
    classes = [d["Class"] for d in _rviz_displays(manager["Displays"])]
    classes += [t["Class"] for t in manager["Tools"]] + [p["Class"] for p in rviz["Panels"]]
    for cls in classes:
        assert cls.startswith(("rviz_default_plugins/", "rviz_common/")), f"not an RViz2 plugin class: {cls}"
    assert "rviz_default_plugins/Grid" in classes and "rviz_default_plugins/TF" in classes
    names = [d["Name"] for d in _rviz_displays(manager["Displays"])]
    assert len(names) == len(set(names)), f"display names repeat: {names}"


def test_rviz_shows_the_graph_topics(rviz):
    displays = _rviz_displays(rviz["Visualization Manager"]["Displays"])

    def topics_of(cls: str, key: str = "Topic") -> set[str]:
        return {_topic(d, key) for d in displays if d["Class"] == f"rviz_default_plugins/{cls}"}

    robot = _robot_yaml(rviz["robot"])
    assert topics_of("Image") == {topics.camera_image(c) for c in robot["cameras"]}  # this robot's, no other's
    assert topics_of("Pose") == {topics.tcp_pose(arm) for arm in robot["arms"]}
    assert topics_of("MarkerArray") == {topics.PLANNED_PATH}
    # the fixed frame is a link of the URDF robot_state_publisher gets (the robot config's scene_urdf)
    urdf = ET.parse(ROOT / robot["scene_urdf"]).getroot()
    assert rviz["Visualization Manager"]["Global Options"]["Fixed Frame"] in {link.get("name") for link in urdf}
    robot_models = [d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"]
    assert robot_models and robot_models[0]["Description Source"] == "Topic"
    assert _topic(robot_models[0], "Description Topic") == "/robot_description"


# --- with launch installed (the docker image) ---------------------------------------------------------------


def _installed(module: str) -> bool:
    """A regular package; test/launch and launch/ would otherwise pass for `launch` as namespace packages."""
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.origin is not None


def _import_launch_file():
    for module in ("launch", "launch_ros", "ament_index_python"):
        if not _installed(module):
            pytest.skip("launch is not installed (ROS 2 launch is not on PyPI; run in the docker image)")
    spec = importlib.util.spec_from_file_location("robodojo_launch", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_launch_description_builds():
    module = _import_launch_file()
    description = module.generate_launch_description()
    names = {arg.name for arg in description.get_launch_arguments()}
    assert set(REQUIRED_ARGUMENTS) <= names


@pytest.mark.parametrize(
    ("sim", "expected"),
    [
        ("mujoco", {"sim_node", "motion_server_node", "agent_node"}),
        (
            "isaac",
            {
                "isaac_bridge_node",
                "tcp_state_publisher",
                "camera_node",
                "episode_node",
                "motion_server_node",
                "agent_node",
            },
        ),
        ("none", {"tcp_state_publisher", "camera_node", "episode_node", "motion_server_node", "agent_node"}),
    ],
)
def test_launch_setup_starts_the_backend_nodes(sim, expected):
    """Runs the OpaqueFunction; needs agent_bringup installed (colcon build, sourced) for its share folder."""
    module = _import_launch_file()
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    from launch.actions import OpaqueFunction
    from launch.launch_context import LaunchContext
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node

    try:
        get_package_share_directory(PACKAGE)
    except PackageNotFoundError:
        pytest.skip("agent_bringup is not installed (colcon build and source install/setup.bash)")
    context = LaunchContext()
    context.launch_configurations.update({"sim": sim, "rviz": "false"})
    description = module.generate_launch_description()
    actions = []
    for entity in description.entities:
        if isinstance(entity, OpaqueFunction):
            actions += entity.execute(context) or []
        else:
            entity.execute(context)  # DeclareLaunchArgument: sets the defaults not given above
    started = [
        perform_substitutions(context, normalize_to_list_of_substitutions(a.node_executable))
        for a in actions
        if isinstance(a, Node)
        and perform_substitutions(context, normalize_to_list_of_substitutions(a.node_package)) == PACKAGE
    ]
    assert set(started) == expected
    if sim == "none":
        assert started.count("camera_node") == len(_robot_yaml("dual_arx_x5")["cameras"])
