"""YAML loading with precise errors. Every config file is read once and turned into frozen dataclasses."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from robodojo import PACKAGE_ROOT
from robodojo.errors import ConfigError

CONFIG_DIR = PACKAGE_ROOT / "config"


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a missing file, bad YAML or a non-mapping document raises ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def reject_unknown_keys(data: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Raise ConfigError naming the keys of ``data`` that are not ``known`` (a typo in a config file is an error)."""
    known = set(known)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def resolve_path(path: str | Path) -> Path:
    """Paths in config files are relative to the package root (the repository root in a checkout)."""
    p = Path(path)
    return p if p.is_absolute() else PACKAGE_ROOT / p


class Section:
    """A view of one mapping in a config file that reports errors with the file and key path."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        self.data = data
        self.where = where

    def _get(self, key: str, default: Any) -> Any:
        if key in self.data:
            return self.data[key]
        if default is _REQUIRED:
            raise ConfigError(f"{self.where}: missing key {key!r}")
        return default

    def section(self, key: str) -> Section:
        return Section(self._get(key, _REQUIRED), f"{self.where}.{key}")

    def optional_section(self, key: str) -> Section | None:
        return Section(self.data[key], f"{self.where}.{key}") if key in self.data else None

    def str(self, key: str, default: Any = None) -> str:
        value = self._get(key, _REQUIRED if default is None else default)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{self.where}.{key}: expected a non-empty string, got {value!r}")
        return value

    def number(self, key: builtins.str, default: Any = None, *, positive: bool = False) -> float:
        value = self._get(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{self.where}.{key}: expected a finite number, got {value!r}")
        if positive and value <= 0:
            raise ConfigError(f"{self.where}.{key}: must be > 0, got {value!r}")
        return float(value)

    def integer(self, key: builtins.str, default: Any = None, *, positive: bool = False) -> int:
        value = self._get(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{self.where}.{key}: expected an integer, got {value!r}")
        if positive and value <= 0:
            raise ConfigError(f"{self.where}.{key}: must be > 0, got {value!r}")
        return value

    def boolean(self, key: builtins.str, default: Any = None) -> bool:
        value = self._get(key, _REQUIRED if default is None else default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where}.{key}: expected true or false, got {value!r}")
        return value

    def vector(self, key: builtins.str, length: int | None = None, default: Any = None) -> tuple[float, ...]:
        value = self._get(key, _REQUIRED if default is None else default)
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise ConfigError(f"{self.where}.{key}: expected a list of numbers, got {value!r}")
        if length is not None and len(value) != length:
            raise ConfigError(f"{self.where}.{key}: expected {length} numbers, got {len(value)}")
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ConfigError(f"{self.where}.{key}: expected finite numbers, got {v!r}")
        return tuple(float(v) for v in value)

    def vector2(self, key: builtins.str, default: Any = None) -> tuple[float, float]:
        """Two finite numbers (a 2D point or size)."""
        a, b = self.vector(key, 2, default)
        return a, b

    def vector3(self, key: builtins.str, default: Any = None) -> tuple[float, float, float]:
        """Three finite numbers (xyz, rpy, friction coefficients)."""
        a, b, c = self.vector(key, 3, default)
        return a, b, c

    def strings(self, key: builtins.str) -> tuple[builtins.str, ...]:
        value = self._get(key, _REQUIRED)
        if not isinstance(value, Sequence) or isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self.where}.{key}: expected a list of names, got {value!r}")
        return tuple(value)

    def names(self) -> list[builtins.str]:
        """The mapping's keys, in file order."""
        return list(self.data)


_REQUIRED = object()
