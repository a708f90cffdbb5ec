"""robo_shell: everything of the shell harness that runs inside the acting agent's sandbox (seed 003, HexaShell).

The acting agent is a coding agent that only runs shell commands. It gets one executable, ``robo`` (this package's
``__main__``), which sends each base command over the robot's command route (a Unix socket bound into the sandbox)
to the harness in the episode's process and prints the one JSON record it answers, and a folder ``obs/`` the
harness refreshes on ``robo obs``. Tools (:mod:`robo_shell.tools`) add sub-commands; they run here, in the sandbox,
over :class:`robo_shell.api.EpisodeAPI`.

Nothing here imports the simulator, the task code or the motion server: the sandbox holds only this package, the
agent-side perception of ``robodojo`` (cameras, back-projection, triangulation, table plane, segmentation) and
numpy/OpenCV. The harness (``robodojo.agents.shell``) runs the commands; it translates and never decides.
"""

from __future__ import annotations

#: environment variables the sandbox sets for ``robo`` and for tools
ROUTE_ENV = "ROBO_ROUTE"  # path of the command route's Unix socket
OBS_ENV = "ROBO_OBS"  # the obs/ folder
TOOLS_ENV = "ROBO_TOOLS"  # os.pathsep-separated folders of tool folders, searched in order (task tools, shared pool)
ENABLED_ENV = "ROBO_ENABLED_TOOLS"  # the enabled-tools file (one tool name a line)

#: the obs/ folder's files beside the camera images (written by the harness, read by robo_shell.api)
CAMERAS_FILE = "cameras.json"
STATE_FILE = "state.json"
