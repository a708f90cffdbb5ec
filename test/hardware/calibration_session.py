"""The calibration session of docs/calibration.md as an operator runs it on a real-robot test graph (test_fr3_graph,
test_x5_graph): `robodojo calibrate` processes against the graph, their output kept, any failure a test failure.

The wrist camera by calibration motions around the board fr3_world / x5_world show (``--calibration-board``), the
head from the board the wrist placed, both with the intrinsics the graph published (the drivers' CameraInfo or the
file's, as the rig's camera inputs say), then `check`; files in ``<cwd>/cameras``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.geometry import rotation_angle_between
from robodojo.perception.calibrate.settings import load_calibration_settings
from robodojo.perception.calibrate.sim_board import calibration_board_pose

STEP_TIMEOUT_S = 600.0
REST_TIMEOUT_S = 30.0  # the test worlds' arms settle at a fraction of real time on a loaded 2-core machine


def board_center(robot: str) -> list[str]:
    """The board's centre as `--look-at` takes it (the operator's tape measure)."""
    width, height = load_calibration_settings().board.size_m
    B = calibration_board_pose(robot)
    return [str(v) for v in B[:3, :3] @ np.array([width / 2, height / 2, 0.0]) + B[:3, 3]]


def calibrate(env: dict[str, str], cwd: Path, *args: str) -> str:
    """`robodojo calibrate ...` against the graph; its output (an AssertionError with it on an exit != 0)."""
    out = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "calibrate", *args], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    text = f"$ robodojo calibrate {' '.join(args)}\n{out.stdout}{out.stderr}"
    assert out.returncode == 0, text
    return text


#: episode_node's step_limit in graphs that run a calibration session: its slowed motions (motions.speed_scale) play
#: more points than a task's budget (docs/calibration.md); the agent episodes after it do not come near it.
STEP_LIMIT = 5000
SESSION_SPEED_SCALE = 1.0


def run_session(env: dict[str, str], cwd: Path, robot: str, wrists: tuple[str, ...], views: int | None = None) -> str:
    """capture --move and hand-eye for each of ``wrists``, capture head, head --board-from (the first wrist's
    capture), check of them all; ``views``: the first N of the configured calibration views (None: all). The
    commands' output."""
    config = yaml.safe_load((PACKAGE_ROOT / "config" / "calibration.yaml").read_text())
    config["motions"]["views_deg"] = config["motions"]["views_deg"][:views]
    config["capture"]["rest_timeout_s"] = REST_TIMEOUT_S
    # The robot's full planned speed: the shipped slow motions cost these sessions 126 s more in make test; they are
    # played on the MuJoCo graph (test/ros/test_calibrate_graph.py) and timed in test_planner.py.
    config["motions"]["speed_scale"] = SESSION_SPEED_SCALE
    (cwd / "calibration.yaml").write_text(yaml.safe_dump(config))
    center = board_center(robot)
    common = ["--config", "calibration.yaml"]
    solved = ["--published-intrinsics", "--board-flat", "--out", "cameras"]
    outputs = []
    for wrist in wrists:
        outputs += [
            calibrate(env, cwd, "capture", *common, "--camera", wrist, "--move", "--yes", "--look-at", *center,
                      "--out", f"capture/{wrist}", "--timeout-s", "60"),
            calibrate(env, cwd, "hand-eye", *common, "--capture", f"capture/{wrist}", *solved),
        ]  # fmt: skip
    return "\n".join([
        *outputs,
        calibrate(env, cwd, "capture", *common, "--camera", "head", "--views", "2", "--out", "capture/head"),
        calibrate(env, cwd, "head", *common, "--capture", "capture/head", "--board-from", f"capture/{wrists[0]}",
                  *solved),
        calibrate(env, cwd, "check", *common, "--calibration-dir", "cameras", "--cameras", "head", *wrists,
                  "--look-at", *center, "--yes", "--images", "check"),
    ])  # fmt: skip


def pose_error(T: np.ndarray, T_true: np.ndarray) -> tuple[float, float]:
    """[mm], [deg] between two poses."""
    return (
        1000 * float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])),
        math.degrees(rotation_angle_between(T[:3, :3], T_true[:3, :3])),
    )


def restart_on_files(
    nodes: list, camera_names: tuple[str, ...], inputs, env: dict[str, str], folder: Path, cameras: tuple[str, ...]
) -> None:
    """The camera nodes of ``cameras`` (``nodes`` in ``camera_names`` order, an episode graph's first entries) stopped
    and started again on the files in ``folder/cameras`` (their other parameters from the camera ``inputs``)."""
    from robodojo.nodes.process_graph import NodeProcess

    logs = folder / "camera_nodes"
    logs.mkdir(exist_ok=True)
    for i, camera in enumerate(camera_names):
        if camera in cameras:
            nodes[i].stop()
            params = {**inputs.camera_node_parameters(camera), "calibration_file": str(folder / "cameras" /
                                                                                       f"{camera}.yaml")}  # fmt: skip
            nodes[i] = NodeProcess("camera_node", params, env, logs / f"camera_node_{camera}.log")


def wait_for_calibrated_head(client, world, node, T_world_cam: np.ndarray, timeout_s: float) -> None:
    """Until /cameras/head/pose carries the new file's pose (the restarted camera node is up and discovered)."""
    from fr3_client import wait
    from geometry_msgs.msg import PoseStamped

    from robodojo.nodes import topics

    topic = topics.camera_pose("head")
    client.subscribe(PoseStamped, topic)

    def calibrated() -> bool:
        poses = client.messages(topic)
        return bool(poses) and abs(poses[-1].pose.position.x - T_world_cam[0, 3]) < 1e-6

    wait(calibrated, timeout_s, "/cameras/head/pose from the new file", world, node)
