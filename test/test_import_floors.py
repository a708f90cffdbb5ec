"""The library's floors (DESIGN.md section 4, docs/ARCHITECTURE.md): imports run only downward.

Every module under src/robodojo is parsed (not imported), so imports inside functions count as much as those at the
top, and a module that cannot be imported here (the ROS node adapters without ROS) is checked all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

from robodojo import PACKAGE_ROOT
from robodojo.episodes import EpisodeSpec, WorldHost
from robodojo.sim.agent_side import AgentSideBackend

SRC = PACKAGE_ROOT / "src" / "robodojo"

# Highest floor first. A package may import its own floor and every floor below it, never one above.
FLOORS: dict[str, int] = {
    "nodes": 7,
    "cli": 7,
    "calibrate": 7,  # robodojo calibrate: the graph client and the solving steps
    "demo": 7,
    "campaigns": 6,  # the eval grid, its workers, store and reports, over the episode runner
    "episodes": 5,
    "agents": 4,
    "motion": 3,
    "perception": 3,
    "sim": 2,
    "hardware": 2,
    "control": 2,
    "robots": 1,
    "observation": 1,
    "geometry": 1,
    "config": 1,
    "errors": 1,
    "text": 1,
    "addresses": 1,
    "log_limits": 1,
    "": 1,  # the robodojo package itself (PACKAGE_ROOT, version)
}
BACKENDS = ("sim", "hardware", "control")
# Agents get an agent-side backend in their EpisodeContext; importing a backend would reach past it.
FORBIDDEN: dict[str, tuple[str, ...]] = {"agents": BACKENDS}
# ROS client libraries and the package's generated interfaces: only the node adapters talk ROS.
ROS_MODULES = ("rclpy", "rcl_interfaces", "action_msgs", "agent_bringup", "launch", "launch_ros", "launch_testing")
# moveit_py is a library, not a node; its planner adapter builds geometry_msgs poses for it.
ROS_MESSAGE_EXCEPTIONS = {"motion/moveit_planner.py": ("moveit", "geometry_msgs")}
ROS_MESSAGE_PACKAGES = ("moveit", "geometry_msgs", "sensor_msgs", "std_msgs", "std_srvs", "trajectory_msgs")


def _floor_of(relative: Path) -> str:
    """The floor name of a module path relative to src/robodojo (``agents/move_eef/agent.py`` -> ``agents``)."""
    if len(relative.parts) > 1:
        return relative.parts[0]
    return "" if relative.name == "__init__.py" else relative.stem


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in ``path``; ``from robodojo import x`` counts as ``robodojo.x``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}:{node.lineno}: relative import; the library uses absolute imports")
            module = node.module or ""
            if module == "robodojo":
                found += [(node.lineno, f"robodojo.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return found


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _target_floor(module: str) -> str | None:
    """The floor a ``robodojo.*`` import lands on; None for other packages."""
    parts = module.split(".")
    if parts[0] != "robodojo":
        return None
    if len(parts) == 1:
        return ""
    return parts[1] if parts[1] in FLOORS else ""


def test_every_module_has_a_floor():
    unknown = {_floor_of(p.relative_to(SRC)) for p in _modules()} - FLOORS.keys()
    assert not unknown, f"modules outside the known floors (add them to FLOORS and ARCHITECTURE.md): {unknown}"


def test_imports_run_only_downward():
    violations = []
    for path in _modules():
        relative = path.relative_to(SRC)
        floor = _floor_of(relative)
        for line, module in _imports(path):
            target = _target_floor(module)
            if target is None:
                continue
            if FLOORS[target] > FLOORS[floor]:
                violations.append(f"{relative}:{line}: {floor or 'robodojo'} imports {module} (a higher floor)")
            if target in FORBIDDEN.get(floor, ()):
                violations.append(f"{relative}:{line}: {floor} must not import the backend {module}")
    assert not violations, "\n".join(violations)


def test_ros_only_in_the_node_adapters():
    violations = []
    for path in _modules():
        relative = path.relative_to(SRC)
        if relative.parts[0] == "nodes":
            continue
        allowed = ROS_MESSAGE_EXCEPTIONS.get(relative.as_posix(), ())
        for line, module in _imports(path):
            root = module.split(".")[0]
            if root in ROS_MODULES or (root in ROS_MESSAGE_PACKAGES and root not in allowed):
                violations.append(f"{relative}:{line}: imports {module}; only robodojo.nodes talks ROS")
    assert not violations, "\n".join(violations)


def test_the_floor_checker_sees_function_level_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from robodojo.sim.world import EmbeddedWorld\n    import rclpy\n")
    assert _imports(module) == [(2, "robodojo.sim.world"), (3, "rclpy")]
    assert _target_floor("robodojo.sim.world") == "sim" and _target_floor("numpy") is None
    assert _floor_of(Path("agents/robo/api.py")) == "agents" and _floor_of(Path("__init__.py")) == ""


def test_agents_get_no_path_to_the_simulator(dual_world):
    """What the runner hands an agent reaches observe/step/hold, never the world, its task or its ground truth."""
    ctx = WorldHost(dual_world).start(EpisodeSpec("general_pickup", 0))
    assert isinstance(ctx.backend, AgentSideBackend)
    assert ctx.motion.backend is ctx.backend  # type: ignore[attr-defined]
    public = {name for name in dir(ctx.backend) if not name.startswith("_")}
    assert public == {"control_dt_s", "steps_left", "observe", "step", "hold", "robot"}
    for value in (ctx.backend, ctx.motion, ctx.robot):
        for name in dir(value):
            if name.startswith("_"):
                continue
            attribute = getattr(value, name, None)
            assert not type(attribute).__module__.startswith("robodojo.sim.world"), f"{value!r}.{name}"
            assert not type(attribute).__module__.startswith("robodojo.sim.privileged"), f"{value!r}.{name}"
    obs = ctx.backend.observe(cameras=("head",), depth=True)
    assert obs.camera("head").depth_m is not None and ctx.backend.steps_left == dual_world.steps_left


def test_robo_shell_imports_only_what_the_sandbox_holds():
    """robo_shell runs inside the shell harness's sandbox: of robodojo it may use only the modules the sandbox mounts
    (config/agents/shell.yaml sandbox.robodojo_modules), and none of the harness's own code."""
    from robodojo.agents.shell.settings import load_shell_settings

    mounted = {m.removesuffix(".py") for m in load_shell_settings().sandbox.robodojo_modules} - {"__init__"}
    shell_src = SRC.parent / "robo_shell"
    bad = []
    for path in sorted(shell_src.rglob("*.py")):
        for line, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "robodojo" and (len(parts) < 2 or parts[1] not in mounted):
                bad.append(f"{path.relative_to(shell_src)}:{line}: {module}")
    assert not bad, "robo_shell imports what its sandbox does not hold:\n" + "\n".join(bad)
