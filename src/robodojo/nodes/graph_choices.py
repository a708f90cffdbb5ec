"""What a graph runs when an argument is left out, and the combinations it refuses: one place for the launch file
(``ros2 launch agent_bringup robodojo.launch.py``) and ``robodojo graph``.

- ``task``: empty means the robot's ``default_task`` (config/robots/<robot>.yaml), so ``robot:=fr3`` alone runs an FR3
  task, not the dual arm's default.
- ``sim``: empty means ``none`` when this package drives a real arm (``hardware:=franka|arx5``), else ``mujoco``; a
  simulator named beside a real arm's driver is refused (the arm is the backend: MuJoCo would run instead of it).
- ``hardware``: each driver belongs to one robot (franka: fr3, arx5: dual_arx_x5).
- ``llm``: empty means the replayed example of the agent's kind for the task and seed (examples/), refused with one
  line when there is none; ``agent:=mcp`` takes none (the MCP client brings its own model).
- ``use_sim_time``: empty means true for a simulator (it publishes /clock), false for real hardware.
- camera poses: under ``sim:=mujoco`` sim_node publishes /cameras/<camera>/pose from the simulator's own cameras (the
  scene URDF's mounts); under ``isaac`` and ``none`` camera_node publishes them from the calibration files, and
  robot_state_publisher's ``robot_description`` carries the same calibrated mounts (perception.camera_mounts).

Every refusal is a :class:`~robodojo.errors.ConfigError` of one line naming the argument and what to give instead.
"""

from __future__ import annotations

from robodojo import PACKAGE_ROOT
from robodojo.errors import ConfigError
from robodojo.robots.config import load_robot_config

SIMULATORS = ("mujoco", "isaac")
NO_SIM = "none"
#: This package's arm drivers, by ``hardware`` value: (driver node, the robot it drives).
HARDWARE = {"franka": ("fr3_driver_node", "fr3"), "arx5": ("arx5_driver_node", "dual_arx_x5")}
#: The replayed example of each agent kind, relative to the package root (ReplayScript.load finds it from any folder).
REPLAY_EXAMPLES = {
    "move_eef": "examples/replay/{task}_seed{seed}.yaml",
    "code_cell": "examples/cells/{task}.py",
    "shell": "examples/shell/{task}.yaml",
}
NO_AGENT = "none"
MCP_AGENT = "mcp"  #: an MCP client drives the graph's episode through agent_node's server: no model of ours
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def task_or_default(robot: str, task: str) -> str:
    """``task``, or the robot's default task when empty."""
    return task.strip() or load_robot_config(robot).default_task


def backend(sim: str, hardware: str, robot: str) -> str:
    """The robot backend: ``sim`` resolved against ``hardware`` (see the module's docstring)."""
    sim = sim.strip()
    if hardware in HARDWARE:
        driven = HARDWARE[hardware][1]
        if robot != driven:
            raise ConfigError(f"hardware:={hardware} drives robot {driven}, not {robot}: give robot:={driven}")
        if sim and sim != NO_SIM:
            raise ConfigError(
                f"hardware:={hardware} drives the real arm, so it needs sim:=none (or leave sim unset), not sim:={sim}"
            )
        return NO_SIM
    if hardware != NO_SIM:
        raise ConfigError(f"hardware:={hardware} is not one of none, {', '.join(HARDWARE)}")
    return sim or SIMULATORS[0]


class BadArgumentValue(ConfigError, ValueError):
    """A launch argument whose value is not one of its kind (a ValueError too, as launch's own are)."""


def flag(name: str, text: str) -> bool:
    """Launch argument ``name`` given as ``text``, as true or false (BadArgumentValue in one line otherwise)."""
    value = text.strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise BadArgumentValue(f"launch argument {name}:={text!r} must be true or false")


def sim_time(use_sim_time: str, backend_name: str) -> bool:
    """``use_sim_time`` as a flag; empty: whether the backend publishes /clock (a simulator)."""
    return flag("use_sim_time", use_sim_time) if use_sim_time.strip() else backend_name in SIMULATORS


def camera_poses_from_calibration(backend_name: str) -> bool:
    """Whether /cameras/<camera>/pose comes from the calibration files (camera_node) on ``backend_name``, so TF must
    show the calibrated mounts too; False for the embedded simulator, whose sim_node publishes its cameras' poses."""
    return backend_name != SIMULATORS[0]


def llm_or_example(agent: str, llm: str, task: str, seed: int) -> str:
    """``llm`` when given; else ``replay:`` the agent's example for ``task`` and ``seed``; "" for no agent."""
    if llm.strip():
        return llm.strip()
    if agent in (NO_AGENT, MCP_AGENT):
        return ""
    if agent not in REPLAY_EXAMPLES:
        raise ConfigError(f"agent:={agent} has no replayed example; give llm:= (examples exist for "
                          f"{', '.join(REPLAY_EXAMPLES)})")  # fmt: skip
    example = REPLAY_EXAMPLES[agent].format(task=task, seed=seed)
    if not (PACKAGE_ROOT / example).is_file():
        raise ConfigError(
            f"no replayed {agent} example for task {task} seed {seed} ({example}): give llm:= (a model, or replay:FILE)"
        )
    return f"replay:{example}"
