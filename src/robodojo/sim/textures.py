"""Procedural textures for the embedded world.

The table gets a subtle wood grain: a plain single-colour table gives cameras nothing to match, so depth-free
perception (the plane sweep that measures the table height, stereo matching) would be tested against an unrealistically
blank surface. Textures are generated once per process and seed (deterministic; the randomized task variant picks
one of a few seeds) and uploaded with the model.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import mujoco
import numpy as np
from numpy.typing import NDArray

WOOD_TEXTURE_PX = 1024
WOOD_SEED = 7
WOOD_RGB = (0.72, 0.60, 0.45)  # the URDF's table_wood colour, modulated by the grain
WOOD_REPEAT_PER_M = 0.7
RING_PERIOD_PX = 23.0
GRAIN_CACHE_SIZE = 8  # textures kept per process (3 MB each)


@lru_cache(maxsize=GRAIN_CACHE_SIZE)
def wood_grain(size: int = WOOD_TEXTURE_PX, seed: int = WOOD_SEED) -> NDArray[np.uint8]:
    """A size x size x 3 wood-grain image: warped rings plus fine streaks along the grain."""
    rng = np.random.default_rng(seed)
    y = np.arange(size, dtype=np.float32)[:, None]
    warp = cv2.GaussianBlur(rng.normal(0, 1, (size, size)).astype(np.float32), (0, 0), 40) * 400
    rings = 0.5 + 0.5 * np.sin(2 * np.pi * (y + warp) / RING_PERIOD_PX)
    fine = cv2.GaussianBlur(rng.normal(0, 1, (size, size)).astype(np.float32), (0, 0), 1.5)
    fine = cv2.resize(cv2.resize(fine, (size // 8, size)), (size, size))  # streaks along the grain
    shade = 0.85 + 0.08 * rings + 0.05 * fine / fine.std()
    rgb = np.clip(shade[..., None] * np.array(WOOD_RGB) / 0.85 * 255, 0, 255).astype(np.uint8)
    rgb.setflags(write=False)
    return rgb


def apply_wood_grain(spec: mujoco.MjSpec, geom_name: str, seed: int = WOOD_SEED) -> None:
    """Give the geom ``geom_name`` the wood-grain material (grain pattern ``seed``)."""
    image = wood_grain(seed=seed)
    texture = spec.add_texture(
        name=f"{geom_name}_wood_grain",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        width=image.shape[1],
        height=image.shape[0],
        nchannel=3,
    )
    texture.data = image.tobytes()
    material = spec.add_material(name=f"{geom_name}_wood_grain")
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = texture.name
    material.texuniform = True
    material.texrepeat = [WOOD_REPEAT_PER_M, WOOD_REPEAT_PER_M]
    geom = spec.geom(geom_name)
    geom.material = material.name
    geom.rgba = [1.0, 1.0, 1.0, 1.0]
