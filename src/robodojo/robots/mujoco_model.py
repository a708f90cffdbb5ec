"""URDF to MuJoCo: the robot's one model as an MjSpec body tree, shared by the simulator and the IK.

One body per URDF link (no fusing, so every URDF frame, the TCP and the camera optical frames included, is a MuJoCo
body and forward kinematics can be compared link by link). Visual shapes go to geom group 2 (rendered, no contact),
collision shapes to group 3 (hidden; contact settings are the simulator's business). Mimic joints become joint
equality constraints.

Visual meshes (robodojo.robots.meshes): with ``mesh_face_fraction`` set, a link whose mesh visuals resolve is drawn
with them (prepared copies with that fraction of the faces), otherwise with its primitive visuals. Meshes never
change the physics: visual geoms have no mass and no contacts, and the collision geoms are the URDF's primitives.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import mujoco

from robodojo.geometry import quat_from_matrix, rotation_from_rpy
from robodojo.robots.meshes import prepared_visuals
from robodojo.robots.urdf import Geometry, UrdfModel, load_urdf

VISUAL_GROUP = 2
COLLISION_GROUP = 3
COLLISION_RGBA = (0.8, 0.2, 0.2, 0.4)
DEFAULT_VISUAL_RGBA = (0.5, 0.5, 0.5, 1.0)


def primitive_geom(kind: str, size: tuple[float, ...]) -> tuple[mujoco.mjtGeom, list[float]]:
    """MuJoCo's geom type and size parameters for a primitive given as URDF does: box (x, y, z) full extents,
    cylinder (radius, length), sphere (radius,)."""
    if kind == "box":
        return mujoco.mjtGeom.mjGEOM_BOX, [s / 2 for s in size]
    if kind == "cylinder":
        return mujoco.mjtGeom.mjGEOM_CYLINDER, [size[0], size[1] / 2, 0.0]
    return mujoco.mjtGeom.mjGEOM_SPHERE, [size[0], 0.0, 0.0]


def _geom_kwargs(geom: Geometry) -> dict:
    pose = {"pos": list(geom.origin.xyz), "quat": list(quat_from_matrix(rotation_from_rpy(geom.origin.rpy)))}
    if geom.kind == "mesh":
        return pose
    gtype, size = primitive_geom(geom.kind, geom.size)
    return {"type": gtype, "size": size, **pose}


def _mesh_asset(spec: mujoco.MjSpec, path: Path, scale: tuple[float, ...]) -> str:
    """The name of the mesh asset for ``path`` at ``scale``, added once per spec (arms share their meshes)."""
    name = f"{path.stem}_{'x'.join(f'{s:g}' for s in scale)}"
    if spec.mesh(name) is None:
        # The visual's mass is zero, so the mesh's inertia is never used; "shell" also accepts open surfaces.
        spec.add_mesh(name=name, file=str(path), scale=list(scale), inertia=mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL)
    return name


def _add_link_geoms(
    spec: mujoco.MjSpec, body: mujoco.MjsBody, urdf: UrdfModel, link: str, mesh_face_fraction: float | None
) -> None:
    visuals: list[tuple[Geometry, Path | None]]
    if mesh_face_fraction is None:
        visuals = [(v, None) for v in urdf.links[link].visuals if v.kind != "mesh"]
    else:
        visuals = list(prepared_visuals(urdf.links[link], mesh_face_fraction))
    for i, (visual, mesh_file) in enumerate(visuals):
        rgba = visual.rgba or DEFAULT_VISUAL_RGBA
        geom = body.add_geom(
            name=f"{link}_visual{i}",
            group=VISUAL_GROUP,
            contype=0,
            conaffinity=0,
            rgba=list(rgba),
            mass=0.0,
            density=0.0,
            **_geom_kwargs(visual),
        )
        if mesh_file is not None:
            geom.type = mujoco.mjtGeom.mjGEOM_MESH
            geom.meshname = _mesh_asset(spec, mesh_file, visual.size)
    for i, collision in enumerate(urdf.links[link].collisions):
        body.add_geom(
            name=f"{link}_collision{i}",
            group=COLLISION_GROUP,
            rgba=list(COLLISION_RGBA),
            mass=0.0,
            density=0.0,
            **_geom_kwargs(collision),
        )


def urdf_to_spec(
    urdf: UrdfModel, *, mesh_face_fraction: float | None = None
) -> tuple[mujoco.MjSpec, dict[str, mujoco.MjsBody]]:
    """The URDF as an MjSpec (root link = world body) and its bodies by link name. ``mesh_face_fraction``: draw the
    links that have visual meshes with them, decimated to this fraction of their faces (1: the source meshes);
    None: primitive visuals only (the kinematic model, which nobody renders)."""
    spec = mujoco.MjSpec()
    spec.modelname = urdf.name
    spec.compiler.degree = False  # joint ranges in radians, as in URDF
    _add_link_geoms(spec, spec.worldbody, urdf, urdf.root, mesh_face_fraction)
    bodies = {urdf.root: spec.worldbody}
    stack = [urdf.root]
    while stack:
        parent = stack.pop()
        for joint in urdf.children_of(parent):
            o = joint.origin
            body = bodies[parent].add_body(
                name=joint.child, pos=list(o.xyz), quat=list(quat_from_matrix(rotation_from_rpy(o.rpy)))
            )
            inertial = urdf.links[joint.child].inertial
            if inertial is not None:
                body.explicitinertial = True
                body.mass = inertial.mass_kg
                body.ipos = list(inertial.origin.xyz)
                body.iquat = list(quat_from_matrix(rotation_from_rpy(inertial.origin.rpy)))
                body.fullinertia = list(inertial.inertia)
            if joint.movable:
                bounded = joint.type != "continuous"
                body.add_joint(
                    name=joint.name,
                    type=mujoco.mjtJoint.mjJNT_SLIDE if joint.type == "prismatic" else mujoco.mjtJoint.mjJNT_HINGE,
                    axis=list(joint.axis),
                    range=[joint.lower, joint.upper] if bounded else [0, 0],
                    limited=mujoco.mjtLimited.mjLIMITED_TRUE if bounded else mujoco.mjtLimited.mjLIMITED_FALSE,
                )
            _add_link_geoms(spec, body, urdf, joint.child, mesh_face_fraction)
            bodies[joint.child] = body
            stack.append(joint.child)
    for joint in urdf.joints.values():
        if joint.mimic is not None:
            spec.add_equality(
                name=f"{joint.name}_mimic",
                type=mujoco.mjtEq.mjEQ_JOINT,
                name1=joint.name,
                name2=joint.mimic.joint,
                data=[joint.mimic.offset, joint.mimic.multiplier] + [0.0] * 10,
                solref=[0.005, 1.0],
            )
    return spec, bodies


@cache
def kinematic_model(urdf_path: Path) -> mujoco.MjModel:
    """The compiled model of a URDF alone (no actuators, objects or cameras), for kinematics and IK."""
    spec, _ = urdf_to_spec(load_urdf(urdf_path))
    return spec.compile()
