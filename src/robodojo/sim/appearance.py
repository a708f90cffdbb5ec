"""How the embedded world looks, as data: lights, table, object colours and the cameras' exact mounts.

Every :class:`~robodojo.sim.tasks.base.Layout` carries an :class:`Appearance`. The standard and cluttered variants
carry :data:`NOMINAL` (the scene as designed); the randomized variant carries one drawn by
:func:`sample_appearance` per (task, seed) within sim.yaml's ``randomized`` bounds. The scene builder
(robodojo.sim.scene) and the world apply it when a layout is loaded.

A camera offset moves the simulated camera itself. The calibration the world reports is read from the compiled model
(``EmbeddedWorld.calibration``), so it follows the offset exactly and depth-free perception stays exact: only the
images change, as with a camera remounted and recalibrated.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from robodojo.geometry import Matrix, Xyz, rotation_about_axis, xyz_tuple
from robodojo.sim.settings import RandomizedBounds
from robodojo.sim.textures import WOOD_SEED

Rgba = tuple[float, float, float, float]


@dataclass(frozen=True)
class Light:
    """A spot light of the scene: position [m], the direction it points (need not be unit length), white diffuse."""

    name: str
    pos_m: Xyz
    dir: Xyz
    diffuse_rgb: Xyz


@dataclass(frozen=True)
class CameraOffset:
    """A camera's rigid offset from its nominal mount, in its nominal optical frame (x right, y down, z forward):
    shift ``xyz_m`` [m] and rotation vector ``rotvec_deg`` (axis times angle [deg])."""

    xyz_m: Xyz = (0.0, 0.0, 0.0)
    rotvec_deg: Xyz = (0.0, 0.0, 0.0)

    @property
    def shift_m(self) -> float:
        return float(np.linalg.norm(self.xyz_m))

    @property
    def angle_deg(self) -> float:
        return float(np.linalg.norm(self.rotvec_deg))

    def rotation(self) -> Matrix:
        """R_nominal_jittered: the offset's rotation as a 3x3 matrix."""
        if self.angle_deg == 0.0:
            return np.eye(3)
        return rotation_about_axis(self.rotvec_deg, math.radians(self.angle_deg))


NO_OFFSET = CameraOffset()
# The scene as designed (values that scene.py carried before there was an Appearance; standard images depend on them).
NOMINAL_LIGHTS = (
    Light("key", pos_m=(0.4, -0.8, 2.5), dir=(-0.15, 0.4, -1.0), diffuse_rgb=(0.6, 0.6, 0.6)),
    Light("fill", pos_m=(-0.6, 0.6, 2.2), dir=(0.3, -0.3, -1.0), diffuse_rgb=(0.35, 0.35, 0.35)),
)
NOMINAL_HEADLIGHT_AMBIENT_RGB: Xyz = (0.35, 0.35, 0.35)
NOMINAL_HEADLIGHT_DIFFUSE_RGB: Xyz = (0.25, 0.25, 0.25)


@dataclass(frozen=True)
class Appearance:
    """Everything about a scene's look that a layout may vary; the defaults are the nominal scene.

    ``table_tint_rgb`` multiplies the table's colour (its wood grain, or its plain URDF colour); ``object_rgba`` and
    ``camera_offsets`` name only what differs from nominal: other objects keep their named colour's RGBA
    (robodojo.sim.objects.COLORS), other cameras their mount.
    """

    lights: tuple[Light, ...] = NOMINAL_LIGHTS
    headlight_ambient_rgb: Xyz = NOMINAL_HEADLIGHT_AMBIENT_RGB
    headlight_diffuse_rgb: Xyz = NOMINAL_HEADLIGHT_DIFFUSE_RGB
    table_grain_seed: int = WOOD_SEED
    table_tint_rgb: Xyz = (1.0, 1.0, 1.0)
    object_rgba: Mapping[str, Rgba] = field(default_factory=dict)
    camera_offsets: Mapping[str, CameraOffset] = field(default_factory=dict)

    def object_color(self, name: str, nominal_rgba: Rgba) -> Rgba:
        """The RGBA object ``name`` is drawn with, given its named colour's ``nominal_rgba``."""
        return self.object_rgba.get(name, nominal_rgba)

    def camera_offset(self, camera: str) -> CameraOffset:
        return self.camera_offsets.get(camera, NO_OFFSET)


NOMINAL = Appearance()


def sample_appearance(
    rng: np.random.Generator,
    bounds: RandomizedBounds,
    object_colors: Mapping[str, Sequence[float]],
    camera_names: Sequence[str],
) -> Appearance:
    """An appearance within ``bounds``: ``object_colors`` maps each object to its named colour's nominal RGBA (in
    layout order), ``camera_names`` are the robot's cameras. Deterministic for a given generator state."""
    lights = tuple(
        Light(
            light.name,
            light.pos_m,
            _turned(light.dir, rng.uniform(0.0, bounds.light_direction_max_deg), rng),
            _scaled(light.diffuse_rgb, rng.uniform(*bounds.light_diffuse_scale)),
        )
        for light in NOMINAL_LIGHTS
    )
    ambient = _scaled(NOMINAL_HEADLIGHT_AMBIENT_RGB, rng.uniform(*bounds.ambient_scale))
    headlight = _scaled(NOMINAL_HEADLIGHT_DIFFUSE_RGB, rng.uniform(*bounds.light_diffuse_scale))
    grain_seed = int(rng.choice(bounds.table_grain_seeds))
    tint = xyz_tuple(rng.uniform(*bounds.table_tint, size=3))
    colors = {name: _jittered_color(rgba, bounds, rng) for name, rgba in object_colors.items()}
    offsets = {
        name: CameraOffset(
            xyz_m=xyz_tuple(_unit(rng) * rng.uniform(*bounds.camera_translation_m)),
            rotvec_deg=xyz_tuple(_unit(rng) * rng.uniform(*bounds.camera_rotation_deg)),
        )
        for name in camera_names
    }
    return Appearance(lights, ambient, headlight, grain_seed, tint, colors, offsets)


def _unit(rng: np.random.Generator) -> np.ndarray:
    """A direction drawn uniformly on the sphere."""
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _scaled(rgb: Xyz, factor: float) -> Xyz:
    return xyz_tuple(np.asarray(rgb) * factor)


def _turned(direction: Xyz, angle_deg: float, rng: np.random.Generator) -> Xyz:
    """``direction`` turned by ``angle_deg`` about a random axis perpendicular to it (its length is kept)."""
    d = np.asarray(direction, dtype=float)
    axis = np.cross(d, _unit(rng))
    return xyz_tuple(rotation_about_axis(axis, math.radians(angle_deg)) @ d)


def _jittered_color(rgba: Sequence[float], bounds: RandomizedBounds, rng: np.random.Generator) -> Rgba:
    """The colour moved a little in HSV: hue within +-object_hue_max_deg, saturation and value scaled."""
    h, s, v = colorsys.rgb_to_hsv(*rgba[:3])
    h = (h + rng.uniform(-1.0, 1.0) * bounds.object_hue_max_deg / 360.0) % 1.0
    s = min(s * rng.uniform(*bounds.object_saturation_scale), 1.0)
    v = min(v * rng.uniform(*bounds.object_value_scale), 1.0)
    r, g, b = colorsys.hsv_to_rgb(h, s, v)
    return float(r), float(g), float(b), float(rgba[3])
