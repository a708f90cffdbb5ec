"""Which CPython versions this project supports, read from the one place that says so: pyproject's requires-python.

The ROS 2 Jazzy wheels on PyPI (shared/ROS_ON_PYPI.md) are built for a few CPython minors; ``requires-python`` in
pyproject.toml names the ones this project is tested on, and everything else asks this script: setup_env.sh (is this
interpreter usable? which ones are?), check_wheels.py (which versions to resolve the wheel set for) and the test that
holds mypy's ``python_version`` to the lowest supported one.

It runs on whatever python3 a machine has (an unsupported one included, to say so), so it uses the standard library
only and no syntax newer than Python 3.7.

Usage:
  python3 scripts/python_support.py check      exit 0 if the running interpreter is supported, else 1 and one line
  python3 scripts/python_support.py list       the supported minors, e.g. "3.11 3.12 3.13"
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# requires-python is written as a lower and an upper bound on minor versions (">=3.11,<3.14"); the wheels exist per
# minor, so a patch-level bound would mean nothing here.
_REQUIRES_RE = re.compile(r'^requires-python\s*=\s*"([^"]*)"', re.M)
_CLAUSE_RE = re.compile(r"^\s*(>=|<)\s*3\.(\d+)\s*$")
# How a machine without a supported Python gets one (one line: setup_env.sh prints it after the supported list).
HOW_TO_GET_ONE = (
    "on Debian 12 (3.11), Debian 13 (3.13) and Ubuntu 24.04 (3.12) the distribution's python3 is one: "
    "'sudo apt-get install python3 python3-venv python3-dev'; on Ubuntu 22.04: "
    "'sudo apt-get install python3.11 python3.11-venv python3.11-dev' and PYTHON=python3.11 make setup"
)


def requires_python(pyproject_text: str) -> str:
    """The requires-python string of pyproject.toml's [project] table."""
    match = _REQUIRES_RE.search(pyproject_text)
    if not match:
        raise ValueError("pyproject.toml has no requires-python")
    return match.group(1)


def supported_minors(pyproject_text: str) -> list[int]:
    """The supported Python 3 minor versions, from a requires-python of the form '>=3.A,<3.B'."""
    spec = requires_python(pyproject_text)
    low = high = None
    for clause in spec.split(","):
        match = _CLAUSE_RE.match(clause)
        if not match:
            raise ValueError(f"requires-python {spec!r}: expected '>=3.A,<3.B' (clause {clause.strip()!r})")
        if match.group(1) == ">=":
            low = int(match.group(2))
        else:
            high = int(match.group(2))
    if low is None or high is None or high <= low:
        raise ValueError(f"requires-python {spec!r}: expected '>=3.A,<3.B' with A < B")
    return list(range(low, high))


def describe(minors: list[int]) -> str:
    """'3.11, 3.12 or 3.13'."""
    names = [f"3.{m}" for m in minors]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def main(argv: list[str]) -> int:
    minors = supported_minors(PYPROJECT.read_text(encoding="utf-8"))
    command = argv[0] if argv else "check"
    if command == "list":
        print(" ".join(f"3.{m}" for m in minors))
        return 0
    if command == "check":
        version = sys.version_info
        if sys.implementation.name == "cpython" and version[0] == 3 and version[1] in minors:
            return 0
        print(
            f"Python {version[0]}.{version[1]} ({sys.executable}) is not supported: this project needs CPython "
            f"{describe(minors)} (the ROS 2 Jazzy wheels on PyPI); {HOW_TO_GET_ONE}"
        )
        return 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
