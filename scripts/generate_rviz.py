#!/usr/bin/env python3
"""Regenerate rviz/<robot>.rviz for every robot (config/robots/*.yaml) from robodojo.nodes.rviz_config.

    .venv/bin/python scripts/generate_rviz.py [--check]

``--check`` writes nothing and exits 1 naming the files that differ (a test runs the same comparison).
"""

from __future__ import annotations

import argparse
import sys

from robodojo import PACKAGE_ROOT
from robodojo.nodes.rviz_config import render
from robodojo.robots.config import available_robots, load_robot_config

RVIZ_DIR = PACKAGE_ROOT / "rviz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file is out of date")
    args = parser.parse_args(argv)
    stale = []
    for robot in available_robots():
        path = RVIZ_DIR / f"{robot}.rviz"
        text = render(load_robot_config(robot))
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
            print(f"wrote {path.relative_to(PACKAGE_ROOT)}")
    if args.check and stale:
        print("out of date: " + ", ".join(str(p.relative_to(PACKAGE_ROOT)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
