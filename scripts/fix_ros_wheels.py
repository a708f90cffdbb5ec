"""Repair the CMake exports of the ROS 2 Jazzy wheels from PyPI (see shared/ROS_ON_PYPI.md, defect 1).

The wheels were built in a manylinux container, and the exported CMake files under ``<prefix>/share/*/cmake``
still name that container's Python include folder and numpy include folder
(``/opt/python/cp313-cp313/include/python3.13`` and ``.../site-packages/numpy/_core/include`` for the cp313 builds).
CMake then rejects the imported ``*__rosidl_generator_py`` targets ("non-existent path") as soon as a package builds
its own interfaces.

This finds the builder's paths in the files themselves (whatever CPython the wheels were built for) and rewrites them
in place to the include folders of the Python that runs this script (run it with the venv's python). It is
idempotent: a second run finds nothing to change.

Usage: python scripts/fix_ros_wheels.py [PREFIX]    (PREFIX defaults to sys.prefix, i.e. the venv)
"""

from __future__ import annotations

import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# manylinux images keep each CPython under /opt/python/<tag>, e.g. /opt/python/cp313-cp313; the exports name its
# include folder and the numpy headers installed into it ("_core" since numpy 2, "core" before).
BUILDER_ROOT = "/opt/python/"
_TAG = r"cp3\d+-cp3\d+t?"
BUILDER_NUMPY_INCLUDE_RE = re.compile(
    rf"/opt/python/(?P<tag>{_TAG})/lib/python3\.\d+t?/site-packages/numpy/(?:_core|core)/include"
)
BUILDER_PY_INCLUDE_RE = re.compile(rf"/opt/python/(?P<tag>{_TAG})/include/python3\.\d+t?")


@dataclass(frozen=True)
class FixResult:
    """What a run changed: files rewritten, builder tags found (e.g. cp313-cp313), files still naming the builder."""

    changed_files: int
    builder_tags: tuple[str, ...]
    leftover_files: tuple[Path, ...]


def include_dirs() -> tuple[str, str]:
    """This interpreter's Python include folder and numpy's include folder."""
    import numpy  # imported here so that --help works without numpy

    return sysconfig.get_paths()["include"], numpy.get_include()


def rewrite(text: str, py_include: str, np_include: str) -> tuple[str, set[str]]:
    """``text`` with the builder's include folders replaced, and the builder tags it named."""
    tags = {m["tag"] for m in BUILDER_NUMPY_INCLUDE_RE.finditer(text)} | {
        m["tag"] for m in BUILDER_PY_INCLUDE_RE.finditer(text)
    }
    # numpy first: its folder starts with the builder prefix too, and the Python include pattern must not eat it.
    new = BUILDER_NUMPY_INCLUDE_RE.sub(lambda _: np_include, text)
    new = BUILDER_PY_INCLUDE_RE.sub(lambda _: py_include, new)
    return new, tags


def fix(prefix: Path, py_include: str, np_include: str) -> FixResult:
    """Rewrite the CMake files below ``prefix/share/*/cmake``."""
    changed = 0
    tags: set[str] = set()
    leftovers: list[Path] = []
    for path in sorted(prefix.glob("share/*/cmake/*.cmake")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if BUILDER_ROOT not in text:
            continue
        new, found = rewrite(text, py_include, np_include)
        tags |= found
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
        if BUILDER_ROOT in new:
            leftovers.append(path)
    return FixResult(changed, tuple(sorted(tags)), tuple(leftovers))


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    prefix = Path(argv[0]) if argv else Path(sys.prefix)
    py_include, np_include = include_dirs()
    result = fix(prefix, py_include, np_include)
    built_for = ", ".join(f"/opt/python/{t}" for t in result.builder_tags) or "nothing left to fix"
    print(
        f"fix_ros_wheels: rewrote include paths in {result.changed_files} CMake file(s) under {prefix}/share "
        f"(builder: {built_for})"
    )
    this_tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    foreign = [t for t in result.builder_tags if not t.startswith(f"{this_tag}-")]
    if foreign:
        print(
            f"fix_ros_wheels: warning: wheels built for {', '.join(foreign)} in a {this_tag} environment: "
            "reinstall them with this interpreter's pip"
        )
    if result.leftover_files:
        names = ", ".join(str(p) for p in result.leftover_files[:3])
        print(f"fix_ros_wheels: warning: {len(result.leftover_files)} file(s) still name {BUILDER_ROOT}...: {names}")
    missing = [p for p in (py_include, np_include) if not Path(p).is_dir()]
    if missing:
        print(f"fix_ros_wheels: warning: include folder(s) not found: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
