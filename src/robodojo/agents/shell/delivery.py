"""The delivery check of seed 003's repair loop: a tool edit is kept only if every tool of the task's folder is
complete, imports nothing of the simulator, has an interface that names neither the task nor its objects, loads,
and passes its own tests. Loading and testing run inside the sandbox, as the acting agent would run the tool.

:func:`check_task_tools` returns every problem found, not only the first, so the optimizer can fix them in one edit.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from robo_shell.tools import INTERFACE_FILE, TOOL_FILE, find_tool
from robodojo.agents.shell import host_files
from robodojo.agents.shell.sandbox import TOOLS
from robodojo.agents.shell.settings import ShellSettings
from robodojo.agents.shell.workspace import ENABLED_FILE, ShellWorkspace, enabled_tools_for, is_tool

#: imports a tool may not make: the simulator, the project's layers above perception, robot SDKs
FORBIDDEN_IMPORTS = (
    "mujoco", "mink", "isaacsim", "omni", "pxr", "franky", "franky_sim", "arx5_interface", "rclpy",
    "robodojo.sim", "robodojo.motion", "robodojo.robots", "robodojo.episodes", "robodojo.campaigns",
    "robodojo.agents", "robodojo.nodes", "robodojo.hardware", "robodojo.control", "robodojo.cli",
)  # fmt: skip
TEST_GLOB = "test_*.py"
TEST_TIMEOUT_S = 300.0
OUTPUT_CHARS = 6000
MAX_SOURCE_BYTES = 4 << 20  # one source or interface file read for the static checks


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
    """What is wrong with one tool folder without running it. Its files are read on the host without following a
    link (robodojo.agents.shell.host_files): a tool holds folders and regular files only, anything else is named."""
    problems: list[str] = []
    try:
        tree = host_files.list_tree(tool)
    except (OSError, host_files.UnsafeFileError) as exc:
        return [f"{tool.name}: cannot be read: {exc}"]
    problems.extend(f"{tool.name}: {entry}; a tool holds regular files and folders only" for entry in tree.refused)
    for required in (TOOL_FILE, INTERFACE_FILE):
        if required not in tree.files:
            problems.append(f"{tool.name}: {required} is missing")
    if not [f for f in tree.files if "/" not in f and fnmatch.fnmatch(f, TEST_GLOB)]:
        problems.append(f"{tool.name}: no unit tests ({TEST_GLOB})")
    for source in (f for f in tree.files if f.endswith(".py")):
        name = PurePosixPath(source).name
        try:
            modules = imported_modules(_read(tool, source).decode("utf-8", errors="replace"))
        except SyntaxError as exc:
            problems.append(f"{tool.name}: {name} does not parse: {exc}")
            continue
        except (OSError, host_files.UnsafeFileError) as exc:
            problems.append(f"{tool.name}: {source} cannot be read: {exc}")
            continue
        for module in modules:
            if (bad := _forbidden(module)) is not None:
                problems.append(f"{tool.name}: {name} imports {module} ({bad} is not available to tools)")
                break
    if INTERFACE_FILE in tree.files:
        try:
            text = _read(tool, INTERFACE_FILE).decode("utf-8", errors="replace")
        except (OSError, host_files.UnsafeFileError) as exc:
            return [*problems, f"{tool.name}: {INTERFACE_FILE} cannot be read: {exc}"]
        for word in forbidden_words:
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.IGNORECASE):
                problems.append(f"{tool.name}: {INTERFACE_FILE} names {word!r}, a task or one of its objects")
    return problems


def _read(tool: Path, relative: str) -> bytes:
    return host_files.read_under(tool, relative, MAX_SOURCE_BYTES)


def check_task_tools(
    folder: Path, settings: ShellSettings, forbidden_words: Sequence[str], *, pool: Sequence[Path] = ()
) -> DeliveryReport:
    """Check every tool in a task's tool folder (and that its enabled_tools.txt names tools that exist)."""
    try:
        listing = host_files.list_tree(folder, max_entries=host_files.MAX_TREE_ENTRIES) if folder.is_dir() else None
    except (OSError, host_files.UnsafeFileError) as exc:
        return DeliveryReport(False, (f"the tool folder cannot be read: {exc}",), (), "")
    top = [] if listing is None else [f for f in listing.folders if "/" not in f]
    tools = sorted(folder / name for name in top if not name.startswith((".", "_")))
    problems: list[str] = []
    if listing is not None:  # what lies loose in the folder itself (a tool's own entries are its problems)
        problems.extend(f"{entry}; a tool folder holds regular files and folders only"
                        for entry in listing.refused if "/" not in entry.split(":", 1)[0])  # fmt: skip
    for name in enabled_tools_for(folder, ()):
        if find_tool(name, [folder, *pool], is_tool=is_tool) is None:
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
