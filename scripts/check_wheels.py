"""Check that every supported CPython resolves the whole wheel set `make setup` installs, from PyPI, as binaries.

For each supported version (requires-python in pyproject.toml, via scripts/python_support.py; or --python), pip
resolves, for that CPython on a manylinux x86_64 machine, without installing anything and without that Python here:

  - the ROS 2 Jazzy set (scripts/requirements-ros.txt) together with the project's dependencies and every extra
    (what `pip install -e '.[dev,hardware,cluster,usd]'` brings), in one resolution, as in the venv;
  - the coding-agent CLIs (scripts/requirements-agents.txt), which live in a venv of their own.

``--only-binary=:all:``: a package without a wheel for that CPython fails the check, as it would make a fresh machine
compile (or fail). A dependency that PyPI carries only as an sdist (EmPy, under the ROS wheels) is built once here
into a wheel and accepted if that wheel is pure Python (py3-none-any), since it builds the same on any machine.
pip reads the metadata only (PEP 658), so this takes seconds; ``--download DIR`` then runs
``pip download --no-deps --only-binary=:all: --python-version X.Y --platform ...`` of every resolved wheel.

The machine's pip configuration files and local wheel folders are left out (PIP_CONFIG_FILE=/dev/null,
PIP_FIND_LINKS and PIP_EXTRA_INDEX_URL unset): what counts is what a fresh machine gets from the index.

Usage: python scripts/check_wheels.py [--python 3.12 ...] [--glibc 2.36] [--download DIR] [-v]
Exit status: 0 when every version resolves, 1 when one does not, 2 when the index cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
import python_support

ROOT = Path(__file__).resolve().parent.parent
ROS_REQUIREMENTS = ROOT / "scripts" / "requirements-ros.txt"
AGENT_REQUIREMENTS = ROOT / "scripts" / "requirements-agents.txt"
# The oldest glibc among the tested platforms (Debian 12: 2.36; Debian 13 has 2.41, Ubuntu 24.04 2.39): a wheel
# tagged for a newer glibc would not install there.
DEFAULT_GLIBC_MINOR = 36
# pip (23.x) takes a --platform literally, so a machine's manylinux tags are listed out: manylinux_2_5 up to its glibc
# and the legacy aliases of 2_5, 2_12 and 2_17.
LEGACY_MANYLINUX = ("manylinux1", "manylinux2010", "manylinux2014")
# A pure-Python sdist builds in seconds; one still building after this is compiling, which is a failure anyway.
BUILD_TIMEOUT_S = 120.0
ROUNDS_MAX = 8  # sdist-only dependencies built per round; more than a handful means something else is wrong
# The requirements pip found no candidate for: named after "No matching distribution found for" (a direct one) or
# "depends on" in a ResolutionImpossible report (a dependency of several candidates).
_NO_MATCH_RE = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-]+)")
_DEPENDS_ON_RE = re.compile(r"depends on ([A-Za-z0-9_.\-]+)")
_UNREACHABLE_MARKERS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "NewConnectionError",
)


class IndexUnreachable(RuntimeError):
    """pip could not reach the package index."""


@dataclass(frozen=True)
class Resolution:
    """One requirement group resolved for one CPython: the wheel files, or why it failed."""

    group: str
    python: str
    wheels: tuple[str, ...]
    built_here: tuple[str, ...]  # sdist-only pure-Python dependencies, built into wheels by this script
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def manylinux_platforms(glibc_minor: int, arch: str = "x86_64") -> list[str]:
    """Every manylinux tag a machine with glibc 2.<glibc_minor> accepts."""
    return [f"manylinux_2_{m}_{arch}" for m in range(glibc_minor, 4, -1)] + [f"{t}_{arch}" for t in LEGACY_MANYLINUX]


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a requirements file (comments and blank lines dropped)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def project_requirements() -> list[str]:
    """The project's dependencies and those of every extra (setup_env.sh installs them all)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    return reqs


def pip_env() -> dict[str, str]:
    """The environment for pip: the index a fresh machine sees (no config files, no local wheel folders)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _pip(args: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        env=pip_env(),
        check=False,
        timeout=timeout_s,
    )
    if result.returncode and any(m in result.stderr for m in _UNREACHABLE_MARKERS):
        raise IndexUnreachable(result.stderr.strip().splitlines()[-1])
    return result


def target_args(python: str, glibc_minor: int) -> list[str]:
    """pip options that stand for a CPython <python> machine on manylinux x86_64."""
    args = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for platform in manylinux_platforms(glibc_minor):
        args += ["--platform", platform]
    return args


def build_pure_wheel(requirement: str, into: Path) -> str:
    """Build a wheel of an sdist-only requirement; its file name, or '' if the wheel is not pure Python."""
    before = set(into.glob("*.whl"))
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
    try:
        result = _pip(["wheel", "-q", "--no-deps", "--no-binary", name, "-w", str(into), requirement], BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ""
    new = sorted(set(into.glob("*.whl")) - before)
    if result.returncode or not new:
        return ""
    wheel = new[0].name
    if not wheel.endswith(("-py3-none-any.whl", "-py2.py3-none-any.whl")):
        new[0].unlink()
        return ""
    return wheel


def resolve(group: str, requirements: list[str], python: str, glibc_minor: int, pure_dir: Path) -> Resolution:
    """Resolve ``requirements`` together for CPython ``python``; sdist-only pure dependencies are built on the way."""
    built: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        for _ in range(ROUNDS_MAX):
            # Not -q: pip names the requirements behind a ResolutionImpossible ("X depends on Y") at info level.
            args = ["install", "--dry-run", "--ignore-installed", "--target", str(Path(tmp) / "target")]
            args += [*target_args(python, glibc_minor), "--find-links", str(pure_dir), "--report", str(report)]
            result = _pip(args + requirements)
            if result.returncode == 0:
                data = json.loads(report.read_text(encoding="utf-8"))
                wheels = sorted(item["download_info"]["url"].rsplit("/", 1)[-1] for item in data["install"])
                here = tuple(w for w in wheels if (pure_dir / w).exists())
                return Resolution(group, python, tuple(wheels), here)
            named = _candidates(result.stdout + result.stderr)
            wheel_less = [n for n in named if not has_wheel(n, python, glibc_minor)]
            if not wheel_less:
                return Resolution(group, python, (), tuple(built), _last_error(result.stderr))
            for name in wheel_less:
                wheel = build_pure_wheel(name, pure_dir)
                if not wheel:
                    error = f"no cp{python.replace('.', '')} wheel for {name}, and no pure-Python sdist to build one"
                    return Resolution(group, python, (), tuple(built), error)
                built.append(wheel)
    return Resolution(group, python, (), tuple(built), f"gave up after {ROUNDS_MAX} rounds of sdist-only dependencies")


def _candidates(stderr: str) -> list[str]:
    """The distributions a failed resolution names as having no candidate (in order, once each)."""
    names = _NO_MATCH_RE.findall(stderr) + _DEPENDS_ON_RE.findall(stderr)
    return list(dict.fromkeys(names))


def has_wheel(name: str, python: str, glibc_minor: int) -> bool:
    """Whether the index has any wheel of ``name`` for CPython ``python`` on the target machine (metadata only)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["install", "--dry-run", "--ignore-installed", "--no-deps", "--target", str(Path(tmp) / "t"), "-q"]
        return _pip([*args, *target_args(python, glibc_minor), name]).returncode == 0


def _last_error(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR:")]
    return (errors or stderr.strip().splitlines() or ["pip failed"])[-1]


def download(resolution: Resolution, glibc_minor: int, into: Path) -> subprocess.CompletedProcess[str]:
    """pip download --no-deps of every wheel a resolution found on the index (the ones built here excluded)."""
    pins = []
    for wheel in resolution.wheels:
        if wheel in resolution.built_here:
            continue
        name, version = wheel.split("-")[:2]
        pins.append(f"{name}=={version}")
    args = ["download", "-q", "--no-deps", *target_args(resolution.python, glibc_minor), "-d", str(into), *pins]
    return _pip(args)


def summary(resolution: Resolution) -> str:
    """One line: how many wheels, how many compiled for this CPython, which were built here."""
    if not resolution.ok:
        return f"Python {resolution.python} {resolution.group}: FAILED: {resolution.error}"
    tag = f"-cp{resolution.python.replace('.', '')}-"
    compiled = sum(tag in w for w in resolution.wheels)
    abi3 = sum("-abi3-" in w for w in resolution.wheels)
    line = (
        f"Python {resolution.python} {resolution.group}: {len(resolution.wheels)} wheels resolved "
        f"({compiled} built for {tag.strip('-')}, {abi3} abi3, {len(resolution.wheels) - compiled - abi3} other)"
    )
    if resolution.built_here:
        line += f"; sdist-only, pure Python, built here: {', '.join(resolution.built_here)}"
    return line


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    supported = [f"3.{m}" for m in python_support.supported_minors((ROOT / "pyproject.toml").read_text())]
    parser.add_argument("--python", nargs="+", default=supported, help=f"versions (default: {' '.join(supported)})")
    parser.add_argument("--glibc", type=int, default=DEFAULT_GLIBC_MINOR, help="glibc 2.N of the target machine: N")
    parser.add_argument("--group", choices=("ros+project", "agents"), action="append", help="only these groups")
    parser.add_argument("--download", type=Path, help="then pip download every resolved wheel into DIR/cpXY")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every wheel")
    args = parser.parse_args(argv)

    groups = {
        "ros+project": requirement_lines(ROS_REQUIREMENTS) + project_requirements(),
        "agents": requirement_lines(AGENT_REQUIREMENTS),
    }
    chosen = args.group or list(groups)
    failed = False
    with tempfile.TemporaryDirectory() as pure:
        for python in args.python:
            for group in chosen:
                try:
                    resolution = resolve(group, groups[group], python, args.glibc, Path(pure))
                except IndexUnreachable as exc:
                    print(f"check_wheels: the package index cannot be reached: {exc}")
                    return 2
                print(f"check_wheels: {summary(resolution)}", flush=True)
                failed |= not resolution.ok
                if args.verbose:
                    for wheel in resolution.wheels:
                        print(f"  {wheel}")
                if args.download and resolution.ok:
                    into = args.download / f"cp{python.replace('.', '')}"
                    result = download(resolution, args.glibc, into)
                    got = len(list(into.glob("*.whl"))) if into.is_dir() else 0
                    state = "ok" if result.returncode == 0 else f"FAILED: {_last_error(result.stderr)}"
                    print(f"check_wheels: Python {python} {group}: pip download --no-deps: {state} ({got} in {into})")
                    failed |= result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
