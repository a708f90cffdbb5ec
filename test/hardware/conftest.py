"""franky-sim fixtures: a libfranka-protocol MuJoCo simulator as a separate process, killed at teardown.

Each simulator binds its own loopback address (port 1337 is fixed by the protocol), so the module's simulator and
the one a test kills never clash, nor with a franky-sim someone runs on 127.0.0.1.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

FCI_PORT = 1337  # libfranka's command port
START_TIMEOUT_S = 30.0  # it serves about 3 s after start on 2 cores; slack for a loaded CI machine
SHARED_HOST = "127.0.0.3"  # the module simulator
KILLED_HOST = "127.0.0.4"  # the one the lost-contact test kills
HOME_RAD = (0.0, 0.0, 0.0, -1.57, 0.0, 1.57, 0.785)  # franky-sim's own start pose, within every limit


@dataclass
class FrankySim:
    host: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def _executable() -> list[str]:
    beside = Path(sys.executable).with_name("franky-sim")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("franky-sim")
    if found is None:
        pytest.skip("the franky-sim executable is not on PATH")
    return [found]


def _port_open(host: str) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, FCI_PORT)) == 0


def start_franky_sim(host: str, log_dir: Path) -> FrankySim:
    """franky-sim serving ``host``; skips the test when franky or franky-sim is not installed (the guard's tests,
    which need neither, still run)."""
    pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")
    pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
    if _port_open(host):
        pytest.fail(f"something already serves {host}:{FCI_PORT}; stop it (another franky-sim?)")
    log = log_dir / f"franky-sim-{host}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*_executable(), "-s", "mujoco", "--hostname", host], stdout=out, stderr=out)
    sim = FrankySim(host, process, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _port_open(host):
        if process.poll() is not None or time.monotonic() > deadline:
            sim.kill()
            pytest.fail(f"franky-sim on {host} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return sim


@pytest.fixture(scope="module")
def franky_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrankySim]:
    sim = start_franky_sim(SHARED_HOST, tmp_path_factory.mktemp("franky_sim"))
    yield sim
    sim.kill()


@pytest.fixture
def killable_franky_sim(tmp_path: Path) -> Iterator[FrankySim]:
    sim = start_franky_sim(KILLED_HOST, tmp_path)
    yield sim
    sim.kill()
