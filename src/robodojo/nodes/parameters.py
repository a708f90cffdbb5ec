"""Every node's parameters as a typed, documented structure (no ROS here: the CLI, tests and benchmarks read it too).

A node's parameters are one frozen dataclass: the field's type is the parameter's type, its ``description`` is what
``ros2 param describe`` shows, and its rule (``positive``) is checked once, with a message naming the
parameter. The default values live in config/nodes.yaml (the params file launch passes on), and a test keeps the two
in step: every field has a default there and the file has nothing else.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError

NODES_CONFIG = CONFIG_DIR / "nodes.yaml"
PARAMETER_TYPES = (bool, int, float, str)


def parameter(description: str, *, positive: bool = False) -> Any:
    """A dataclass field that is a node parameter: ``description`` for ``ros2 param describe``; ``positive`` numbers
    must be > 0. (Names such as robot, task or planner are checked by what loads them, with the valid ones listed.)"""
    return field(metadata={"description": description, "positive": positive})


@dataclass(frozen=True)
class SimNodeParams:
    """sim_node: the embedded MuJoCo world as a ROS robot (joint states, controllers, cameras, episode status)."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml)")
    task: str = parameter("task loaded at start (robodojo tasks lists them)")
    variant: str = parameter("task layout variant")
    seed: int = parameter("layout seed of the first episode")
    camera_rate_hz: float = parameter(
        "rate of every camera, rendered and published as rgb8 with CameraInfo [Hz]", positive=True
    )
    joint_state_slices: int = parameter(
        "/joint_states messages per control step, each after its slice of the physics steps (5 -> 125 Hz)",
        positive=True,
    )
    status_rate_hz: float = parameter(
        "/episode/status heartbeat [Hz]; it is also published on every change", positive=True
    )
    real_time_factor: float = parameter("simulated seconds per wall-clock second", positive=True)
    trajectory_lead_s: float = parameter("extra delay before a trajectory stamped 'now' (0) starts [s]")
    calibration_board: bool = parameter(
        "show the ChArUco board of config/calibration.yaml on the table (robodojo calibrate's rehearsal)"
    )
    step_limit: int = parameter("25 Hz trajectory points every episode may play; 0: the task's")


@dataclass(frozen=True)
class MotionServerParams:
    """motion_server_node: the MoveEef action over the robot's controller topics."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml); its control_hz sets the point rate")
    planner: str = parameter("native, or moveit (moveit_py, where a ROS 2 install with MoveIt exists)")
    start_lead_s: float = parameter(
        "trajectories start this long after the latest joint state, so that both arms start together [s]"
    )
    joint_state_timeout_s: float = parameter(
        "no /joint_states for this long (wall clock): the backend is gone and goals abort [s]", positive=True
    )
    arrival_wait_s: float = parameter("past the planned end, wait up to this long (robot time) for the arms [s]")
    report_timeout_s: float = parameter(
        "every controller reports a trajectory within this long (wall clock) of its sending; if none did and the "
        "joint states show nothing of it played, it is sent again once and then the controllers count as gone; one "
        "that plays unreported is followed on the joint states [s]",
        positive=True,
    )
    planned_path_markers: bool = parameter("publish the planned grasp-point paths for RViz")
    lease_timeout_s: float = parameter(
        "controllers drop a trajectory whose lease (this server's heartbeat) is older than this (wall clock) [s]",
        positive=True,
    )
    lease_period_s: float = parameter(
        "the lease is renewed this often while a goal moves (wall clock) [s]", positive=True
    )
    stop_confirm_timeout_s: float = parameter(
        "after a motion ends early, command the stop for up to this long until the arms are seen holding [s]",
        positive=True,
    )
    hold_speed_rad_s: float = parameter(
        "the arms count as holding still when no arm joint moves faster than this [rad/s]", positive=True
    )
    result_timeout_s: float = parameter(
        "finished goals' results stay available this long for slow clients (wall clock) [s]", positive=True
    )


@dataclass(frozen=True)
class AgentNodeParams:
    """agent_node: runs one agent's episode against the graph (MoveEef action, cameras, episode status)."""

    agent: str = parameter("agent style: move_eef, code_cell, shell, shell:<cli>, or mcp (an MCP client drives it)")
    llm: str = parameter("LLM spec: profile:model (openai:, vllm:, ollama:, llamacpp:) or replay:FILE")
    base_url: str = parameter("OpenAI-compatible endpoint; empty: the llm profile's own")
    llm_config: str = parameter("LLM profiles merged over config/llm.yaml and the per-user file; empty: none")
    llm_timeout_s: float = parameter("per-request LLM timeout [s]; 0: config/llm.yaml's")
    llm_retries: int = parameter("LLM retries per call; -1: config/llm.yaml's")
    llm_max_output_tokens: int = parameter("answer length sent with every LLM call; 0: config/llm.yaml's")
    llm_reasoning_effort: str = parameter("reasoning effort: minimal, low, medium, high; empty: config/llm.yaml's")
    tool_choice: str = parameter("tool_choice sent with every LLM call: auto, required, none, or profile")
    images: str = parameter("cameras whose pictures go to the model: none, head, all; empty: the agent's config")
    context_tokens: int = parameter("the model's context length (robodojo doctor measures it); 0: unknown")
    out: str = parameter("folder of the episode records (relative to the working directory)")
    llm_call_budget: int = parameter("LLM calls the episode may make", positive=True)
    reset: bool = parameter("ask the simulator for a fresh episode (task, variant, seed) before starting")
    task: str = parameter("task of the episode (with reset)")
    variant: str = parameter("layout variant (with reset)")
    seed: int = parameter("layout seed (with reset)")
    status_timeout_s: float = parameter(
        "no /episode/status for this long: the backend is gone, the episode ends [s]", positive=True
    )
    image_timeout_s: float = parameter(
        "wait at most this long for camera frames newer than the request [s]", positive=True
    )
    motion_timeout_s: float = parameter(
        "upper bound on one MoveEef goal (the server reports long before) [s]", positive=True
    )
    exit_when_done: bool = parameter("shut the node down after the episode (launch then ends the graph)")
    reset_timeout_s: float = parameter(
        "wait this long for /episode/reset to answer (a real robot's reset waits for the operator) [s]", positive=True
    )
    mcp_tools: str = parameter("agent mcp: the tool set served to the MCP client, robo or move_eef")
    mcp_port: int = parameter("agent mcp: the port of http://127.0.0.1:<port>/mcp; 0: a free one, logged")
    clock: str = parameter(
        "world time a model call costs beyond the time that passes anyway: real (nothing more), fixed:S, scaled:K "
        "(robodojo.episodes.clock)"
    )


@dataclass(frozen=True)
class CameraNodeParams:
    """camera_node: republishes a camera driver's frames with calibration and the optical frame's pose."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml)")
    camera: str = parameter(
        "config/cameras/<robot>/<camera>.yaml: intrinsics, and a fixed pose or a hand-eye transform"
    )
    calibration_file: str = parameter("calibration file; empty: config/cameras/<robot>/<camera>.yaml")
    input_topic: str = parameter(
        "the driver's image topic (e.g. /camera/camera/color/image_raw, or .../image_raw/compressed with "
        "input_transport compressed); republished under /cameras/<camera>/"
    )
    input_transport: str = parameter(
        "raw: sensor_msgs/Image (rgb8, bgr8, rgba8, bgra8, mono8, yuyv, uyvy, bayer_*8); compressed: "
        "sensor_msgs/CompressedImage (jpeg, png)"
    )
    input_reliable: bool = parameter(
        "subscribe to input_topic reliably, for a driver that publishes so (lost fragments of a large frame are sent "
        "again); false: the sensor-data QoS (best effort), which every camera driver matches"
    )
    intrinsics: str = parameter(
        "file: K and distortion from the calibration file (scaled to the frame's size when the aspect ratio "
        "matches); driver: from the driver's CameraInfo (camera_info_topic)"
    )
    camera_info_topic: str = parameter(
        "the driver's CameraInfo (intrinsics: driver); empty: camera_info beside input_topic, as image_transport "
        "names it"
    )
    output_width: int = parameter("resize every frame to this width for the agent, K scaled exactly; 0: as received")
    output_height: int = parameter("resize every frame to this height (with output_width); 0: as received")
    joint_state_timeout_s: float = parameter(
        "wrist cameras: frames are dropped when the arm state is older than this (wall clock) [s]", positive=True
    )
    max_frame_lag_s: float = parameter(
        "wrist cameras: a frame's pose uses the arm's joint state nearest its stamp; frames with none within this "
        "of their stamp are dropped [s]",
        positive=True,
    )
    diagnostics_period_s: float = parameter(
        "frames received, published and dropped (by reason) on /diagnostics this often [s]", positive=True
    )


@dataclass(frozen=True)
class DeviceCameraParams:
    """device_camera_node: a camera without a ROS driver (V4L2, GStreamer, RTSP, video file) published as one."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml)")
    camera: str = parameter("the robot's camera this device is; its calibration file gives the CameraInfo")
    calibration_file: str = parameter("calibration file; empty: config/cameras/<robot>/<camera>.yaml")
    source: str = parameter(
        "what OpenCV's VideoCapture opens: a V4L2 device (/dev/video0 or 0), a GStreamer pipeline (with '!'), "
        "an rtsp:// or http:// URL, a video file, or an image sequence (frame_%04d.png)"
    )
    width: int = parameter("frame width asked of the device and published (frames are resized to it); 0: as given")
    height: int = parameter("frame height, with width; 0: as given")
    rate_hz: float = parameter("frames captured and published per second, at most [Hz]", positive=True)
    end_of_stream: str = parameter(
        "a file or image sequence that ends: loop (open it again at once) or reconnect (after the backoff, as for a "
        "lost device)"
    )
    reconnect_min_s: float = parameter(
        "first wait before opening a failed or lost source again; doubled per failure [s]", positive=True
    )
    reconnect_max_s: float = parameter("longest wait between attempts to open the source [s]", positive=True)
    output_topic: str = parameter("image topic; empty: /<camera>/image_raw (camera_info beside it)")
    diagnostics_period_s: float = parameter(
        "frames captured, read failures and reconnects on /diagnostics this often [s]", positive=True
    )


@dataclass(frozen=True)
class TcpStatePublisherParams:
    """tcp_state_publisher: each arm's grasp-point pose from /joint_states."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml)")
    max_rate_hz: float = parameter("publish at most this often, on /joint_states arrival [Hz]", positive=True)


@dataclass(frozen=True)
class Fr3DriverParams:
    """fr3_driver_node: a Franka FR3 over libfranka (franky) as the graph's robot, in the simulator's place."""

    robot: str = parameter("robot configuration the rest of the graph uses; must be the hardware config's robot")
    hardware_config: str = parameter("hardware config (robot, IP, limits, scaling); empty: config/hardware/fr3.yaml")
    robot_ip: str = parameter("the control box's FCI address; empty: the hardware config's robot_ip")
    status_rate_hz: float = parameter("trajectory_status of holding controllers, and /diagnostics [Hz]", positive=True)
    gripper_rate_hz: float = parameter("gripper width readings between moves [Hz]", positive=True)
    reconnect_period_s: float = parameter("after lost contact, try to connect again this often [s]", positive=True)


@dataclass(frozen=True)
class Arx5DriverParams:
    """arx5_driver_node: the dual ARX X5 over CAN (arx5-interface) as the graph's robot, in the simulator's place."""

    robot: str = parameter("robot configuration the rest of the graph uses; must be the hardware config's robot")
    hardware_config: str = parameter(
        "hardware config (CAN interfaces, SDK profile, gains, limits); empty: config/hardware/dual_arx_x5.yaml"
    )
    status_rate_hz: float = parameter("trajectory_status of holding controllers, and /diagnostics [Hz]", positive=True)
    gripper_rate_hz: float = parameter("gripper width readings between moves [Hz]", positive=True)
    reconnect_period_s: float = parameter("after lost contact, try to connect again this often [s]", positive=True)


@dataclass(frozen=True)
class IsaacBridgeParams:
    """isaac_bridge_node: Isaac Sim's articulation (over its ROS 2 bridge) as the graph's robot, like an arm driver."""

    robot: str = parameter("robot configuration of the scene Isaac Sim runs (config/robots/<robot>.yaml)")
    isaac_config: str = parameter(
        "bridge config (limits, workspace, contact, gripper); empty: config/isaac/<robot>.yaml"
    )
    status_rate_hz: float = parameter("trajectory_status of holding controllers, and /diagnostics [Hz]", positive=True)
    reconnect_period_s: float = parameter(
        "after lost contact, look for Isaac's joint states this often [s]", positive=True
    )


@dataclass(frozen=True)
class EpisodeNodeParams:
    """episode_node: a real robot's episode (no simulator): instruction, step budget, the operator's verdict."""

    robot: str = parameter("robot configuration (config/robots/<robot>.yaml)")
    task: str = parameter("task whose instruction, recipe and step budget the episode takes (robodojo tasks)")
    variant: str = parameter("task variant named in the episode status")
    seed: int = parameter("seed named in the episode status (a real scene has no seeded layout)")
    instruction: str = parameter("free-text instruction; empty: the task's (its {color}-like slots from defaults)")
    step_limit: int = parameter("25 Hz trajectory points the episode may play; 0: the task's")
    status_rate_hz: float = parameter(
        "/episode/status heartbeat [Hz]; it is also published on every change", positive=True
    )
    home_on_reset: bool = parameter("a reset homes the arms through the motion server's /motion/home")
    confirm_reset: bool = parameter("a reset waits for the operator's `robodojo judge --ready`")
    reset_timeout_s: float = parameter("how long a reset waits for the operator [s]", positive=True)
    observed_success: bool = parameter(
        "judge success from the joint states where the task has an observation-only check (the operator may override)"
    )


NODE_PARAMS: dict[str, type] = {
    "sim_node": SimNodeParams,
    "motion_server_node": MotionServerParams,
    "agent_node": AgentNodeParams,
    "camera_node": CameraNodeParams,
    "device_camera_node": DeviceCameraParams,
    "tcp_state_publisher": TcpStatePublisherParams,
    "fr3_driver_node": Fr3DriverParams,
    "arx5_driver_node": Arx5DriverParams,
    "isaac_bridge_node": IsaacBridgeParams,
    "episode_node": EpisodeNodeParams,
}

P = TypeVar("P")


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter as ROS declares it: name, Python type, default (config/nodes.yaml), description, rule."""

    name: str
    type: type
    default: bool | int | float | str
    description: str
    positive: bool


@cache
def node_defaults(node_name: str) -> dict[str, Any]:
    """The ``ros__parameters`` of ``node_name`` in config/nodes.yaml."""
    root = Section(load_yaml(NODES_CONFIG), str(NODES_CONFIG))
    if node_name not in root.data:
        raise ConfigError(f"{NODES_CONFIG}: no section for node {node_name!r}; nodes: {', '.join(root.names())}")
    params = root.section(node_name).section("ros__parameters")
    for key, value in params.data.items():
        if not isinstance(value, PARAMETER_TYPES):
            raise ConfigError(f"{params.where}.{key}: expected a bool, number or string, got {value!r}")
    return dict(params.data)


def node_name_of(params_type: type) -> str:
    """The node whose parameters ``params_type`` holds (its section in config/nodes.yaml)."""
    for name, cls in NODE_PARAMS.items():
        if cls is params_type:
            return name
    raise ConfigError(f"{params_type.__name__} is not a node's parameters; known: {', '.join(NODE_PARAMS)}")


def parameter_specs(params_type: type) -> list[ParameterSpec]:
    """The parameters of one node, in declaration order, with their defaults from config/nodes.yaml."""
    cls = params_type
    node_name = node_name_of(cls)
    defaults = node_defaults(node_name)
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        if f.name not in defaults:
            raise ConfigError(f"{NODES_CONFIG}: {node_name}.ros__parameters has no default for {f.name!r}")
        kind = hints[f.name]
        specs.append(
            ParameterSpec(
                name=f.name,
                type=kind,
                default=coerce(f.name, defaults[f.name], kind),
                description=f.metadata["description"],
                positive=f.metadata["positive"],
            )
        )
    extra = defaults.keys() - {s.name for s in specs}
    if extra:
        raise ConfigError(f"{NODES_CONFIG}: {node_name} has unknown parameters: {', '.join(sorted(extra))}")
    return specs


def coerce(name: str, value: Any, kind: type) -> Any:
    """``value`` as a ``kind`` parameter; an int may stand for a float, nothing else converts."""
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    elif isinstance(value, kind) and not isinstance(value, bool):
        return value
    article = "an" if kind is int else "a"
    raise ConfigError(f"parameter {name!r} must be {article} {kind.__name__}, got {value!r}")


def build_params(params_type: type[P], values: Mapping[str, Any]) -> P:
    """A node's parameters from ``values`` (name -> value; missing names take their defaults), each value coerced
    to its type and checked against its rule."""
    out = {}
    for spec in parameter_specs(params_type):
        value = coerce(spec.name, values.get(spec.name, spec.default), spec.type)
        if spec.positive and not value > 0:
            raise ConfigError(f"parameter {spec.name!r} must be > 0, got {value!r}")
        out[spec.name] = value
    return params_type(**out)
