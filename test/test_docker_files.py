"""docker/: what can be checked without a Docker engine (the development machine and CI have none).

The image itself is never built here (docker/README.md); these tests read the Dockerfile, the entrypoint, the
compose file and .dockerignore and check them against the repository: base image, apt packages, COPY sources,
shell syntax, the one-copy rule for robodojo, and the compose services.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
ENTRYPOINT = DOCKER / "entrypoint.sh"
CHECK_EXECUTABLES = DOCKER / "check_executables.sh"
COMPOSE = DOCKER / "compose.yaml"
DOCKER_README = DOCKER / "README.md"
DOCKERIGNORE = ROOT / ".dockerignore"

ROS_PACKAGES = {
    "ros-jazzy-launch-ros",
    "ros-jazzy-launch-testing",
    "ros-jazzy-launch-testing-ros",
    "ros-jazzy-launch-testing-ament-cmake",
    "ros-jazzy-robot-state-publisher",
    "ros-jazzy-tf2-ros",
    "ros-jazzy-rviz2",
    "ros-jazzy-moveit",
    "ros-jazzy-moveit-py",
}
MESA_PACKAGES = {"libegl1", "libegl-mesa0", "libgl1-mesa-dri", "libgles2", "libopengl0", "libosmesa6"}
PYTHON_PACKAGES = {"python3-venv", "python3-pip"}
DEFAULT_COMMAND = ["ros2", "launch", "agent_bringup", "robodojo.launch.py", "rviz:=false"]
PASSED_THROUGH = {"ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "OPENAI_API_KEY", "OPENAI_BASE_URL"}
# pip options whose value is the next word (not a requirement)
PIP_VALUED = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f"}
IGNORED_IN_CONTEXT = {".venv", "build", "install", "log", "out", ".git"}


# --- Dockerfile parsing -------------------------------------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        keyword, _, args = current.strip().partition(" ")
        out.append((keyword.upper(), args.strip()))
        current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    return out


def _args_before_from() -> dict[str, str]:
    args: dict[str, str] = {}
    for keyword, rest in _instructions():
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name.strip()] = value.strip().strip('"')
    return args


def _expand(text: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def _runs() -> list[str]:
    return [rest for keyword, rest in _instructions() if keyword == "RUN"]


def _simple_commands(command: str) -> list[list[str]]:
    """A RUN command split into its simple commands (at &&, ||, ;, |) as word lists, quotes respected."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in ("&&", "||", ";", "|"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _apt_installed() -> set[str]:
    packages: set[str] = set()
    for command in _runs():
        for words in _simple_commands(command):
            if len(words) >= 2 and words[0] == "apt-get" and "install" in words:
                after = words[words.index("install") + 1 :]
                packages |= {w for w in after if not w.startswith("-")}
    return packages


def _copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY/ADD without --from."""
    out = []
    for keyword, rest in _instructions():
        if keyword not in ("COPY", "ADD"):
            continue
        words = shlex.split(rest)
        if any(w.startswith("--from") for w in words):
            continue
        words = [w for w in words if not w.startswith("--")]
        if words and words[0].startswith("["):
            words = yaml.safe_load(rest[rest.index("[") :])
        out.append((words[:-1], words[-1]))
    return out


def _exec_form(keyword: str) -> list[str]:
    values = [rest for k, rest in _instructions() if k == keyword]
    assert values, f"the Dockerfile has no {keyword}"
    value = yaml.safe_load(values[-1])  # JSON exec form; YAML reads JSON
    assert isinstance(value, list), f"{keyword} should use the exec (JSON) form, got {values[-1]!r}"
    return value


# --- Dockerfile -----------------------------------------------------------------------------------------------


def test_base_image_is_ros_jazzy():
    froms = [rest for keyword, rest in _instructions() if keyword == "FROM"]
    assert len(froms) == 1, f"expected one build stage, got FROM {froms}"
    image = _expand(froms[0].split()[0], _args_before_from())
    assert re.fullmatch(r"(ros|osrf/ros):jazzy([-.\w]*)", image), f"base image {image!r} is not a ROS 2 Jazzy image"


def test_installs_the_ros_mesa_and_python_packages():
    installed = _apt_installed()
    missing = (ROS_PACKAGES | MESA_PACKAGES | PYTHON_PACKAGES) - installed
    assert not missing, f"the Dockerfile does not apt-get install {sorted(missing)}"
    assert all(not p.startswith("ros-") or p.startswith("ros-jazzy-") for p in installed), sorted(installed)


def test_installs_what_setup_env_installs():
    """scripts/setup_env.sh's Debian packages (Mesa for MuJoCo, the colcon tool chain) are in the image too."""
    match = re.search(r"^APT_PACKAGES=\(([^)]*)\)", (ROOT / "scripts" / "setup_env.sh").read_text(), re.M)
    assert match, "APT_PACKAGES not found in scripts/setup_env.sh"
    missing = set(match.group(1).split()) - _apt_installed()
    assert not missing, f"scripts/setup_env.sh installs {sorted(missing)}, the Dockerfile does not"


def test_python_environment_keeps_ros_and_one_copy_of_robodojo():
    runs = "\n".join(_runs())
    assert re.search(r"python3 -m venv --system-site-packages", runs), "the venv must see rclpy from /opt/ros"
    assert "colcon build --symlink-install" in runs
    assert "/opt/ros/jazzy/setup.bash" in runs, "colcon must build against the sourced ROS install"
    # robodojo comes from colcon's install tree only (DESIGN.md section 4): pip must not install the project.
    for command in _runs():
        for words in _simple_commands(command):
            if "pip" in words and "install" in words:
                args = words[words.index("install") + 1 :]
                targets = [
                    w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or args[i - 1] not in PIP_VALUED)
                ]
                project = [t for t in targets if t.startswith((".", "/ws/")) or re.search(r"agent[-_]bringup", t)]
                assert "-e" not in words and not project, f"pip installs the project itself: {' '.join(words)!r}"
    assert "pyproject.toml" in runs, "the pip requirements should come from pyproject.toml"


def test_copy_sources_exist_and_reach_the_build_context():
    copies = _copies()
    assert copies, "the Dockerfile copies nothing"
    ignored = _dockerignore_patterns()
    for sources, _ in copies:
        for source in sources:
            if source == ".":
                continue
            path = ROOT / source
            assert path.exists(), f"COPY {source}: no such file in the repository"
            assert not any(fnmatch.fnmatch(source, p) or source.split("/")[0] == p for p in ignored), (
                f"COPY {source}: excluded from the build context by .dockerignore"
            )


def test_run_commands_are_valid_bash():
    bash = shutil.which("bash")
    assert bash
    for command in _runs():
        result = subprocess.run([bash, "-n", "-c", command], capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"RUN {command[:80]}...: {result.stderr}"


def test_entrypoint_and_default_command():
    entrypoint = _exec_form("ENTRYPOINT")
    destinations = {dest for sources, dest in _copies() if sources == ["docker/entrypoint.sh"]}
    assert entrypoint == [next(iter(destinations))], f"ENTRYPOINT {entrypoint} is not the copied entrypoint.sh"
    assert _exec_form("CMD") == DEFAULT_COMMAND


def test_rendering_defaults_to_egl():
    envs = " ".join(rest for keyword, rest in _instructions() if keyword == "ENV")
    assert re.search(r"\bMUJOCO_GL=egl\b", envs)


# --- entrypoint.sh --------------------------------------------------------------------------------------------


def test_entrypoint_is_executable_and_valid_bash():
    mode = ENTRYPOINT.stat().st_mode
    assert mode & stat.S_IXUSR and os.access(ENTRYPOINT, os.X_OK), "docker/entrypoint.sh is not executable"
    git = shutil.which("git")
    if git and (ROOT / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "-s", "docker/entrypoint.sh"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.split()
        if listed:  # once committed, git must keep the executable bit too
            assert listed[0] == "100755", f"git records docker/entrypoint.sh with mode {listed[0]}"
    assert ENTRYPOINT.read_text().startswith("#!/usr/bin/env bash\n")
    result = subprocess.run(["bash", "-n", str(ENTRYPOINT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_entrypoint_passes_shellcheck():
    shellcheck = shutil.which("shellcheck")
    if not shellcheck:
        pytest.skip("shellcheck is not installed")
    result = subprocess.run([shellcheck, str(ENTRYPOINT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_entrypoint_sets_up_ros_workspace_and_venv_then_execs():
    text = ENTRYPOINT.read_text()
    ros = re.search(r'source "?/opt/ros/(jazzy|\$\{ROS_DISTRO:-jazzy\})/setup\.bash', text)
    workspace = text.find("source /ws/install/setup.bash")
    venv = text.find("source /opt/venv/bin/activate")
    assert ros and workspace > ros.start() and venv > workspace, "source ROS, then /ws/install, then the venv"
    assert text.find("set +u") < ros.start(), "the setup scripts fail under set -u: turn it off first"
    assert re.search(r'^exec "\$@"$', text, re.M)


# --- check_executables.sh (the build's node executable check) -------------------------------------------------


def _node_launchers() -> list[str]:
    match = re.search(r"^set\(ROBODOJO_NODES\s+([^)]*)\)$", (ROOT / "CMakeLists.txt").read_text(), re.M)
    assert match, "CMakeLists.txt has no set(ROBODOJO_NODES ...) line (docker/check_executables.sh reads it)"
    return match.group(1).split()


def test_build_checks_the_node_executables_with_the_script():
    checks = [
        words
        for command in _runs()
        for words in _simple_commands(command)
        if "ros2" in words or any(w.endswith("check_executables.sh") for w in words)
    ]
    assert checks, "the Dockerfile does not check the node executables"
    for words in checks:
        # `ros2 pkg executables` alone exits 0 with empty output: only the script's check fails the build
        assert words[-1] == "docker/check_executables.sh", f"bare check in the Dockerfile: {' '.join(words)!r}"
        assert words[0] == next(iter(_exec_form("ENTRYPOINT"))), "the check needs ROS and /ws sourced"
    mode = CHECK_EXECUTABLES.stat().st_mode
    assert mode & stat.S_IXUSR, "docker/check_executables.sh is not executable"
    result = subprocess.run(["bash", "-n", str(CHECK_EXECUTABLES)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    shellcheck = shutil.which("shellcheck")
    if shellcheck:
        result = subprocess.run([shellcheck, str(CHECK_EXECUTABLES)], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("listed", ["all", "none", "all but one", "another package"])
def test_check_executables_fails_unless_every_node_is_listed(tmp_path, listed):
    """docker/check_executables.sh against a stand-in `ros2` that prints what `ros2 pkg executables` would."""
    nodes = _node_launchers()
    lines = {
        "all": [f"agent_bringup {n}" for n in nodes],
        "none": [],  # what launchers without the execute bit gave (issue 12)
        "all but one": [f"agent_bringup {n}" for n in nodes[1:]],
        "another package": [f"agent_bringup_extra {n}" for n in nodes],
    }[listed]
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "ros2"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        '[[ "$*" == "pkg executables agent_bringup" ]] || { echo "unexpected: ros2 $*" >&2; exit 2; }\n'
        + "".join(f"echo '{line}'\n" for line in lines)
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        ["bash", str(CHECK_EXECUTABLES)], env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    if listed == "all":
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0, f"passed with {listed!r}: {result.stdout}"
        missing = nodes[:1] if listed == "all but one" else nodes
        assert all(n in result.stderr for n in missing), result.stderr


# --- compose.yaml ---------------------------------------------------------------------------------------------


def _services() -> dict:
    compose = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(compose, dict) and "services" in compose
    return compose["services"]


def test_compose_services_build_the_dockerfile_from_the_repository_root():
    services = _services()
    assert {"robodojo", "robodojo-rviz"} <= set(services)
    entrypoint = _exec_form("ENTRYPOINT")
    for name, service in services.items():
        build = service["build"]
        assert build["dockerfile"] == "docker/Dockerfile", name
        assert (COMPOSE.parent / build["context"]).resolve() == ROOT, name
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE, name
        assert service.get("entrypoint", entrypoint) == entrypoint, f"{name} runs another entrypoint"
        assert service["network_mode"] == "host" and service["ipc"] == "host", name
        environment = service["environment"]
        assert set(environment) >= PASSED_THROUGH, f"{name} does not pass {PASSED_THROUGH - set(environment)}"
        for key in PASSED_THROUGH:  # a bare key passes the host's value through, or leaves the variable unset
            assert environment[key] is None, f"{name}: {key} should be passed through, not set"
        assert str(environment.get("MUJOCO_GL", "")).endswith("egl}"), name
        targets = {v.split(":")[1] for v in service["volumes"]}
        assert "/ws/src/agent_bringup/out" in targets, f"{name} does not mount out/"
    assert services["robodojo"]["command"] == DEFAULT_COMMAND


def test_compose_rviz_service_forwards_x11():
    service = _services()["robodojo-rviz"]
    assert "rviz:=true" in service["command"]
    environment = service["environment"]
    assert "DISPLAY" in environment and str(environment["QT_X11_NO_MITSHM"]) == "1"
    assert any(v.startswith("/tmp/.X11-unix:/tmp/.X11-unix") for v in service["volumes"])


# --- .dockerignore and references -----------------------------------------------------------------------------


def _dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def test_dockerignore_leaves_out_local_environments():
    patterns = set(_dockerignore_patterns())
    assert patterns >= IGNORED_IN_CONTEXT, f".dockerignore misses {sorted(IGNORED_IN_CONTEXT - patterns)}"
    assert not any(p.startswith("!") for p in patterns)


def test_referenced_paths_and_make_targets_exist():
    texts = {p.name: p.read_text() for p in (DOCKERFILE, ENTRYPOINT, COMPOSE, DOCKER_README)}
    makefile = (ROOT / "Makefile").read_text()
    for name, text in texts.items():
        for target in re.findall(r"`make ([\w-]+)`", text):
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"{name}: no make target {target!r}"
        for path in re.findall(r"(?<![\w/.])((?:scripts|examples|docker)/[\w./-]*\w)", text):
            assert (ROOT / path).exists(), f"{name} names {path}, which does not exist"


def test_the_image_installs_the_dev_and_hardware_extras():
    """The RUN that lists the pip requirements, run here on pyproject.toml: franky (a real FR3) is in the image."""
    (command,) = [c for c in _runs() if "optional-dependencies" in c]
    script = re.search(r"python -c '([^']*)'", command)
    assert script is not None
    default = re.search(r'ARG EXTRAS="([^"]*)"', DOCKERFILE.read_text())
    assert default is not None and set(default.group(1).split()) == {"dev", "hardware"}
    env = {**os.environ, "EXTRAS": default.group(1)}
    code = script.group(1).replace("/tmp/agent_bringup/pyproject.toml", str(ROOT / "pyproject.toml"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    requirements = out.split()
    assert "franky-control==2.0.0" in requirements and "franky-sim==1.0.4" in requirements
    assert any(r.startswith("pytest") for r in requirements) and any(r.startswith("mujoco") for r in requirements)
