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


@dataclass(frozen=True)
class RenderSettings:
    msaa_samples: int = 0
    shadows: bool = False
    reflections: bool = False
    skybox: bool = False
    max_geoms: int = 2000
    table_texture: str = "wood_grain"


@dataclass(frozen=True)
class SimSettings:
    timestep_s: float
    integrator: str
    cone: str
    impratio: float
    iterations: int
    object_friction: tuple[float, float, float]
    object_condim: int
    pad_friction: tuple[float, float, float]
    render: RenderSettings
    settle_steps: int

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
        pad_friction=root.vector3("gripper_pad_friction"),
        render=render,
        settle_steps=root.integer("settle_steps", default=10),
    )


@cache
def load_sim_settings(path: str | Path | None = None) -> SimSettings:
    path = Path(path) if path is not None else CONFIG_DIR / "sim.yaml"
    return parse_sim_settings(load_yaml(path), str(path))
