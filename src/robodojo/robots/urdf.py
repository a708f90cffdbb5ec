"""A small URDF reader: links with inertial/visual/collision primitives, joints with limits, forward kinematics.

The URDF files in urdf/ are the one model of each robot (DESIGN.md principle 3). This reader turns them into plain
frozen dataclasses that the MuJoCo scene builder, the IK and the tests share. It supports what those files use:
revolute, continuous, prismatic and fixed joints, mimic joints, box/cylinder/sphere geometry, and meshes as visuals
only (collision shapes stay primitives: the IK, the contacts and the motion server's checks rely on them). A mesh
reference is kept as written; robodojo.robots.meshes resolves it and decides which visuals a link shows.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.geometry import Matrix, rotation_about_axis, rotation_from_rpy, transform

MOVABLE_JOINT_TYPES = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class Origin:
    """A URDF <origin>: translation [m] and roll-pitch-yaw [rad] relative to the parent frame."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def matrix(self) -> Matrix:
        return transform(rotation_from_rpy(self.rpy), self.xyz)


@dataclass(frozen=True)
class Geometry:
    """One shape. ``size``: box full extents [m], cylinder (radius, length), sphere (radius,), mesh scale (x, y, z).
    ``mesh_uri``: a mesh's filename as the URDF writes it (``package://...``, ``file://...`` or an absolute path)."""

    kind: str  # "box" | "cylinder" | "sphere" | "mesh"
    size: tuple[float, ...]
    origin: Origin = Origin()
    material: str | None = None
    rgba: tuple[float, float, float, float] | None = None
    mesh_uri: str | None = None


@dataclass(frozen=True)
class Inertial:
    mass_kg: float
    origin: Origin
    inertia: tuple[float, float, float, float, float, float]  # ixx, iyy, izz, ixy, ixz, iyz [kg m^2]


@dataclass(frozen=True)
class Link:
    name: str
    inertial: Inertial | None = None
    visuals: tuple[Geometry, ...] = ()
    collisions: tuple[Geometry, ...] = ()


@dataclass(frozen=True)
class Mimic:
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: Origin = Origin()
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf  # [rad/s] or [m/s]
    effort: float = math.inf  # [N m] or [N]
    mimic: Mimic | None = None

    @property
    def movable(self) -> bool:
        return self.type in MOVABLE_JOINT_TYPES

    def motion(self, q: float) -> Matrix:
        """Transform of the child frame relative to the joint frame at position ``q``."""
        if self.type in ("revolute", "continuous"):
            return transform(rotation_about_axis(self.axis, q))
        if self.type == "prismatic":
            return transform(translation=np.asarray(self.axis, dtype=float) * q)
        return np.eye(4)


@dataclass(frozen=True)
class UrdfModel:
    """A parsed URDF: links and joints by name, in the file's order; ``root`` is the link with no parent joint."""

    name: str
    links: Mapping[str, Link]
    joints: Mapping[str, Joint]
    materials: Mapping[str, tuple[float, float, float, float]] = field(default_factory=dict)

    @property
    def root(self) -> str:
        children = {j.child for j in self.joints.values()}
        roots = [name for name in self.links if name not in children]
        return roots[0]

    @property
    def movable_joints(self) -> tuple[Joint, ...]:
        return tuple(j for j in self.joints.values() if j.movable)

    def joint(self, name: str) -> Joint:
        try:
            return self.joints[name]
        except KeyError:
            raise UnknownNameError("joint", name, self.joints) from None

    def children_of(self, link: str) -> tuple[Joint, ...]:
        return tuple(j for j in self.joints.values() if j.parent == link)

    def forward_kinematics(self, q: Mapping[str, float], T_world_root: Matrix | None = None) -> dict[str, Matrix]:
        """Pose of every link in the root's parent frame. Joints missing from ``q`` sit at 0; mimic joints follow."""
        poses = {self.root: np.eye(4) if T_world_root is None else np.asarray(T_world_root, dtype=float)}
        stack = [self.root]
        while stack:
            parent = stack.pop()
            for joint in self.children_of(parent):
                poses[joint.child] = poses[parent] @ joint.origin.matrix @ joint.motion(self.position_of(joint, q))
                stack.append(joint.child)
        return poses

    def position_of(self, joint: Joint, q: Mapping[str, float]) -> float:
        if joint.mimic is not None:
            leader = q.get(joint.mimic.joint, 0.0)
            return joint.mimic.multiplier * leader + joint.mimic.offset
        return float(q.get(joint.name, 0.0))


def _floats(text: str | None, default: tuple[float, ...], what: str) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        values = tuple(float(v) for v in text.split())
    except ValueError:
        raise ConfigError(f"{what}: expected numbers, got {text!r}") from None
    if len(values) != len(default):
        raise ConfigError(f"{what}: expected {len(default)} numbers, got {text!r}")
    return values


def _rgba(text: str | None, what: str) -> tuple[float, float, float, float]:
    r, g, b, a = _floats(text, (0.0, 0.0, 0.0, 0.0), what)
    return r, g, b, a


def _child(elem: ET.Element, tag: str, what: str) -> ET.Element:
    """The required child element ``tag`` of ``elem``; a missing one is a ConfigError naming it."""
    child = elem.find(tag)
    if child is None:
        raise ConfigError(f"{what}: missing <{tag}>")
    return child


def _attribute(elem: ET.Element, key: str, what: str) -> str:
    value = elem.get(key)
    if value is None:
        raise ConfigError(f"{what}: <{elem.tag}> has no {key!r} attribute")
    return value


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{what}: expected a number, got {text!r}") from None


def _origin(elem: ET.Element | None, what: str) -> Origin:
    if elem is None:
        return Origin()
    return Origin(
        xyz=_floats(elem.get("xyz"), (0.0, 0.0, 0.0), f"{what} origin xyz"),  # type: ignore[arg-type]
        rpy=_floats(elem.get("rpy"), (0.0, 0.0, 0.0), f"{what} origin rpy"),  # type: ignore[arg-type]
    )


def _geometry(
    elem: ET.Element, materials: dict[str, tuple[float, float, float, float]], what: str, *, mesh_allowed: bool
) -> Geometry:
    geom = elem.find("geometry")
    if geom is None or len(geom) != 1:
        raise ConfigError(f"{what}: needs exactly one shape inside <geometry>")
    shape = geom[0]
    mesh_uri = None
    if shape.tag == "mesh":
        if not mesh_allowed:
            raise ConfigError(f"{what}: mesh collisions are not supported; use box, cylinder or sphere")
        mesh_uri = _attribute(shape, "filename", what)
        size = _floats(shape.get("scale"), (1.0, 1.0, 1.0), f"{what} mesh scale")
    elif shape.tag == "box":
        size = _floats(shape.get("size"), (0.0, 0.0, 0.0), f"{what} box size")
    elif shape.tag == "cylinder":
        size = (float(shape.get("radius", "nan")), float(shape.get("length", "nan")))
    elif shape.tag == "sphere":
        size = (float(shape.get("radius", "nan")),)
    else:
        raise ConfigError(f"{what}: unsupported geometry <{shape.tag}>; use box, cylinder, sphere or (visual) mesh")
    if not all(math.isfinite(s) and s > 0 for s in size):
        raise ConfigError(f"{what}: {shape.tag} dimensions must be positive numbers, got {size}")
    material = elem.find("material")
    name = material.get("name") if material is not None else None
    rgba = None
    if material is not None:
        color = material.find("color")
        if color is not None:
            rgba = _rgba(color.get("rgba"), f"{what} material color")
        elif name in materials:
            rgba = materials[name]
    origin = _origin(elem.find("origin"), what)
    return Geometry(kind=shape.tag, size=size, origin=origin, material=name, rgba=rgba, mesh_uri=mesh_uri)


def parse_urdf(text: str, source: str = "<string>") -> UrdfModel:
    """Parse URDF text. Raises ConfigError naming the element at fault."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ConfigError(f"{source}: not valid XML: {exc}") from None
    if root.tag != "robot":
        raise ConfigError(f"{source}: root element must be <robot>, got <{root.tag}>")
    materials: dict[str, tuple[float, float, float, float]] = {}
    for mat in root.findall("material"):
        color = mat.find("color")
        if color is not None and mat.get("name"):
            materials[mat.get("name", "")] = _rgba(color.get("rgba"), f"{source} material")

    links: dict[str, Link] = {}
    for elem in root.findall("link"):
        name = elem.get("name", "")
        what = f"{source} link {name!r}"
        inertial = None
        ie = elem.find("inertial")
        if ie is not None:
            mass = _number(_attribute(_child(ie, "mass", what), "value", what), f"{what} mass")
            it = _child(ie, "inertia", what)
            ixx, iyy, izz, ixy, ixz, iyz = (
                _number(it.get(k, "0"), f"{what} inertia {k}") for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
            )
            inertia = (ixx, iyy, izz, ixy, ixz, iyz)
            inertial = Inertial(mass_kg=mass, origin=_origin(ie.find("origin"), what), inertia=inertia)
        visuals = tuple(_geometry(v, materials, f"{what} visual", mesh_allowed=True) for v in elem.findall("visual"))
        collisions = tuple(
            _geometry(c, materials, f"{what} collision", mesh_allowed=False) for c in elem.findall("collision")
        )
        if name in links:
            raise ConfigError(f"{source}: duplicate link {name!r}")
        links[name] = Link(name=name, inertial=inertial, visuals=visuals, collisions=collisions)

    joints: dict[str, Joint] = {}
    for elem in root.findall("joint"):
        name = elem.get("name", "")
        what = f"{source} joint {name!r}"
        jtype = elem.get("type", "")
        if jtype not in (*MOVABLE_JOINT_TYPES, "fixed"):
            raise ConfigError(f"{what}: unsupported type {jtype!r}")
        parent = _attribute(_child(elem, "parent", what), "link", what)
        child = _attribute(_child(elem, "child", what), "link", what)
        for link in (parent, child):
            if link not in links:
                raise ConfigError(f"{what}: refers to unknown link {link!r}")
        axis_elem = elem.find("axis")
        ax, ay, az = _floats(axis_elem.get("xyz") if axis_elem is not None else None, (1.0, 0.0, 0.0), f"{what} axis")
        limit = elem.find("limit")
        lim = {
            k: _number(limit.get(k, ""), f"{what} limit {k}")
            for k in ("lower", "upper", "velocity", "effort")
            if limit is not None and limit.get(k)
        }
        if jtype in ("revolute", "prismatic") and ("lower" not in lim or "upper" not in lim):
            raise ConfigError(f"{what}: a {jtype} joint needs <limit lower upper>")
        mimic_elem = elem.find("mimic")
        mimic = None
        if mimic_elem is not None:
            mimic = Mimic(
                joint=mimic_elem.get("joint", ""),
                multiplier=float(mimic_elem.get("multiplier", "1")),
                offset=float(mimic_elem.get("offset", "0")),
            )
        joints[name] = Joint(
            name=name,
            type=jtype,
            parent=parent,
            child=child,
            origin=_origin(elem.find("origin"), what),
            axis=(ax, ay, az),
            lower=lim.get("lower", -math.inf),
            upper=lim.get("upper", math.inf),
            velocity=lim.get("velocity", math.inf),
            effort=lim.get("effort", math.inf),
            mimic=mimic,
        )
    for joint in joints.values():
        if joint.mimic is not None and joint.mimic.joint not in joints:
            raise ConfigError(f"{source} joint {joint.name!r}: mimics unknown joint {joint.mimic.joint!r}")
    return UrdfModel(name=root.get("name", ""), links=links, joints=joints, materials=materials)


def load_urdf(path: str | Path) -> UrdfModel:
    """Read and parse a URDF file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"URDF file not found: {path}")
    return parse_urdf(path.read_text(), source=str(path))
