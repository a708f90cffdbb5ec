"""Which pairs of a robot's links touch at one configuration, decided with a margin so no pair sits on the boundary.

The MoveIt config generator disables collision checks for link pairs in contact at the home pose (the Setup
Assistant's "Default" reason). A contact test at zero distance makes that answer depend on the machine's floating
point for shapes that touch exactly by design: the closed finger pads of a parallel gripper sit at 0.0 m give or take
1e-15, and one machine reported the contact where another did not. Here a pair is decided by its signed distance
(negative = penetration) with a dead band between two named thresholds:

- closer than CONTACT_DISTANCE_M: in contact;
- farther than CLEAR_DISTANCE_M: clear;
- anything between: too close to call, a ConfigError naming the pair and its distance. A person decides instead: move
  or resize a collision shape, or cover the pair by a kinematic rule (adjacent or rigidly joined links).

Distances come from MuJoCo (mj_geomDistance) on the collision geoms (mujoco_model.COLLISION_GROUP); a link's
distance to another is the smallest over their geom pairs. Links are MuJoCo bodies, named as in the URDF.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import mujoco

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.robots.mujoco_model import COLLISION_GROUP

# Signed distance below which two links count as touching [m]. A millimetre absorbs solver noise (GJK/EPA converge
# to about 1e-10 m) with a wide margin, and shapes meant to touch (finger pads) sit at 0.
CONTACT_DISTANCE_M = 0.001
# Signed distance above which two links count as clear [m]. The collision shapes are the visuals shrunk by a few
# millimetres, so a gap wider than this is a real gap, not a modelling tolerance.
CLEAR_DISTANCE_M = 0.005
# mj_geomDistance reports min(distance, distmax); anything at distmax is clear, so distmax only has to exceed the band.
_DISTMAX_M = 2 * CLEAR_DISTANCE_M

LinkPair = tuple[str, str]


def link_geoms(model: mujoco.MjModel) -> dict[str, tuple[int, ...]]:
    """The collision geom ids of every link (body) that has any, by link name."""
    geoms: dict[str, list[int]] = {}
    for geom in range(model.ngeom):
        if model.geom_group[geom] == COLLISION_GROUP:
            geoms.setdefault(model.body(model.geom_bodyid[geom]).name, []).append(geom)
    return {link: tuple(ids) for link, ids in geoms.items()}


def link_distance_m(
    model: mujoco.MjModel, data: mujoco.MjData, geoms_a: Iterable[int], geoms_b: Iterable[int]
) -> float:
    """Smallest signed distance between two sets of geoms [m], capped at twice CLEAR_DISTANCE_M.

    ``data`` must hold the geom poses of the configuration (mj_kinematics or mj_forward has run).
    """
    return min(
        mujoco.mj_geomDistance(model, data, a, b, _DISTMAX_M, None) for a, b in itertools.product(geoms_a, geoms_b)
    )


def contact_pairs(model: mujoco.MjModel, data: mujoco.MjData, pairs: Iterable[LinkPair]) -> frozenset[LinkPair]:
    """The ``pairs`` whose links touch (closer than CONTACT_DISTANCE_M) at the configuration in ``data``.

    ``data`` must hold the geom poses (mj_kinematics or mj_forward has run). Pairs come back sorted within
    (``(min, max)``). Raises ConfigError listing every pair between CONTACT_DISTANCE_M and CLEAR_DISTANCE_M, and
    UnknownNameError for a link without collision geometry.
    """
    geoms = link_geoms(model)
    touching, unclear = set(), []
    for a, b in pairs:
        for link in (a, b):
            if link not in geoms:
                raise UnknownNameError("link with collision geometry", link, geoms)
        distance_m = link_distance_m(model, data, geoms[a], geoms[b])
        pair = (min(a, b), max(a, b))
        if distance_m < CONTACT_DISTANCE_M:
            touching.add(pair)
        elif distance_m <= CLEAR_DISTANCE_M:
            unclear.append(f"{pair[0]} and {pair[1]} at {distance_m * 1e3:.3f} mm")
    if unclear:
        raise ConfigError(
            f"link pairs too close to call in contact or clear (between {CONTACT_DISTANCE_M * 1e3:g} and "
            f"{CLEAR_DISTANCE_M * 1e3:g} mm apart): {'; '.join(unclear)}. Move or resize a collision shape, "
            "or disable the pair by a kinematic rule."
        )
    return frozenset(touching)
