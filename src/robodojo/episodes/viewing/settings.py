"""The viewer's settings (config/view.yaml), loaded once and validated with clear errors."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "view.yaml"
CONFIG_ENV = "ROBODOJO_VIEW_CONFIG"  #: names another file of the same shape for every episode of the process
_KEYS = ("queue_size", "state_rate_hz", "camera_rate_hz", "trail_period_s", "close_timeout_s", "send_timeout_s", "port")
_MAX_PORT = 65535


@dataclass(frozen=True)
class ViewSettings:
    """How the Rerun view of an episode is fed (see config/view.yaml)."""

    queue_size: int  #: live view: updates waiting for the viewer thread before new ones are dropped
    state_rate_hz: float  #: live view: the robot's states at most this often in simulation time; 0: every one
    camera_rate_hz: float  #: live view: each camera's frames at most this often in simulation time; 0: the agent's
    trail_period_s: float  #: a TCP trail is logged again at most this often in simulation time [s]
    close_timeout_s: float  #: live view: how long the end of an episode waits for queued updates [s]
    send_timeout_s: float  #: robodojo view: how long a viewer or server may take to receive a recording [s]
    port: int  #: gRPC port of a viewer robodojo spawns, and of ``robodojo view --serve``

    def __post_init__(self) -> None:
        if self.queue_size < 1:
            raise ConfigError(f"queue_size must be >= 1, got {self.queue_size}")
        if self.state_rate_hz < 0:
            raise ConfigError(f"state_rate_hz must be >= 0 (0: every state the record gets), got {self.state_rate_hz}")
        if self.camera_rate_hz < 0:
            raise ConfigError(f"camera_rate_hz must be >= 0 (0: only the agent's frames), got {self.camera_rate_hz}")
        if self.trail_period_s < 0:
            raise ConfigError(f"trail_period_s must be >= 0 (0: every point), got {self.trail_period_s}")
        if self.close_timeout_s < 0:
            raise ConfigError(f"close_timeout_s must be >= 0, got {self.close_timeout_s}")
        if self.send_timeout_s <= 0:
            raise ConfigError(f"send_timeout_s must be > 0, got {self.send_timeout_s}")
        if not 0 < self.port <= _MAX_PORT:
            raise ConfigError(f"port must be in [1, {_MAX_PORT}], got {self.port}")

    def state_period_s(self) -> float:
        """Least simulation time between two live states that carry no camera frame [s] (0: no limit)."""
        return 1.0 / self.state_rate_hz if self.state_rate_hz > 0 else 0.0

    def camera_period_s(self) -> float:
        """Least simulation time between two live frames of one camera [s] (0: no limit; inf: the agent's only)."""
        return 1.0 / self.camera_rate_hz if self.camera_rate_hz > 0 else float("inf")


def load_view_settings(path: str | Path = CONFIG_PATH) -> ViewSettings:
    """Load and validate config/view.yaml (or a file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, _KEYS, where)
    section = Section(data, where)  # its errors name the file and key already
    queue_size, port = section.integer("queue_size", positive=True), section.integer("port", positive=True)
    state_rate_hz, camera_rate_hz = section.number("state_rate_hz"), section.number("camera_rate_hz")
    trail_period_s = section.number("trail_period_s")
    close_timeout_s, send_timeout_s = section.number("close_timeout_s"), section.number("send_timeout_s")
    try:
        return ViewSettings(
            queue_size, state_rate_hz, camera_rate_hz, trail_period_s, close_timeout_s, send_timeout_s, port
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


@functools.cache
def shipped_view_settings() -> ViewSettings:
    """The viewer's settings, read once per process: the file ``$ROBODOJO_VIEW_CONFIG`` names, else
    config/view.yaml."""
    return load_view_settings(os.environ.get(CONFIG_ENV) or CONFIG_PATH)
