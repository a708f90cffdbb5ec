"""Measurements the shared tools build on: the table height (plane sweep, once per episode) and the object under a
pixel (segmentation on the table plane, refined by a second view). Only robodojo.perception; no robot motion."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from robo_shell.api import EpisodeAPI, ObsFolder
from robodojo.perception.segmentation import segment
from robodojo.perception.table_plane import measure_table_height

TABLE_CACHE = Path(".robo_tools") / "table_plane.json"  # in the episode's working folder: one measurement each
TABLE_Z_RANGE_M = (0.5, 1.2)


def table_height(api: EpisodeAPI, *, refresh: bool = False, obs: ObsFolder | None = None) -> dict[str, Any]:
    """The table top's height from every camera pair (plane sweep), measured the first time and then read from the
    working folder's cache. Free: nothing moves."""
    cache = Path.home() / TABLE_CACHE
    if cache.is_file() and not refresh:
        return {**json.loads(cache.read_text()), "cached": True}
    obs = obs or api.observe()
    views = [(obs.images[name], obs.cameras[name]) for name in obs.cameras]
    found = measure_table_height(views, *TABLE_Z_RANGE_M)
    result: dict[str, Any] = {"found": found.found, "reason": found.reason}
    if found.found:
        result.update(
            table_z_m=round(float(found.height_m), 5),  # type: ignore[arg-type]
            pair_heights_m=[round(h, 5) for h in found.pair_heights_m],
            spread_mm=round(float(found.spread_mm or 0.0), 2),
        )
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(result))
    return {**result, "cached": False}


def locate(
    api: EpisodeAPI, camera: str, row: float, col: float, *, second_view: str = "", obs: ObsFolder | None = None
) -> dict[str, Any]:
    """Where the object whose top face shows at pixel (row, col) of ``camera`` stands: top-face centre, height,
    footprint on the table. Free."""
    obs = obs or api.observe()
    if camera not in obs.cameras:
        return {"found": False, "reason": f"unknown camera {camera!r}; cameras: {', '.join(obs.cameras)}"}
    table = table_height(api, obs=obs)
    if not table["found"]:
        return {"found": False, "reason": f"table height unknown: {table['reason']}"}
    second = None
    if second_view:
        if second_view not in obs.cameras or second_view == camera:
            return {"found": False, "reason": f"second view {second_view!r} must be another of {list(obs.cameras)}"}
        second = (obs.images[second_view], obs.cameras[second_view])
    seg = segment(obs.images[camera], obs.cameras[camera], row, col, table_z_m=table["table_z_m"], second_view=second)
    if not seg.found:
        return {"found": False, "reason": seg.reason}
    footprint = np.asarray(seg.footprint_xy_m)
    return {
        "found": True,
        "top_centre_m": [round(float(v), 4) for v in seg.world_xyz_m],  # type: ignore[union-attr]
        "height_m": round(float(seg.height_m), 4),  # type: ignore[arg-type]
        "footprint_xy_m": np.round(footprint, 4).tolist(),
        "long_edge_yaw_deg": round(long_edge_yaw_deg(footprint), 2),
        "views": seg.views,
        "touches_border": seg.touches_border,
        "table_z_m": table["table_z_m"],
    }


def long_edge_yaw_deg(footprint_xy: np.ndarray) -> float:
    """Direction of a footprint's longest edge as a yaw about world z in (-90, 90] deg (an edge has no sign)."""
    pts = np.asarray(footprint_xy, dtype=float)
    edges = np.roll(pts, -1, axis=0) - pts
    dx, dy = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
    yaw = math.degrees(math.atan2(dy, dx))
    while yaw <= -90.0:
        yaw += 180.0
    while yaw > 90.0:
        yaw -= 180.0
    return yaw
