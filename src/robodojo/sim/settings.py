"""Simulator settings from config/sim.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError

INTEGRATORS = ("euler", "rk4", "implicit", "implicitfast")
TABLE_TEXTURES = ("plain", "wood_grain")
CONES = ("pyramidal", "elliptic")
# Outer limits of the randomized variant's bounds: beyond them a named colour or a camera's mount stops being the one
# the task and the robot config describe.
MAX_LIGHT_TURN_DEG = 45.0
MAX_HUE_TURN_DEG = 10.0
MAX_CAMERA_SHIFT_M = 0.005
MAX_CAMERA_TURN_DEG = 0.5
SCALE_LIMITS = (0.5, 1.5)  # of every brightness, tint, saturation and value factor
DEFAULT_MESH_FACE_FRACTION = 0.1  # render.robot_mesh_face_fraction when not set (config/sim.yaml sets it)


@dataclass(frozen=True)
class RenderSettings:
    msaa_samples: int = 0
    shadows: bool = False
    reflections: bool = False
    skybox: bool = False
    max_geoms: int = 2000
    table_texture: str = "wood_grain"
    # Tessellation of primitive shapes (MuJoCo's visual quality): quads per box face side, slices around and stacks
    # along round shapes. Lighting is per vertex, so fewer vertices mean coarser light spots and cheaper images.
    box_quads: int = 4
    round_slices: int = 28
    round_stacks: int = 16
    # Robots' visual meshes (robodojo.robots.meshes): drawn at all, and the fraction of their faces kept (a tenth
    # unless set: the source meshes cost software GL 2.9x the primitives' time per image, a tenth 1.35x).
    robot_meshes: bool = True
    robot_mesh_face_fraction: float = DEFAULT_MESH_FACE_FRACTION

    @property
    def mesh_face_fraction(self) -> float | None:
        """What robodojo.robots.mujoco_model.urdf_to_spec takes: the fraction, or None for primitives only."""
        return self.robot_mesh_face_fraction if self.robot_meshes else None


@dataclass(frozen=True)
class RoomSettings:
    """The lab around the table, visual only: the floor's colour and four walls ``wall_margin_m`` beyond the table's
    edges."""

    floor_rgba: tuple[float, float, float, float]
    wall_rgba: tuple[float, float, float, float]
    wall_margin_m: float
    wall_height_m: float


@dataclass(frozen=True)
class RandomizedBounds:
    """How far the ``randomized`` task variant may move the scene's appearance from the nominal one (sim.yaml,
    section ``randomized``, where each bound is explained). Ranges are (low, high), sampled uniformly; scales
    multiply the nominal value."""

    light_direction_max_deg: float
    light_diffuse_scale: tuple[float, float]
    ambient_scale: tuple[float, float]
    table_grain_seeds: tuple[int, ...]
    table_tint: tuple[float, float]
    object_hue_max_deg: float
    object_saturation_scale: tuple[float, float]
    object_value_scale: tuple[float, float]
    camera_translation_m: tuple[float, float]
    camera_rotation_deg: tuple[float, float]


@dataclass(frozen=True)
class SimSettings:
    timestep_s: float
    integrator: str
    cone: str
    impratio: float
    iterations: int
    object_friction: tuple[float, float, float]
    object_condim: int
    ball_friction: tuple[float, float, float]
    pad_friction: tuple[float, float, float]
    render: RenderSettings
    settle_steps: int
    randomized: RandomizedBounds
    room: RoomSettings

    def substeps(self, control_dt_s: float) -> int:
        """Physics steps per control step of ``control_dt_s`` [s] (the robot's); it must be a whole number."""
        ratio = control_dt_s / self.timestep_s
        if abs(ratio - round(ratio)) > 1e-6 or round(ratio) < 1:
            raise ConfigError(
                f"a control step of {control_dt_s * 1e3:g} ms is not a whole number of {self.timestep_s * 1e3:g} ms "
                f"physics steps ({ratio:.4f}); change physics.timestep_s in sim.yaml or the robot's control_hz"
            )
        return round(ratio)


def parse_sim_settings(data: dict, where: str) -> SimSettings:
    root = Section(data, where)
    p = root.section("physics")
    timestep = p.number("timestep_s", positive=True)
    integrator, cone = p.str("integrator"), p.str("cone")
    if integrator not in INTEGRATORS:
        raise ConfigError(f"{where}.physics.integrator: {integrator!r} is not one of {', '.join(INTEGRATORS)}")
    if cone not in CONES:
        raise ConfigError(f"{where}.physics.cone: {cone!r} is not one of {', '.join(CONES)}")
    c = root.section("object_contact")
    r = root.section("render")
    render = RenderSettings(
        msaa_samples=r.integer("msaa_samples", default=0),
        shadows=r.boolean("shadows", default=False),
        reflections=r.boolean("reflections", default=False),
        skybox=r.boolean("skybox", default=False),
        max_geoms=r.integer("max_geoms", default=2000, positive=True),
        table_texture=r.str("table_texture", default="wood_grain"),
        box_quads=r.integer("box_quads", default=4, positive=True),
        round_slices=r.integer("round_slices", default=28, positive=True),
        round_stacks=r.integer("round_stacks", default=16, positive=True),
        robot_meshes=r.boolean("robot_meshes", default=True),
        robot_mesh_face_fraction=r.number(
            "robot_mesh_face_fraction", default=DEFAULT_MESH_FACE_FRACTION, positive=True
        ),
    )
    if render.robot_mesh_face_fraction > 1.0:
        raise ConfigError(
            f"{where}.render.robot_mesh_face_fraction: must be in (0, 1], got {render.robot_mesh_face_fraction}"
        )
    if render.table_texture not in TABLE_TEXTURES:
        raise ConfigError(
            f"{where}.render.table_texture: {render.table_texture!r} is not one of {', '.join(TABLE_TEXTURES)}"
        )
    condim = c.integer("condim", positive=True)
    if condim not in (1, 3, 4, 6):
        raise ConfigError(f"{where}.object_contact.condim: must be 1, 3, 4 or 6, got {condim}")
    return SimSettings(
        timestep_s=timestep,
        integrator=integrator,
        cone=cone,
        impratio=p.number("impratio", positive=True),
        iterations=p.integer("iterations", positive=True),
        object_friction=c.vector3("friction"),
        object_condim=condim,
        ball_friction=root.section("ball_contact").vector3("friction"),
        pad_friction=root.vector3("gripper_pad_friction"),
        render=render,
        settle_steps=root.integer("settle_steps", default=10),
        randomized=_parse_randomized(root.section("randomized")),
        room=_parse_room(root.section("room")),
    )


def _parse_room(r: Section) -> RoomSettings:
    colors = {}
    for key in ("floor_rgba", "wall_rgba"):
        rgba = r.vector(key, 4)
        if not all(0.0 <= v <= 1.0 for v in rgba):
            raise ConfigError(f"{r.where}.{key}: every component must be in [0, 1], got {list(rgba)}")
        colors[key] = (rgba[0], rgba[1], rgba[2], rgba[3])
    return RoomSettings(
        floor_rgba=colors["floor_rgba"],
        wall_rgba=colors["wall_rgba"],
        wall_margin_m=r.number("wall_margin_m", positive=True),
        wall_height_m=r.number("wall_height_m", positive=True),
    )


def _range(section: Section, key: str, limits: tuple[float, float]) -> tuple[float, float]:
    """A [low, high] range inside ``limits``."""
    low, high = limits
    a, b = section.vector2(key)
    if not low <= a <= b <= high:
        raise ConfigError(
            f"{section.where}.{key}: expected [low, high] with {low:g} <= low <= high <= {high:g}, got [{a:g}, {b:g}]"
        )
    return a, b


def _parse_randomized(r: Section) -> RandomizedBounds:
    lights, table, objects, cameras = (r.section(k) for k in ("lights", "table", "objects", "cameras"))
    direction, hue = lights.number("direction_max_deg"), objects.number("hue_max_deg")
    if not 0 <= direction <= MAX_LIGHT_TURN_DEG:
        raise ConfigError(f"{lights.where}.direction_max_deg: must be in [0, {MAX_LIGHT_TURN_DEG:g}], got {direction}")
    if not 0 <= hue <= MAX_HUE_TURN_DEG:
        raise ConfigError(f"{objects.where}.hue_max_deg: must be in [0, {MAX_HUE_TURN_DEG:g}], got {hue}")
    seeds = table.data.get("grain_seeds")
    if not isinstance(seeds, list) or not seeds or not all(type(v) is int and v >= 0 for v in seeds):
        raise ConfigError(f"{table.where}.grain_seeds: expected a list of non-negative integers, got {seeds!r}")
    return RandomizedBounds(
        light_direction_max_deg=direction,
        light_diffuse_scale=_range(lights, "diffuse_scale", SCALE_LIMITS),
        ambient_scale=_range(lights, "ambient_scale", SCALE_LIMITS),
        table_grain_seeds=tuple(seeds),
        table_tint=_range(table, "tint", SCALE_LIMITS),
        object_hue_max_deg=hue,
        object_saturation_scale=_range(objects, "saturation_scale", SCALE_LIMITS),
        object_value_scale=_range(objects, "value_scale", SCALE_LIMITS),
        camera_translation_m=_range(cameras, "translation_m", (0.0, MAX_CAMERA_SHIFT_M)),
        camera_rotation_deg=_range(cameras, "rotation_deg", (0.0, MAX_CAMERA_TURN_DEG)),
    )


@cache
def load_sim_settings(path: str | Path | None = None) -> SimSettings:
    path = Path(path) if path is not None else CONFIG_DIR / "sim.yaml"
    return parse_sim_settings(load_yaml(path), str(path))
