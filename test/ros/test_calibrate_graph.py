"""`robodojo calibrate` rehearsed on the running MuJoCo graph: the real command-line process against sim_node (the
board on its table) and the motion server, each a process of its own.

The wrist camera is calibrated from calibration motions the command plans and sends through MoveEef (capture --move,
hand-eye with intrinsics), the head camera from the board the calibrated wrist camera placed (no measured board
pose; the board lies flat on the table: --board-flat), then `check` holds the cameras against each other. The files
it writes are compared with the simulator's true cameras: within 2 mm and 0.3 deg (issue 34). The head is the chain's
weak link: its pose comes through the board's, 1.3 m away, so a board tilted by 0.1 deg moves it by 2 mm; the flat
board's known normal is what keeps it inside (measured: head 1.3 mm / 0.10 deg, wrist 0.5 mm / 0.13 deg).
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from robodojo.geometry import rotation_angle_between
from robodojo.perception.calibrate.settings import load_calibration_settings
from robodojo.perception.calibrate.sim_board import calibration_board_pose
from robodojo.perception.camera import load_camera_file
from robodojo.sim.world import EmbeddedWorld

ROBOT = "fr3"
MAX_POSITION_MM = 2.0
MAX_ROTATION_DEG = 0.3
STEP_TIMEOUT_S = 240.0
# The command started as from a script run in the background, where the shell leaves SIGINT ignored and Python keeps
# it so: the operator's Ctrl-C must stop the arm all the same (the command installs its handler itself).
SIGINT_IGNORED = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.argv[0] = 'robodojo'; "
    "runpy.run_module('robodojo.cli', run_name='__main__')"
)
INTERRUPT_AFTER_S = 0.3  # after "pose 1/..." is printed, into the motion to the second pose
STEP_LIMIT = (
    5000  # the task's 400 points are an agent's episode; a calibration session plays more (docs/calibration.md)
)


def _calibrate(graph, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "robodojo.cli", "calibrate", *args],
        env=graph.env, cwd=graph.tmp_path, capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    print(f"$ robodojo calibrate {' '.join(args)}\n{result.stdout}{result.stderr}")
    return result


def _truth(camera: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The simulated camera's world pose, and for a wrist camera its true T_tcp_cam (the arm at home)."""
    world = EmbeddedWorld(ROBOT)
    try:
        T_world_cam = np.asarray(world.calibration(camera).T_world_cam)
        arm = world.robot.camera_arm(camera)
        if arm is None:
            return T_world_cam, None
        T_world_tcp = world.arm_state(arm).T_world_tcp
        return T_world_cam, np.linalg.inv(T_world_tcp) @ T_world_cam
    finally:
        world.close()


def _errors(T: np.ndarray, T_true: np.ndarray) -> tuple[float, float]:
    return (
        1000 * float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])),
        math.degrees(rotation_angle_between(T[:3, :3], T_true[:3, :3])),
    )


@pytest.mark.long
def test_calibrate_from_the_running_graph_recovers_the_simulated_cameras(graph) -> None:
    from agent_bringup.msg import EpisodeStatus

    from robodojo.nodes import topics
    from robodojo.sim.tasks import get_task

    statuses: list[EpisodeStatus] = []
    graph.client.create_subscription(EpisodeStatus, topics.EPISODE_STATUS, statuses.append, 10)
    graph.start(
        "sim_node", robot=ROBOT, task="fr3_pick_cube", seed=0, calibration_board=True, camera_rate_hz=10.0,
        step_limit=STEP_LIMIT,
    )  # fmt: skip
    graph.start("motion_server_node", robot=ROBOT)
    out = Path(graph.tmp_path) / "cameras"
    board = calibration_board_pose(ROBOT)
    w, h = load_calibration_settings().board.size_m
    center = board[:3, :3] @ np.array([w / 2, h / 2, 0.0]) + board[:3, 3]

    wrist = _calibrate(
        graph, "capture", "--camera", "wrist", "--move", "--yes", "--look-at", *map(str, center),
        "--out", "capture/wrist", "--timeout-s", "60",
    )  # fmt: skip
    assert wrist.returncode == 0, wrist.stdout + wrist.stderr
    solved = _calibrate(graph, "hand-eye", "--capture", "capture/wrist", "--board-flat", "--out", str(out))
    assert solved.returncode == 0, solved.stdout + solved.stderr

    head = _calibrate(graph, "capture", "--camera", "head", "--views", "3", "--out", "capture/head")
    assert head.returncode == 0, head.stdout + head.stderr
    placed = _calibrate(
        graph, "head", "--capture", "capture/head", "--board-from", "capture/wrist", "--board-flat", "--out", str(out)
    )
    assert placed.returncode == 0, placed.stdout + placed.stderr

    T_world_head, _ = _truth("head")
    head_file = load_camera_file(out / "head.yaml")
    head_mm, head_deg = _errors(head_file.model.T_world_cam, T_world_head)
    _, T_tcp_cam = _truth("wrist")
    wrist_file = load_camera_file(out / "wrist.yaml")
    assert wrist_file.T_tcp_cam is not None and T_tcp_cam is not None
    wrist_mm, wrist_deg = _errors(wrist_file.T_tcp_cam, T_tcp_cam)
    print(f"head {head_mm:.2f} mm {head_deg:.3f} deg; wrist {wrist_mm:.2f} mm {wrist_deg:.3f} deg")
    assert wrist_mm <= MAX_POSITION_MM and wrist_deg <= MAX_ROTATION_DEG
    assert head_mm <= MAX_POSITION_MM and head_deg <= MAX_ROTATION_DEG
    assert "calibration" in (out / "wrist.yaml").read_text()  # the residuals and the date are kept

    check = _calibrate(
        graph, "check", "--calibration-dir", str(out), "--images", "check", "--look-at", *map(str, center), "--yes"
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert (Path(graph.tmp_path) / "check" / "check_head.png").is_file()
    # The slowed motions (motions.speed_scale) played more points than the task's budget: step_limit let them.
    graph.wait(lambda: bool(statuses), 10, "an episode status")
    steps = statuses[-1].steps_used
    print(f"the session played {steps} points of {statuses[-1].step_limit}")
    assert statuses[-1].step_limit == STEP_LIMIT and steps > get_task("fr3_pick_cube").step_limit


def test_ctrl_c_during_the_calibration_motions_stops_the_arm_where_it_is(graph) -> None:
    """The operator's Ctrl-C mid-motion: the command cancels the running goal and exits 130 with one line; the arm
    comes to rest and nothing moves it afterwards (no way back to the start)."""
    import signal
    import threading

    from sensor_msgs.msg import JointState

    from robodojo.nodes import topics

    graph.start(
        "sim_node", robot=ROBOT, task="fr3_pick_cube", seed=0, calibration_board=True, camera_rate_hz=10.0,
        step_limit=STEP_LIMIT,
    )  # fmt: skip
    graph.start("motion_server_node", robot=ROBOT)
    latest: dict[str, np.ndarray] = {}
    lock = threading.Lock()

    def on_joints(msg: JointState) -> None:
        with lock:
            latest["q"] = np.array(msg.position[:7])

    graph.client.create_subscription(JointState, topics.JOINT_STATES, on_joints, 50)
    board = calibration_board_pose(ROBOT)
    w, h = load_calibration_settings().board.size_m
    center = board[:3, :3] @ np.array([w / 2, h / 2, 0.0]) + board[:3, 3]
    out = Path(graph.tmp_path) / "capture.out"
    with out.open("w") as f:
        proc = subprocess.Popen(
            [sys.executable, "-c", SIGINT_IGNORED, "calibrate", "capture", "--camera", "wrist", "--move", "--yes",
             "--look-at", *map(str, center), "--out", "capture/wrist", "--timeout-s", "60"],
            env=graph.env, cwd=graph.tmp_path, stdout=f, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        graph.wait(lambda: "pose 1/" in out.read_text() or proc.poll() is not None, 180, "the first view taken")
        assert proc.poll() is None, out.read_text()

        # The next motion is sent as the line is printed and takes seconds: the Ctrl-C lands while it plays (waiting
        # here to see the arm move lost the race on a loaded machine: the capture had finished by then).
        time.sleep(INTERRUPT_AFTER_S)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()

    def moving() -> bool:
        with lock:
            before = latest["q"].copy()
        time.sleep(0.1)
        with lock:
            return float(np.max(np.abs(latest["q"] - before))) > 1e-3

    text = out.read_text()
    assert code == 130 and "interrupted; a running motion was cancelled" in text, text
    assert "Traceback" not in text and "back to the start" not in text, text
    graph.wait(lambda: not moving(), 10, "the arm at rest after the Ctrl-C")
    with lock:
        rest = latest["q"].copy()
    time.sleep(3.0)  # nothing moves it afterwards
    with lock:
        assert float(np.max(np.abs(latest["q"] - rest))) < 2e-3
