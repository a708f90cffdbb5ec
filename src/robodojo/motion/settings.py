"""Planner and motion-server settings from config/motion.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml


@dataclass(frozen=True)
class MotionSettings:
    max_spacing_m: float
    max_spacing_deg: float
    max_joint_step_rad: float
    path_tolerance_mm: float
    path_tolerance_deg: float
    table_clearance_m: float
    reached_pos_tolerance_mm: float
    reached_rot_tolerance_deg: float


def parse_motion_settings(data: dict, where: str) -> MotionSettings:
    root = Section(data, where)
    p, r = root.section("path"), root.section("report")
    return MotionSettings(
        max_spacing_m=p.number("max_spacing_m", positive=True),
        max_spacing_deg=p.number("max_spacing_deg", positive=True),
        max_joint_step_rad=p.number("max_joint_step_rad", positive=True),
        path_tolerance_mm=p.number("path_tolerance_mm", positive=True),
        path_tolerance_deg=p.number("path_tolerance_deg", positive=True),
        table_clearance_m=p.number("table_clearance_m", default=0.0),
        reached_pos_tolerance_mm=r.number("reached_pos_tolerance_mm", positive=True),
        reached_rot_tolerance_deg=r.number("reached_rot_tolerance_deg", positive=True),
    )


@cache
def load_motion_settings(path: str | Path | None = None) -> MotionSettings:
    path = Path(path) if path is not None else CONFIG_DIR / "motion.yaml"
    return parse_motion_settings(load_yaml(path), str(path))
