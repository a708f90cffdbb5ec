"""Controller settings from config/control.yaml: what a joint trajectory controller accepts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml

CONFIG_PATH = CONFIG_DIR / "control.yaml"


@dataclass(frozen=True)
class TrajectoryLimits:
    """Bounds on one received trajectory, so that checking (and refusing) it takes bounded time."""

    max_duration_s: float  #: last point's time from start [s]
    max_start_delay_s: float  #: start stamp ahead of the next control tick [s]

    def max_points(self, dt_s: float) -> int:
        """Most points accepted at a control period of ``dt_s`` [s]: one per period over :attr:`max_duration_s`."""
        return math.floor(self.max_duration_s / dt_s + 1e-9)


def parse_control_settings(data: dict, where: str) -> TrajectoryLimits:
    """The ``trajectory`` section of a control.yaml mapping; ConfigError naming ``where`` and the key otherwise."""
    t = Section(data, where).section("trajectory")
    return TrajectoryLimits(
        max_duration_s=t.number("max_duration_s", positive=True),
        max_start_delay_s=t.number("max_start_delay_s", positive=True),
    )


@cache
def load_trajectory_limits(path: str | Path | None = None) -> TrajectoryLimits:
    """config/control.yaml (or ``path``), read once."""
    path = Path(path) if path is not None else CONFIG_PATH
    return parse_control_settings(load_yaml(path), str(path))
