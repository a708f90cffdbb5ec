"""Shared fixtures: one embedded world per robot per test module (building the GL context costs ~0.1 s)."""

from __future__ import annotations

import pytest

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
