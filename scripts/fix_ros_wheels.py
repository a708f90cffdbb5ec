"""Repair the CMake exports of the ROS 2 Jazzy wheels from PyPI (see shared/ROS_ON_PYPI.md, defect 1).

The wheels were built in a manylinux container, and the exported CMake files under ``<prefix>/share/*/cmake``
still name that container's Python include folder and numpy include folder.  CMake then rejects the imported
``*__rosidl_generator_py`` targets ("non-existent path") as soon as a package builds its own interfaces.

This rewrites the two builder prefixes in place to the include folders of the Python that runs this script
(run it with the venv's python).  It is idempotent: a second run finds nothing to change.

Usage: python scripts/fix_ros_wheels.py [PREFIX]    (PREFIX defaults to sys.prefix, i.e. the venv)
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

BUILDER_PREFIX = "/opt/python/cp311-cp311"
BUILDER_NUMPY_INCLUDES = (
    f"{BUILDER_PREFIX}/lib/python3.11/site-packages/numpy/_core/include",
    f"{BUILDER_PREFIX}/lib/python3.11/site-packages/numpy/core/include",
)
BUILDER_PY_INCLUDE = f"{BUILDER_PREFIX}/include/python3.11"


def replacements() -> list[tuple[str, str]]:
    import numpy  # imported here so that --help works without numpy

    py_include = sysconfig.get_paths()["include"]
    np_include = numpy.get_include()
    # Longest first: the numpy folders start with the builder prefix too.
    return [(old, np_include) for old in BUILDER_NUMPY_INCLUDES] + [(BUILDER_PY_INCLUDE, py_include)]


def fix(prefix: Path) -> int:
    """Rewrite the CMake files below ``prefix/share/*/cmake``; return how many files changed."""
    pairs = replacements()
    changed = 0
    for path in sorted(prefix.glob("share/*/cmake/*.cmake")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if BUILDER_PREFIX not in text:
            continue
        new = text
        for old, repl in pairs:
            new = new.replace(old, repl)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    prefix = Path(argv[0]) if argv else Path(sys.prefix)
    changed = fix(prefix)
    print(f"fix_ros_wheels: rewrote include paths in {changed} CMake file(s) under {prefix}/share")
    missing = [p for _, p in replacements() if not Path(p).is_dir()]
    if missing:
        print(f"fix_ros_wheels: warning: include folder(s) not found: {', '.join(sorted(set(missing)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
