"""The repair loop's delivery check: complete, simulator-free, task-neutral tools that load and pass their tests in
the sandbox; every problem of a bad edit is named."""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from robo_shell.paths import POOL_DIR
from robodojo.agents.shell.delivery import check_task_tools, imported_modules, task_words
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.sim.tasks import get_task

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

GOOD_TOOL = """
NAME = "{name}"
COMMANDS = {{
    "hello": {{"help": "say hello", "args": {{"times": {{"type": "int", "default": 1, "help": "how often"}}}}}}
}}


def run(api, command, args):
    return {{"said": "hello " * args["times"]}}
"""
GOOD_TEST = """
import importlib.util
from pathlib import Path


def test_says_hello():
    spec = importlib.util.spec_from_file_location("t", Path(__file__).with_name("tool.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.run(None, "hello", {{"times": 2}})["said"] == "hello hello "
"""


@pytest.fixture(scope="module")
def words():
    task = get_task("general_pickup")(0.765)
    return task_words("general_pickup", [task.layout(seed) for seed in range(3)])


def write_tool(folder, name, *, tool=GOOD_TOOL, test=GOOD_TEST, interface="### {name}\n\n    robo {name} hello\n"):
    path = folder / name
    path.mkdir(parents=True)
    if tool is not None:
        (path / "tool.py").write_text(textwrap.dedent(tool.format(name=name)))
    if test is not None:
        (path / "test_tool.py").write_text(textwrap.dedent(test.format(name=name)))
    if interface is not None:
        (path / "interface.md").write_text(interface.format(name=name))
    return path


def test_task_words_name_the_task_and_its_objects(words):
    assert "general_pickup" in words and "general pickup" in words and "target" in words
    assert any(w in words for w in ("red", "cyan", "green", "blue", "yellow", "orange", "purple"))


def test_the_shared_pool_passes(words):
    report = check_task_tools(POOL_DIR, load_shell_settings(), words)
    assert report.ok, (report.problems, report.test_output)
    assert report.tools == ("pick", "table_plane") and "passed" in report.test_output


def test_a_good_tool_passes(tmp_path, words):
    write_tool(tmp_path, "greeter")
    (tmp_path / "enabled_tools.txt").write_text("greeter\npick\n")
    report = check_task_tools(tmp_path, load_shell_settings(), words, pool=[POOL_DIR])
    assert report.ok, (report.problems, report.test_output)


def test_every_problem_of_a_bad_edit_is_named(tmp_path, words):
    write_tool(tmp_path, "peeker", tool=GOOD_TOOL + "\nimport mujoco\n")
    write_tool(tmp_path, "leaky", interface="### leaky\n\nFinds the cyan block of general_pickup.\n")
    write_tool(tmp_path, "untested", test=None)
    write_tool(tmp_path, "bare", interface=None)
    (tmp_path / "enabled_tools.txt").write_text("ghost\n")
    report = check_task_tools(tmp_path, load_shell_settings(), words, pool=[POOL_DIR])
    text = "\n".join(report.problems)
    assert not report.ok
    assert "peeker: tool.py imports mujoco" in text
    assert "leaky: interface.md names 'cyan'" in text and "leaky: interface.md names 'general_pickup'" in text
    assert "untested: no unit tests" in text and "bare: interface.md is missing" in text
    assert "'ghost' is not a tool" in text


def test_failing_tests_and_a_tool_that_does_not_load_are_caught_in_the_sandbox(tmp_path, words):
    write_tool(tmp_path, "wrong", test=GOOD_TEST.replace("hello hello ", "goodbye"))
    write_tool(tmp_path, "misnamed", tool=GOOD_TOOL.replace('NAME = "{name}"', 'NAME = "other"'))
    report = check_task_tools(tmp_path, load_shell_settings(), words)
    assert not report.ok
    assert "misnamed: does not load in the sandbox" in report.problems
    assert "the unit tests fail in the sandbox (see the test output)" in report.problems
    assert "1 failed" in report.test_output


def test_imports_are_read_from_the_source():
    source = "import os\nfrom robodojo.sim import world\nfrom . import helper\nimport numpy as np\n"
    assert imported_modules(source) == ["os", "robodojo.sim", "robodojo.sim.world", "numpy"]


def test_links_and_fifos_in_a_tool_folder_are_named_never_followed_nor_opened(tmp_path, words):
    secret = tmp_path / "secret.txt"  # a host file a link points at: its text must not reach any report
    secret.write_text("import mujoco  # sk-must-not-be-read\n")
    tools = tmp_path / "tools"
    write_tool(tools, "linked", tool=None)
    (tools / "linked" / "tool.py").symlink_to(secret)
    write_tool(tools, "piped", interface=None)
    os.mkfifo(tools / "piped" / "interface.md")  # opening it for reading would block the harness
    (tools / "enabled_tools.txt").symlink_to(secret)
    (tools / "elsewhere").symlink_to(tmp_path)
    report = check_task_tools(tools, load_shell_settings(), words)
    assert not report.ok and report.tools == ("linked", "piped")
    assert "linked: tool.py: a symbolic link; a tool holds regular files and folders only" in report.problems
    assert "linked: tool.py is missing" in report.problems and "piped: interface.md is missing" in report.problems
    assert "piped: interface.md: a FIFO; a tool holds regular files and folders only" in report.problems
    assert "elsewhere: a symbolic link; a tool folder holds regular files and folders only" in report.problems
    assert "enabled_tools.txt: a symbolic link; a tool folder holds regular files and folders only" in report.problems
    assert "sk-must-not-be-read" not in str(report)
