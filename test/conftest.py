"""Shared fixtures: one embedded world per robot per test module (building the GL context costs ~0.1 s)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.sim.world import EmbeddedWorld


@pytest.fixture(scope="module")
def dual_world():
    world = EmbeddedWorld("dual_arx_x5")
    yield world
    world.close()


@pytest.fixture(scope="module")
def fr3_world():
    world = EmbeddedWorld("fr3")
    yield world
    world.close()


@pytest.fixture(scope="session")
def generate_srdf():
    """scripts/generate_srdf.py as a module: the MoveIt config generator is a script, not part of the library."""
    path = PACKAGE_ROOT / "scripts" / "generate_srdf.py"
    spec = importlib.util.spec_from_file_location("generate_srdf", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_srdf", module)
    spec.loader.exec_module(module)
    return module
