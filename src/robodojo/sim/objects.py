"""Task objects built from primitives: blocks, cylinders, bowls, plates and flat target pads.

An :class:`ObjectSpec` is plain data (what a layout holds); :func:`add_object` turns it into a MuJoCo body.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco

from robodojo.sim.scene import WORLD_CONAFFINITY, WORLD_CONTYPE
from robodojo.sim.settings import SimSettings

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.12, 0.12, 1.0),
    "green": (0.15, 0.65, 0.2, 1.0),
    "blue": (0.15, 0.3, 0.85, 1.0),
    "yellow": (0.95, 0.85, 0.1, 1.0),
    "orange": (0.95, 0.5, 0.1, 1.0),
    "purple": (0.5, 0.2, 0.7, 1.0),
    "cyan": (0.1, 0.75, 0.8, 1.0),
    "pink": (0.95, 0.5, 0.7, 1.0),
    "white": (0.92, 0.92, 0.9, 1.0),
    "black": (0.08, 0.08, 0.08, 1.0),
    "brown": (0.45, 0.28, 0.12, 1.0),
    "grey": (0.5, 0.5, 0.52, 1.0),
}

KINDS = ("block", "cylinder", "bowl", "plate", "pad")
BOWL_WALL_SEGMENTS = 16


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a layout. ``size_m``: block (x, y, z) full extents; cylinder/plate/bowl/pad (radius or half
    side, height). ``pos_m`` is the body origin at rest on the table (geometric centre; a bowl's is its base)."""

    name: str
    kind: str
    color: str
    size_m: tuple[float, ...]
    pos_m: tuple[float, float, float]
    yaw_rad: float = 0.0
    mass_kg: float = 0.08

    @property
    def footprint_radius_m(self) -> float:
        if self.kind == "block":
            return math.hypot(self.size_m[0], self.size_m[1]) / 2
        return self.size_m[0] if self.kind != "pad" else self.size_m[0] * math.sqrt(2)

    @property
    def height_m(self) -> float:
        return self.size_m[-1]

    @property
    def movable(self) -> bool:
        return self.kind != "pad"


def object_rest_z(kind: str, size_m: tuple[float, ...], table_z_m: float) -> float:
    """Height of the body origin of an object resting on the table."""
    if kind == "bowl":  # a bowl's origin is the underside of its base
        return table_z_m
    return table_z_m + size_m[-1] / 2


def add_object(
    spec: mujoco.MjSpec, obj: ObjectSpec, settings: SimSettings, rgba: Sequence[float] | None = None
) -> None:
    """Add ``obj`` as a free body (or a fixed, non-colliding decal for pads), drawn in ``rgba`` (default: its named
    colour's)."""
    half_yaw = obj.yaw_rad / 2
    body = spec.worldbody.add_body(
        name=obj.name, pos=list(obj.pos_m), quat=[math.cos(half_yaw), 0, 0, math.sin(half_yaw)]
    )
    rgba = list(COLORS[obj.color] if rgba is None else rgba)
    contact = {
        "contype": WORLD_CONTYPE,
        "conaffinity": WORLD_CONAFFINITY,
        "friction": list(settings.object_friction),
        "condim": settings.object_condim,
    }
    if obj.kind == "pad":
        s, h = obj.size_m
        body.add_geom(
            name=f"{obj.name}_geom",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[s, s, h / 2],
            rgba=rgba,
            contype=0,
            conaffinity=0,
            group=0,
        )
        return
    body.add_freejoint(name=f"{obj.name}_free")
    if obj.kind == "block":
        body.add_geom(
            name=f"{obj.name}_geom",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[s / 2 for s in obj.size_m],
            rgba=rgba,
            mass=obj.mass_kg,
            **contact,
        )
    elif obj.kind in ("cylinder", "plate"):
        r, h = obj.size_m
        body.add_geom(
            name=f"{obj.name}_geom",
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[r, h / 2, 0],
            rgba=rgba,
            mass=obj.mass_kg,
            **contact,
        )
    elif obj.kind == "bowl":
        _add_bowl_geoms(body, obj, rgba, contact)
    else:
        raise ValueError(f"unknown object kind {obj.kind!r}; available: {', '.join(KINDS)}")


def _add_bowl_geoms(body: mujoco.MjsBody, obj: ObjectSpec, rgba: list[float], contact: dict) -> None:
    """An open bowl: a base disc and a ring of wall boxes, origin at the centre of the base's underside."""
    radius, height = obj.size_m
    wall = 0.006
    base_h = 0.008
    n = BOWL_WALL_SEGMENTS
    part_mass = obj.mass_kg / (n + 2)
    body.add_geom(
        name=f"{obj.name}_base",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[radius - wall / 2, base_h / 2, 0],
        pos=[0, 0, base_h / 2],
        rgba=rgba,
        mass=2 * part_mass,
        **contact,
    )
    seg_half_len = radius * math.tan(math.pi / n) + 0.001
    for i in range(n):
        a = 2 * math.pi * i / n
        body.add_geom(
            name=f"{obj.name}_wall{i}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[wall / 2, seg_half_len, (height - base_h) / 2],
            pos=[(radius - wall / 2) * math.cos(a), (radius - wall / 2) * math.sin(a), base_h + (height - base_h) / 2],
            quat=[math.cos(a / 2), 0, 0, math.sin(a / 2)],
            rgba=rgba,
            mass=part_mass,
            **contact,
        )
