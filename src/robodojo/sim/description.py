"""A simulator-neutral description of a scene: the robot, the table, the objects as primitive shapes, the cameras and
the lights, as plain data.

Tasks produce a :class:`~robodojo.sim.tasks.base.Layout`; robodojo.sim.describe resolves it into a
:class:`SceneDescription` (each object as the shapes it is made of, in their final colours; each camera with its exact
mount and intrinsics; the lights). Builders consume it: robodojo.sim.scene builds the MuJoCo model the embedded world
runs, robodojo.sim.usd writes the same scene as a USD stage for Isaac Sim. Nothing here imports a simulator.

Conventions: metres, radians unless a name says ``_deg``; quaternions (w, x, y, z); the world frame of DESIGN.md (z
up); camera poses are REP 103 optical frames (x right, y down, z forward).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robodojo.errors import UnknownNameError
from robodojo.geometry import Matrix, Wxyz, Xyz, matrix_from_quat, transform

Rgba = tuple[float, float, float, float]
IDENTITY_QUAT: Wxyz = (1.0, 0.0, 0.0, 0.0)

SHAPE_KINDS = ("box", "cylinder", "sphere")
# How a shape touches things: "none" (visual only: a decal, a housing), "default" (the scene's object contact),
# "rolling" (a ball: its own low rolling friction), "frictionless" (a belt's surface: the world drives what rides it).
CONTACTS = ("none", "default", "rolling", "frictionless")


def matrix_rows(matrix: Matrix) -> tuple[tuple[float, ...], ...]:
    """A 4x4 pose as nested tuples of floats: hashable and comparable, as the frozen descriptions need."""
    return tuple(tuple(float(v) for v in row) for row in np.asarray(matrix))


@dataclass(frozen=True)
class Shape:
    """One primitive part of an object, posed in the object's frame.

    ``size_m``: box (x, y, z) full extents; cylinder (radius, length along its z); sphere (radius,). ``mass_kg``: the
    part's mass; 0 for a massless visual part, None on static objects (nothing moves them). ``label``: the label image
    (robodojo.sim.labels) shown on the shape's top (+z) face, None for a plain colour.
    """

    name: str
    kind: str
    size_m: tuple[float, ...]
    rgba: Rgba
    pos_m: Xyz = (0.0, 0.0, 0.0)
    quat_wxyz: Wxyz = IDENTITY_QUAT
    contact: str = "default"
    mass_kg: float | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SHAPE_KINDS:
            raise ValueError(f"shape {self.name!r}: unknown kind {self.kind!r}; available: {', '.join(SHAPE_KINDS)}")
        if self.contact not in CONTACTS:
            raise ValueError(f"shape {self.name!r}: unknown contact {self.contact!r}; available: {', '.join(CONTACTS)}")
        expected = {"box": 3, "cylinder": 2, "sphere": 1}[self.kind]
        if len(self.size_m) != expected or not all(s > 0 for s in self.size_m):
            raise ValueError(f"shape {self.name!r}: a {self.kind} needs {expected} positive sizes, got {self.size_m}")

    @property
    def half_extents_m(self) -> Xyz:
        """Half extents of the shape's bounding box in its own frame."""
        if self.kind == "box":
            x, y, z = self.size_m
            return (x / 2, y / 2, z / 2)
        if self.kind == "cylinder":
            r, length = self.size_m
            return (r, r, length / 2)
        r = self.size_m[0]
        return (r, r, r)


@dataclass(frozen=True)
class SceneObject:
    """A rigid object: its frame in the world and the shapes it is made of.

    ``kind`` is what it is (an ObjectSpec kind: block, bowl, button ...). ``movable``: free to move (a free joint in
    MuJoCo, a rigid body in USD); static objects stay where they are put. ``latch_force_n`` > 0 makes a latched part (a
    push button's cap): weightless, held by friction until pushed harder than that. ``velocity_m_s``: the velocity
    the world gives it once settled (a rolling ball), or a belt's surface velocity.
    """

    name: str
    kind: str
    pos_m: Xyz
    quat_wxyz: Wxyz
    shapes: tuple[Shape, ...]
    movable: bool
    latch_force_n: float = 0.0
    velocity_m_s: Xyz = (0.0, 0.0, 0.0)

    @property
    def mass_kg(self) -> float:
        return float(sum(s.mass_kg or 0.0 for s in self.shapes))

    @property
    def pose(self) -> Matrix:
        """T_world_object."""
        return transform(matrix_from_quat(self.quat_wxyz), self.pos_m)


@dataclass(frozen=True)
class TableDescription:
    """The table: a top of ``size_xy_m`` centred at ``center_xy_m`` with its surface at ``top_z_m``, standing on the
    floor (z = 0). ``shapes`` are its parts in the frame at the top's centre (the top slab first, then the legs).
    ``grain_seed`` is the wood-grain texture (robodojo.sim.textures) drawn over the top, None for a plain colour;
    ``tint_rgb`` multiplies the top's colour."""

    center_xy_m: tuple[float, float]
    size_xy_m: tuple[float, float]
    top_z_m: float
    shapes: tuple[Shape, ...]
    grain_seed: int | None
    tint_rgb: Xyz = (1.0, 1.0, 1.0)

    @property
    def rgba(self) -> Rgba:
        """The top's colour, before the tint."""
        return self.shapes[0].rgba


@dataclass(frozen=True)
class CameraDescription:
    """A camera: the URDF link it is mounted on (``frame``, a nominal optical frame), its exact mount as a rigid
    offset from that frame (``offset_xyz_m``, ``offset_quat_wxyz``: a jittered camera of the randomized variant), its
    image size and vertical field of view, and ``T_world_cam``, its optical frame in the world in the described state
    (the wrist cameras move with the arms)."""

    name: str
    frame: str
    width: int
    height: int
    fovy_deg: float
    offset_xyz_m: Xyz
    offset_quat_wxyz: Wxyz
    T_world_cam: tuple[tuple[float, ...], ...]

    @property
    def K(self) -> Matrix:
        """Pinhole intrinsics: square pixels, the principal point at the image centre (pixel centres at integers)."""
        f = (self.height / 2) / math.tan(math.radians(self.fovy_deg) / 2)
        return np.array([[f, 0.0, (self.width - 1) / 2], [0.0, f, (self.height - 1) / 2], [0.0, 0.0, 1.0]])

    @property
    def pose(self) -> Matrix:
        return np.array(self.T_world_cam, dtype=float)

    @property
    def offset(self) -> Matrix:
        """T_frame_cam: the camera's optical frame in its mount's."""
        return transform(matrix_from_quat(self.offset_quat_wxyz), self.offset_xyz_m)


@dataclass(frozen=True)
class LightDescription:
    """A spot light: position, the direction it points (need not be unit length), white diffuse colour."""

    name: str
    pos_m: Xyz
    dir: Xyz
    diffuse_rgb: Xyz


@dataclass(frozen=True)
class RobotDescription:
    """The robot: its name (config/robots/<name>.yaml), the scene URDF its links, joints and meshes come from, and the
    position of every movable joint in the described state (arm joints, fingers)."""

    name: str
    urdf: Path
    joint_positions_rad: Mapping[str, float]


@dataclass(frozen=True)
class SceneDescription:
    """Everything a simulator needs to build the scene. ``task``, ``seed`` and ``variant`` say where it came from
    (empty for a scene with no task)."""

    robot: RobotDescription
    table: TableDescription
    objects: tuple[SceneObject, ...]
    cameras: tuple[CameraDescription, ...]
    lights: tuple[LightDescription, ...]
    ambient_rgb: Xyz
    headlight_rgb: Xyz
    floor_rgba: Rgba
    walls: tuple[Shape, ...]  # the room's walls, in the world frame, visual only
    task: str = ""
    seed: int = 0
    variant: str = ""

    def object(self, name: str) -> SceneObject:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise UnknownNameError("object", name, [o.name for o in self.objects])

    def camera(self, name: str) -> CameraDescription:
        for cam in self.cameras:
            if cam.name == name:
                return cam
        raise UnknownNameError("camera", name, [c.name for c in self.cameras])
