"""Build the simulated scene in MuJoCo from its description (robodojo.sim.description): the robot's URDF model
(robodojo.robots.mujoco_model) plus what URDF cannot say.

Added here: contact settings, position servos, gravity compensation, a TCP site per arm and rendering options, and
from the description the table's look, the floor, lights, cameras on their exact mounts and the objects, one body
each with a geom per shape.

Contact filtering: robot collision geoms have contype 2 / conaffinity 1 and everything else contype 1 /
conaffinity 3, so the robot touches the table and objects but its own links (and the other arm) never collide with
each other in simulation; keeping arms apart is the motion server's job, as on the real robot.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robodojo.geometry import matrix_from_quat, quat_from_matrix
from robodojo.robots.compose import TABLE_LINK
from robodojo.robots.config import RobotConfig
from robodojo.robots.mujoco_model import COLLISION_GROUP, primitive_geom, urdf_to_spec
from robodojo.robots.urdf import UrdfModel, load_urdf
from robodojo.sim.description import SceneDescription, SceneObject, Shape
from robodojo.sim.labels import apply_label
from robodojo.sim.settings import SimSettings
from robodojo.sim.textures import apply_wood_grain

ROBOT_CONTYPE, ROBOT_CONAFFINITY = 2, 1
WORLD_CONTYPE, WORLD_CONAFFINITY = 1, 3
# MuJoCo cameras look along -z with +y up; REP 103 optical frames look along +z with +y down: a half turn about x.
OPTICAL_TO_MUJOCO_CAMERA_QUAT = (0.0, 1.0, 0.0, 0.0)
MAX_IMAGE_SIZE = 2048
TABLE_TOP_GEOM = f"{TABLE_LINK}_visual0"  # the table top's visual (robodojo.robots.compose writes it first)


@dataclass(frozen=True)
class SceneNames:
    """MuJoCo names the world looks up after compiling."""

    arm_actuators: dict[str, tuple[str, ...]]
    gripper_actuators: dict[str, str]
    tcp_sites: dict[str, str]


def build_scene_spec(
    robot: RobotConfig, settings: SimSettings, scene: SceneDescription, urdf: UrdfModel | None = None
) -> tuple[mujoco.MjSpec, SceneNames]:
    """``scene`` (described for ``robot``) as an uncompiled MjSpec, and the names of its parts. The robot and its
    table come from the robot's scene URDF; the table's look, the floor, lights, cameras and objects from
    ``scene``. ``urdf`` is the robot's scene URDF if the caller has it parsed already."""
    if scene.robot.name != robot.name:
        raise ValueError(f"the scene is described for robot {scene.robot.name!r}, not {robot.name!r}")
    urdf = urdf or load_urdf(robot.scene_urdf)
    spec, bodies = urdf_to_spec(urdf, mesh_face_fraction=settings.render.mesh_face_fraction)
    spec.modelname = robot.name
    spec.option.timestep = settings.timestep_s
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{settings.integrator.upper()}")
    spec.option.cone = getattr(mujoco.mjtCone, f"mjCONE_{settings.cone.upper()}")
    spec.option.impratio = settings.impratio
    spec.option.iterations = settings.iterations
    _configure_visual(spec, robot, settings, scene)

    arm_links = _arm_links(urdf, robot)
    finger_links = {j.child for j in urdf.joints.values() if j.type == "prismatic"}
    for link, body in bodies.items():
        if link in arm_links:
            body.gravcomp = 1.0  # the arm controller compensates gravity, as real arm firmware does
    for geom in spec.geoms:
        if geom.group != COLLISION_GROUP:
            continue
        link = geom.parent.name if geom.parent.name else urdf.root
        robot_geom = link in arm_links
        geom.contype = ROBOT_CONTYPE if robot_geom else WORLD_CONTYPE
        geom.conaffinity = ROBOT_CONAFFINITY if robot_geom else WORLD_CONAFFINITY
        geom.friction = list(settings.pad_friction if link in finger_links else settings.object_friction)
        geom.condim = 3 if robot_geom and link not in finger_links else settings.object_condim

    table = scene.table
    if table.grain_seed is not None:
        apply_wood_grain(spec, TABLE_TOP_GEOM, table.grain_seed)
    _tint(spec, TABLE_TOP_GEOM, table.tint_rgb)
    world = spec.worldbody
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0, 0, 0.05],
        rgba=list(scene.floor_rgba),
        contype=WORLD_CONTYPE,
        conaffinity=WORLD_CONAFFINITY,
    )
    for wall in scene.walls:
        _add_shape(spec, world, wall, settings)
    for light in scene.lights:
        world.add_light(name=light.name, pos=list(light.pos_m), dir=list(light.dir), diffuse=list(light.diffuse_rgb))

    names = _add_arm_control(spec, urdf, robot)
    optical_to_mujoco = matrix_from_quat(OPTICAL_TO_MUJOCO_CAMERA_QUAT)
    for cam in scene.cameras:
        # The camera body is the nominal optical frame; the offset (a jittered mount) is expressed in it.
        bodies[cam.frame].add_camera(
            name=cam.name,
            pos=list(cam.offset_xyz_m),
            quat=quat_from_matrix(matrix_from_quat(cam.offset_quat_wxyz) @ optical_to_mujoco).tolist(),
            fovy=cam.fovy_deg,
        )
    for obj in scene.objects:
        add_scene_object(spec, obj, settings)
    return spec, names


def add_scene_object(spec: mujoco.MjSpec, obj: SceneObject, settings: SimSettings) -> None:
    """``obj`` as a body of its own: free to move if it is movable (a latched one held by its joint's friction and
    weightless), fixed otherwise; one geom per shape."""
    body = spec.worldbody.add_body(name=obj.name, pos=list(obj.pos_m), quat=list(obj.quat_wxyz))
    if obj.movable:
        joint = body.add_freejoint(name=f"{obj.name}_free")
        if obj.latch_force_n > 0:
            body.gravcomp = 1.0
            joint.frictionloss = obj.latch_force_n
    for shape in obj.shapes:
        _add_shape(spec, body, shape, settings)


def _add_shape(spec: mujoco.MjSpec, body: mujoco.MjsBody, shape: Shape, settings: SimSettings) -> None:
    gtype, size = primitive_geom(shape.kind, shape.size_m)
    geom = body.add_geom(
        name=shape.name,
        type=gtype,
        size=size,
        pos=list(shape.pos_m),
        quat=list(shape.quat_wxyz),
        rgba=list(shape.rgba),
        **_contact(shape.contact, settings),
    )
    if shape.mass_kg == 0.0:
        geom.density = 0.0
    elif shape.mass_kg is not None:
        geom.mass = shape.mass_kg
    if shape.label is not None:
        apply_label(spec, geom, shape.label)


def _contact(contact: str, settings: SimSettings) -> dict:
    if contact == "none":
        return {"contype": 0, "conaffinity": 0, "group": 0}
    params = {
        "contype": WORLD_CONTYPE,
        "conaffinity": WORLD_CONAFFINITY,
        "friction": list(settings.object_friction),
        "condim": settings.object_condim,
    }
    if contact == "rolling":  # its own friction, not the larger of its and the table's: the ball rolls on
        return {**params, "friction": list(settings.ball_friction), "condim": 6, "priority": 1}
    if contact == "frictionless":  # its priority makes its own (zero) friction win
        return {**params, "friction": [0.0, 0.0, 0.0], "condim": 1, "priority": 1}
    return params


def _tint(spec: mujoco.MjSpec, geom_name: str, tint_rgb: tuple[float, float, float]) -> None:
    """Multiply the colour of the geom ``geom_name`` by ``tint_rgb`` (a textured geom's colour modulates its
    texture)."""
    geom = spec.geom(geom_name)
    geom.rgba = [*(np.asarray(geom.rgba[:3]) * tint_rgb), geom.rgba[3]]


def _arm_links(urdf: UrdfModel, robot: RobotConfig) -> set[str]:
    links: set[str] = set()
    for arm in robot.arms:
        base = next(j.child for j in urdf.joints.values() if j.name == f"{arm.prefix}base_joint")
        stack = [base]
        while stack:
            link = stack.pop()
            links.add(link)
            stack.extend(j.child for j in urdf.children_of(link))
    return links


def _add_arm_control(spec: mujoco.MjSpec, urdf: UrdfModel, robot: RobotConfig) -> SceneNames:
    gains = robot.sim
    arm_actuators: dict[str, tuple[str, ...]] = {}
    gripper_actuators: dict[str, str] = {}
    tcp_sites: dict[str, str] = {}
    for arm in robot.arms:
        names = []
        for i, jname in enumerate(arm.joints):
            joint = urdf.joint(jname)
            mj_joint = spec.joint(jname)
            mj_joint.armature = gains.joint_armature[i]
            mj_joint.damping = [gains.joint_damping[i], 0.0, 0.0]  # MuJoCo 4: polynomial coefficients
            act = spec.add_actuator(name=f"{jname}_servo", target=jname, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=gains.joint_kp[i], kv=gains.joint_kv[i])
            act.ctrlrange = [joint.lower, joint.upper]
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-joint.effort, joint.effort]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            names.append(act.name)
        arm_actuators[arm.name] = tuple(names)

        finger = urdf.joint(arm.gripper_joint)
        grip = spec.add_actuator(
            name=f"{arm.prefix}gripper_servo", target=arm.gripper_joint, trntype=mujoco.mjtTrn.mjTRN_JOINT
        )
        grip.set_to_position(kp=gains.gripper_kp, kv=gains.gripper_kv)
        grip.ctrlrange = [finger.lower, finger.upper]
        grip.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        grip.forcerange = [-gains.gripper_force_n, gains.gripper_force_n]
        grip.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        gripper_actuators[arm.name] = grip.name

        site = spec.body(arm.tcp_link).add_site(
            name=f"{arm.prefix}tcp_site", size=[0.004, 0, 0], rgba=[1, 0, 0, 0], group=4
        )
        tcp_sites[arm.name] = site.name
    return SceneNames(arm_actuators=arm_actuators, gripper_actuators=gripper_actuators, tcp_sites=tcp_sites)


def _configure_visual(spec: mujoco.MjSpec, robot: RobotConfig, settings: SimSettings, scene: SceneDescription) -> None:
    width = max(c.width for c in robot.cameras)
    height = max(c.height for c in robot.cameras)
    spec.visual.global_.offwidth = min(max(width, 640), MAX_IMAGE_SIZE)
    spec.visual.global_.offheight = min(max(height, 480), MAX_IMAGE_SIZE)
    spec.visual.quality.offsamples = settings.render.msaa_samples
    spec.visual.quality.numquads = settings.render.box_quads
    spec.visual.quality.numslices = settings.render.round_slices
    spec.visual.quality.numstacks = settings.render.round_stacks
    spec.visual.quality.shadowsize = 2048 if settings.render.shadows else 0
    spec.visual.headlight.ambient = list(scene.ambient_rgb)
    spec.visual.headlight.diffuse = list(scene.headlight_rgb)
    spec.visual.map.znear = 0.005  # fraction of the model extent: about 1 cm, wrist cameras see close objects
    spec.stat.extent = 2.0
    spec.stat.center = np.array([0.0, -0.15, 0.9])
