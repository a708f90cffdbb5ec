"""The whole agent_bringup graph: robot model, robot backend, motion server, agent and RViz.

    ros2 launch agent_bringup robodojo.launch.py                          # MuJoCo, move_eef agent, replayed LLM, RViz
    ros2 launch agent_bringup robodojo.launch.py agent:=code_cell         # code cells, replayed from examples/cells/
    ros2 launch agent_bringup robodojo.launch.py agent:=code_cell llm:=openai:gpt-4.1
    ros2 launch agent_bringup robodojo.launch.py robot:=fr3 task:=fr3_pick_cube llm:=...
    ros2 launch agent_bringup robodojo.launch.py agent:=code_cell llm:=llamacpppy:smollm2 \
        base_url:=http://127.0.0.1:8000/v1 images:=none context_tokens:=8192  # a local text-only model
    ros2 launch agent_bringup robodojo.launch.py sim:=isaac               # Isaac Sim's ROS 2 bridge is the backend
    ros2 launch agent_bringup robodojo.launch.py robot:=fr3 sim:=none hardware:=franka \\
        robot_ip:=172.16.0.2 camera_topic:='/{camera}/color/image_raw'    # a real FR3 (README: real arms)
    ros2 launch agent_bringup robodojo.launch.py sim:=none \\
        camera_topic:='/drivers/{camera}/image_raw'                      # other hardware, its own drivers
    ros2 launch agent_bringup robodojo.launch.py sim:=none hardware:=franka robot:=fr3 \\
        camera_sources:='head=/dev/video0;wrist=/dev/video2'             # cameras without a ROS driver
    ros2 launch agent_bringup robodojo.launch.py sim:=none hardware:=franka robot:=fr3 \\
        camera_inputs:=fr3_realsense_usb_cam                             # per camera: topic, transport, intrinsics
    ros2 launch agent_bringup robodojo.launch.py agent:=none rviz:=false  # the graph only (launch_testing does this)
    ros2 launch agent_bringup robodojo.launch.py robot_state_publisher:=false  # a driver publishes TF and the model

Backends (`sim`):
- mujoco: `sim_node` runs the embedded MuJoCo world. It publishes /clock and is the clock source, so it runs on wall
  time itself (use_sim_time false) and every other node defaults to use_sim_time true.
- isaac: Isaac Sim runs the scene (scripts/isaac_sim_robodojo.py, on an RTX machine on the same ROS domain) and
  publishes /clock, its joint states on /isaac/joint_states and raw images on /isaac/cameras/<camera>/image_raw.
  `isaac_bridge_node` drives its articulation like an arm driver (config/isaac/<robot>.yaml, or `isaac_config:=`):
  /joint_states, the controllers' trajectory topics and their reports, position targets on /isaac/joint_command.
  As for real hardware, one `camera_node` per camera republishes the images under /cameras/<camera>/ with the
  calibration file and pose, `tcp_state_publisher` adds the grasp-point poses and `episode_node` runs the episode
  (Isaac's scene is put back by the operator: `robodojo judge --ready`). Everything uses Isaac's /clock.
- none: real hardware. The arm drivers publish /joint_states and follow the controllers' trajectory topics; each
  camera driver publishes raw images, and one `camera_node` per camera of the robot (config/robots/<robot>.yaml,
  `cameras`) republishes them under /cameras/<camera>/ with calibration and pose. Its `input_topic` parameter is set
  to the driver's topic, `camera_topic` with {camera} replaced by the camera's name (default /<camera>/image_raw).
  A camera without a ROS driver is named in `camera_sources` (camera=source pairs separated by ';', a source being what
  OpenCV opens: /dev/video0, an rtsp:// URL, a GStreamer pipeline, a video file): a `device_camera_node` reads it and
  publishes /<camera>/image_raw and camera_info, which that camera's camera_node reads. A rig's cameras written once
  in a camera inputs file (`camera_inputs:=<name in config/camera_inputs/ or path>`, instead of `camera_topic` and
  `camera_sources`) give each camera_node its topic, transport (raw or compressed), intrinsics source (the driver's
  CameraInfo or the calibration file) and the agent's image size (robodojo.perception.camera_inputs).
  `hardware` picks this package's arm driver: franka starts `fr3_driver_node` (config/hardware/fr3.yaml, or
  `hardware_config:=`; `robot_ip:=` overrides its address); none expects your own drivers. With sim:=none,
  `episode_node` runs the episode (instruction from the task or `instruction:=`, steps from the controllers' reports,
  success from the operator: `robodojo judge --success`), and a reset waits for `robodojo judge --ready`.

Robot model and TF: robot_state_publisher publishes /robot_description and TF from the robot's scene URDF
(config/robots/<robot>.yaml `scene_urdf`). With sim:=isaac or none, camera_node publishes /cameras/<camera>/pose from
the calibration files (config/cameras/<robot>/<camera>.yaml), and the scene URDF's camera mounts are moved to the same
poses (robodojo.perception.camera_mounts: a fixed camera's mount joint gives world -> optical frame = T_world_cam, a
wrist camera's gives TCP -> optical frame = T_tcp_cam), so TF and RViz show the cameras where the agent is told they
are; a camera without a file keeps its designed mount, and one log line says which is which. With sim:=mujoco,
sim_node publishes its own cameras' poses and the URDF's designed mounts stay.

Node parameters not given here keep their defaults from config/nodes.yaml. The default `llm` follows the agent: the
replayed example of its kind for the task and seed (examples/); an explicit llm:= always wins. The defaults of task,
sim, llm and use_sim_time, and the combinations refused, are robodojo.nodes.graph_choices (`robodojo graph` has the
same).

Ending: sim_node (or isaac_bridge_node, or this package's arm driver) and motion_server_node are required; when either
exits (a bad task, a robot without that task, a crash) the whole launch ends, saying which node exited with which
code; the node's own message is just above. The agent node exits after its episode: with exit code 0 the rest keeps
running (RViz shows the result) unless shutdown_after_episode:=true (for batch runs); with any other code (no
episode run, a crash, the robot lost) the launch ends as for a required node.
"""

from __future__ import annotations

import os

import yaml
from ament_index_python.packages import get_package_share_directory
from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    Shutdown,
)
from launch.event_handlers import OnProcessExit
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from robodojo.nodes import graph_choices
from robodojo.nodes.graph_choices import HARDWARE, REPLAY_EXAMPLES
from robodojo.perception.camera_mounts import calibrated_scene_urdf
from robodojo.robots.config import load_robot_config
from robodojo.robots.meshes import urdf_with_resolved_meshes

PACKAGE = "agent_bringup"
SIM_RESET_TIMEOUT_S = 30.0  # a simulator resets in seconds
OPERATOR_RESET_TIMEOUT_S = 900.0  # a real scene is put back by hand
CAMERA_TOPIC_DEFAULT = "/{camera}/image_raw"


def _arguments() -> list[DeclareLaunchArgument]:
    return [
        DeclareLaunchArgument(
            "robot",
            default_value="dual_arx_x5",
            choices=["dual_arx_x5", "fr3"],
            description="Robot: config/robots/<robot>.yaml (its scene URDF and cameras)",
        ),
        DeclareLaunchArgument(
            "sim",
            default_value="",
            choices=["", "mujoco", "isaac", "none"],
            description="Robot backend: embedded MuJoCo (sim_node), Isaac Sim's ROS 2 bridge, or none (real hardware); "
            "empty: none with hardware:=franka|arx5, else mujoco",
        ),
        DeclareLaunchArgument(
            "agent",
            default_value="move_eef",
            choices=["move_eef", "code_cell", "shell", "mcp", "none"],
            description="Agent: move_eef tool calls, code_cell Python cells, shell commands in a sandbox (robo "
            "command line), mcp (the episode served to one MCP client at http://127.0.0.1:8766/mcp; mcp_tools:=, "
            "mcp_port:=), or none (no agent node)",
        ),
        DeclareLaunchArgument(
            "task",
            default_value="",
            description="Task (the simulator's and the agent's); empty: the robot's default_task "
            "(config/robots/<robot>.yaml: general_pickup, fr3_pick_cube)",
        ),
        DeclareLaunchArgument("variant", default_value="standard", description="Task variant"),
        DeclareLaunchArgument("seed", default_value="0", description="Episode seed (an integer)"),
        DeclareLaunchArgument(
            "llm",
            default_value="",
            description=(
                "LLM spec: replay:FILE, openai:MODEL, vllm:MODEL, ... (see `robodojo run --help`); empty: the "
                "agent's replayed example for the task ("
                + ", ".join(f"{agent}: {spec}" for agent, spec in REPLAY_EXAMPLES.items())
                + ")"
            ),
        ),
        DeclareLaunchArgument(
            "base_url",
            default_value="",
            description="OpenAI-compatible endpoint; empty: the llm profile's own",
        ),
        DeclareLaunchArgument(
            "mcp_tools",
            default_value="robo",
            choices=["robo", "move_eef"],
            description="agent:=mcp: the tools served to the MCP client (robo: the shell harness's commands)",
        ),
        DeclareLaunchArgument(
            "mcp_port", default_value="8766", description="agent:=mcp: the port of http://127.0.0.1:<port>/mcp"
        ),
        DeclareLaunchArgument(
            "images",
            default_value="",
            choices=["", "none", "head", "all"],
            description="Cameras whose pictures the model gets: none (text-only models), head, all; empty: the agent's",
        ),
        DeclareLaunchArgument(
            "context_tokens",
            default_value="0",
            description="The model's context length (robodojo doctor measures it): older turns are left out to fit; "
            "0: unknown",
        ),
        DeclareLaunchArgument(
            "tool_choice",
            default_value="profile",
            choices=["profile", "auto", "required", "none"],
            description="tool_choice sent with every LLM call; profile: the server profile decides",
        ),
        DeclareLaunchArgument(
            "reasoning_effort",
            default_value="",
            choices=["", "minimal", "low", "medium", "high"],
            description="How hard a reasoning model thinks (sent as the server profile takes it); empty: "
            "config/llm.yaml's",
        ),
        DeclareLaunchArgument(
            "llm_config",
            default_value="",
            description="File of LLM profiles merged over config/llm.yaml and the per-user file; empty: none",
        ),
        DeclareLaunchArgument(
            "planner",
            default_value="native",
            choices=["native", "moveit"],
            description="Motion planner: native (IK + timing in robodojo) or moveit (moveit_py)",
        ),
        DeclareLaunchArgument("rviz", default_value="true", choices=["true", "false"], description="Start RViz"),
        DeclareLaunchArgument(
            "robot_state_publisher",
            default_value="true",
            choices=["true", "false"],
            description=(
                "Start robot_state_publisher (/robot_description and TF from /joint_states); false when a robot "
                "driver already publishes them"
            ),
        ),
        DeclareLaunchArgument(
            "calibration_board",
            default_value="false",
            choices=["true", "false"],
            description="sim:=mujoco only: the ChArUco board of config/calibration.yaml lies on the table, for a "
            "rehearsal of `robodojo calibrate` (docs/calibration.md)",
        ),
        DeclareLaunchArgument(
            "step_limit",
            default_value="0",
            description="25 Hz trajectory points every episode may play (sim_node, episode_node); 0: the task's. A "
            "calibration session plays more (docs/calibration.md)",
        ),
        DeclareLaunchArgument(
            "use_sim_time",
            # sim_node and Isaac Sim publish /clock; real hardware runs on the system clock
            default_value="",
            description="Use /clock; empty: true with a simulator (it publishes /clock), false with real hardware",
        ),
        DeclareLaunchArgument(
            "out",
            default_value="out/episodes",
            description="Folder for the episode records (relative to the working directory)",
        ),
        DeclareLaunchArgument(
            "shutdown_after_episode",
            default_value="false",
            choices=["true", "false"],
            description="End the whole launch when the agent node exits after its episode",
        ),
        DeclareLaunchArgument(
            "hardware",
            default_value="none",
            choices=["none", "franka", "arx5"],
            description="this package's arm driver, which implies sim:=none (franka: fr3_driver_node, robot:=fr3; "
            "arx5: arx5_driver_node, robot:=dual_arx_x5), or none (with sim:=none: your drivers publish /joint_states "
            "and follow the controller topics)",
        ),
        DeclareLaunchArgument(
            "hardware_config",
            default_value="",
            description="hardware:=franka|arx5: config file (address or CAN interfaces, limits, gains); empty: "
            "config/hardware/fr3.yaml or dual_arx_x5.yaml",
        ),
        DeclareLaunchArgument(
            "can_emulator",
            default_value="false",
            choices=["true", "false"],
            description="hardware:=arx5 only: drive the project's motor-bus emulator instead of real CAN (no arms "
            "needed: the real SDK, preloaded with the SocketCAN shim; README, ARX X5 over CAN)",
        ),
        DeclareLaunchArgument(
            "robot_ip", default_value="", description="hardware:=franka: the control box's address; empty: the config's"
        ),
        DeclareLaunchArgument(
            "isaac_config",
            default_value="",
            description="sim:=isaac: isaac_bridge_node's config (limits, workspace, contact); empty: "
            "config/isaac/<robot>.yaml",
        ),
        DeclareLaunchArgument(
            "instruction",
            default_value="",
            description="sim:=none or isaac: the episode's instruction in free text; empty: the task's",
        ),
        DeclareLaunchArgument(
            "confirm_reset",
            default_value="true",
            choices=["true", "false"],
            description="sim:=none or isaac: a reset waits for the operator's `robodojo judge --ready`",
        ),
        DeclareLaunchArgument(
            "observed_success",
            default_value="true",
            choices=["true", "false"],
            description="sim:=none or isaac: judge success from the joint states where the task has an "
            "observation-only check (the operator's `robodojo judge` overrides it)",
        ),
        DeclareLaunchArgument(
            "camera_topic",
            default_value=CAMERA_TOPIC_DEFAULT,
            description="sim:=none only: each camera driver's raw image topic; {camera} is replaced by the camera name",
        ),
        DeclareLaunchArgument(
            "camera_sources",
            default_value="",
            description="sim:=none only: cameras without a ROS driver, camera=source pairs separated by ';' "
            "(head=/dev/video0;wrist=rtsp://...): a device_camera_node per camera reads the source with OpenCV",
        ),
        DeclareLaunchArgument(
            "camera_inputs",
            default_value="",
            description="sim:=none only: a camera inputs file (a name in config/camera_inputs/ or a path): each "
            "camera's driver topic, transport, intrinsics source and agent image size; replaces camera_topic",
        ),
    ]


def _flag(context, name: str) -> bool:
    return graph_choices.flag(name, LaunchConfiguration(name).perform(context))


def _integer(context, name: str) -> int:
    text = LaunchConfiguration(name).perform(context).strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"launch argument {name}:={text!r} must be an integer") from None


def _text(value: str) -> ParameterValue:
    """A string parameter as a string (launch_ros would otherwise read '0', 'true' or '' as YAML)."""
    return ParameterValue(value, value_type=str)


def _end_launch_on_exit(name: str, *, after_episode: bool | None = None):
    """An OnProcessExit callback that ends the launch when ``name`` exits, saying why.

    ``after_episode`` None: a required node, any exit ends the launch. True/False (the agent): exit code 0 is a
    finished episode and ends the launch only when True; any other code ends it as for a required node.
    """

    def on_exit(event, context):
        if context.is_shutdown:  # the launch is already ending (Ctrl-C, another node): this exit is expected
            return None
        code = event.returncode
        if after_episode is not None and code == 0:
            if not after_episode:
                return [LogInfo(msg=f"{name} finished its episode; the graph keeps running (Ctrl-C ends it)")]
            reason = f"{name} finished its episode (shutdown_after_episode:=true)"
        else:
            reason = f"{name} exited with code {code}: ending the launch (its output above says why)"
        return [LogInfo(msg=reason), Shutdown(reason=reason)]

    return on_exit


def _can_emulator(config: dict) -> tuple[ExecuteProcess, dict[str, str]]:
    """The motor-bus emulator for every arm of the dual X5 (each at the robot's home pose) and the environment that
    points the driver's SDK at it through the SocketCAN shim (built here with the machine's C compiler)."""
    import tempfile

    from robodojo.hardware.settings import load_arx5_settings
    from robodojo.hardware.x5_bus.shim import preload_environment

    socket_dir = tempfile.mkdtemp(prefix="x5-")  # short: Unix socket paths are limited to 107 bytes
    home = config["arm"]["home_joints_rad"]
    args = ["python3", "-m", "robodojo.hardware.x5_bus", "--socket-dir", socket_dir]
    for arm in load_arx5_settings().arms:
        args += ["--arm", f"{arm.interface}={','.join(str(q) for q in home)}"]
    return ExecuteProcess(cmd=args, output="screen", name="x5_bus_emulator"), preload_environment(socket_dir)


def _robot_config(share: str, robot: str) -> dict:
    path = os.path.join(share, "config", "robots", f"{robot}.yaml")
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    for key in ("scene_urdf", "cameras"):
        if key not in config:
            raise ValueError(f"{path}: missing key {key!r}")
    return config


def _camera_sources(context, cameras: list[str]) -> dict[str, str]:
    """``camera_sources`` as camera -> source; ValueError naming an unknown camera or a pair without '='."""
    sources = {}
    for pair in LaunchConfiguration("camera_sources").perform(context).split(";"):
        if not pair.strip():
            continue
        camera, sep, source = pair.partition("=")
        camera = camera.strip()
        if not sep or not source.strip():
            raise ValueError(f"camera_sources: {pair!r} is not camera=source")
        if camera not in cameras:
            raise ValueError(f"camera_sources: the robot has no camera {camera!r}; cameras: {', '.join(cameras)}")
        sources[camera] = source.strip()
    return sources


def _camera_inputs(context, robot: str, camera_topic: str, sources: dict[str, str]):
    """``camera_inputs`` loaded for ``robot`` (robodojo.perception.camera_inputs), or None when not given; ValueError
    when camera_topic or camera_sources come with it."""
    name = LaunchConfiguration("camera_inputs").perform(context).strip()
    if not name:
        return None
    if camera_topic != CAMERA_TOPIC_DEFAULT or sources:
        raise ValueError("camera_inputs names every camera's input: give it without camera_topic and camera_sources")
    from robodojo.perception.camera_inputs import load_camera_inputs

    return load_camera_inputs(name, robot)


def _operated_episode_nodes(
    context,
    robot: str,
    task: str,
    cameras: list[str],
    seed: int,
    use_sim_time: bool,
    camera_topic: str,
    camera_sources: dict[str, str] | None = None,
    camera_inputs=None,
) -> list:
    """What a robot without sim_node needs beside its driver (sim:=none, sim:=isaac): episode_node for the episode,
    tcp_state_publisher, and one camera_node per camera republishing ``camera_topic`` ({camera} replaced), the
    output of a device_camera_node for a camera in ``camera_sources``, or its input in ``camera_inputs`` (a loaded
    camera inputs file)."""
    camera_sources = camera_sources or {}
    variant = LaunchConfiguration("variant").perform(context)
    nodes = [
        Node(
            package="agent_bringup",
            executable="episode_node",
            output="screen",
            parameters=[
                {
                    "robot": _text(robot),
                    "task": _text(task),
                    "variant": _text(variant),
                    "seed": seed,
                    "instruction": _text(LaunchConfiguration("instruction").perform(context)),
                    "confirm_reset": _flag(context, "confirm_reset"),
                    "observed_success": _flag(context, "observed_success"),
                    "step_limit": _integer(context, "step_limit"),
                    "use_sim_time": use_sim_time,
                }
            ],
        ),
        Node(
            package="agent_bringup",
            executable="tcp_state_publisher",
            output="screen",
            parameters=[{"robot": _text(robot), "use_sim_time": use_sim_time}],
        ),
    ]
    for camera, source in camera_sources.items():
        nodes.append(
            Node(
                package="agent_bringup",
                executable="device_camera_node",
                name=f"device_camera_node_{camera}",
                output="screen",
                parameters=[
                    {
                        "robot": _text(robot),
                        "camera": _text(camera),
                        "source": _text(source),
                        "use_sim_time": use_sim_time,
                    }
                ],
            )
        )
    for camera in cameras:
        # a device_camera_node publishes /<camera>/image_raw (its default output_topic)
        input_topic = f"/{camera}/image_raw" if camera in camera_sources else camera_topic.replace("{camera}", camera)
        from_file = {}  # camera_inputs: topic, transport, reliability, intrinsics source, agent size (over the above)
        if camera_inputs is not None:
            entry = camera_inputs.camera(camera).camera_node_parameters()
            from_file = {k: _text(v) if isinstance(v, str) else v for k, v in entry.items()}
        nodes.append(
            Node(
                package="agent_bringup",
                executable="camera_node",
                name=f"camera_node_{camera}",  # one node per camera: unique names
                output="screen",
                parameters=[
                    {
                        "robot": _text(robot),
                        "camera": _text(camera),
                        # the driver's raw image topic, republished under /cameras/<camera>/
                        "input_topic": _text(input_topic),
                        "use_sim_time": use_sim_time,
                    },
                    from_file,
                ],
            )
        )
    return nodes


def _robot_description(share: str, config: dict, robot: str, sim: str) -> tuple[str, str]:
    """robot_state_publisher's URDF and a log line on where its camera frames come from.

    The scene URDF (urdf/<scene>.urdf, installed under share/). Where camera_node publishes /cameras/<camera>/pose
    from the calibration files (sim:=isaac, none), each calibrated camera's mount joint is moved to the file's pose
    (robodojo.perception.camera_mounts), so TF and RViz show what the agent is told; a camera without a file keeps its
    designed mount. Under sim:=mujoco sim_node publishes its cameras' own poses: the scene URDF's mounts, as designed.
    """
    urdf_path = os.path.join(share, config["scene_urdf"])
    with open(urdf_path, encoding="utf-8") as f:
        text = f.read()
    if graph_choices.camera_poses_from_calibration(sim):
        calibrated = calibrated_scene_urdf(load_robot_config(robot), text)
        text = calibrated.text
        mounts = "robot_description, camera mounts: " + "; ".join(m.describe() for m in calibrated.mounts)
    else:
        mounts = f"robot_description: the designed camera mounts of {config['scene_urdf']} (sim_node's cameras)"
    # ROS resolves package:// in an ament package's share folder; the FR3's visual meshes are in a Python package
    # (franky-sim): they become absolute file:// paths here (primitives where it is not installed).
    return urdf_with_resolved_meshes(text), mounts


def _launch_setup(context, *args, **kwargs):
    share = get_package_share_directory(PACKAGE)
    robot = LaunchConfiguration("robot").perform(context)
    hardware = LaunchConfiguration("hardware").perform(context)
    sim = graph_choices.backend(LaunchConfiguration("sim").perform(context), hardware, robot)
    agent = LaunchConfiguration("agent").perform(context)
    task = graph_choices.task_or_default(robot, LaunchConfiguration("task").perform(context))
    variant = LaunchConfiguration("variant").perform(context)
    seed = _integer(context, "seed")
    llm = graph_choices.llm_or_example(agent, LaunchConfiguration("llm").perform(context), task, seed)
    base_url = LaunchConfiguration("base_url").perform(context)
    planner = LaunchConfiguration("planner").perform(context)
    out = LaunchConfiguration("out").perform(context)
    camera_topic = LaunchConfiguration("camera_topic").perform(context)
    use_sim_time = graph_choices.sim_time(LaunchConfiguration("use_sim_time").perform(context), sim)

    config = _robot_config(share, robot)
    cameras = list(config["cameras"])

    actions: list = []
    if _flag(context, "robot_state_publisher"):
        robot_description, mounts = _robot_description(share, config, robot, sim)
        actions.append(LogInfo(msg=mounts))
        actions.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                output="screen",
                parameters=[
                    {
                        "robot_description": ParameterValue(robot_description, value_type=str),
                        "use_sim_time": use_sim_time,
                    }
                ],
            )
        )

    if sim == "mujoco":
        sim_node = Node(
            package="agent_bringup",
            executable="sim_node",
            output="screen",
            parameters=[
                {
                    "robot": _text(robot),
                    "task": _text(task),
                    "variant": _text(variant),
                    "seed": seed,
                    "calibration_board": _flag(context, "calibration_board"),
                    "step_limit": _integer(context, "step_limit"),
                    # the simulator publishes /clock: it is the clock source and runs on wall time
                    "use_sim_time": False,
                }
            ],
        )
        actions.append(sim_node)
        actions.append(
            RegisterEventHandler(OnProcessExit(target_action=sim_node, on_exit=_end_launch_on_exit("sim_node")))
        )
    elif sim == "isaac":
        from robodojo.robots.topic_names import isaac_camera_image

        actions.append(
            LogInfo(
                msg=(
                    f"sim:=isaac: start Isaac Sim with the scene of robot {robot} (scripts/isaac_sim_robodojo.py) on "
                    "this ROS domain; isaac_bridge_node connects once its joint states arrive."
                )
            )
        )
        bridge = Node(
            package="agent_bringup",
            executable="isaac_bridge_node",
            output="screen",
            parameters=[
                {
                    "robot": _text(robot),
                    "isaac_config": _text(LaunchConfiguration("isaac_config").perform(context)),
                    "use_sim_time": use_sim_time,
                }
            ],
        )
        actions.append(bridge)
        actions.append(
            RegisterEventHandler(OnProcessExit(target_action=bridge, on_exit=_end_launch_on_exit("isaac_bridge_node")))
        )
        camera_topic = isaac_camera_image("{camera}")
        actions += _operated_episode_nodes(context, robot, task, cameras, seed, use_sim_time, camera_topic)
    else:  # none: real hardware drivers publish /joint_states and raw images
        if hardware in HARDWARE:  # the arm families with a driver here
            executable = HARDWARE[hardware][0]
            hardware_config = _text(LaunchConfiguration("hardware_config").perform(context))
            if hardware == "franka":
                robot_ip = _text(LaunchConfiguration("robot_ip").perform(context))
                driver = Node(
                    package="agent_bringup",
                    executable="fr3_driver_node",
                    output="screen",
                    parameters=[
                        {
                            "robot": _text(robot),
                            "hardware_config": hardware_config,
                            "robot_ip": robot_ip,
                            "use_sim_time": use_sim_time,
                        }
                    ],
                )
            else:
                env: dict[str, str] = {}
                if _flag(context, "can_emulator"):
                    emulator, env = _can_emulator(config)
                    actions.append(emulator)
                driver = Node(
                    package="agent_bringup",
                    executable="arx5_driver_node",
                    output="screen",
                    parameters=[
                        {"robot": _text(robot), "hardware_config": hardware_config, "use_sim_time": use_sim_time}
                    ],
                    additional_env=env,
                )
            actions.append(driver)
            actions.append(
                RegisterEventHandler(OnProcessExit(target_action=driver, on_exit=_end_launch_on_exit(executable)))
            )
        sources = _camera_sources(context, cameras)
        inputs = _camera_inputs(context, robot, camera_topic, sources)
        actions += _operated_episode_nodes(
            context, robot, task, cameras, seed, use_sim_time, camera_topic, sources, inputs
        )

    motion_server = Node(
        package="agent_bringup",
        executable="motion_server_node",
        output="screen",
        parameters=[{"robot": _text(robot), "planner": _text(planner), "use_sim_time": use_sim_time}],
    )
    actions.append(motion_server)
    actions.append(
        RegisterEventHandler(
            OnProcessExit(target_action=motion_server, on_exit=_end_launch_on_exit("motion_server_node"))
        )
    )

    if agent != "none":
        agent_node = Node(
            package="agent_bringup",
            executable="agent_node",
            output="screen",
            parameters=[
                {
                    "agent": _text(agent),
                    "llm": _text(llm),
                    "base_url": _text(base_url),
                    "images": _text(LaunchConfiguration("images").perform(context)),
                    "mcp_tools": _text(LaunchConfiguration("mcp_tools").perform(context)),
                    "mcp_port": _integer(context, "mcp_port"),
                    "context_tokens": _integer(context, "context_tokens"),
                    "tool_choice": _text(LaunchConfiguration("tool_choice").perform(context)),
                    "llm_reasoning_effort": _text(LaunchConfiguration("reasoning_effort").perform(context)),
                    "llm_config": _text(LaunchConfiguration("llm_config").perform(context)),
                    "task": _text(task),
                    "variant": _text(variant),
                    "seed": seed,
                    "out": _text(out),
                    # a real robot's or Isaac's reset waits for the operator (episode_node)
                    "reset_timeout_s": SIM_RESET_TIMEOUT_S if sim == "mujoco" else OPERATOR_RESET_TIMEOUT_S,
                    "use_sim_time": use_sim_time,
                }
            ],
        )
        actions.append(agent_node)
        after_episode = _flag(context, "shutdown_after_episode")
        actions.append(
            RegisterEventHandler(
                OnProcessExit(
                    target_action=agent_node, on_exit=_end_launch_on_exit("agent_node", after_episode=after_episode)
                )
            )
        )

    if _flag(context, "rviz"):
        actions.append(
            Node(
                package="rviz2",
                executable="rviz2",
                output="screen",
                arguments=["-d", os.path.join(share, "rviz", f"{robot}.rviz")],  # scripts/generate_rviz.py
                parameters=[{"use_sim_time": use_sim_time}],
            )
        )
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([*_arguments(), OpaqueFunction(function=_launch_setup)])
