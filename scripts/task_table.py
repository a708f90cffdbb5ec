#!/usr/bin/env python3
"""The README's task table: every registered task by capability axis, with a head-camera image of its seed-0 layout.

    python scripts/task_table.py            # render docs/images/tasks/<task>.jpg and rewrite the README's table
    python scripts/task_table.py --check    # exit 1 if the README's table or an image is missing a task

`make tasks-table` runs the first form; the table sits between the README's TABLE_START and TABLE_END markers, so the
rest of the README is never touched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robodojo import PACKAGE_ROOT
from robodojo.sim.tasks import available_tasks, get_task
from robodojo.sim.tasks.base import CAPABILITIES

README = PACKAGE_ROOT / "README.md"
IMAGE_DIR = Path("docs/images/tasks")  # relative to the README
IMAGE_WIDTH_PX = 256
JPEG_QUALITY = 85
TABLE_START = "<!-- task table: scripts/task_table.py writes what follows -->"
TABLE_END = "<!-- end of the task table -->"


def image_path(task: str) -> Path:
    return IMAGE_DIR / f"{task}.jpg"


def tasks_by_axis() -> list[str]:
    """Task names, grouped by capability axis (CAPABILITIES' order), alphabetical within an axis."""
    names = available_tasks()
    return [n for axis in CAPABILITIES for n in names if get_task(n).capability == axis]


def table_markdown(instructions: dict[str, str]) -> str:
    """The table: axis, task, robot, step limit, the seed-0 instruction, the image."""
    rows = [
        "| axis | task | robot | step limit | instruction (seed 0) | head camera (seed 0) |",
        "|---|---|---|---|---|---|",
    ]
    for name in tasks_by_axis():
        task = get_task(name)
        image = f"![{name}]({image_path(name).as_posix()})"
        rows.append(
            f"| {task.capability} | `{name}` | {task.robot} | {task.step_limit} | {instructions[name]} | {image} |"
        )
    return "\n".join(rows)


def render_images(root: Path) -> dict[str, str]:
    """Render each task's seed-0 standard layout from its robot's first camera into ``root``/IMAGE_DIR; the
    instructions."""
    import cv2

    from robodojo.sim.world import EmbeddedWorld

    worlds: dict[str, EmbeddedWorld] = {}
    instructions = {}
    (root / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    try:
        for name in tasks_by_axis():
            robot = get_task(name).robot
            world = worlds.setdefault(robot, EmbeddedWorld(robot))
            obs = world.reset(name, seed=0, variant="standard")
            instructions[name] = world.instruction
            rgb = obs.cameras[world.robot.camera_names[0]].rgb
            height = round(rgb.shape[0] * IMAGE_WIDTH_PX / rgb.shape[1])
            small = cv2.resize(rgb, (IMAGE_WIDTH_PX, height), interpolation=cv2.INTER_AREA)
            path = root / image_path(name)
            cv2.imwrite(str(path), cv2.cvtColor(small, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
            print(f"{path}: {instructions[name]}")
    finally:
        for world in worlds.values():
            world.close()
    return instructions


def replace_table(readme: str, table: str) -> str:
    if TABLE_START not in readme or TABLE_END not in readme:
        raise SystemExit(f"{README}: the markers {TABLE_START!r} and {TABLE_END!r} are missing")
    head, rest = readme.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    return f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}"


def missing(readme: str, root: Path) -> list[str]:
    """Tasks the README's table or the image folder lacks."""
    table = readme.split(TABLE_START, 1)[-1].split(TABLE_END, 1)[0]
    return [n for n in available_tasks() if f"| `{n}` |" not in table or not (root / image_path(n)).is_file()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that every task is in the table")
    args = parser.parse_args(argv)
    readme = README.read_text()
    if args.check:
        absent = missing(readme, README.parent)
        if absent:
            print(f"not in the README's task table (run make tasks-table): {', '.join(absent)}", file=sys.stderr)
            return 1
        return 0
    instructions = render_images(README.parent)
    README.write_text(replace_table(readme, table_markdown(instructions)))
    print(f"{README}: {len(instructions)} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
