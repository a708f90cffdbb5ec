"""Shared fixtures: one embedded world per robot per test module (building the GL context costs ~0.1 s)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.episodes.record_settings import CONFIG_ENV

# Every episode of the suite (and of the processes it starts) records without the 5 Hz camera frames of
# config/record.yaml, which double an in-process episode's time; the tests of those frames give their own settings.
os.environ.setdefault(CONFIG_ENV, str(Path(__file__).with_name("record_without_frames.yaml")))
from robodojo.errors import HardwareError
from robodojo.hardware.x5_bus import shim
from robodojo.sim.world import EmbeddedWorld


def pytest_configure(config: pytest.Config) -> None:
    """The ARX X5 tests run the real SDK in this process against the bus emulator, through the SocketCAN shim, which
    works only when preloaded at process start: restart pytest once with it, where the SDK and a C compiler are
    there (test/hardware/test_x5_*.py skip with the reason otherwise). The shim changes nothing but CAN sockets."""
    if shim.preloaded() or importlib.util.find_spec("arx5_interface") is None or shim.compiler() is None:
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:  # the restarted pytest writes to the terminal, not to this one's capture files
        capture.suspend_global_capture(in_=True)
    try:
        shim.reexec_with_shim(shim.default_socket_dir())
    except HardwareError as exc:
        print(f"conftest: not preloading the SocketCAN shim: {exc}", file=sys.stderr)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked run_first (a colcon build of a minute or more) go first: on several workers (make test) they then
    run beside the short tests instead of alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("run_first") is None)  # stable: the rest keep their order


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


@pytest.fixture(scope="session")
def built_interfaces() -> None:
    """agent_bringup's messages, services and actions, built with colcon and importable in this process."""
    if shutil.which("colcon", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("colcon not installed (scripts/setup_env.sh installs colcon-common-extensions)")
    from robodojo.nodes.process_graph import build_interfaces, use_interfaces_here

    build_interfaces()
    use_interfaces_here()
