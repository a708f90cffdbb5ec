"""config/calibration.yaml: the printed board, how views are captured, the calibration motions, `check`'s bounds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError
from robodojo.perception.calibration import CharucoBoardSpec

CONFIG_PATH = CONFIG_DIR / "calibration.yaml"
SECTIONS = ("board", "capture", "motions", "check", "sim_board")


@dataclass(frozen=True)
class CaptureSettings:
    rest_speed_rad_s: float  # every joint slower than this: the arm is at rest and a view may be taken
    rest_timeout_s: float
    frames_per_view: int


@dataclass(frozen=True)
class ViewOffset:
    """One hand-eye view relative to the first: turned about the vertical and the horizontal, rolled, nearer or
    farther."""

    yaw_deg: float
    elevation_deg: float
    roll_deg: float
    distance_scale: float


@dataclass(frozen=True)
class MotionSettings:
    views: tuple[ViewOffset, ...]
    max_travel_m: float  # from the TCP's starting position
    max_turn_deg: float  # from the TCP's starting orientation
    min_distance_m: float  # camera to board centre
    max_distance_m: float
    look_distance_m: float  # capture --look-at: the first view's distance and elevation above the table
    look_elevations_deg: tuple[float, ...]
    speed_scale: float  # of the robot's configured speeds, for every calibration motion


@dataclass(frozen=True)
class CheckSettings:
    max_reprojection_px: float
    max_board_error_mm: float


@dataclass(frozen=True)
class SimBoard:
    """Where a simulator puts the board for a rehearsal: face up on the table, centred here, x axis turned by yaw."""

    center_xy_m: tuple[float, float]
    yaw_deg: float


@dataclass(frozen=True)
class CalibrationSettings:
    board: CharucoBoardSpec
    capture: CaptureSettings
    motions: MotionSettings
    check: CheckSettings
    sim_boards: dict[str, SimBoard]

    def sim_board(self, robot: str) -> SimBoard:
        if robot not in self.sim_boards:
            raise ConfigError(f"{CONFIG_PATH.name}: sim_board has no entry for robot {robot!r}")
        return self.sim_boards[robot]


def parse_board(section: Section) -> CharucoBoardSpec:
    reject_unknown_keys(section.data, ("squares", "square_m", "marker_m", "dictionary"), section.where)
    squares = section.vector("squares", 2)
    try:
        return CharucoBoardSpec(
            int(squares[0]), int(squares[1]), section.number("square_m", positive=True),
            section.number("marker_m", positive=True), section.str("dictionary"),
        )  # fmt: skip
    except ValueError as exc:
        raise ConfigError(f"{section.where}: {exc}") from None


def _views(section: Section) -> tuple[ViewOffset, ...]:
    rows = section.data.get("views_deg")
    if not isinstance(rows, list) or len(rows) < 3:
        raise ConfigError(f"{section.where}.views_deg: a list of at least 3 [yaw, elevation, roll, distance_scale]")
    views = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 4 or not all(isinstance(v, (int, float)) for v in row):
            raise ConfigError(f"{section.where}.views_deg[{i}]: expected [yaw_deg, elevation_deg, roll_deg, scale]")
        if not 0.5 <= row[3] <= 2.0:
            raise ConfigError(f"{section.where}.views_deg[{i}]: distance scale {row[3]} outside 0.5 .. 2")
        views.append(ViewOffset(*(float(v) for v in row)))
    return tuple(views)


def parse_calibration_settings(data: dict[str, Any], where: str) -> CalibrationSettings:
    reject_unknown_keys(data, SECTIONS, where)
    root = Section(data, where)
    capture = root.section("capture")
    motions = root.section("motions")
    distance = motions.vector2("distance_m")
    if not 0 < distance[0] < distance[1]:
        raise ConfigError(f"{motions.where}.distance_m: expected [near, far] with 0 < near < far, got {list(distance)}")
    look = motions.section("look_at")
    check = root.section("check")
    boards = root.section("sim_board")
    sim_boards = {}
    for robot in boards.names():
        entry = boards.section(robot)
        sim_boards[robot] = SimBoard(entry.vector2("center_xy_m"), entry.number("yaw_deg"))
    return CalibrationSettings(
        board=parse_board(root.section("board")),
        capture=CaptureSettings(
            capture.number("rest_speed_rad_s", positive=True), capture.number("rest_timeout_s", positive=True),
            capture.integer("frames_per_view", positive=True),
        ),
        motions=MotionSettings(
            _views(motions), motions.number("max_travel_m", positive=True),
            motions.number("max_turn_deg", positive=True), distance[0], distance[1],
            look.number("distance_m", positive=True), look.vector("elevations_deg"), _speed_scale(motions),
        ),
        check=CheckSettings(check.number("max_reprojection_px", positive=True),
                            check.number("max_board_error_mm", positive=True)),
        sim_boards=sim_boards,
    )  # fmt: skip


def _speed_scale(section: Section) -> float:
    scale = section.number("speed_scale", positive=True)
    if scale > 1.0:
        raise ConfigError(f"{section.where}.speed_scale: {scale} is above 1 (the robot's configured speeds)")
    return scale


@cache
def load_calibration_settings(path: str | Path | None = None) -> CalibrationSettings:
    """config/calibration.yaml (or ``path``), read once."""
    path = Path(path) if path is not None else CONFIG_PATH
    return parse_calibration_settings(load_yaml(path), str(path))
