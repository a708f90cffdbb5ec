"""franky-sim fixtures: a libfranka-protocol MuJoCo simulator as a separate process, killed at teardown.

Each simulator binds its own loopback address (port 1337 is fixed by the protocol), so the module's simulator and
the one a test kills never clash, nor with a franky-sim someone runs on 127.0.0.1. ``fr3_world`` is franky-sim in our
FR3 scene with cameras on ROS 2 (fr3_world.py); within test/hardware it shadows the root conftest's embedded-world
fixture of the same name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from robodojo import PACKAGE_ROOT

FCI_PORT = 1337  # libfranka's command port
START_TIMEOUT_S = 30.0  # it serves about 3 s after start on 2 cores; slack for a loaded CI machine
SHARED_HOST = "127.0.0.3"  # the module simulator
KILLED_HOST = "127.0.0.4"  # the one the lost-contact test kills
WORLD_HOST = os.environ.get("ROBODOJO_FR3_WORLD_HOST", "127.0.0.5")  # fr3_world.py; another address for a second suite
WORLD_SCRIPT = Path(__file__).with_name("fr3_world.py")
WORLD_START_TIMEOUT_S = 120.0  # about 10 s on 2 idle cores (imports, GL probe, first frames); a loaded CI takes longer
WORLD_STOP_TIMEOUT_S = 20.0
# Frames a second fr3_world renders (its cameras in turn): what the agents' cameras need, and no more. Rendering
# competes with franky-sim's 1 kHz loop for the 2 cores: at its default 25 franky-sim ran at 0.1-0.5x real time.
WORLD_FPS = 10.0
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


# -- fr3_world.py: franky-sim in our FR3 scene, with cameras on ROS 2 ------------------------------------------------
def ros_domain(log_dir: Path) -> tuple[int, IO[str], dict[str, str]]:
    """The package's interfaces built and importable here, and a private ROS domain: its id, the lock that holds it
    (close it when done) and the environment for node processes in it."""
    from robodojo.nodes.process_graph import build_interfaces, claim_ros_domain, ros_environment, use_interfaces_here

    with (log_dir / "colcon.log").open("w") as f:
        build_interfaces(PACKAGE_ROOT, log=f)
    use_interfaces_here(PACKAGE_ROOT)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # this process's client, as the nodes' environment
    domain_id, lock = claim_ros_domain()
    return domain_id, lock, ros_environment(PACKAGE_ROOT, domain_id=domain_id, log_dir=log_dir / "ros")


@dataclass
class Fr3World:
    """fr3_world.py running: franky-sim on ``host``, camera frames and the cube pose in ROS domain ``domain_id``."""

    host: str
    process: subprocess.Popen[bytes]
    log: Path
    domain_id: int
    env: dict[str, str]  # the ROS environment of its domain, for nodes the test starts beside it

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        """SIGINT (a clean shutdown), SIGKILL if it takes longer than WORLD_STOP_TIMEOUT_S; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=WORLD_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


@pytest.fixture(scope="module")
def camera_drivers() -> Path | None:
    """A camera inputs file whose cameras the test world publishes through driver stand-ins (fr3_world.py and
    x5_world.py ``--camera-drivers``); None: the worlds' plain /<camera>/image_raw. A test module overrides it."""
    return None


@pytest.fixture(scope="module")
def calibration_board() -> bool:
    """Whether the test world shows the board of config/calibration.yaml on its table; a test module overrides it."""
    return False


@pytest.fixture(scope="module")
def fr3_world(
    tmp_path_factory: pytest.TempPathFactory, camera_drivers: Path | None, calibration_board: bool
) -> Iterator[Fr3World]:
    """fr3_world.py on WORLD_HOST in a private ROS domain, ready (franky-sim serving, first frames out)."""
    pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")
    pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
    pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
    if shutil.which("colcon", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("colcon not installed (scripts/setup_env.sh installs colcon-common-extensions)")
    if _port_open(WORLD_HOST):
        pytest.fail(f"something already serves {WORLD_HOST}:{FCI_PORT}; stop it (another fr3_world?)")
    log_dir = tmp_path_factory.mktemp("fr3_world")
    domain_id, lock, env = ros_domain(log_dir)
    log = log_dir / "fr3_world.log"
    cmd = [sys.executable, str(WORLD_SCRIPT), "--host", WORLD_HOST, "--log-dir", str(log_dir), "--fps", str(WORLD_FPS)]
    if camera_drivers is not None:
        cmd += ["--camera-drivers", str(camera_drivers)]
    if calibration_board:
        cmd += ["--calibration-board"]
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    world = Fr3World(WORLD_HOST, process, log, domain_id, env)
    try:
        deadline = time.monotonic() + WORLD_START_TIMEOUT_S
        while f"fr3_world: ready {WORLD_HOST}\n" not in world.output():
            if process.poll() is not None or time.monotonic() > deadline:
                world.stop()
                pytest.fail(f"fr3_world on {WORLD_HOST} did not start: {world.output()[-3000:]}")
            time.sleep(0.1)
        yield world
    finally:
        world.stop()
        lock.close()


@pytest.fixture(autouse=True)
def _normal_scheduling() -> Iterator[None]:
    """Put this process back to its scheduling policy after each test: franky.Robot() puts its caller in SCHED_FIFO 99
    even with RealtimeConfig.Ignore, and every node process the suite starts later would inherit it (busy nodes at
    FIFO 99 starve the machine). FrankaArm.connect restores it itself; tests that call franky directly do not."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    yield
    if os.sched_getscheduler(0) != policy:
        os.sched_setscheduler(0, policy, param)


def may_use_fifo() -> bool:
    """Whether this process may put threads in SCHED_FIFO (root, or an rtprio limit): where not, no priority applies."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


def fifo_threads(pid: int) -> dict[int, int]:
    """The threads of process ``pid`` in SCHED_FIFO: thread id -> priority."""
    out = {}
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            if os.sched_getscheduler(tid) == os.SCHED_FIFO:
                out[tid] = os.sched_getparam(tid).sched_priority
        except OSError:
            pass  # ended meanwhile
    return out


# -- the ARX X5: the real SDK against the project's motor-bus emulator -------------------------------------------------
# The emulator is a Python process among a dozen on 2 cores: under load it answers late, for 0.2-0.4 s at times
# (measured: every motor of both buses at once while an episode's nodes started), which real motors never do. The X5
# tests call a motor silent after this long instead of the config's 0.1 s; the fault tests wait longer still. Likewise
# an emulated joint falls behind a fast command while its process stalls (0.25 rad on a wrist at 2 rad/s, measured),
# which a real motor does not: the graph tests allow this following error instead of the config's 0.2 rad.
# And the graph's driver, starved of the CPU for a second beside the world's renderer, would be taken for a frozen one
# by the SDK's host (its deadman): the graph tests give it this long.
EMULATED_SILENT_AFTER_S = 0.6
EMULATED_FOLLOWING_ERROR_RAD = 0.6
EMULATED_HOST_DEADMAN_S = 2.0


def x5_test_config(folder: Path) -> Path:
    """config/hardware/dual_arx_x5.yaml with the EMULATED_ allowances above, written into ``folder``; its path."""
    import yaml

    from robodojo.hardware.settings import HARDWARE_DIR

    data = yaml.safe_load((HARDWARE_DIR / "dual_arx_x5.yaml").read_text())
    data["bus"]["silent_after_s"] = EMULATED_SILENT_AFTER_S
    data["limits"]["following_error_rad"] = EMULATED_FOLLOWING_ERROR_RAD
    data["watchdog"]["host_deadman_s"] = EMULATED_HOST_DEADMAN_S
    path = folder / "dual_arx_x5_emulated.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass
class X5Bus:
    """A bus emulator process serving ``interfaces`` in ``socket_dir`` (this process's shim connects there)."""

    socket_dir: Path
    process: subprocess.Popen[bytes]
    client: Any  # robodojo.hardware.x5_bus.server.EmulatorClient
    interfaces: tuple[str, ...]

    def joints(self, interface: str) -> np.ndarray:
        return np.array(self.client.state()[interface]["joints_rad"])

    def gripper_m(self, interface: str) -> float:
        return float(self.client.state()[interface]["gripper_width_m"])

    def kill(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def start_x5_bus(joints: dict[str, Sequence[float]]) -> X5Bus:
    """An emulator for ``joints`` (interface -> start joints [rad]) in a fresh short folder, this process's shim
    pointed at it; skips without the SDK or the preloaded shim."""
    pytest.importorskip("arx5_interface", reason="arx5-interface is not installed (pip install '.[hardware]')")
    from robodojo.hardware.x5_bus import shim
    from robodojo.hardware.x5_bus.server import EmulatorClient, start_emulator_process

    if not shim.preloaded():
        pytest.skip("the SocketCAN shim is not preloaded (test/conftest.py restarts pytest with it when gcc exists)")
    socket_dir = Path(tempfile.mkdtemp(prefix="x5-"))  # short: Unix socket paths are limited to 107 bytes
    os.environ[shim.SOCKET_DIR_ENV] = str(socket_dir)  # read by the shim at each bind()
    process = start_emulator_process(socket_dir, joints, log=socket_dir / "emulator.log")
    return X5Bus(socket_dir, process, EmulatorClient(socket_dir), tuple(joints))


@pytest.fixture
def x5_bus() -> Iterator[X5Bus]:
    """Both arms' buses (can0 left, can1 right), the arms at the robot config's ready pose."""
    from robodojo.robots.config import load_robot_config

    home = load_robot_config("dual_arx_x5").arm("left").home_joints_rad
    bus = start_x5_bus({"can0": home, "can1": home})
    yield bus
    bus.kill()


# -- x5_world.py: the bus emulator and the embedded world following it, with cameras on ROS 2 -------------------------
X5_WORLD_SCRIPT = Path(__file__).with_name("x5_world.py")
# x5_world renders in its physics loop: the driver stand-ins' larger frames (848x480, 800x600, 1280x720: twice the
# pixels of three 640x480 cameras) at its default 8 frames/s slowed the loop beside the graph from a median 9.9 to 7.3
# ticks/s (measured). Fewer frames keep its render budget.
X5_STANDIN_RENDER_FPS = 6.0


@dataclass
class X5World:
    """x5_world.py running: the bus emulator in ``socket_dir`` and the world's cameras in ROS domain ``domain_id``."""

    socket_dir: Path
    process: subprocess.Popen[bytes]
    log: Path
    domain_id: int
    env: dict[str, str]  # the ROS environment of its domain, for nodes the test starts beside it
    driver_env: dict[str, str]  # ... with the SocketCAN shim preloaded and pointed at the emulator (the X5 driver)
    emulator_pid: int

    output = Fr3World.output
    stop = Fr3World.stop


@pytest.fixture(scope="module")
def x5_world(
    tmp_path_factory: pytest.TempPathFactory, camera_drivers: Path | None, calibration_board: bool
) -> Iterator[X5World]:
    """x5_world.py in a private ROS domain, ready (the emulator serving both arms, first frames out)."""
    pytest.importorskip("arx5_interface", reason="arx5-interface is not installed (pip install '.[hardware]')")
    pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
    from robodojo.hardware.x5_bus import shim

    if shim.compiler() is None:
        pytest.skip("no C compiler to build the SocketCAN shim (install gcc)")
    if shutil.which("colcon", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("colcon not installed (scripts/setup_env.sh installs colcon-common-extensions)")
    log_dir = tmp_path_factory.mktemp("x5_world")
    domain_id, lock, env = ros_domain(log_dir)
    socket_dir = Path(tempfile.mkdtemp(prefix="x5-"))  # short: Unix socket paths are limited to 107 bytes
    log = log_dir / "x5_world.log"
    cmd = [sys.executable, str(X5_WORLD_SCRIPT), "--socket-dir", str(socket_dir), "--log-dir", str(log_dir)]
    if camera_drivers is not None:
        cmd += ["--camera-drivers", str(camera_drivers), "--render-fps", str(X5_STANDIN_RENDER_FPS)]
    if calibration_board:
        cmd += ["--calibration-board"]
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    driver_env = {**env, **shim.preload_environment(socket_dir)}
    world = X5World(socket_dir, process, log, domain_id, env, driver_env, emulator_pid=0)
    try:
        deadline = time.monotonic() + WORLD_START_TIMEOUT_S
        while "x5_world: ready" not in world.output():
            if process.poll() is not None or time.monotonic() > deadline:
                world.stop()
                pytest.fail(f"x5_world did not start: {world.output()[-3000:]}")
            time.sleep(0.1)
        ready = next(line for line in world.output().splitlines() if line.startswith("x5_world: ready"))
        world.emulator_pid = int(ready.rsplit(" ", 1)[1])
        yield world
    finally:
        world.stop()
        lock.close()
