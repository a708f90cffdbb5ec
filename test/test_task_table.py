"""The README's task table (scripts/task_table.py): every registered task has a row under its axis and an image."""

from __future__ import annotations

import importlib.util

from robodojo import PACKAGE_ROOT
from robodojo.sim.tasks import available_tasks, get_task

_spec = importlib.util.spec_from_file_location("task_table", PACKAGE_ROOT / "scripts" / "task_table.py")
assert _spec is not None and _spec.loader is not None
task_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(task_table)


def test_the_readme_table_lists_every_task_with_its_image():
    readme = task_table.README.read_text()
    assert task_table.missing(readme, task_table.README.parent) == []


def test_the_table_groups_tasks_by_axis_with_their_step_limits():
    names = available_tasks()
    table = task_table.table_markdown({n: f"instruction of {n}" for n in names})
    rows = table.splitlines()[2:]
    assert len(rows) == len(names)
    axes = [row.split(" | ")[0].strip("| ") for row in rows]
    assert axes == sorted(axes, key=task_table.CAPABILITIES.index)  # grouped in the axes' order
    for row in rows:
        name = row.split("`")[1]
        assert f"| {get_task(name).step_limit} |" in row and f"instruction of {name}" in row


def test_replacing_the_table_keeps_the_rest_of_the_readme():
    readme = f"intro\n{task_table.TABLE_START}\nold\n{task_table.TABLE_END}\noutro\n"
    assert task_table.replace_table(readme, "new") == (
        f"intro\n{task_table.TABLE_START}\nnew\n{task_table.TABLE_END}\noutro\n"
    )
