"""Fixtures for graph tests: real nodes in separate processes, a real rclpy client in this one.

Every test gets its own ROS_DOMAIN_ID (localhost discovery), so a node still shutting down from the previous test
cannot answer. The package's interfaces are built once per session with colcon (incremental: ~2 s when current).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.nodes.process_graph import (
    NodeProcess,
    build_interfaces,
    claim_ros_domain,
    ros_environment,
    use_interfaces_here,
    wait_until,
)
from robodojo.nodes.runtime import call_in_executor

pytestmark = pytest.mark.ros
T = TypeVar("T")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each file's tests on one worker, in order (make test: -n 2 --dist loadgroup): a module's graph is started
    once, and the files' graphs, each in a ROS domain of its own, run beside each other."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(item.path.name))


@pytest.fixture(scope="session")
def ros_install(tmp_path_factory) -> Path:
    """Build the interfaces (or skip with the reason) and make them importable in this process."""
    if importlib.util.find_spec("rclpy") is None:
        pytest.skip("rclpy not importable: run scripts/setup_env.sh (ROS wheels) or source a ROS 2 install")
    if shutil.which("colcon", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("colcon not installed (scripts/setup_env.sh installs colcon-common-extensions)")
    log = tmp_path_factory.mktemp("colcon") / "build.log"
    with log.open("w") as f:
        prefix = build_interfaces(PACKAGE_ROOT, log=f)
    use_interfaces_here(PACKAGE_ROOT)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return prefix


class Graph:
    """The nodes of one test and an rclpy client node in this process, all in one private domain."""

    def __init__(self, tmp_path: Path) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.domain_id, self._domain_lock = claim_ros_domain()
        self.tmp_path = tmp_path
        self.env = ros_environment(PACKAGE_ROOT, domain_id=self.domain_id, log_dir=tmp_path / "ros_log")
        self.nodes: list[NodeProcess] = []
        self.context = Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.client = rclpy.create_node(f"test_client_{os.getpid()}", context=self.context)
        # One thread: sends go through call_in_executor (rclpy's action client is not thread-safe)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.client)
        self._stop = threading.Event()
        self._spin = threading.Thread(target=self._spin_until_shutdown, daemon=True)
        self._spin.start()

    def _spin_until_shutdown(self) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self.context.ok() and not self._stop.is_set():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, RuntimeError):
            pass

    def call(self, fn: Callable[[], T], timeout_s: float = 20.0) -> T:
        """``fn`` run in the client's executor thread (for rclpy calls that are not thread-safe)."""
        return call_in_executor(self.client, fn, timeout_s)

    def start(
        self, node: str, name: str | None = None, remaps: dict[str, str] | None = None, **params: object
    ) -> NodeProcess:
        """Start ``robodojo.nodes.<node>`` with ``params`` and topic ``remaps``; output in tmp_path/<name>.log."""
        label = name or node
        proc = NodeProcess(node, params, self.env, self.tmp_path / f"{label}.log", cwd=self.tmp_path, remaps=remaps)
        self.nodes.append(proc)
        return proc

    def wait(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Wait for ``predicate``; on timeout fail with ``what`` and the nodes' last output."""
        if not wait_until(predicate, timeout_s):
            logs = "\n".join(f"--- {n.node} (alive={n.alive}):\n{n.output()[-2500:]}" for n in self.nodes)
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}\n{logs}")

    def close(self) -> None:
        for proc in self.nodes:
            proc.stop()
        self._stop.set()
        self._spin.join(timeout=5)
        self.executor.shutdown()
        self.client.destroy_node()
        self.context.try_shutdown()
        self._domain_lock.close()  # releases the domain for the next test


@pytest.fixture
def graph(ros_install, tmp_path) -> Iterator[Graph]:
    g = Graph(tmp_path)
    try:
        yield g
    finally:
        g.close()


@pytest.fixture(scope="module")
def module_graph(ros_install, tmp_path_factory) -> Iterator[Graph]:
    """One graph for a whole module whose tests run in order on the same nodes (their start-up costs the most)."""
    g = Graph(tmp_path_factory.mktemp("graph"))
    try:
        yield g
    finally:
        g.close()
