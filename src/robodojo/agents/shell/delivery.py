"""The delivery check of seed 003's repair loop: a tool edit is kept only if every tool of the task's folder is
complete, imports nothing of the simulator, has an interface that names neither the task nor its objects, loads,
and passes its own tests. Loading and testing run inside the sandbox, as the acting agent would run the tool.

:func:`check_task_tools` returns every problem found, not only the first, so the optimizer can fix them in one edit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from robo_shell.tools import INTERFACE_FILE, TOOL_FILE, enabled_tools, find_tool
from robodojo.agents.shell.sandbox import TOOLS
from robodojo.agents.shell.settings import ShellSettings
from robodojo.agents.shell.workspace import ENABLED_FILE, ShellWorkspace

#: imports a tool may not make: the simulator, the project's layers above perception, robot SDKs
FORBIDDEN_IMPORTS = (
    "mujoco", "mink", "isaacsim", "omni", "pxr", "franky", "franky_sim", "arx5_interface", "rclpy",
    "robodojo.sim", "robodojo.motion", "robodojo.robots", "robodojo.episodes", "robodojo.campaigns",
    "robodojo.agents", "robodojo.nodes", "robodojo.hardware", "robodojo.control", "robodojo.cli",
)  # fmt: skip
TEST_GLOB = "test_*.py"
TEST_TIMEOUT_S = 300.0
OUTPUT_CHARS = 6000


@dataclass(frozen=True)
class DeliveryReport:
    """The verdict on a task's tool folder."""

    ok: bool
    problems: tuple[str, ...]
    tools: tuple[str, ...]
    test_output: str  #: what pytest printed inside the sandbox (trimmed)


def task_words(task: str, layouts: Iterable[object] = ()) -> list[str]:
    """Words an interface may not contain: the task's name (with underscores and with spaces) and the names of its
    objects and the words filling its instructions in ``layouts`` (robodojo.sim.tasks Layout objects)."""
    words = {task, task.replace("_", " ")}
    for layout in layouts:
        for obj in getattr(layout, "objects", ()):
            words.update({obj.name, obj.name.replace("_", " ")})
        words.update(str(v) for v in getattr(layout, "slots", {}).values())
    return sorted(w for w in words if len(w) >= 3)


def imported_modules(source: str) -> list[str]:
    """Every module a Python source imports (absolute names; relative imports are the tool's own helpers)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{a.name}" for a in node.names)
    return names


def _forbidden(module: str) -> str | None:
    return next((f for f in FORBIDDEN_IMPORTS if module == f or module.startswith(f + ".")), None)


def static_problems(tool: Path, forbidden_words: Sequence[str]) -> list[str]:
    """What is wrong with one tool folder without running it."""
    problems = []
    for required in (TOOL_FILE, INTERFACE_FILE):
        if not (tool / required).is_file():
            problems.append(f"{tool.name}: {required} is missing")
    if not list(tool.glob(TEST_GLOB)):
        problems.append(f"{tool.name}: no unit tests ({TEST_GLOB})")
    for source in sorted(tool.rglob("*.py")):
        try:
            modules = imported_modules(source.read_text())
        except SyntaxError as exc:
            problems.append(f"{tool.name}: {source.name} does not parse: {exc}")
            continue
        for module in modules:
            if (bad := _forbidden(module)) is not None:
                problems.append(f"{tool.name}: {source.name} imports {module} ({bad} is not available to tools)")
                break
    interface = tool / INTERFACE_FILE
    if interface.is_file():
        text = interface.read_text()
        for word in forbidden_words:
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.IGNORECASE):
                problems.append(f"{tool.name}: {INTERFACE_FILE} names {word!r}, a task or one of its objects")
    return problems


def check_task_tools(
    folder: Path, settings: ShellSettings, forbidden_words: Sequence[str], *, pool: Sequence[Path] = ()
) -> DeliveryReport:
    """Check every tool in a task's tool folder (and that its enabled_tools.txt names tools that exist)."""
    tools = (
        sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        if folder.is_dir()
        else []
    )
    problems: list[str] = []
    for name in enabled_tools(folder / ENABLED_FILE):
        if find_tool(name, [folder, *pool]) is None:
            problems.append(f"{ENABLED_FILE}: {name!r} is not a tool here or in the shared pool")
    for tool in tools:
        problems.extend(static_problems(tool, forbidden_words))
    output = ""
    if tools and not problems:
        ws = ShellWorkspace(settings, _no_robot, task_tools=folder)
        try:
            loads = "; ".join(
                f"python3 -c 'from pathlib import Path; from robo_shell.tools import load_tool; "
                f"load_tool(Path(\"{TOOLS}/task/{t.name}\"))' || echo 'LOAD FAILED {t.name}'"
                for t in tools
            )
            pytest = f"python3 -m pytest -q -p no:cacheprovider --import-mode=importlib {TOOLS}/task"
            outcome = ws.run(f"{loads}; {pytest}; echo PYTEST_EXIT=$?", timeout_s=TEST_TIMEOUT_S)
        finally:
            ws.close()
        output = outcome.output[-OUTPUT_CHARS:]
        for t in tools:
            if f"LOAD FAILED {t.name}" in outcome.output:
                problems.append(f"{t.name}: does not load in the sandbox")
        if outcome.timed_out:
            problems.append(f"the tests did not finish within {TEST_TIMEOUT_S:.0f} s")
        elif "PYTEST_EXIT=0" not in outcome.output:
            problems.append("the unit tests fail in the sandbox (see the test output)")
    return DeliveryReport(not problems, tuple(problems), tuple(t.name for t in tools), output)


def _no_robot(argv: list[str]) -> dict:
    return {"ok": False, "command": argv[0] if argv else "", "verdict": "refused",
            "reason": "no robot during the delivery check: unit tests must not move it"}  # fmt: skip
