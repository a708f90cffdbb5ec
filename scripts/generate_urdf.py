#!/usr/bin/env python3
"""Regenerate the scene URDFs in urdf/ from the arm URDFs and config/robots/*.yaml (`make urdf`)."""

from __future__ import annotations

from robodojo.robots.compose import compose_scene_urdf
from robodojo.robots.config import available_robots, load_robot_config


def main() -> None:
    for name in available_robots():
        robot = load_robot_config(name)
        text = compose_scene_urdf(robot)
        changed = not robot.scene_urdf.is_file() or robot.scene_urdf.read_text() != text
        robot.scene_urdf.write_text(text)
        print(f"{robot.scene_urdf}: {'written' if changed else 'up to date'}")


if __name__ == "__main__":
    main()
