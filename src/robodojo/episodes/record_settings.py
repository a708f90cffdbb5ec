"""The episode record's settings (config/record.yaml), loaded once and validated with clear errors."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "record.yaml"
CONFIG_ENV = "ROBODOJO_RECORD_CONFIG"  #: names another file of the same shape for every episode of the process


@dataclass(frozen=True)
class RecordSettings:
    """What episode.mcap holds beside what the agent saw (see config/record.yaml)."""

    camera_rate_hz: float  #: every camera rendered into the record this often in simulation time; 0: none

    def __post_init__(self) -> None:
        if self.camera_rate_hz < 0:
            raise ConfigError(f"camera_rate_hz must be >= 0 (0: only the agent's frames), got {self.camera_rate_hz}")

    def camera_every_steps(self, control_dt_s: float) -> int:
        """Control steps between two recorded frames of every camera (0: none), at least 1."""
        if self.camera_rate_hz == 0:
            return 0
        return max(1, round(1.0 / (self.camera_rate_hz * control_dt_s)))


def load_record_settings(path: str | Path = CONFIG_PATH) -> RecordSettings:
    """Load and validate config/record.yaml (or a file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, ["camera_rate_hz"], where)
    try:
        return RecordSettings(camera_rate_hz=Section(data, where).number("camera_rate_hz"))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


@functools.cache
def shipped_record_settings() -> RecordSettings:
    """The record's settings, read once per process: the file ``$ROBODOJO_RECORD_CONFIG`` names (a file of the same
    shape; the test suite's turns the camera frames off), else config/record.yaml."""
    return load_record_settings(os.environ.get(CONFIG_ENV) or CONFIG_PATH)
