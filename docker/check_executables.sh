#!/usr/bin/env bash
# Fail unless `ros2 pkg executables agent_bringup` lists every node launcher that CMakeLists.txt installs
# (ROBODOJO_NODES). The command itself exits 0 with empty output when the launchers lack the execute bit, so its
# exit status alone proves nothing. Run with ROS and the workspace sourced (the Dockerfile runs it via the entrypoint).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGE=agent_bringup

# the set() may wrap over several lines: read the file as one line
nodes="$(tr '\n' ' ' <"$ROOT/CMakeLists.txt" | sed -n 's/.*set(ROBODOJO_NODES[[:space:]]\+\([^)]*\)).*/\1/p')"
if [[ -z "$nodes" ]]; then
  echo "check_executables: no set(ROBODOJO_NODES ...) line in $ROOT/CMakeLists.txt" >&2
  exit 1
fi

listed="$(ros2 pkg executables "$PACKAGE")"
missing=()
for node in $nodes; do
  # ros2 pkg executables prints "<package> <executable>" per line
  grep -qxF "$PACKAGE $node" <<<"$listed" || missing+=("$node")
done
if ((${#missing[@]})); then
  echo "check_executables: ros2 pkg executables $PACKAGE does not list: ${missing[*]} (it printed: ${listed:-nothing})" >&2
  exit 1
fi
echo "check_executables: ros2 pkg executables $PACKAGE lists $nodes"
