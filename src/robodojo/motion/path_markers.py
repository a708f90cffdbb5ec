"""The planned motion as markers: each arm's planned grasp-point path and its target, as RViz shows them (the motion
server node's /motion/planned_path) and episode.mcap records them. Plain data here; the node adapter and the record
each turn them into visualization_msgs/Marker fields."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from robodojo.motion.plan import Plan
from robodojo.robots.ik import ArmKinematics

PATH_LINE_WIDTH_M = 0.005
TARGET_DIAMETER_M = 0.02
#: one color per arm, in the plan's arm order (RGBA, 0-1)
ARM_COLORS_RGBA = ((0.1, 0.6, 1.0, 0.9), (1.0, 0.5, 0.1, 0.9))
PATH_NAMESPACE = "planned_path"
TARGET_NAMESPACE = "target"

Point = tuple[float, float, float]


class MarkerKind(IntEnum):
    """visualization_msgs/Marker's type constants used here."""

    SPHERE = 2
    LINE_STRIP = 4


@dataclass(frozen=True)
class PathMarker:
    """One marker in the world frame: a line through ``points_m`` (LINE_STRIP, ``scale_m`` its width) or a sphere at
    ``position_m`` (SPHERE, ``scale_m`` its diameter)."""

    namespace: str
    id: int
    kind: MarkerKind
    scale_m: float
    color_rgba: tuple[float, float, float, float]
    points_m: tuple[Point, ...] = ()
    position_m: Point = (0.0, 0.0, 0.0)


def planned_path_markers(plan: Plan, kinematics: ArmKinematics, points: int) -> tuple[PathMarker, ...]:
    """Per moving arm of ``plan``: its grasp point from the start state through the first ``points`` points (a line
    strip), and its target's position (a sphere) when the plan has one."""
    markers: list[PathMarker] = []
    for i, (arm, traj) in enumerate(plan.trajectories.items()):
        color = ARM_COLORS_RGBA[i % len(ARM_COLORS_RGBA)]
        path = tuple(_point(kinematics.tcp_pose(arm, q)[0]) for q in traj.positions_rad[: points + 1])
        markers.append(PathMarker(PATH_NAMESPACE, i, MarkerKind.LINE_STRIP, PATH_LINE_WIDTH_M, color, points_m=path))
        target = plan.target.arms.get(arm) if plan.target is not None else None
        if target is not None:
            markers.append(
                PathMarker(
                    TARGET_NAMESPACE, i, MarkerKind.SPHERE, TARGET_DIAMETER_M, color, position_m=_point(target.pos_m)
                )
            )
    return tuple(markers)


def _point(values: Iterable[float]) -> Point:
    x, y, z = (float(v) for v in values)
    return (x, y, z)
