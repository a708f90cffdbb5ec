#!/usr/bin/env python3
"""Run a robodojo scene in Isaac Sim 6.x with its ROS 2 bridge, the robot backend behind isaac_bridge_node.

    robodojo scene export --task general_pickup --seed 0 --out out/isaac/scene.usda     # in the project's venv
    python scripts/isaac_sim_robodojo.py out/isaac/scene.usda --check                    # anywhere with usd-core
    <isaac-sim>/python.sh scripts/isaac_sim_robodojo.py out/isaac/scene.usda [--headless]  # on an RTX machine

LIMITS, plainly: Isaac Sim cannot be installed or run on the machines this project is developed and tested on (no RTX
GPU; PyPI's isaacsim 6.x wheels are for Python 3.12 and its ROS 2 extras do not resolve; see shared/HARDWARE.md).
The Isaac part of this script is written against the Isaac Sim 6.2 API (the URDF importer, OmniGraph node types of
isaacsim.ros2.bridge and isaacsim.core.nodes) and has never been run by the project. ``--check`` runs here and in CI:
it validates everything the Isaac part reads (the stage, the robot URDF beside it, cameras, topics, textures) with
usd-core alone and prints the graph it would build. ``make isaac-check`` (scripts/isaac_contract.py) checks what the
Isaac part calls against the pinned Isaac Sim 6.2 wheels' sources and node definitions: names, signatures, keyword
choices, OmniGraph attributes and their types. What it does at run time still needs a GPU to be known.

What the Isaac part does:
1. opens the stage (table, floor, objects with physics, cameras, lights: the embedded world's scene, settled);
2. imports the robot URDF beside it (the scene URDF without its table, which the stage holds) into ``isaac_import/``
   beside the stage (rewritten on every run), fixed base, position drives with the embedded world's servo gains, fixed
   joints kept so that the camera frames exist; Isaac opens ``isaac_import/launch.usda``, the stage with its
   ``/World/Robot`` payload on the file the import wrote;
3. attaches each camera to its mount link (the wrist cameras move with the arms) at its exact mount offset;
4. builds one OmniGraph driven by the playback tick that publishes ``/clock`` (simulation time),
   ``/isaac/joint_states`` (every joint of the articulation, stamped with simulation time), and per camera
   ``/isaac/cameras/<camera>/image_raw`` (rgb8) and ``/isaac/cameras/<camera>/camera_info``, stamped in the camera's
   optical frame; it follows position targets on ``/isaac/joint_command`` (sensor_msgs/JointState) through the
   articulation controller;
5. plays: objects settle, then a launched object gets its velocity and a belt its surface velocity.

The robot's own topics come from the ROS side (``ros2 launch agent_bringup robodojo.launch.py sim:=isaac``), as for a
real arm: ``isaac_bridge_node`` republishes /joint_states, plays the motion server's joint trajectories onto
``/isaac/joint_command`` at the control rate (holding the arms between them) and reports their status; one
``camera_node`` per camera republishes the images under ``/cameras/<camera>/`` with the calibration file and pose.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

GRAPH_PATH = "/World/ROS2Bridge"
ROBOT_PATH = "/World/Robot"
CAMERAS_PATH = "/World/Cameras"
SETTLE_S = 0.5  # the embedded world settles its layouts for about this long before an episode starts
IMPORT_DIR = "isaac_import"  # beside the stage: the URDF import and the layer Isaac opens, rewritten on every run
LAUNCH_LAYER = "launch.usda"  # in IMPORT_DIR: the stage, with the robot payload on what the import wrote
ROS2_BRIDGE_EXTENSION = "isaacsim.ros2.bridge"
# PhysX's joint state schema (multiple-apply, one instance per drive axis): where a joint starts when playing.
JOINT_STATE_API = "PhysicsJointStateAPI"


@dataclass(frozen=True)
class CameraPlan:
    name: str
    prim_path: str
    width: int
    height: int
    mount_frame: str
    image_topic: str
    info_topic: str
    frame_id: str


@dataclass(frozen=True)
class ScenePlan:
    """Everything the Isaac part reads from the stage, checked."""

    stage: Path
    robot: str
    robot_urdf: Path
    import_dir: Path  #: where the URDF import writes (the stage's /World/Robot payload is pointed at its output)
    joint_names: tuple[str, ...]
    joint_positions_rad: tuple[float, ...]
    drive_stiffness: tuple[float, ...]
    drive_damping: tuple[float, ...]
    joint_states_topic: str
    joint_command_topic: str
    clock_topic: str
    cameras: tuple[CameraPlan, ...]
    velocities: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # prim path -> m/s


class PlanError(Exception):
    """The stage or what it refers to cannot be run; the message lists every problem."""


class IsaacError(Exception):
    """Isaac Sim refused a step the runner needs (an extension, the URDF import)."""


@dataclass(frozen=True)
class OmniGraphEdit:
    """The one OmniGraph the runner builds, as ``og.Controller.edit`` takes it.

    ``nodes`` are (alias, node type), ``values`` (``alias.inputs:name``, value) and ``connections``
    (``alias.outputs:name``, ``alias.inputs:name``); scripts/isaac_contract.py checks each against Isaac Sim 6.2's node
    definitions.
    """

    nodes: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, object], ...]
    connections: tuple[tuple[str, str], ...]


def read_plan(stage_path: Path) -> ScenePlan:
    """Read and check the stage ``robodojo scene export`` wrote (usd-core only)."""
    from pxr import Usd, UsdGeom

    problems: list[str] = []
    if not stage_path.is_file():
        raise PlanError(f"{stage_path}: no such stage (write one with `robodojo scene export`)")
    stage = Usd.Stage.Open(str(stage_path), Usd.Stage.LoadNone)
    if stage is None:
        raise PlanError(f"{stage_path}: not a USD stage")
    if UsdGeom.GetStageUpAxis(stage) != UsdGeom.Tokens.z or UsdGeom.GetStageMetersPerUnit(stage) != 1.0:
        problems.append("the stage must be z-up in metres")
    data = stage.GetRootLayer().customLayerData
    robot_name = str(data.get("robodojo:robot", ""))
    if not robot_name:
        problems.append("the stage names no robot (customLayerData robodojo:robot): not written by robodojo?")
    robot = stage.GetPrimAtPath(ROBOT_PATH)
    if not robot.IsValid():
        raise PlanError(f"{stage_path}: no {ROBOT_PATH} prim")

    def attribute(prim, name: str, default=None):
        attr = prim.GetAttribute(name)
        value = attr.Get() if attr and attr.HasAuthoredValue() else None
        if value is None:
            if default is None:
                problems.append(f"{prim.GetPath()}: attribute {name} is missing")
            return default
        return value

    urdf_asset = attribute(robot, "robodojo:urdf", "")
    urdf_path = (stage_path.parent / (urdf_asset.path if hasattr(urdf_asset, "path") else str(urdf_asset))).resolve()
    links: set[str] = set()
    urdf_joints: set[str] = set()
    if not urdf_path.is_file():
        problems.append(f"the robot URDF {urdf_path} is missing (it is written beside the stage)")
    else:
        try:
            root = ET.parse(urdf_path).getroot()
            links = {e.get("name", "") for e in root.findall("link")}
            urdf_joints = {e.get("name", "") for e in root.findall("joint")}
            # Visual meshes ship beside the stage (meshes/, relative to the URDF): the importer must find each.
            for mesh in root.iter("mesh"):
                filename = mesh.get("filename", "")
                if not (urdf_path.parent / filename).is_file():
                    problems.append(f"mesh {filename!r} of the robot URDF is missing beside it")
        except ET.ParseError as exc:
            problems.append(f"the robot URDF {urdf_path} does not parse: {exc}")
    payloads = robot.GetMetadata("payload")
    items = list(payloads.GetAddedOrExplicitItems()) if payloads else []
    if len(items) != 1:
        problems.append(f"{ROBOT_PATH} must have one payload (the URDF import), has {len(items)}")

    names = tuple(attribute(robot, "robodojo:jointNames", []))
    positions = tuple(float(q) for q in attribute(robot, "robodojo:jointPositions_rad", []))
    stiffness = tuple(float(k) for k in attribute(robot, "robodojo:driveStiffness", []))
    damping = tuple(float(k) for k in attribute(robot, "robodojo:driveDamping", []))
    if not names or not len(names) == len(positions) == len(stiffness) == len(damping):
        problems.append(
            f"{ROBOT_PATH}: jointNames, jointPositions_rad, driveStiffness and driveDamping must have one entry per "
            f"joint, have {len(names)}, {len(positions)}, {len(stiffness)}, {len(damping)}"
        )
    if urdf_joints:
        unknown = [n for n in names if n not in urdf_joints]
        if unknown:
            problems.append(f"joints not in the robot URDF: {', '.join(unknown)}")
        if "table" in links:
            problems.append("the robot URDF still holds the table (the stage has its own)")

    cameras = []
    root_prim = stage.GetPrimAtPath(CAMERAS_PATH)
    for prim in root_prim.GetChildren() if root_prim.IsValid() else []:
        if not prim.IsA(UsdGeom.Camera):
            continue
        camera = CameraPlan(
            name=prim.GetName(),
            prim_path=str(prim.GetPath()),
            width=int(attribute(prim, "robodojo:width", 0)),
            height=int(attribute(prim, "robodojo:height", 0)),
            mount_frame=str(attribute(prim, "robodojo:mountFrame", "")),
            image_topic=str(attribute(prim, "robodojo:imageTopic", "")),
            info_topic=str(attribute(prim, "robodojo:cameraInfoTopic", "")),
            frame_id=str(attribute(prim, "robodojo:frameId", "")),
        )
        if camera.width <= 0 or camera.height <= 0:
            problems.append(f"camera {camera.name}: image size {camera.width}x{camera.height}")
        if links and camera.mount_frame not in links:
            problems.append(f"camera {camera.name}: mount frame {camera.mount_frame!r} is not a link of the robot URDF")
        if not (camera.image_topic.startswith("/") and camera.info_topic.startswith("/")):
            problems.append(f"camera {camera.name}: its topics must be absolute names")
        cameras.append(camera)
    if not cameras:
        problems.append(f"no cameras under {CAMERAS_PATH}")

    velocities = {}
    for prim in stage.Traverse():
        value = prim.GetAttribute("robodojo:velocity_m_s")
        if value and value.HasAuthoredValue():
            vx, vy, vz = (float(v) for v in value.Get())
            velocities[str(prim.GetPath())] = (vx, vy, vz)
        if prim.GetTypeName() == "Shader":
            texture = prim.GetAttribute("inputs:file")
            if texture and texture.HasAuthoredValue() and not (stage_path.parent / texture.Get().path).is_file():
                problems.append(f"{prim.GetPath()}: texture {texture.Get().path} is missing")
    if problems:
        raise PlanError(f"{stage_path}: " + "; ".join(problems))
    return ScenePlan(
        stage=stage_path.resolve(),
        robot=robot_name,
        robot_urdf=urdf_path,
        import_dir=stage_path.parent.resolve() / IMPORT_DIR,
        joint_names=names,
        joint_positions_rad=positions,
        drive_stiffness=stiffness,
        drive_damping=damping,
        joint_states_topic=str(attribute(robot, "robodojo:jointStatesTopic", "")),
        joint_command_topic=str(attribute(robot, "robodojo:jointCommandTopic", "")),
        clock_topic=str(data.get("robodojo:clockTopic", "/clock")),
        cameras=tuple(cameras),
        velocities=velocities,
    )


def describe_plan(plan: ScenePlan) -> str:
    lines = [
        f"stage {plan.stage} (robot {plan.robot})",
        f"  import {plan.robot_urdf.name} into {IMPORT_DIR}/ (fixed base, position drives, fixed joints kept); "
        f"{ROBOT_PATH} loads what it writes",
        f"  {len(plan.joint_names)} joints at their described positions",
        f"  publish {plan.clock_topic} (rosgraph_msgs/Clock, simulation time)",
        f"  publish {plan.joint_states_topic} (sensor_msgs/JointState, every joint of {ROBOT_PATH})",
        f"  follow  {plan.joint_command_topic} (sensor_msgs/JointState position targets)",
    ]
    edit = graph_edit(plan, {cam.name: f"{ROBOT_PATH}/{cam.mount_frame}/{cam.name}" for cam in plan.cameras})
    lines.append(
        f"  OmniGraph {GRAPH_PATH}: {len(edit.nodes)} nodes, {len(edit.values)} values, "
        f"{len(edit.connections)} connections"
    )
    for cam in plan.cameras:
        lines.append(
            f"  camera {cam.name} on {cam.mount_frame}: {cam.width}x{cam.height} rgb8 on {cam.image_topic}, "
            f"CameraInfo on {cam.info_topic}, frame {cam.frame_id}"
        )
    for path, v in plan.velocities.items():
        lines.append(f"  after {SETTLE_S} s: {path} at ({v[0]:+.3f}, {v[1]:+.3f}, {v[2]:+.3f}) m/s")
    return "\n".join(lines)


def graph_edit(plan: ScenePlan, camera_paths: Mapping[str, str]) -> OmniGraphEdit:
    """The OmniGraph of the Isaac part: ``camera_paths`` maps each camera to its prim under its mount link.

    One graph driven by the playback tick publishes the clock (simulation time) and the joint states of the
    articulation, follows position targets through the articulation controller, and renders each camera into
    rgb8 images and their CameraInfo in the camera's optical frame.
    """
    nodes = [
        ("tick", "omni.graph.action.OnPlaybackTick"),
        ("context", "isaacsim.ros2.bridge.ROS2Context"),
        ("time", "isaacsim.core.nodes.IsaacReadSimulationTime"),
        ("clock", "isaacsim.ros2.bridge.ROS2PublishClock"),
        ("joint_states", "isaacsim.ros2.bridge.ROS2PublishJointState"),
        ("joint_command", "isaacsim.ros2.bridge.ROS2SubscribeJointState"),
        ("articulation", "isaacsim.core.nodes.IsaacArticulationController"),
    ]
    values: list[tuple[str, object]] = [
        ("clock.inputs:topicName", plan.clock_topic),
        ("joint_states.inputs:topicName", plan.joint_states_topic),
        ("joint_states.inputs:targetPrim", ROBOT_PATH),
        ("joint_command.inputs:topicName", plan.joint_command_topic),
        ("articulation.inputs:targetPrim", ROBOT_PATH),
    ]
    connections = [
        ("tick.outputs:tick", "clock.inputs:execIn"),
        ("tick.outputs:tick", "joint_states.inputs:execIn"),
        ("tick.outputs:tick", "joint_command.inputs:execIn"),
        ("joint_command.outputs:execOut", "articulation.inputs:execIn"),
        ("joint_command.outputs:jointNames", "articulation.inputs:jointNames"),
        ("joint_command.outputs:positionCommand", "articulation.inputs:positionCommand"),
        ("time.outputs:simulationTime", "clock.inputs:timeStamp"),
        ("time.outputs:simulationTime", "joint_states.inputs:timeStamp"),
        *(("context.outputs:context", f"{n}.inputs:context") for n in ("clock", "joint_states", "joint_command")),
    ]
    for cam in plan.cameras:
        product, image, info = f"{cam.name}_render", f"{cam.name}_image", f"{cam.name}_info"
        nodes += [
            (product, "isaacsim.core.nodes.IsaacCreateRenderProduct"),
            (image, "isaacsim.ros2.bridge.ROS2CameraHelper"),
            (info, "isaacsim.ros2.bridge.ROS2CameraInfoHelper"),
        ]
        values += [
            (f"{product}.inputs:cameraPrim", camera_paths[cam.name]),
            (f"{product}.inputs:width", cam.width),
            (f"{product}.inputs:height", cam.height),
            (f"{image}.inputs:type", "rgb"),
            (f"{image}.inputs:topicName", cam.image_topic),
            (f"{image}.inputs:frameId", cam.frame_id),
            (f"{info}.inputs:topicName", cam.info_topic),
            (f"{info}.inputs:frameId", cam.frame_id),
        ]
        connections += [
            ("tick.outputs:tick", f"{product}.inputs:execIn"),
            (f"{product}.outputs:execOut", f"{image}.inputs:execIn"),
            (f"{product}.outputs:execOut", f"{info}.inputs:execIn"),
            (f"{product}.outputs:renderProductPath", f"{image}.inputs:renderProductPath"),
            (f"{product}.outputs:renderProductPath", f"{info}.inputs:renderProductPath"),
            ("context.outputs:context", f"{image}.inputs:context"),
            ("context.outputs:context", f"{info}.inputs:context"),
        ]
    return OmniGraphEdit(nodes=tuple(nodes), values=tuple(values), connections=tuple(connections))


def write_launch_layer(plan: ScenePlan, robot_usd: Path) -> Path:
    """Write the layer Isaac opens: the stage as a sublayer, ``/World/Robot``'s payload on ``robot_usd`` (usd-core).

    The stage's own payload names ``<robot>.usd`` beside it; the importer writes where it chooses and returns that
    path, so a stronger layer replaces the payload rather than the stage file being edited.
    """
    from pxr import Sdf

    stage_layer = Sdf.Layer.FindOrOpen(str(plan.stage))
    if stage_layer is None:
        raise PlanError(f"{plan.stage}: not a USD layer")
    layer = Sdf.Layer.CreateAnonymous(".usda")
    # Stage metadata (up axis, metres per unit, default prim, robodojo's layer data) is read from the root layer only.
    for key in stage_layer.pseudoRoot.ListInfoKeys():
        if key not in ("subLayers", "subLayerOffsets"):
            layer.pseudoRoot.SetInfo(key, stage_layer.pseudoRoot.GetInfo(key))
    layer.subLayerPaths.append(str(plan.stage))
    robot = Sdf.CreatePrimInLayer(layer, ROBOT_PATH)
    robot.payloadList.explicitItems = [Sdf.Payload(str(robot_usd))]
    path = plan.import_dir / LAUNCH_LAYER
    path.parent.mkdir(parents=True, exist_ok=True)
    if not layer.Export(str(path)):
        raise PlanError(f"{path}: cannot be written")
    return path


# -- Isaac Sim 6.2 (not run by the project: see the header) -------------------------------------------------------


def run_in_isaac(plan: ScenePlan, headless: bool) -> None:  # pragma: no cover - needs Isaac Sim and an RTX GPU
    from isaacsim import SimulationApp

    app = SimulationApp({"headless": headless})
    import omni.graph.core as og
    import omni.timeline
    import omni.usd
    from isaacsim.asset.importer.urdf import URDFImporter, URDFImporterConfig
    from isaacsim.core.experimental.utils.app import enable_extension
    from isaacsim.core.simulation_manager import SimulationManager
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    if not enable_extension(ROS2_BRIDGE_EXTENSION):
        raise IsaacError(f"Isaac Sim did not enable {ROS2_BRIDGE_EXTENSION} (is a ROS 2 Jazzy environment set?)")
    app.update()

    shutil.rmtree(plan.import_dir, ignore_errors=True)  # the importer writes beside an earlier import, never over it
    plan.import_dir.mkdir(parents=True)
    config = URDFImporterConfig(
        urdf_path=str(plan.robot_urdf),
        usd_path=str(plan.import_dir),  # a directory: the importer writes <robot>/<robot>.usda in it
        fix_base=True,
        merge_fixed_joints=False,  # the camera and TCP frames are fixed links: keep them as prims
        joint_drive_type="force",  # the servo gains are torques per radian, as in the embedded world
        joint_target_type="position",
    )
    robot_usd = Path(URDFImporter(config).import_urdf())
    if not robot_usd.is_file():
        raise IsaacError(f"the URDF import returned {robot_usd}, which does not exist")
    omni.usd.get_context().open_stage(str(write_launch_layer(plan, robot_usd)))
    app.update()
    stage = omni.usd.get_context().get_stage()
    stage.Load(ROBOT_PATH)  # the payload: the import just written

    prims_by_name = {p.GetName(): p for p in Usd.PrimRange(stage.GetPrimAtPath(ROBOT_PATH))}
    for name, q, kp, kv in zip(
        plan.joint_names, plan.joint_positions_rad, plan.drive_stiffness, plan.drive_damping, strict=True
    ):
        joint = prims_by_name.get(name)
        if joint is None:
            raise PlanError(f"the URDF import has no joint prim {name!r}")
        angular = joint.IsA(UsdPhysics.RevoluteJoint)
        drive = UsdPhysics.DriveAPI.Apply(joint, "angular" if angular else "linear")
        per_unit = math.pi / 180 if angular else 1.0  # PhysX angular drives: per degree
        drive.CreateStiffnessAttr(kp * per_unit)
        drive.CreateDampingAttr(kv * per_unit)
        start = math.degrees(q) if angular else q
        drive.CreateTargetPositionAttr(start)
        kind = "angular" if angular else "linear"
        joint.AddAppliedSchema(f"{JOINT_STATE_API}:{kind}")  # where the joint starts
        joint.CreateAttribute(f"state:{kind}:physics:position", Sdf.ValueTypeNames.Float).Set(start)

    camera_paths = {}
    for cam in plan.cameras:  # attach each camera to its mount link, keeping its exact offset
        camera = stage.GetPrimAtPath(cam.prim_path)
        mount = prims_by_name.get(cam.mount_frame)
        if mount is None:
            raise PlanError(f"camera {cam.name}: the URDF import has no link prim {cam.mount_frame!r}")
        attached = UsdGeom.Camera.Define(stage, f"{mount.GetPath()}/{cam.name}")
        for attr in camera.GetAttributes():
            if attr.GetNamespace() != "xformOp" and attr.GetName() != "xformOpOrder" and attr.HasAuthoredValue():
                attached.GetPrim().CreateAttribute(attr.GetName(), attr.GetTypeName()).Set(attr.Get())
        offset = camera.GetAttribute("robodojo:mountOffset").Get()
        UsdGeom.Xformable(attached).AddTransformOp().Set(Gf.Matrix4d(offset))
        camera.SetActive(False)
        camera_paths[cam.name] = str(attached.GetPath())

    belts = [stage.GetPrimAtPath(p) for p in plan.velocities]
    belts = [prim for prim in belts if not prim.HasAPI(UsdPhysics.RigidBodyAPI)]
    for prim in belts:  # a belt moves what touches it from a kinematic body (as 6.2's conveyor builder makes one)
        UsdPhysics.RigidBodyAPI.Apply(prim).CreateKinematicEnabledAttr(True)

    edit = graph_edit(plan, camera_paths)
    keys = og.Controller.Keys
    og.Controller.edit(
        {"graph_path": GRAPH_PATH, "evaluator_name": "execution"},
        {keys.CREATE_NODES: list(edit.nodes), keys.SET_VALUES: list(edit.values), keys.CONNECT: list(edit.connections)},
    )

    timeline = omni.timeline.get_timeline_interface()
    timeline.play()
    launched = False
    while app.is_running():
        app.update()
        if not launched and SimulationManager.get_simulation_time() >= SETTLE_S:  # the time /clock publishes
            for path, velocity in plan.velocities.items():
                prim = stage.GetPrimAtPath(path)
                if prim in belts:  # PhysX moves what touches the belt's surface
                    prim.AddAppliedSchema("PhysxSurfaceVelocityAPI")
                    prim.CreateAttribute("physxSurfaceVelocity:surfaceVelocity", Sdf.ValueTypeNames.Vector3f).Set(
                        Gf.Vec3f(*velocity)
                    )
                else:
                    UsdPhysics.RigidBodyAPI(prim).GetVelocityAttr().Set(Gf.Vec3f(*velocity))
            launched = True
    app.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", type=Path, help="the stage `robodojo scene export` wrote")
    parser.add_argument("--check", action="store_true", help="validate the stage and print the plan; no Isaac Sim")
    parser.add_argument("--headless", action="store_true", help="no Isaac Sim window")
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.stage)
    except ImportError:
        print("isaac_sim_robodojo: usd-core (the pxr module) is needed: pip install usd-core", file=sys.stderr)
        return 2
    except PlanError as exc:
        print(f"isaac_sim_robodojo: {exc}", file=sys.stderr)
        return 1
    print(describe_plan(plan))
    if args.check:
        print("check: OK (Isaac Sim was not started)")
        return 0
    run_in_isaac(plan, args.headless)
    return 0


if __name__ == "__main__":
    sys.exit(main())
