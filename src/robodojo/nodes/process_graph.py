"""Run graph nodes as plain processes, for tests, benchmarks and machines without ``ros2 launch``.

ROS 2 launch is not on PyPI (ROS_ON_PYPI.md), so the test suite and benchmarks/ros_graph.py start each node with
``python -m robodojo.nodes.<node> --ros-args -p name:=value``, in an environment that finds the venv's ROS wheels
and this package's generated interfaces. Nothing here imports rclpy.
"""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

from robodojo import PACKAGE_ROOT, ROS_PACKAGE
from robodojo.errors import RobodojoError
from robodojo.nodes.graph_choices import HARDWARE

INTERFACE_DIRS = ("action", "msg", "srv")
BUILD_STAMP = ".robodojo-build-stamp"  # in the install prefix, touched after every successful build
BUILD_LOCK = ".robodojo-build.lock"  # in build/: one interface build at a time
#: How long a node may take to exit after SIGINT before it is killed: far more than runtime.LAUNCH_SIGTERM_AFTER_S,
#: which every node keeps to (except a driver whose arms home on the way out), so a slow machine never kills one.
STOP_TIMEOUT_S = 20.0
#: `robodojo graph`: the nodes whose end ends the graph (ros2 launch's ``on_exit=Shutdown``); see run_graph.
REQUIRED_NODES = ("agent_node",)
LOG_TAIL_LINES = 8  # of a node's log, printed when it dies
POLL_S = 0.1  # how often the launcher looks at its nodes and at Ctrl-C


class InterfaceBuildError(RobodojoError):
    """colcon could not build the package's interfaces."""


def _site_packages(prefix: Path) -> Path:
    rel = Path(sysconfig.get_paths()["purelib"]).relative_to(sys.prefix)
    return prefix / rel


def install_prefix(root: Path = PACKAGE_ROOT) -> Path:
    """Where ``colcon build`` at the repository root installs the package."""
    return root / "install" / ROS_PACKAGE


def interfaces_stale(root: Path = PACKAGE_ROOT) -> bool:
    """True when the generated Python interfaces are missing or older than an interface file or CMakeLists.txt."""
    generated = _site_packages(install_prefix(root)) / ROS_PACKAGE / "action" / "__init__.py"
    stamp = install_prefix(root) / BUILD_STAMP
    if not generated.is_file() or not stamp.is_file():
        return True
    sources = [root / "CMakeLists.txt", root / "package.xml"]
    sources += [f for d in INTERFACE_DIRS for f in (root / d).glob("*") if f.is_file()]
    # The stamp, not the generated files: colcon leaves those untouched when nothing in them changed.
    built = stamp.stat().st_mtime
    return any(f.stat().st_mtime > built for f in sources)


def build_interfaces(root: Path = PACKAGE_ROOT, *, log: IO[str] | None = None, timeout_s: float = 900.0) -> Path:
    """``colcon build --symlink-install`` at ``root`` when the interfaces are stale; the install prefix.

    One build at a time per repository (a lock file in build/): two at once (parallel test workers, two test
    runs) write the same build and install trees and fail on each other's symlinks. The second waits, then finds the
    interfaces current."""
    (root / "build").mkdir(exist_ok=True)
    with open(root / "build" / BUILD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if interfaces_stale(root):
            env = ros_environment(root, with_install=False)
            cmd = [str(Path(sys.executable).parent / "colcon"), "build", "--symlink-install"]
            cmd += ["--event-handlers", "console_cohesion+", "summary-"]
            # robodojo itself comes from this venv (editable); the install holds only the interfaces and launchers.
            cmd += ["--cmake-args", "-DINSTALL_ROBODOJO=OFF"]
            proc = subprocess.run(
                cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s
            )
            if log is not None:
                log.write(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                output = (proc.stdout + proc.stderr)[-4000:]
                raise InterfaceBuildError(f"colcon build failed ({proc.returncode}):\n{output}")
            (install_prefix(root) / BUILD_STAMP).touch()
    return install_prefix(root)


# Fast DDS maps a domain to UDP ports 7400 + 250 * id; ids up to 101 are portable. Test suites and benchmarks claim a
# domain with a lock file, so that several running at once on one machine never share one.
_DOMAINS = itertools.count(os.getpid() % 100)


def claim_ros_domain() -> tuple[int, IO[str]]:
    """A ROS domain id (1-100) no other process of this machine has claimed, and the open lock file that holds it
    (close it to give the domain back). RobodojoError when every id is taken."""
    for _ in range(100):
        domain = next(_DOMAINS) % 100 + 1
        lock = open(Path(tempfile.gettempdir()) / f"robodojo-ros-domain-{domain}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        return domain, lock
    raise RobodojoError("every ROS domain id from 1 to 100 is claimed by another process")


def ros_environment(
    root: Path = PACKAGE_ROOT,
    *,
    domain_id: int | None = None,
    log_dir: Path | None = None,
    with_install: bool = True,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment ROS_ON_PYPI.md asks for, plus this package's install on the paths.

    AMENT_PREFIX_PATH holds the install and the venv; the venv's bin leads PATH; PYTHONPATH gets the generated
    ``agent_bringup`` interfaces and LD_LIBRARY_PATH their type support libraries (for processes started with this
    environment; a running process uses :func:`use_interfaces_here`). Discovery stays on localhost, in ``domain_id``
    when given.
    """
    env = dict(os.environ if base is None else base)
    prefixes = []
    if with_install:
        prefixes.append(str(install_prefix(root)))
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
        prefixes.append(sys.prefix)
    old = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p and p not in prefixes]
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(prefixes + old)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if with_install:
        paths = [str(_site_packages(install_prefix(root)))]
        paths += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        libs = [str(install_prefix(root) / "lib")]
        libs += [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p and p not in libs]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if log_dir is not None:
        env["ROS_LOG_DIR"] = str(log_dir)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "0")  # node logs reach their files line by line
    return env


def use_interfaces_here(root: Path = PACKAGE_ROOT) -> None:
    """Make the built interfaces usable in this already running process (a test or benchmark client).

    PYTHONPATH and LD_LIBRARY_PATH only reach processes started afterwards; here the package goes onto sys.path and
    its type support libraries are loaded by path, so rclpy's later dlopen by name finds them already loaded.
    """
    env = ros_environment(root)
    for key in ("AMENT_PREFIX_PATH", "LD_LIBRARY_PATH"):
        os.environ[key] = env[key]
    site = str(_site_packages(install_prefix(root)))
    if site not in sys.path:
        sys.path.insert(0, site)
    for library in sorted((install_prefix(root) / "lib").glob("lib*.so")):
        ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)


def ros_args(params: Mapping[str, object], remaps: Mapping[str, str] | None = None) -> list[str]:
    """``--ros-args -p name:=value ... -r from:=to ...`` for ``params`` (YAML literals: true/false, numbers,
    strings) and topic ``remaps``."""
    args = ["--ros-args"]
    for name, value in params.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = f"'{value}'" if value == "" or value.lower() in ("true", "false") else value
        else:
            text = repr(value)
        args += ["-p", f"{name}:={text}"]
    for source, target in (remaps or {}).items():
        args += ["-r", f"{source}:={target}"]
    return args


class NodeProcess:
    """One node in its own process; output goes to ``log_path``."""

    def __init__(
        self,
        node: str,
        params: Mapping[str, object],
        env: Mapping[str, str],
        log_path: Path,
        cwd: Path | None = None,
        remaps: Mapping[str, str] | None = None,
    ) -> None:
        self.node = node
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("w")
        cmd = [sys.executable, "-m", f"robodojo.nodes.{node}", *ros_args(params, remaps)]
        self.proc = subprocess.Popen(
            cmd, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout_s: float | None) -> int:
        return self.proc.wait(timeout=timeout_s)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGINT (a clean shutdown), then SIGKILL after ``timeout_s``; the exit code."""
        if self.alive:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout_s)
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: the node dies as on a crash or power loss."""
        if self.alive:
            self.proc.kill()
            self.proc.wait(timeout=10.0)


def wait_until(predicate, timeout_s: float, interval_s: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``timeout_s`` passes; whether it became true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def exit_text(code: int) -> str:
    """An exit code as the launcher prints it: ``-9`` is ``-9 (SIGKILL)``."""
    if code < 0:
        try:
            return f"{code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return str(code)


class _StopRequest:
    """Ctrl-C (SIGINT) and SIGTERM counted for the launcher's loop; a second one is reported and otherwise ignored, so
    no KeyboardInterrupt cuts the nodes' shutdown short. Does nothing outside the main thread (no signals there)."""

    def __init__(self) -> None:
        self.received = 0
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            # Once stopping, further Ctrl-Cs stay ignored to the end: Python's own handler would raise a
            # KeyboardInterrupt on the way out.
            signal.signal(sig, signal.SIG_IGN if self.received else handler)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.received > 1:  # os.write: a print here could re-enter one the main thread is in
            os.write(sys.stdout.fileno(), b"graph: already stopping the nodes\n")


def _say(text: str) -> None:
    print(f"graph: {text}", flush=True)


def _report_exit(node: NodeProcess) -> None:
    """One line naming the node and its exit code; the last lines of its log when it did not end cleanly."""
    code = node.proc.returncode
    assert code is not None
    lines = node.output().rstrip().splitlines()
    if code == 0:
        _say(f"{node.node} (pid {node.pid}) exited with code 0" + (f": {lines[-1]}" if lines else ""))
        return
    _say(f"{node.node} (pid {node.pid}) exited with code {exit_text(code)}; last lines of {node.log_path}:")
    for line in lines[-LOG_TAIL_LINES:] or ["(empty)"]:
        print(f"    {line}", flush=True)


def _stop_all(nodes: Sequence[NodeProcess]) -> bool:
    """SIGINT to every node still running, the last started first (the agent before the servers it uses), each
    waited for; whether every one exited with 0."""
    clean = True
    for node in reversed(nodes):
        if node.alive:
            code = node.stop()
            if code != 0:
                clean = False
                _report_exit(node)
        else:
            node.stop()  # closes its log
    return clean


def _supervise(nodes: Sequence[NodeProcess], stop: _StopRequest) -> int:
    """Watch the nodes until a required one ends, every one has ended, or Ctrl-C; the graph's exit code."""
    reported: set[int] = set()
    while True:
        if stop.received:
            _say("stopping every node")
            clean = _stop_all(nodes)
            _say("every node stopped" + ("" if clean else ", not every one cleanly"))
            return 0 if clean else 1
        for node in nodes:
            if node.pid in reported or node.alive:
                continue
            reported.add(node.pid)
            _report_exit(node)
            code = node.proc.returncode
            assert code is not None
            if node.node in REQUIRED_NODES:
                _stop_all(nodes)
                return code
            running = [n.node for n in nodes if n.alive]
            if running:
                verb = "keeps" if len(running) == 1 else "keep"
                _say(f"{node.node} is not required: {', '.join(running)} {verb} running; Ctrl-C stops the graph")
        if all(not n.alive for n in nodes):
            _say("no node left running")
            return 1
        time.sleep(POLL_S)


#: ``--hardware`` of `robodojo graph` and ``hardware:=`` of the launch file: the driver node of each arm family.
HARDWARE_DRIVERS = {hardware: driver for hardware, (driver, _robot) in HARDWARE.items()}
#: ``--hardware`` of `robodojo graph` for Isaac Sim (launch: sim:=isaac): isaac_bridge_node drives its articulation.
ISAAC = "isaac"
#: A real robot's reset waits for the operator (episode_node's confirm_reset); the agent waits as long.
OPERATOR_RESET_TIMEOUT_S = 900.0


def graph_nodes(
    *,
    robot: str,
    task: str,
    seed: int,
    variant: str,
    agent: str,
    agent_params: Mapping[str, object],
    hardware: str = "none",
    hardware_params: Mapping[str, object] | None = None,
    episode_params: Mapping[str, object] | None = None,
    camera_topic: str = "/{camera}/image_raw",
    camera_inputs: str | Path | None = None,
    sim_params: Mapping[str, object] | None = None,
) -> list[tuple[str, dict[str, object], str]]:
    """The nodes of a graph as (node module, parameters, log file name), in start order.

    ``hardware`` "none": the embedded simulator (sim_node, the clock source; the others use_sim_time). A driver
    (HARDWARE_DRIVERS) instead: the arm driver, episode_node for the episode, tcp_state_publisher, one camera_node
    per camera of the robot reading ``camera_topic`` ({camera} replaced), or, with ``camera_inputs`` (a camera inputs
    file or its name in config/camera_inputs/, robodojo.perception.camera_inputs), the topic, transport, intrinsics
    source and agent size that file gives each camera; all on the system clock (``sim_params``: more sim_node
    parameters, e.g. calibration_board, for the simulator only). :data:`ISAAC`:
    the same with isaac_bridge_node as the driver and the camera nodes reading Isaac Sim's image topics, all on
    Isaac's /clock (Isaac Sim itself runs elsewhere: scripts/isaac_sim_robodojo.py).
    """
    if camera_inputs is not None and hardware not in HARDWARE_DRIVERS:
        raise RobodojoError(
            f"camera_inputs is for real hardware ({', '.join(HARDWARE_DRIVERS)}); hardware {hardware!r} brings its own "
            "cameras"
        )
    if sim_params and hardware != "none":
        raise RobodojoError(f"simulator parameters ({', '.join(sim_params)}) with hardware {hardware!r}: no simulator")
    if hardware == "none":
        sim_time = True
        sim = {"robot": robot, "task": task, "seed": seed, "variant": variant, **(sim_params or {})}
        starts: list[tuple[str, dict[str, object], str]] = [("sim_node", sim, "sim_node.log")]
    elif hardware in HARDWARE_DRIVERS or hardware == ISAAC:
        from robodojo.robots.config import load_robot_config
        from robodojo.robots.topic_names import isaac_camera_image

        sim_time = hardware == ISAAC  # Isaac Sim publishes /clock
        driver = "isaac_bridge_node" if hardware == ISAAC else HARDWARE_DRIVERS[hardware]
        if hardware == ISAAC:
            camera_topic = isaac_camera_image("{camera}")
        episode = {"robot": robot, "task": task, "seed": seed, "variant": variant, **(episode_params or {})}
        starts = [
            (driver, {"robot": robot, **(hardware_params or {})}, f"{driver}.log"),
            ("episode_node", episode, "episode_node.log"),
            ("tcp_state_publisher", {"robot": robot}, "tcp_state_publisher.log"),
        ]
        inputs = None
        if camera_inputs is not None:
            from robodojo.perception.camera_inputs import load_camera_inputs

            inputs = load_camera_inputs(camera_inputs, robot)
        for camera in load_robot_config(robot).camera_names:
            camera_params: dict[str, object] = {"robot": robot, "camera": camera}
            if inputs is not None:
                camera_params = inputs.camera_node_parameters(camera)
            else:
                camera_params["input_topic"] = camera_topic.replace("{camera}", camera)
            starts.append(("camera_node", camera_params, f"camera_node_{camera}.log"))
        if sim_time:
            for _, node_params, _ in starts:
                node_params["use_sim_time"] = True
    else:
        choices = ", ".join((*HARDWARE_DRIVERS, ISAAC))
        raise RobodojoError(f"unknown hardware {hardware!r}; choose none (the simulator) or {choices}")
    starts.append(("motion_server_node", {"robot": robot, "use_sim_time": sim_time}, "motion_server.log"))
    if agent != "none":
        params: dict[str, object] = {"agent": agent, "task": task, "seed": seed, "variant": variant}
        params["use_sim_time"] = sim_time
        if hardware != "none":  # episode_node's reset waits for the operator
            params["reset_timeout_s"] = OPERATOR_RESET_TIMEOUT_S
        starts.append(("agent_node", {**params, **agent_params}, "agent_node.log"))
    return starts


def run_graph(
    *,
    robot: str,
    task: str,
    seed: int,
    variant: str,
    agent: str,
    llm: str,
    base_url: str,
    out: Path,
    log_dir: Path,
    domain_id: int | None = None,
    agent_params: Mapping[str, object] | None = None,
    hardware: str = "none",
    hardware_params: Mapping[str, object] | None = None,
    episode_params: Mapping[str, object] | None = None,
    camera_topic: str = "/{camera}/image_raw",
    camera_inputs: str | Path | None = None,
    sim_params: Mapping[str, object] | None = None,
) -> int:
    """``robodojo graph``: what robodojo.launch.py starts, as processes, until the agent is done.

    With ``agent`` "none" the robot and motion server run until Ctrl-C (drive them with your own client).
    ``agent_params``: more agent_node parameters (LLM settings, images, context_tokens; config/nodes.yaml).
    ``hardware``: "none" for the embedded simulator, "franka" for an FR3, "isaac" for Isaac Sim (:func:`graph_nodes`;
    ``hardware_params`` and ``episode_params`` go to the driver and episode_node; ``camera_inputs`` sets each
    camera_node's input from a camera inputs file instead of ``camera_topic``; ``sim_params`` go to sim_node).
    The launcher keeps to ros2 launch's habits, with the agent node marked required:

    - The agent node is required: when it ends, the launcher stops the other nodes and exits with the agent's exit
      code (0: the episode ran to an end; 3: the robot stopped answering; 1: the episode did not run).
    - The simulator (or driver) and the motion server are not required: when one dies the launcher prints its name,
      its exit code and the last lines of its log, and the other nodes keep running. An agent notices the loss itself
      and ends its episode as backend_lost (exit code 3), which then ends the graph, so the record says what
      happened. With agent "none" the graph runs on until Ctrl-C, or until no node is left (exit code 1).
    - Ctrl-C or SIGTERM stops every node still running with SIGINT, the agent first (its episode ends as
      interrupted, with a complete record), each given STOP_TIMEOUT_S; the exit code is 0 when each of them exited
      with 0, else 1. Further Ctrl-Cs are ignored while the nodes shut down.
    """
    if domain_id is None and "ROS_DOMAIN_ID" in os.environ:
        domain_id = int(os.environ["ROS_DOMAIN_ID"])
    agent_all = {"llm": llm, "base_url": base_url, "out": str(out.resolve()), **(agent_params or {})}
    starts = graph_nodes(
        robot=robot, task=task, seed=seed, variant=variant, agent=agent, agent_params=agent_all, hardware=hardware,
        hardware_params=hardware_params, episode_params=episode_params, camera_topic=camera_topic,
        camera_inputs=camera_inputs, sim_params=sim_params,
    )  # fmt: skip
    build_interfaces()
    env = ros_environment(domain_id=domain_id, log_dir=log_dir / "ros")
    backend = {"none": "the simulator", ISAAC: "Isaac Sim"}.get(hardware, f"{hardware} hardware")
    _say(f"{robot} on {backend}, task {task} seed {seed} ({variant}); node logs in {log_dir}/")
    nodes: list[NodeProcess] = []
    with _StopRequest() as stop:
        try:
            for node, node_params, log_name in starts:
                nodes.append(NodeProcess(node, node_params, env, log_dir / log_name))
                _say(f"started {node} (pid {nodes[-1].pid})")
            if agent == "none":
                _say(f"{backend} and motion server running; Ctrl-C stops them")
            return _supervise(nodes, stop)
        finally:
            _stop_all(nodes)  # after an exception; otherwise every node has ended already
