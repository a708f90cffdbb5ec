#!/usr/bin/env bash
# Set up everything agent_bringup needs on a Debian/Ubuntu machine, idempotently:
#   (a) Debian packages for headless MuJoCo rendering (EGL, OSMesa) and for building the ROS package with colcon,
#   (b) .venv on the machine's own CPython, the distribution's /usr/bin/python3 first, when requires-python in
#       pyproject.toml allows its version (scripts/python_support.py says which do), or, when a ROS 2 install is
#       sourced, a venv with --system-site-packages on that install's python3,
#   (c) the project itself, editable, with the dev and hardware extras (franky-control, franky-sim, arx5-interface:
#       test/hardware),
#   (d) the ROS 2 Jazzy wheels pinned in scripts/requirements-ros.txt (pip picks the builds for the venv's CPython),
#       then the fix of their CMake include paths (scripts/fix_ros_wheels.py, which reads the builder's paths from
#       the wheels).
# A stamp in .venv keyed on pyproject.toml, these scripts and the interpreter makes a re-run take about a second.
#
# Environment knobs:
#   VENV=path         venv location (default: <repo>/.venv)
#   PYTHON=python3.x  interpreter for a new venv (default: the first supported of /usr/bin/python3, python3 and the
#                     supported python3.X on PATH, newest first)
#   FORCE=1           ignore the stamp and redo steps (b)-(d)
#   SKIP_APT=1        do not check or install Debian packages
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
ROOT="$(cd "$(dirname "$SELF")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
STAMP="$VENV/.setup-stamp"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 DEBIAN_FRONTEND=noninteractive

say() { printf 'setup_env: %s\n' "$*"; }
die() { printf 'setup_env: error: %s\n' "$*" >&2; exit 1; }

# EGL + OSMesa offscreen rendering for MuJoCo (PyOpenGL loads libEGL/libOpenGL or libOSMesa; Mesa's llvmpipe
# renders on the CPU), and the tool chain colcon/ament_cmake/rosidl need.
APT_PACKAGES=(libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 libopengl0 libosmesa6 cmake g++ python3-dev)
# The campaign report's browser test opens its HTML in headless Chromium.
APT_PACKAGES+=(chromium)
# The shell harness runs the acting agent's commands in a bubblewrap sandbox (robodojo.agents.shell.sandbox).
APT_PACKAGES+=(bubblewrap)

ROS_REQUIREMENTS="$ROOT/scripts/requirements-ros.txt"
AGENT_REQUIREMENTS="$ROOT/scripts/requirements-agents.txt"

# pip, minus the noise of the machine's local indexes that lack a project ("Location ... is ignored").
pip_install() {
  "$VENV/bin/python" -m pip install -q "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
}

# --- which CPython: pyproject's requires-python says which minors are supported (scripts/python_support.py) -------
SUPPORT="$ROOT/scripts/python_support.py"
# Exit 0 if the interpreter $1 runs and is a supported CPython.
supported() { "$1" "$SUPPORT" check >/dev/null 2>&1 </dev/null; }
# The one line that says why the interpreter $1 does not do, and how to get one that does.
unsupported_line() {
  local line
  line="$("$1" "$SUPPORT" check 2>/dev/null </dev/null)" || true
  [[ -n "$line" ]] || line="$1 is too old to run scripts/python_support.py: this project needs CPython \
$(sed -n 's/^requires-python *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml") (pyproject.toml's requires-python)"
  printf '%s\n' "$line"
}

# The interpreter for a new venv: PYTHON if set, else the distribution's python3 (/usr/bin/python3), else python3 on
# PATH, else python3.X on PATH for each supported minor, newest first. Sets PY (empty if none is supported) and PY_WHY.
pick_python() {
  PY="" PY_WHY=""
  local cand path minors=""
  if [[ -n "${PYTHON:-}" ]]; then
    path="$(command -v "$PYTHON" || true)"
    if [[ -n "$path" ]] && supported "$path"; then PY="$path" PY_WHY="PYTHON=$PYTHON"; fi
    return 0
  fi
  for cand in /usr/bin/python3 python3; do  # any python3 recent enough to read the list
    path="$(command -v "$cand" || true)"
    [[ -z "$path" ]] || minors="$("$path" "$SUPPORT" list 2>/dev/null </dev/null || true)"
    [[ -z "$minors" ]] || break
  done
  for cand in /usr/bin/python3 python3 $(for v in $minors; do echo "python$v"; done | sort -rV); do
    path="$(command -v "$cand" || true)"
    if [[ -n "$path" ]] && supported "$path"; then
      PY="$path"
      if [[ "$cand" == /usr/bin/python3 ]]; then PY_WHY="the distribution's python3"; else PY_WHY="$cand on PATH"; fi
      return 0
    fi
  done
}

# --- mode: a sourced ROS 2 install (its rclpy, system site packages) or the PyPI wheels -----------------------
ROS_PYTHON=""
if [[ -n "${ROS_DISTRO:-}" ]]; then
  for cand in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [[ -n "$cand" && -x "$cand" ]] && "$cand" -c 'import rclpy' >/dev/null 2>&1 </dev/null; then
      ROS_PYTHON="$cand"
      break
    fi
  done
fi
if [[ -n "$ROS_PYTHON" ]]; then MODE="ros-$ROS_DISTRO"; else MODE="wheels"; fi

# --- (a) Debian packages -------------------------------------------------------------------------------------
apt_step() {
  local pkgs=("${APT_PACKAGES[@]}") missing=() p
  # A new venv needs ensurepip (Debian's python3.X-venv) and, for colcon, the interpreter's headers (python3.X-dev)
  # when the interpreter is the distribution's; a minimal Debian root has no Python at all until python3-dev (above)
  # brings the distribution's default one, for which python3-venv is then needed.
  if [[ ! -x "$VENV/bin/python" ]]; then
    local py="$ROS_PYTHON" real ver
    if [[ -z "$py" ]]; then
      pick_python
      py="$PY"
    fi
    real="$(readlink -f "${py:-/nonexistent}")"
    if [[ -z "$py" ]]; then
      pkgs+=(python3-venv)
    elif [[ "$real" == /usr/bin/python3.* ]]; then
      ver="${real#/usr/bin/python}"
      "$py" -c 'import ensurepip' >/dev/null 2>&1 </dev/null || pkgs+=("python$ver-venv")
      "$py" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
        >/dev/null 2>&1 </dev/null || pkgs+=("python$ver-dev")
    fi
  fi
  if [[ "${SKIP_APT:-0}" == 1 ]]; then return 0; fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "no dpkg on this machine: install the equivalents of ${pkgs[*]} yourself"
    return 0
  fi
  for p in "${pkgs[@]}"; do
    if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != installed ]]; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then return 0; fi
  local sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install these Debian packages first: ${missing[*]}"
    sudo=(sudo -n)
  fi
  say "installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq </dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    </dev/null 2>&1 >/dev/null | { grep -v '^debconf: delaying package configuration' >&2 || true; }
}
apt_step

# --- stamp: skip (b)-(d) when nothing they depend on changed ----------------------------------------------------
stamp_key() {
  {
    printf 'mode=%s\n' "$MODE"
    cat pyproject.toml "$SELF" scripts/fix_ros_wheels.py "$SUPPORT" "$ROS_REQUIREMENTS" "$AGENT_REQUIREMENTS"
  } | sha256sum | cut -d' ' -f1
}
KEY="$(stamp_key)"
if [[ "${FORCE:-0}" != 1 && -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" ]]; then
  say "up to date ($MODE, $VENV)"
  exit 0
fi

# --- (b) the venv ----------------------------------------------------------------------------------------------
describe_python() { "$1" -c 'import sys; print("CPython %s, %s" % (sys.version.split()[0], sys.executable))' </dev/null; }
if [[ -x "$VENV/bin/python" ]]; then
  supported "$VENV/bin/python" || die "$VENV: $(unsupported_line "$VENV/bin/python") (remove $VENV and run again)"
  say "using existing venv $VENV ($(describe_python "$VENV/bin/python"), $MODE)"
elif [[ -n "$ROS_PYTHON" ]]; then
  supported "$ROS_PYTHON" || die "the sourced ROS 2 $ROS_DISTRO's $(unsupported_line "$ROS_PYTHON")"
  say "ROS 2 $ROS_DISTRO is sourced: creating $VENV from $ROS_PYTHON ($(describe_python "$ROS_PYTHON")) with" \
    "--system-site-packages"
  "$ROS_PYTHON" -m venv --system-site-packages "$VENV" </dev/null
else
  pick_python
  if [[ -z "$PY" ]]; then
    if [[ -n "${PYTHON:-}" ]]; then
      command -v "$PYTHON" >/dev/null 2>&1 || die "PYTHON=$PYTHON not found"
      die "$(unsupported_line "$PYTHON")"
    fi
    shown="$(command -v /usr/bin/python3 python3 | head -1)"
    [[ -n "$shown" ]] || die "no python3 on this machine: install CPython (requires-python in pyproject.toml says which)"
    die "$(unsupported_line "$shown")"
  fi
  say "creating $VENV with $(describe_python "$PY") ($PY_WHY)"
  "$PY" -m venv "$VENV" </dev/null
fi

# --- (c) the project, editable, with dev and hardware extras ---------------------------------------------------------
say "pip install -e '.[dev,hardware,cluster,usd]'"
pip_install -e "${ROOT}[dev,hardware,cluster,usd]"

# --- (d) the ROS 2 Jazzy wheels and the fix of their CMake exports --------------------------------------------------
if [[ -n "$ROS_PYTHON" ]]; then
  say "skipping the ROS wheels: using rclpy from the sourced ROS 2 $ROS_DISTRO"
else
  say "pip install the ROS 2 Jazzy wheels (scripts/requirements-ros.txt, builds for $(describe_python "$VENV/bin/python"))"
  pip_install -r "$ROS_REQUIREMENTS"
  "$VENV/bin/python" "$ROOT/scripts/fix_ros_wheels.py" "$VENV" </dev/null | sed 's/^/setup_env: /'
fi

# --- (e) coding-agent CLIs for the shell harness, each in a venv of its own (their pins stay out of the project's) --
AGENT_VENV="$VENV/agents/mini-swe-agent"
if [[ ! -x "$AGENT_VENV/bin/python" ]]; then
  say "creating $AGENT_VENV (mini-swe-agent, the shell harness's reference coding agent)"
  "$("$VENV/bin/python" -c 'import sys; print(sys.base_prefix)' </dev/null)/bin/python3" -m venv "$AGENT_VENV" </dev/null
fi
say "pip install scripts/requirements-agents.txt (mini-swe-agent) into $AGENT_VENV"
"$AGENT_VENV/bin/python" -m pip install -q -r "$AGENT_REQUIREMENTS" 2>&1 |
  { grep -v 'is ignored: it is neither a file nor a directory' || true; }

printf '%s\n' "$KEY" >"$STAMP"
if [[ -n "$ROS_PYTHON" ]]; then
  say "done ($MODE). Use: source $VENV/bin/activate"
else
  say "done ($MODE). Use: source $VENV/bin/activate; for colcon and nodes also: export AMENT_PREFIX_PATH=\$VIRTUAL_ENV"
fi
