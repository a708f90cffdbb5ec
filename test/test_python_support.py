"""The supported CPython versions are written once (pyproject's requires-python) and everything else follows them:
scripts/python_support.py, setup_env.sh (no version of its own), mypy's target, and fix_ros_wheels.py, which reads
the wheel builder's Python from the wheels' CMake files instead of naming it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import fix_ros_wheels  # noqa: E402  (scripts are not a package)
import python_support  # noqa: E402

PYPROJECT = (ROOT / "pyproject.toml").read_text()
# A CMake export as the cp312 wheels ship it (the numpy folder starts with the builder's prefix too).
EXPORT_TEMPLATE = """set_target_properties(std_msgs::std_msgs__rosidl_generator_py PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "/opt/python/{tag}/include/python{ver};\
/opt/python/{tag}/lib/python{ver}/site-packages/numpy/_core/include"
)
"""


def test_the_supported_versions_come_from_requires_python():
    assert python_support.requires_python(PYPROJECT) == tomllib.loads(PYPROJECT)["project"]["requires-python"]
    minors = python_support.supported_minors(PYPROJECT)
    assert 11 in minors and 13 in minors and minors == sorted(minors)
    assert python_support.describe([11, 12, 13]) == "3.11, 3.12 or 3.13"


@pytest.mark.parametrize("spec", [">=3.11", "<3.14", ">=3.11,<3.11", "~=3.11", ">=3.11.2,<3.14"])
def test_a_requires_python_it_cannot_read_is_an_error(spec):
    with pytest.raises(ValueError, match="requires-python"):
        python_support.supported_minors(f'requires-python = "{spec}"\n')


def test_mypy_checks_the_lowest_supported_version():
    low = python_support.supported_minors(PYPROJECT)[0]
    assert tomllib.loads(PYPROJECT)["tool"]["mypy"]["python_version"] == f"3.{low}"


def test_setup_env_names_no_python_version_of_its_own():
    text = (ROOT / "scripts" / "setup_env.sh").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"3\.1\d|cp31\d", code), re.findall(r".*(?:3\.1\d|cp31\d).*", code)


def test_the_check_accepts_this_interpreter():
    script = str(ROOT / "scripts" / "python_support.py")
    ok = subprocess.run([sys.executable, script, "check"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and ok.stdout == ""
    listed = subprocess.run([sys.executable, script, "list"], capture_output=True, text=True, check=True).stdout.split()
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in listed


def test_the_check_refuses_another_version_in_one_line_with_the_way_out(tmp_path):
    """The script as shipped, next to a pyproject.toml whose range leaves this interpreter out."""
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "python_support.py"
    script.write_text((ROOT / "scripts" / "python_support.py").read_text())
    this = sys.version_info[1]
    spec = f">=3.{this + 1},<3.{this + 3}"
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.replace(python_support.requires_python(PYPROJECT), spec))

    refused = subprocess.run([sys.executable, str(script), "check"], capture_output=True, text=True, check=False)

    assert refused.returncode == 1
    assert refused.stdout.count("\n") == 1, refused.stdout
    assert f"Python 3.{this} ({sys.executable}) is not supported" in refused.stdout
    assert f"CPython 3.{this + 1} or 3.{this + 2}" in refused.stdout
    assert "apt-get install" in refused.stdout and "Debian" in refused.stdout and "Ubuntu" in refused.stdout


@pytest.mark.parametrize(("tag", "ver"), [("cp311-cp311", "3.11"), ("cp312-cp312", "3.12"), ("cp313-cp313", "3.13")])
def test_fix_ros_wheels_finds_the_builder_in_the_files(tmp_path, tag, ver):
    cmake = tmp_path / "share" / "std_msgs" / "cmake" / "export_std_msgs__rosidl_generator_pyExport.cmake"
    cmake.parent.mkdir(parents=True)
    cmake.write_text(EXPORT_TEMPLATE.format(tag=tag, ver=ver))
    untouched = tmp_path / "share" / "std_msgs" / "cmake" / "std_msgsConfig.cmake"
    untouched.write_text("set(std_msgs_FOUND TRUE)\n")

    result = fix_ros_wheels.fix(tmp_path, "/venv/include/python", "/venv/numpy/include")

    assert result.changed_files == 1 and result.builder_tags == (tag,) and result.leftover_files == ()
    assert '"/venv/include/python;/venv/numpy/include"' in cmake.read_text()
    assert untouched.read_text() == "set(std_msgs_FOUND TRUE)\n"
    again = fix_ros_wheels.fix(tmp_path, "/venv/include/python", "/venv/numpy/include")
    assert again.changed_files == 0 and again.builder_tags == ()


def test_fix_ros_wheels_reports_a_builder_path_it_does_not_know(tmp_path):
    cmake = tmp_path / "share" / "x" / "cmake" / "x.cmake"
    cmake.parent.mkdir(parents=True)
    cmake.write_text('set(X "/opt/python/cp312-cp312/lib/libpython3.12.so")\n')
    result = fix_ros_wheels.fix(tmp_path, "/i", "/n")
    assert result.changed_files == 0 and result.leftover_files == (cmake,)
