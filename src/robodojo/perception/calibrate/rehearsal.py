"""A calibration rehearsed in the embedded world, without a graph: captures rendered as `robodojo calibrate capture`
would take them (the rehearsal board on the table, the arm teleported to each planned pose), and the world's true
cameras to hold the results against. The benchmark (benchmarks/calibration.py) and the library's tests use it; the
graph rehearsal (test/ros/test_calibrate_graph.py) runs the real commands instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from numpy.typing import NDArray

from robodojo.perception.calibrate.captures import Capture, CaptureWriter, read_capture
from robodojo.perception.calibrate.settings import CalibrationSettings, load_calibration_settings
from robodojo.perception.calibrate.sim_board import calibration_board, calibration_board_pose
from robodojo.perception.calibrate.view_plan import look_at_view, plan_wrist_views
from robodojo.perception.camera import CameraFile, CameraModel
from robodojo.robots.ik import ArmKinematics
from robodojo.sim.world import EmbeddedWorld


@dataclass(frozen=True)
class HandEyeRehearsal:
    capture: Capture
    T_tcp_cam_true: NDArray[np.float64]
    skipped: tuple[str, ...]  # planned views left out (reach, bounds)


class RenderedRig:
    """The embedded world with the rehearsal board: arms teleported to joint angles, cameras rendered."""

    def __init__(self, robot: str, settings: CalibrationSettings | None = None) -> None:
        self.settings = settings or load_calibration_settings()
        self.world = EmbeddedWorld(robot, scene_extras=[calibration_board(robot)])
        self.robot = self.world.robot
        self.kinematics = ArmKinematics(self.robot)

    def close(self) -> None:
        self.world.close()

    def __enter__(self) -> RenderedRig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def board_pose(self) -> NDArray[np.float64]:
        return calibration_board_pose(self.robot.name)

    @property
    def board_center(self) -> NDArray[np.float64]:
        width, height = self.settings.board.size_m
        B = self.board_pose
        return B[:3, :3] @ np.array([width / 2, height / 2, 0.0]) + B[:3, 3]

    def pose_arm(self, arm: str, q: NDArray[np.float64]) -> None:
        self.world.data.qpos[self.world.arm_qpos_adr[arm]] = q
        mujoco.mj_forward(self.world.model, self.world.data)

    def home(self) -> None:
        for arm in self.robot.arms:
            self.pose_arm(arm.name, np.array(arm.home_joints_rad))

    def tcp(self) -> dict[str, NDArray[np.float64]]:
        return {arm: self.world.arm_state(arm).T_world_tcp for arm in self.robot.arm_names}

    def joints(self) -> dict[str, float]:
        return {
            joint: float(q)
            for arm in self.robot.arms
            for joint, q in zip(arm.joints, self.world.arm_state(arm.name).joint_positions_rad, strict=True)
        }

    def truth(self, camera: str) -> CameraModel:
        return CameraModel.from_calibration(camera, self.world.calibration(camera))

    def _writer(self, folder: Path, camera: str) -> CaptureWriter:
        truth, arm = self.truth(camera), self.robot.camera_arm(camera)
        return CaptureWriter(folder, self.robot.name, camera, arm, truth)

    def hand_eye_capture(self, camera: str, believed: CameraFile, folder: Path) -> HandEyeRehearsal:
        """`capture --move --look-at <board centre>` for wrist ``camera``, planned with ``believed``'s T_tcp_cam."""
        arm = self.robot.camera_arm(camera)
        if arm is None or believed.T_tcp_cam is None:
            raise ValueError(f"{camera} is not a wrist camera with a hand-eye transform")
        motions = self.settings.motions
        self.home()
        q_home = np.array(self.robot.arm(arm).home_joints_rad)
        start = look_at_view(self.robot, self.kinematics, arm, q_home, believed.T_tcp_cam, self.board_center,
                             motions.look_distance_m, motions.look_elevations_deg)  # fmt: skip
        if isinstance(start, str):
            raise ValueError(start)
        plan = plan_wrist_views(self.robot, self.kinematics, arm, start.q_rad, believed.T_tcp_cam, self.board_center,
                                motions)  # fmt: skip
        writer = self._writer(folder, camera)
        for view in plan.views:
            self.pose_arm(arm, view.q_rad)
            writer.add(self.world.render(camera).rgb, 0.0, self.joints(), self.tcp())
        T_tcp_cam_true = np.linalg.inv(self.tcp()[arm]) @ self.truth(camera).T_world_cam
        self.home()
        return HandEyeRehearsal(read_capture(folder), T_tcp_cam_true, plan.skipped)

    def fixed_capture(self, camera: str, folder: Path, views: int = 1) -> Capture:
        """`capture --views N` of a fixed camera, the arms at home."""
        self.home()
        writer = self._writer(folder, camera)
        for _ in range(views):
            writer.add(self.world.render(camera).rgb, 0.0, self.joints(), self.tcp())
        return read_capture(folder)
