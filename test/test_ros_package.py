"""The repository as a ROS 2 package: package.xml, a colcon build, and real rclpy.

The colcon and rclpy tests need the ROS 2 Jazzy wheels (scripts/setup_env.sh installs them into .venv) or a
sourced ROS 2 install; without them they skip and say why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_XML = ROOT / "package.xml"
EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")


def _ament_prefixes() -> list[Path]:
    """Prefixes that hold ament_cmake: this venv (the PyPI wheels) and any sourced ROS install."""
    candidates = [Path(sys.prefix)]
    candidates += [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    seen: list[Path] = []
    for prefix in candidates:
        if (prefix / "share" / "ament_cmake" / "cmake").is_dir() and prefix not in seen:
            seen.append(prefix)
    return seen


def _ros_env(tmp_path: Path) -> dict[str, str]:
    """The environment ROS_ON_PYPI.md asks for: AMENT_PREFIX_PATH with the venv, the venv's bin first on PATH,
    a private ROS_DOMAIN_ID and localhost-only discovery."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    prefixes = [str(p) for p in _ament_prefixes()]
    old = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p and p not in prefixes]
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(prefixes + old)
    env["ROS_DOMAIN_ID"] = str(10 + os.getpid() % 90)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOG_DIR"] = str(tmp_path / "ros_log")
    return env


# --- package.xml --------------------------------------------------------------------------------------------


def test_package_xml_is_a_ros_package():
    root = ET.parse(PACKAGE_XML).getroot()
    assert root.tag == "package"
    assert root.get("format") == "3"
    assert root.findtext("name") == "agent_bringup"
    assert re.fullmatch(r"\d+\.\d+\.\d+", root.findtext("version") or "")
    assert root.findtext("license") == "Apache-2.0"

    maintainers = root.findall("maintainer")
    assert maintainers, "package.xml names no maintainer"
    for m in maintainers:
        email = m.get("email", "")
        # colcon treats the package as ROS only with a valid maintainer e-mail (ROS_ON_PYPI.md, defect 5)
        assert EMAIL_RE.match(email), f"maintainer e-mail {email!r} is not valid"
        assert (m.text or "").strip(), "maintainer has no name"

    assert root.findtext("export/build_type") == "ament_cmake"
    buildtool = {e.text for e in root.findall("buildtool_depend")}
    assert {"ament_cmake", "ament_cmake_python"} <= buildtool
    exec_deps = {e.text for e in root.findall("exec_depend")} | {e.text for e in root.findall("depend")}
    needed = {"rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs", "action_msgs"}
    assert needed <= exec_deps


def test_package_xml_validates_with_catkin_pkg():
    if importlib.util.find_spec("catkin_pkg") is None:
        pytest.skip("catkin_pkg not installed (it comes with the ROS wheels: scripts/setup_env.sh)")
    from catkin_pkg.package import parse_package

    pkg = parse_package(str(PACKAGE_XML))  # validates the format-3 schema rules
    assert pkg.name == "agent_bringup"
    assert pkg.get_build_type() == "ament_cmake"


def test_cmake_and_colcon_meta_agree_with_package_xml():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert re.search(r"project\(\s*agent_bringup\b", cmake)
    assert "ament_python_install_package(robodojo PACKAGE_DIR src/robodojo)" in cmake
    assert "ament_package()" in cmake
    meta = json.loads((ROOT / "colcon.meta").read_text())
    assert "agent_bringup" in meta["names"]


def test_pytest_pin_keeps_launch_testing_loadable():
    """Jazzy's launch_testing pytest plugin takes a `path` argument that pytest 9 rejects (PluginValidationError), which
    breaks every pytest run where launch_testing is installed (the docker image): the dev extra keeps pytest 8."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [Requirement(r) for r in project["optional-dependencies"]["dev"] if Requirement(r).name == "pytest"]
    assert "8.4.2" in pin.specifier and "9.0.0" not in pin.specifier and "7.4.4" not in pin.specifier, str(pin)
    if importlib.util.find_spec("launch_testing") is not None:  # this very run loaded the plugin
        assert pytest.__version__ in pin.specifier, f"pytest {pytest.__version__} is installed; {pin} is pinned"


# --- colcon build -------------------------------------------------------------------------------------------

NODE_LAUNCHERS_RE = re.compile(r"set\(\s*ROBODOJO_NODES\s+([^)]*)\)")
COLCON_TIMEOUT_S = 900


def _cmake_nodes() -> list[str]:
    match = NODE_LAUNCHERS_RE.search((ROOT / "CMakeLists.txt").read_text())
    assert match, "CMakeLists.txt has no set(ROBODOJO_NODES ...)"
    return match.group(1).split()


def _colcon(colcon: str, build: Path, install: Path, log: Path, env: dict[str, str], *extra: str) -> str:
    """One ``colcon build`` of the repository into ``build``/``install``; its output (asserts success)."""
    cmd = [colcon, "--log-base", str(log), "build", "--base-paths", str(ROOT)]
    cmd += ["--build-base", str(build), "--install-base", str(install)]
    cmd += ["--event-handlers", "console_cohesion+", "summary-", *extra]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=COLCON_TIMEOUT_S
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"colcon build {' '.join(extra)} failed ({proc.returncode}):\n{output[-6000:]}"
    return output


class ColconInstalls(NamedTuple):
    """One build base, two install bases of the package, and the output of the (first, full) build."""

    build: Path
    symlink: Path
    copy: Path
    output: str

    def install(self, kind: str) -> Path:
        """The install base of ``kind``: "symlink" or "copy"."""
        return {"symlink": self.symlink, "copy": self.copy}[kind]


def of_the_colcon_build(test):
    """The tests of the one colcon build below: on one test worker (make test: pytest -n --dist loadgroup), first."""
    return pytest.mark.xdist_group("colcon_build")(pytest.mark.run_first(test))


@pytest.fixture(scope="module")
def colcon_installs(tmp_path_factory) -> ColconInstalls:
    """The package built once and installed twice: with --symlink-install (as README, `make colcon` and the Dockerfile
    do) and as a plain copy.

    The copy install reuses the symlink build's build base (a clean build takes about 45 s on 2 cores, the copy
    install then about 8 s); colcon keeps AMENT_CMAKE_SYMLINK_INSTALL in the CMake cache, so it is switched off
    explicitly, which re-runs CMake's install rules as a plain build would.
    """
    colcon = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon not installed (scripts/setup_env.sh installs colcon-common-extensions)")
    if importlib.util.find_spec("ament_package") is None or not _ament_prefixes():
        pytest.skip("ament_cmake not found: neither the ROS wheels in this venv nor a sourced ROS 2 install")
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed (Debian: cmake g++ python3-dev)")
    if not (ROOT / "src" / "robodojo" / "__init__.py").is_file():
        pytest.fail("src/robodojo/__init__.py is missing: ament_python_install_package needs a package")

    base = tmp_path_factory.mktemp("colcon")
    env = _ros_env(base)
    build, log = base / "build", base / "log"
    symlink, copy = base / "install_symlink", base / "install_copy"
    output = _colcon(colcon, build, symlink, log, env, "--symlink-install")
    _colcon(colcon, build, copy, log, env, "--cmake-args", "-DAMENT_CMAKE_SYMLINK_INSTALL=OFF")
    return ColconInstalls(build, symlink, copy, output)


@pytest.mark.ros
@of_the_colcon_build
def test_colcon_build_installs_library_and_share(colcon_installs):
    output = colcon_installs.output
    for kind in ("symlink", "copy"):
        prefix = colcon_installs.install(kind) / "agent_bringup"
        assert (prefix / "share" / "agent_bringup" / "package.xml").is_file(), kind
        assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "agent_bringup").is_file(), kind
        inits = list(prefix.glob("lib/python3*/site-packages/robodojo/__init__.py"))
        assert inits, f"robodojo not installed under {prefix}/lib:\n{output[-3000:]}"
        assert inits[0].read_bytes() == (ROOT / "src" / "robodojo" / "__init__.py").read_bytes()
        # a copy install copies, or the install tree would break when build/ goes
        assert inits[0].is_symlink() == (kind == "symlink"), f"{kind} install: {inits[0]}"
        # package data the library reads at run time: the report's page templates (jinja2.PackageLoader)
        templates = inits[0].parent / "campaigns" / "report" / "templates"
        assert (templates / "index.html.j2").is_file(), f"{kind} install: no report templates in {templates.parent}"
        for folder in ("urdf", "config", "launch", "rviz"):
            if (ROOT / folder).is_dir() and any((ROOT / folder).iterdir()):
                assert (prefix / "share" / "agent_bringup" / folder).is_dir(), f"{kind}: {folder}/ was not installed"
    # the Release default from colcon.meta reached CMake
    cache = (colcon_installs.build / "agent_bringup" / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Release" in cache


def _ros2_pkg_executables(package: str) -> list[str]:
    """What `ros2 pkg executables <package>` lists, by ros2pkg's own rule (ros2cli is not on PyPI, so the rule is
    repeated here from ros2pkg/api/__init__.py, get_executable_paths, Jazzy): the package's prefix from the ament
    index, then every file below <prefix>/lib/<package> (dot folders skipped) that os.access(X_OK) allows; os.access
    follows symlinks, so a --symlink-install counts its target's mode."""
    from ament_index_python.packages import get_package_prefix

    base = os.path.join(get_package_prefix(package), "lib", package)
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [name for name in sorted(filenames) if os.access(os.path.join(dirpath, name), os.X_OK)]
    return found


@of_the_colcon_build
@pytest.mark.ros
@pytest.mark.parametrize("kind", ["symlink", "copy"])
def test_node_launchers_are_executable(colcon_installs, kind, monkeypatch):
    """`ros2 run agent_bringup <node>` and `ros2 launch` need lib/agent_bringup/<node> executable (issue 12: with
    --symlink-install the links pointed at configure_file output without the execute bit, so nothing was found)."""
    pytest.importorskip("ament_index_python", reason="ament_index_python comes with the ROS wheels")
    nodes = _cmake_nodes()
    lib = colcon_installs.install(kind) / "agent_bringup" / "lib" / "agent_bringup"
    for node in nodes:
        launcher = lib / node
        assert launcher.is_file(), f"{kind} install has no {launcher}"
        assert launcher.is_symlink() == (kind == "symlink"), f"{kind} install: {launcher}"
        mode = launcher.stat().st_mode  # stat() follows the symlink, as the kernel does on exec
        assert mode & stat.S_IXUSR and mode & stat.S_IXOTH, f"{kind} install: {launcher} is {stat.filemode(mode)}"
        assert launcher.read_text().startswith("#!"), f"{launcher} has no shebang"
    # discovery through the ament index, as `ros2 pkg executables agent_bringup` does it
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(colcon_installs.install(kind) / "agent_bringup"))
    assert _ros2_pkg_executables("agent_bringup") == sorted(nodes)


# --- real rclpy ---------------------------------------------------------------------------------------------

RCLPY_SMOKE = textwrap.dedent(
    """
    import os, sys, time
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.impl.implementation_singleton import rclpy_implementation  # the compiled extension
    from rclpy.node import Node
    from std_msgs.msg import String

    rclpy.init()
    node = Node("robodojo_smoke_%d" % os.getpid())
    got = []
    node.create_subscription(String, "robodojo_smoke", lambda m: got.append(m.data), 10)
    pub = node.create_publisher(String, "robodojo_smoke", 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + 15.0
    while not got and time.monotonic() < deadline:
        pub.publish(String(data="ping"))
        executor.spin_once(timeout_sec=0.1)
    executor.remove_node(node)
    executor.shutdown()
    name = node.get_name()
    node.destroy_node()
    rclpy.shutdown()
    print("node", name)
    print("received", got[:1])
    print("rmw", os.environ.get("RMW_IMPLEMENTATION", "default"), "domain", os.environ["ROS_DOMAIN_ID"])
    sys.exit(0 if got else 3)
    """
)


@pytest.mark.ros
def test_rclpy_node_lifecycle_in_subprocess(tmp_path):
    if importlib.util.find_spec("rclpy") is None:
        pytest.skip("rclpy not importable: run scripts/setup_env.sh (ROS wheels) or source a ROS 2 install")
    proc = subprocess.run(
        [sys.executable, "-c", RCLPY_SMOKE],
        env=_ros_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"rclpy smoke test exited {proc.returncode}:\n{out[-4000:]}"
    assert "node robodojo_smoke_" in out
    assert "received ['ping']" in out
