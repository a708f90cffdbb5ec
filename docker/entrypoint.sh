#!/usr/bin/env bash
# Entrypoint of the agent_bringup image (docker/Dockerfile installs it as /usr/local/bin/robodojo-entrypoint).
#
# Executed: sets up ROS 2 Jazzy, the colcon workspace /ws and the venv /opt/venv, then execs its arguments
#   (default: ros2 launch agent_bringup robodojo.launch.py rviz:=false).
# Sourced (root's ~/.bashrc does, for `docker exec -it ... bash`): sets up the same environment only.

robodojo_env() {
  # ROS and colcon setup scripts read unset variables, so they fail under `set -u` (shared/ROS_ON_PYPI.md, 4).
  local restore_u=0
  if [[ $- == *u* ]]; then
    restore_u=1
    set +u
  fi
  # shellcheck source=/dev/null
  source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
  # shellcheck source=/dev/null
  source /ws/install/setup.bash
  # The venv's python3 comes first on PATH: the node executables start with `#!/usr/bin/env python3` and so run
  # with mujoco, opencv and openai importable; rclpy comes from /opt/ros through --system-site-packages.
  # shellcheck source=/dev/null
  source /opt/venv/bin/activate
  if ((restore_u)); then
    set -u
  fi
  # EGL by default; MUJOCO_GL=osmesa is the fallback; an empty MUJOCO_GL lets robodojo probe EGL, then OSMesa.
  export MUJOCO_GL="${MUJOCO_GL-egl}"
}

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  robodojo_env
  return 0
fi

# No `set -e` around the setup scripts: they are not written for it (nothing but the exec follows anyway).
robodojo_env
if (($# == 0)); then
  set -- bash
fi
exec "$@"
