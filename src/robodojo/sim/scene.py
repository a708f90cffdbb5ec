"""Build the simulated scene: the robot's URDF model (robodojo.robots.mujoco_model) plus what URDF cannot say.

Added here: contact settings, position servos, gravity compensation, cameras, a TCP site per arm, the floor, lights
and rendering options; tasks add their objects before compiling. Lights, the table's look and the cameras' exact
mounts come from an :class:`~robodojo.sim.appearance.Appearance` (the layout's; nominal by default).

Contact filtering: robot collision geoms have contype 2 / conaffinity 1 and everything else contype 1 /
conaffinity 3, so the robot touches the table and objects but its own links (and the other arm) never collide with
each other in simulation; keeping arms apart is the motion server's job, as on the real robot.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robodojo.geometry import matrix_from_quat, quat_from_matrix
from robodojo.robots.config import RobotConfig
from robodojo.robots.mujoco_model import COLLISION_GROUP, urdf_to_spec
from robodojo.robots.urdf import UrdfModel, load_urdf
from robodojo.sim.appearance import NOMINAL, Appearance
from robodojo.sim.settings import SimSettings
from robodojo.sim.textures import apply_wood_grain

ROBOT_CONTYPE, ROBOT_CONAFFINITY = 2, 1
WORLD_CONTYPE, WORLD_CONAFFINITY = 1, 3
# MuJoCo cameras look along -z with +y up; REP 103 optical frames look along +z with +y down: a half turn about x.
OPTICAL_TO_MUJOCO_CAMERA_QUAT = (0.0, 1.0, 0.0, 0.0)
MAX_IMAGE_SIZE = 2048


@dataclass(frozen=True)
class SceneNames:
    """MuJoCo names the world looks up after compiling."""

    arm_actuators: dict[str, tuple[str, ...]]
    gripper_actuators: dict[str, str]
    tcp_sites: dict[str, str]


def build_scene_spec(
    robot: RobotConfig, settings: SimSettings, appearance: Appearance = NOMINAL
) -> tuple[mujoco.MjSpec, SceneNames]:
    """The scene as an uncompiled MjSpec (tasks add their objects before compiling) and the names of its parts."""
    urdf = load_urdf(robot.scene_urdf)
    spec, bodies = urdf_to_spec(urdf)
    spec.modelname = robot.name
    spec.option.timestep = settings.timestep_s
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{settings.integrator.upper()}")
    spec.option.cone = getattr(mujoco.mjtCone, f"mjCONE_{settings.cone.upper()}")
    spec.option.impratio = settings.impratio
    spec.option.iterations = settings.iterations
    _configure_visual(spec, robot, settings, appearance)

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

    if settings.render.table_texture == "wood_grain":
        apply_wood_grain(spec, "table", appearance.table_grain_seed)
    _tint(spec, "table", appearance.table_tint_rgb)
    world = spec.worldbody
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0, 0, 0.05],
        rgba=[0.55, 0.57, 0.6, 1],
        contype=WORLD_CONTYPE,
        conaffinity=WORLD_CONAFFINITY,
    )
    for light in appearance.lights:
        world.add_light(name=light.name, pos=list(light.pos_m), dir=list(light.dir), diffuse=list(light.diffuse_rgb))

    names = _add_arm_control(spec, urdf, robot)
    optical_to_mujoco = matrix_from_quat(OPTICAL_TO_MUJOCO_CAMERA_QUAT)
    for cam in robot.cameras:
        # The camera body is the nominal optical frame; the appearance's offset is expressed in it.
        offset = appearance.camera_offset(cam.name)
        bodies[cam.frame].add_camera(
            name=cam.name,
            pos=list(offset.xyz_m),
            quat=quat_from_matrix(offset.rotation() @ optical_to_mujoco).tolist(),
            fovy=cam.fovy_deg,
        )
    return spec, names


def _tint(spec: mujoco.MjSpec, body_name: str, tint_rgb: tuple[float, float, float]) -> None:
    """Multiply the colour of every visual geom of ``body_name`` by ``tint_rgb`` (a textured geom's colour modulates
    its texture)."""
    for geom in spec.geoms:
        if geom.parent.name == body_name and geom.name.startswith(f"{body_name}_visual"):
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
        grip.set_to_position(kp=gains.gripper_kp, kv=0.05 * gains.gripper_kp)
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


def _configure_visual(spec: mujoco.MjSpec, robot: RobotConfig, settings: SimSettings, appearance: Appearance) -> None:
    width = max(c.width for c in robot.cameras)
    height = max(c.height for c in robot.cameras)
    spec.visual.global_.offwidth = min(max(width, 640), MAX_IMAGE_SIZE)
    spec.visual.global_.offheight = min(max(height, 480), MAX_IMAGE_SIZE)
    spec.visual.quality.offsamples = settings.render.msaa_samples
    spec.visual.quality.shadowsize = 2048 if settings.render.shadows else 0
    spec.visual.headlight.ambient = list(appearance.headlight_ambient_rgb)
    spec.visual.headlight.diffuse = list(appearance.headlight_diffuse_rgb)
    spec.visual.map.znear = 0.005  # fraction of the model extent: about 1 cm, wrist cameras see close objects
    spec.stat.extent = 2.0
    spec.stat.center = np.array([0.0, -0.15, 0.9])
