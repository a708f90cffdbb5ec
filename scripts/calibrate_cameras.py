#!/usr/bin/env python3
"""Calibrate the robot's cameras from ChArUco board images and write config/cameras/<robot>/<camera>.yaml.

Steps on a real robot (print the board first: `board --png board.png`, and measure the printed square size):

  intrinsics  15-30 images of the board held at varied distances and tilts (20-40 deg in different directions),
              covering the whole image:           intrinsics --images DIR --camera head
  head        the board lying face up on the table at a known pose (board frame: origin at the outer corner of the
              printed top-left square, x along the printed columns, y down the rows, z into the table):
                                                  head --images DIR --board-pose x y z qw qx qy qz
  hand-eye    the board fixed on the table, 8-20 arm poses tilting and turning the wrist around it, with the TCP
              pose of each image (as the motion server reports it) in a YAML file:
                                                  hand-eye --images DIR --tcp-poses poses.yaml --arm left
              (calibrates the intrinsics from the same images when the camera has no file yet, or with
              --calibrate-intrinsics)

  sim         (also `--sim`) renders all of the above in the embedded world with boards placed there, runs the
              pipeline, prints recovered-vs-true errors and writes the files: a check without hardware.

Files go to config/cameras/<robot>/ (--robot, default dual_arx_x5) unless --out DIR is given; a step updates its part
of an existing file (intrinsics keep the pose, head and hand-eye keep the intrinsics). tcp_poses YAML:

  poses:
    - {image: img_000.png, xyz_m: [x, y, z], quat_wxyz: [w, x, y, z]}
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import cv2
import mujoco
import numpy as np
import yaml

from robodojo.config import load_yaml
from robodojo.errors import RobodojoError
from robodojo.geometry import matrix_from_quat, quat_from_matrix, rotation_about_axis, rotation_angle_between, transform
from robodojo.perception.calibrate.sim_board import BOARD_THICKNESS_M, PARKED_XYZ_M, board_scene_extra, body_from_board
from robodojo.perception.calibration import (
    CharucoBoardSpec,
    Detection,
    board_image,
    board_pose,
    calibrate_intrinsics,
    detect_charuco,
    hand_eye,
    head_extrinsics,
)
from robodojo.perception.camera import CameraFile, CameraModel, load_camera_file, write_camera_file
from robodojo.perception.mounted_camera import calibration_dir
from robodojo.robots.config import load_robot_config

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
DEFAULT_BOARD = CharucoBoardSpec(7, 5, 0.04, 0.03, "DICT_4X4_50")
# The simulated wrist cameras see the table 20-30 cm away past the fingers: a smaller board fits their view.
SIM_WRIST_BOARD = CharucoBoardSpec(6, 4, 0.025, 0.019, "DICT_4X4_50")
SIM_HEADER = """\
The simulated {robot} {camera} camera, as recovered by `scripts/calibrate_cameras.py sim` from
ChArUco images rendered in the embedded world. A starting point only: real robots must be
re-calibrated (scripts/calibrate_cameras.py intrinsics / head / hand-eye on real images)."""
REAL_HEADER = """\
Written by scripts/calibrate_cameras.py {step} on {today} from {source}."""


# -- file helpers ---------------------------------------------------------------------------------------------------
def image_paths(folder: Path) -> list[Path]:
    if not Path(folder).is_dir():
        raise SystemExit(f"not a folder: {folder}")
    paths = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise SystemExit(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    return paths


def read_image(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise SystemExit(f"cannot read image {path}")
    return image


def detect_all(paths: Sequence[Path], board: CharucoBoardSpec, *, verbose: bool = True) -> list[Detection]:
    detections = []
    for path in paths:
        detection = detect_charuco(read_image(path), board)
        if verbose:
            status = f"{detection.count} corners" if detection.found else f"skipped: {detection.reason}"
            print(f"  {path.name}: {status}")
        detections.append(detection)
    return detections


def pose_from_xyz_quat(xyz: Sequence[float], quat_wxyz: Sequence[float]) -> np.ndarray:
    quat = np.asarray(quat_wxyz, dtype=float)
    if quat.shape != (4,) or abs(np.linalg.norm(quat) - 1.0) > 1e-3:
        raise SystemExit(f"not a unit quaternion (w, x, y, z): {list(quat_wxyz)}")
    return transform(matrix_from_quat(quat), np.asarray(xyz, dtype=float))


def pose_to_xyz_quat(T: np.ndarray) -> list[float]:
    """x y z qw qx qy qz of a pose (the --board-pose arguments)."""
    return [*(float(v) for v in T[:3, 3]), *(float(v) for v in quat_from_matrix(T[:3, :3]))]


def existing_file(out_dir: Path, camera: str) -> CameraFile | None:
    path = out_dir / f"{camera}.yaml"
    return load_camera_file(path) if path.is_file() else None


def print_intrinsics(result) -> None:
    K = result.K
    print(
        f"  fx {K[0, 0]:.2f} fy {K[1, 1]:.2f} cx {K[0, 2]:.2f} cy {K[1, 2]:.2f} px, distortion "
        f"{np.array2string(result.distortion, precision=4)}, rms {result.rms_px:.3f} px over {result.views_used} "
        f"views (tilt spread {result.tilt_spread_deg:.0f} deg)"
    )


# -- subcommands on real images -------------------------------------------------------------------------------------
def cmd_board(args: argparse.Namespace) -> int:
    board = board_from_args(args)
    pixels_per_m = args.dpi / 0.0254
    image = board_image(board, pixels_per_m, margin_m=board.square_m / 2)
    cv2.imwrite(str(args.png), image)
    width_mm = image.shape[1] / pixels_per_m * 1000
    print(f"{args.png}: {image.shape[1]} x {image.shape[0]} px, {width_mm:.0f} mm wide at {args.dpi} dpi")
    return 0


def cmd_intrinsics(args: argparse.Namespace) -> int:
    board, out = board_from_args(args), output_folder(args)
    robot = load_robot_config(args.robot)
    print(f"{args.camera}: intrinsics from {args.images}")
    paths = image_paths(args.images)
    detections = detect_all(paths, board)
    size = read_image(paths[0]).shape[::-1]
    result = calibrate_intrinsics(detections, size)
    if not result.ok:
        print(f"  failed: {result.reason}")
        return 1
    print_intrinsics(result)
    old = existing_file(out, args.camera)
    header = REAL_HEADER.format(step="intrinsics", today=date.today(), source=args.images)
    model = CameraModel(args.camera, result.K, np.eye(4), size[0], size[1], result.distortion)
    if old is not None:
        model = model.with_pose(old.model.T_world_cam)
        path = write_camera_file(out, model, header, T_tcp_cam=old.T_tcp_cam, arm=old.arm)
    else:
        arm = robot.camera_arm(args.camera)
        path = write_camera_file(out, model, header, T_tcp_cam=np.eye(4) if arm else None, arm=arm)
        print(f"  note: the pose in {path} is a placeholder until `{'hand-eye' if arm else 'head'}` runs")
    print(f"  wrote {path}")
    return 0


def _intrinsics_file(out: Path, camera: str, step: str) -> CameraFile:
    old = existing_file(out, camera)
    if old is None:
        raise SystemExit(f"{out / (camera + '.yaml')} not found: run `intrinsics --camera {camera}` before `{step}`")
    return old


def _check_size(model: CameraModel, detections: Sequence[Detection]) -> None:
    for d in detections:
        if d.found and tuple(d.image_size) != (model.width, model.height):
            raise SystemExit(
                f"images are {d.image_size[0]} x {d.image_size[1]} but {model.name}'s intrinsics are for "
                f"{model.width} x {model.height}"
            )


def cmd_head(args: argparse.Namespace) -> int:
    board, out = board_from_args(args), output_folder(args)
    old = _intrinsics_file(out, args.camera, "head")
    T_world_board = pose_from_xyz_quat(args.board_pose[:3], args.board_pose[3:])
    print(f"{args.camera}: extrinsics from {args.images}")
    detections = detect_all(image_paths(args.images), board)
    _check_size(old.model, detections)
    result = head_extrinsics(detections, old.model.K, old.model.distortion, T_world_board)
    if not result.ok:
        print(f"  failed: {result.reason}")
        return 1
    p, q = result.T_world_cam[:3, 3], quat_from_matrix(result.T_world_cam[:3, :3])
    print(f"  T_world_cam xyz {np.round(p, 4).tolist()} m, quat_wxyz {np.round(q, 5).tolist()}, {result.rms_px:.3f} px")
    header = REAL_HEADER.format(step="head", today=date.today(), source=args.images)
    path = write_camera_file(out, old.model.with_pose(result.T_world_cam), header)
    print(f"  wrote {path}")
    return 0


def load_tcp_poses(path: Path) -> dict[str, np.ndarray]:
    data = load_yaml(path)
    entries = data.get("poses")
    if not isinstance(entries, list) or not entries:
        raise SystemExit(f"{path}: expected `poses: [{{image, xyz_m, quat_wxyz}}, ...]`")
    poses = {}
    for i, entry in enumerate(entries):
        try:
            poses[str(entry["image"])] = pose_from_xyz_quat(entry["xyz_m"], entry["quat_wxyz"])
        except (KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: poses[{i}] needs image, xyz_m and quat_wxyz ({exc})") from None
    return poses


def cmd_hand_eye(args: argparse.Namespace) -> int:
    board, out = board_from_args(args), output_folder(args)
    robot = load_robot_config(args.robot)
    robot.arm(args.arm)
    camera = args.camera or f"{args.arm}_wrist"
    tcp_poses = load_tcp_poses(Path(args.tcp_poses))
    paths = [p for p in image_paths(args.images) if p.name in tcp_poses]
    missing = sorted(set(tcp_poses) - {p.name for p in paths})
    if missing:
        raise SystemExit(f"{args.tcp_poses} names images not in {args.images}: {', '.join(missing[:5])}")
    print(f"{camera}: hand-eye from {len(paths)} images in {args.images}")
    detections = detect_all(paths, board)
    size = read_image(paths[0]).shape[::-1]
    old = existing_file(out, camera)
    if old is None or args.calibrate_intrinsics:
        intrinsics = calibrate_intrinsics(detections, size)
        if not intrinsics.ok:
            print(f"  intrinsics failed: {intrinsics.reason}")
            return 1
        print_intrinsics(intrinsics)
        model = CameraModel(camera, intrinsics.K, np.eye(4), size[0], size[1], intrinsics.distortion)
    else:
        model = old.model
        _check_size(model, detections)
    result = wrist_hand_eye(model, detections, [tcp_poses[p.name] for p in paths])
    if not result.ok:
        print(f"  failed: {result.reason}")
        return 1
    print_hand_eye(result)
    header = REAL_HEADER.format(step="hand-eye", today=date.today(), source=args.images)
    path = write_camera_file(out, model, header, T_tcp_cam=result.T_tcp_cam, arm=args.arm)
    print(f"  wrote {path}")
    return 0


def wrist_hand_eye(model: CameraModel, detections: Sequence[Detection], T_world_tcp: Sequence[np.ndarray]):
    tcp, boards = [], []
    for detection, T in zip(detections, T_world_tcp, strict=True):
        pose = board_pose(detection, model.K, model.distortion)
        if pose.ok:
            tcp.append(T)
            boards.append(pose.T_cam_board)
    return hand_eye(tcp, boards)


def print_hand_eye(result) -> None:
    p, q = result.T_tcp_cam[:3, 3], quat_from_matrix(result.T_tcp_cam[:3, :3])
    print(
        f"  T_tcp_cam xyz {np.round(p, 4).tolist()} m, quat_wxyz {np.round(q, 5).tolist()} ({result.method}); "
        f"board scatter {result.residual_m * 1000:.2f} mm / {result.residual_deg:.3f} deg"
    )


# -- the simulated calibration --------------------------------------------------------------------------------------
# DEFAULT_BOARD's squares are 20-30 px wide where a pixel covers this much of the table (0.6 m from a 58 deg camera);
# a coarser view gets proportionally larger squares.
HEAD_BOARD_M_PER_PX = 0.6 / 433.0
HELD_SQUARE_PX = 43  # boards held in view for intrinsics: as far from the camera as makes a square this wide
SIM_WRIST_MAX_DISTANCE_M = 0.25  # SIM_WRIST_BOARD fills about a third of a 58 deg wrist camera's width from here
SIM_WRIST_MAX_SHIFT_M = 0.3  # how far the wrist board may move away from the arm's base for reachable views
SIM_WRIST_SHIFT_STEP_M = 0.025
# Wrist views for hand-eye: (yaw about the board's vertical [deg], elevation change [deg], roll about the optical
# axis [deg], distance as a multiple of the chosen one).
WRIST_VIEWS = [
    (0, 0, 0, 1.0),
    (20, 0, 10, 1.0),
    (-20, 0, -10, 1.0),
    (0, 12, 15, 0.9),
    (0, -12, -15, 1.1),
    (15, 10, -20, 1.0),
    (-15, -10, 20, 1.0),
    (25, -8, 0, 1.1),
    (-25, 8, 0, 0.9),
]
# What the sim check accepts (recovered vs true): the test's bounds.
SIM_TOLERANCES = {"fx_pct": 0.5, "fy_pct": 0.5, "cx_px": 2.0, "cy_px": 2.0, "pos_mm": 5.0, "rot_deg": 1.0}
PARKED = transform(None, PARKED_XYZ_M)


def look_at(position: np.ndarray, target: np.ndarray, x_hint: np.ndarray) -> np.ndarray:
    """Rotation of an optical frame at ``position`` looking at ``target``, its x axis as close as can be to x_hint."""
    z = target - position
    z /= np.linalg.norm(z)
    x = x_hint - (x_hint @ z) * z
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The smallest rotation taking unit vector a to unit vector b."""
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    if s < 1e-12:
        return np.eye(3)
    return rotation_about_axis(axis, math.atan2(s, float(a @ b)))


@dataclass
class SimView:
    image: np.ndarray  # RGB
    T_world_board: np.ndarray
    T_world_tcp: np.ndarray | None = None
    q: np.ndarray | None = None  # the moving arm's joint angles


class SimCalibrationScene:
    """The embedded world with two ChArUco boards to place (``head_board`` and ``wrist_board``) and arms to pose."""

    def __init__(
        self,
        robot: str = "dual_arx_x5",
        head_board: CharucoBoardSpec | None = None,
        wrist_board: CharucoBoardSpec = SIM_WRIST_BOARD,
    ) -> None:
        """``head_board`` defaults to DEFAULT_BOARD's layout scaled to the fixed cameras' distance from the table."""
        from robodojo.robots.ik import ArmKinematics
        from robodojo.sim.world import EmbeddedWorld

        if head_board is None:
            head_board = self._scaled_head_board(EmbeddedWorld(robot))
        self.boards = {"head_board": head_board, "wrist_board": wrist_board}
        extras = [board_scene_extra(name, board) for name, board in self.boards.items()]
        self.world = EmbeddedWorld(robot, scene_extras=extras)
        self.robot = self.world.robot
        self.kinematics = ArmKinematics(self.robot)

    def close(self) -> None:
        self.world.close()

    @staticmethod
    def _scaled_head_board(world) -> CharucoBoardSpec:
        """DEFAULT_BOARD where fixed cameras see the table at HEAD_BOARD_M_PER_PX or finer, proportionally larger
        squares for coarser views."""
        m_per_px = 0.0
        for cam in world.robot.cameras:
            calibration = world.calibration(cam.name)
            T = calibration.T_world_cam
            if T[2, 2] < -0.1:  # looking down: distance along the optical axis to the table, over the focal length
                distance = (world.robot.table.top_z_m - T[2, 3]) / T[2, 2]
                m_per_px = max(m_per_px, distance / calibration.K[1, 1])
        world.close()
        scale = max(1.0, round(m_per_px / HEAD_BOARD_M_PER_PX / 0.125) * 0.125)
        d = DEFAULT_BOARD
        return CharucoBoardSpec(d.squares_x, d.squares_y, d.square_m * scale, d.marker_m * scale, d.dictionary)

    # -- state
    def place_board(self, name: str, T_world_board: np.ndarray | None) -> None:
        """Put board ``name`` at a world pose of its board frame (None parks it out of view)."""
        m, d = self.world.model, self.world.data
        T_body = PARKED if T_world_board is None else T_world_board @ np.linalg.inv(body_from_board(self.boards[name]))
        mocap = m.body_mocapid[m.body(name).id]
        d.mocap_pos[mocap] = T_body[:3, 3]
        d.mocap_quat[mocap] = quat_from_matrix(T_body[:3, :3])
        mujoco.mj_forward(m, d)

    def pose_arms(self, joints: dict[str, np.ndarray] | None = None) -> None:
        """Teleport arms to joint angles (home for arms not named)."""
        d = self.world.data
        for arm in self.robot.arms:
            q = (joints or {}).get(arm.name, np.array(arm.home_joints_rad))
            d.qpos[self.world.arm_qpos_adr[arm.name]] = q
        mujoco.mj_forward(self.world.model, d)

    def truth(self, camera: str) -> CameraModel:
        return CameraModel.from_calibration(camera, self.world.calibration(camera))

    def T_world_tcp(self, arm: str) -> np.ndarray:
        state = self.world.arm_state(arm)
        return transform(matrix_from_quat(state.tcp_quat_wxyz), state.tcp_pos_m)

    def _table_point(self, camera: CameraModel, u: float, v: float) -> np.ndarray:
        ray = camera.pixel_ray(v, u)
        top = self.robot.table.top_z_m + BOARD_THICKNESS_M
        return ray.origin_m + (top - ray.origin_m[2]) / ray.direction[2] * ray.direction

    def _table_board(self, board: CharucoBoardSpec, center: np.ndarray, x_axis: np.ndarray) -> np.ndarray:
        """A board lying face up with its squares centred on ``center`` and its x axis along ``x_axis``."""
        x = np.array([x_axis[0], x_axis[1], 0.0])
        x /= np.linalg.norm(x)
        z = np.array([0.0, 0.0, -1.0])
        R = np.column_stack([x, np.cross(z, x), z])
        width, height = board.size_m
        return transform(R, center - R @ np.array([width / 2, height / 2, 0.0]))

    # -- views
    def held_board_views(self, camera: str, board_name: str = "head_board") -> list[SimView]:
        """The board held in front of ``camera`` at varied tilts and image positions (for intrinsics)."""
        self.pose_arms()
        self._park_all()
        cam = self.truth(camera)
        board = self.boards[board_name]
        width, height = board.size_m
        distance_m = board.square_m * cam.K[1, 1] / HELD_SQUARE_PX
        # (tilt axis in the camera frame, tilt [deg], roll [deg], image offset as fractions of the half-size)
        poses = [
            ((1, 0, 0), 0, 0, (0.0, 0.0)),
            ((1, 0, 0), 35, 10, (0.25, 0.2)),
            ((1, 0, 0), -35, -10, (-0.25, -0.2)),
            ((0, 1, 0), 35, 5, (-0.3, 0.2)),
            ((0, 1, 0), -35, -5, (0.3, -0.2)),
            ((1, 1, 0), 30, 20, (0.3, 0.25)),
            ((1, -1, 0), 30, -20, (-0.3, 0.25)),
            ((-1, 1, 0), 30, 30, (0.3, -0.25)),
            ((-1, -1, 0), 30, -30, (-0.3, -0.25)),
            ((1, 0.3, 0), 20, 90, (0.0, 0.0)),
        ]
        views = []
        for axis, tilt, roll, (ox, oy) in poses:
            R = rotation_about_axis(axis, math.radians(tilt)) @ rotation_about_axis((0, 0, 1), math.radians(roll))
            center = distance_m * np.array([ox * cam.width / 2 / cam.K[0, 0], oy * cam.height / 2 / cam.K[1, 1], 1])
            T_cam_board = transform(R, center - R @ np.array([width / 2, height / 2, 0.0]))
            T_world_board = cam.T_world_cam @ T_cam_board
            self.place_board(board_name, T_world_board)
            views.append(SimView(self.world.render(camera).rgb, T_world_board))
        self.place_board(board_name, None)
        return views

    def table_board_view(self, camera: str = "head", board_name: str = "head_board") -> SimView:
        """The board face up on the table where ``camera``'s optical axis meets it (for a fixed camera's pose)."""
        self.pose_arms()
        self._park_all()
        cam = self.truth(camera)
        center = self._table_point(cam, cam.K[0, 2], cam.K[1, 2])
        T_world_board = self._table_board(self.boards[board_name], center, cam.T_world_cam[:3, 0])
        self.place_board(board_name, T_world_board)
        view = SimView(self.world.render(camera).rgb, T_world_board)
        self.place_board(board_name, None)
        return view

    def hand_eye_views(self, arm: str, board_name: str = "wrist_board") -> list[SimView]:
        """The board on the table seen from the arm's wrist camera at several arm poses (for hand-eye)."""
        camera = next(c.name for c in self.robot.cameras if self.robot.camera_arm(c.name) == arm)
        self.pose_arms()
        self._park_all()
        home = self.truth(camera)
        # Aim at the middle of the table area the wrist camera sees past the gripper at home.
        segmentation = self.world.render(camera, segmentation=True).segmentation
        table_geoms = [i for i in range(self.world.model.ngeom) if self.world.model.geom(i).name.startswith("table")]
        rows, _ = np.nonzero(np.isin(segmentation, table_geoms))
        aim_uv = np.array([home.K[0, 2], np.median(rows)]) if rows.size else home.K[:2, 2]
        home_center = self._table_point(home, *aim_uv)
        aim_ray = np.linalg.solve(home.K, [*aim_uv, 1.0])
        aim_correction = rotation_between(aim_ray / np.linalg.norm(aim_ray), np.array([0.0, 0.0, 1.0]))
        T_tcp_cam = np.linalg.inv(self.T_world_tcp(arm)) @ home.T_world_cam
        back = home.position_m - home_center
        home_distance = float(np.linalg.norm(back))  # the wrist camera's distance to the table at home
        back /= home_distance
        # A camera high above the table at home (the FR3's, 0.55 m) would see the small board too small to
        # calibrate: the views come in along the same directions, no farther than SIM_WRIST_MAX_DISTANCE_M.
        distance = min(home_distance, SIM_WRIST_MAX_DISTANCE_M)
        # Closer views may put the TCP where the arm cannot fold (the FR3's camera looks back under its hand,
        # towards the base): the board moves away from the arm's base until every view is reachable.
        outward = self.T_world_tcp(arm)[:3, 3] - self.robot.arm(arm).base_xyz_m
        outward[2] = 0.0
        outward /= np.linalg.norm(outward)
        q_home = np.array(self.robot.arm(arm).home_joints_rad)
        best: tuple[np.ndarray, list] = (home_center, [])
        for shift_m in np.arange(0.0, SIM_WRIST_MAX_SHIFT_M + 1e-9, SIM_WRIST_SHIFT_STEP_M):
            center = home_center + shift_m * outward
            solved = []
            for T_world_cam in self._wrist_view_poses(center, back, distance, home.T_world_cam[:3, 0], aim_correction):
                T_world_tcp = T_world_cam @ np.linalg.inv(T_tcp_cam)
                solution = self.kinematics.solve(
                    arm, T_world_tcp[:3, 3], T_world_tcp[:3, :3], q_home, max_iterations=100
                )
                if solution.converged:
                    solved.append(solution.q)
            if len(solved) > len(best[1]):
                best = (center, solved)
            if len(solved) == len(WRIST_VIEWS):
                break
        center, solutions = best
        T_world_board = self._table_board(self.boards[board_name], center, home.T_world_cam[:3, 0])
        self.place_board(board_name, T_world_board)
        views = []
        for q in solutions:
            self.pose_arms({arm: q})
            views.append(SimView(self.world.render(camera).rgb, T_world_board, self.T_world_tcp(arm), q))
        self.pose_arms()
        self.place_board(board_name, None)
        return views

    @staticmethod
    def _wrist_view_poses(
        center: np.ndarray, back: np.ndarray, distance: float, x_hint: np.ndarray, aim_correction: np.ndarray
    ) -> list[np.ndarray]:
        """Optical-frame poses seeing ``center`` from ``distance`` around the direction ``back`` (WRIST_VIEWS), at
        the image point ``aim_correction`` turns onto the optical axis."""
        poses = []
        for yaw, elevation, roll, scale in WRIST_VIEWS:
            horizontal = np.cross([0.0, 0.0, 1.0], back)
            direction = rotation_about_axis((0, 0, 1), math.radians(yaw)) @ (
                rotation_about_axis(horizontal, math.radians(elevation)) @ back
            )
            position = center + scale * distance * direction
            R = look_at(position, center, x_hint) @ rotation_about_axis((0, 0, 1), math.radians(roll))
            poses.append(transform(R @ aim_correction, position))
        return poses

    def _park_all(self) -> None:
        for name in self.boards:
            self.place_board(name, None)


def _intrinsic_errors(K: np.ndarray, truth: CameraModel) -> dict[str, float]:
    return {
        "fx_pct": 100 * (K[0, 0] / truth.K[0, 0] - 1),
        "fy_pct": 100 * (K[1, 1] / truth.K[1, 1] - 1),
        "cx_px": K[0, 2] - truth.K[0, 2],
        "cy_px": K[1, 2] - truth.K[1, 2],
    }


def pose_errors(T: np.ndarray, T_true: np.ndarray) -> dict[str, float]:
    """Position [mm] and rotation [deg] differences of two poses."""
    return {
        "pos_mm": 1000 * float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])),
        "rot_deg": math.degrees(rotation_angle_between(T[:3, :3], T_true[:3, :3])),
    }


def save_views(folder: Path, views: Sequence[SimView], prefix: str) -> list[str]:
    """Write the views' images as PNG files; their names."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, view in enumerate(views):
        name = f"{prefix}_{i:03d}.png"
        cv2.imwrite(str(folder / name), cv2.cvtColor(view.image, cv2.COLOR_RGB2BGR))
        names.append(name)
    return names


def save_tcp_poses(path: Path, names: Sequence[str], views: Sequence[SimView]) -> None:
    poses = []
    for name, view in zip(names, views, strict=True):
        T = view.T_world_tcp
        assert T is not None
        poses.append({"image": name, "xyz_m": T[:3, 3].tolist(), "quat_wxyz": quat_from_matrix(T[:3, :3]).tolist()})
    path.write_text(yaml.safe_dump({"poses": poses}, sort_keys=False))


class SimFailure(Exception):
    """A step of the simulated calibration failed (the message says which and why)."""


def _sim_intrinsics(scene: SimCalibrationScene, camera: str, views: Sequence[SimView], board_name: str, report: dict):
    cfg = scene.robot.camera(camera)
    detections = [detect_charuco(v.image, scene.boards[board_name]) for v in views]
    report["views"], report["detected"] = len(views), sum(d.found for d in detections)
    result = calibrate_intrinsics(detections, (cfg.width, cfg.height))
    if not result.ok:
        raise SimFailure(f"intrinsics failed: {result.reason}")
    print_intrinsics(result)
    report["intrinsics"] = {**_intrinsic_errors(result.K, scene.truth(camera)), "rms_px": result.rms_px}
    return CameraModel(camera, result.K, np.eye(4), cfg.width, cfg.height, result.distortion), detections


def sim_fixed_camera(scene: SimCalibrationScene, camera: str, save_images: Path | None, report: dict) -> CameraModel:
    """Intrinsics from the board held in view, then the pose from the board on the table."""
    views = scene.held_board_views(camera, "head_board")
    model, _ = _sim_intrinsics(scene, camera, views, "head_board", report)
    view = scene.table_board_view(camera, "head_board")
    detection = detect_charuco(view.image, scene.boards["head_board"])
    result = head_extrinsics(detection, model.K, model.distortion, view.T_world_board)
    if save_images is not None:
        save_views(save_images / camera / "intrinsics", views, camera)
        save_views(save_images / camera / "extrinsics", [view], camera)
        pose = pose_to_xyz_quat(view.T_world_board)
        (save_images / camera / "board_pose.txt").write_text(" ".join(f"{v:.9f}" for v in pose) + "\n")
    if not result.ok:
        raise SimFailure(f"extrinsics failed: {result.reason}")
    report["T_world_cam"] = pose_errors(result.T_world_cam, scene.truth(camera).T_world_cam)
    return model.with_pose(result.T_world_cam)


def sim_wrist_camera(
    scene: SimCalibrationScene, camera: str, arm: str, save_images: Path | None, report: dict
) -> tuple[CameraModel, np.ndarray]:
    """Intrinsics from the board held in view and the hand-eye views together, hand-eye from the latter: the board
    fixed on the table, the arm moving around it.

    The hand-eye views alone tilt the board too little to pin down the focal length when the board looks small (the
    FR3's wrist camera); a wrist camera that low over the table sees no held board (the ARX X5's) and uses the
    hand-eye views only.
    """
    held = scene.held_board_views(camera, "wrist_board")
    views = scene.hand_eye_views(arm, "wrist_board")
    model, detections = _sim_intrinsics(scene, camera, [*held, *views], "wrist_board", report)
    if save_images is not None:
        folder = save_images / camera
        save_views(folder / "intrinsics", held, camera)
        save_tcp_poses(folder / "tcp_poses.yaml", save_views(folder / "hand_eye", views, camera), views)
    hand_eye_detections = detections[len(held) :]
    result = wrist_hand_eye(model, hand_eye_detections, [v.T_world_tcp for v in views])  # type: ignore[misc]
    if not result.ok:
        raise SimFailure(f"hand-eye failed: {result.reason}")
    print_hand_eye(result)
    T_true = np.linalg.inv(scene.T_world_tcp(arm)) @ scene.truth(camera).T_world_cam
    report["T_tcp_cam"] = pose_errors(result.T_tcp_cam, T_true)
    return model, result.T_tcp_cam


def run_sim(robot_name: str, out: Path | None, save_images: Path | None = None) -> tuple[bool, dict[str, dict]]:
    """Render, calibrate every camera of the robot, compare with the world's truth; write files to ``out``."""
    scene = SimCalibrationScene(robot_name)
    report: dict[str, dict] = {}
    all_ok = True
    try:
        for cfg in scene.robot.cameras:
            camera, arm = cfg.name, scene.robot.camera_arm(cfg.name)
            header = SIM_HEADER.format(robot=robot_name, camera=camera)
            entry = report[camera] = {}
            print(f"{camera}:")
            try:
                if arm is None:
                    model, T_tcp_cam = sim_fixed_camera(scene, camera, save_images, entry), None
                else:
                    model, T_tcp_cam = sim_wrist_camera(scene, camera, arm, save_images, entry)
            except SimFailure as exc:
                print(f"  {exc}")
                entry["failed"] = str(exc)
                all_ok = False
                continue
            errors = {k: v for part in entry.values() if isinstance(part, dict) for k, v in part.items()}
            print("  error vs truth: " + ", ".join(f"{k} {v:+.3f}" for k, v in errors.items()))
            beyond = [k for k, v in errors.items() if abs(v) > SIM_TOLERANCES.get(k, math.inf)]
            if beyond:
                entry["failed"] = f"beyond tolerance: {', '.join(beyond)}"
                print(f"  FAILED: {entry['failed']} (tolerances {SIM_TOLERANCES}); not written")
                all_ok = False
                continue
            if out is not None:
                print(f"  wrote {write_camera_file(out, model, header, T_tcp_cam=T_tcp_cam, arm=arm)}")
    finally:
        scene.close()
    return all_ok, report


def cmd_sim(args: argparse.Namespace) -> int:
    out = None if args.no_write else output_folder(args)
    ok, _ = run_sim(args.robot, out, Path(args.save_images) if args.save_images else None)
    return 0 if ok else 1


# -- command line ---------------------------------------------------------------------------------------------------
def output_folder(args: argparse.Namespace) -> Path:
    """--out, or the robot's folder of calibration files (config/cameras/<robot>/)."""
    return Path(args.out) if args.out else calibration_dir(args.robot)


def board_from_args(args: argparse.Namespace) -> CharucoBoardSpec:
    try:
        return CharucoBoardSpec(args.squares[0], args.squares[1], args.square_m, args.marker_m, args.dictionary)
    except ValueError as exc:
        raise SystemExit(f"bad board: {exc}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--robot", default="dual_arx_x5", help="robot config name (default: %(default)s)")
    common.add_argument(
        "--out", help="folder for <camera>.yaml (default: config/cameras/<robot>/, the files camera_node loads)"
    )
    board = argparse.ArgumentParser(add_help=False)
    d = DEFAULT_BOARD
    board.add_argument("--squares", nargs=2, type=int, default=[d.squares_x, d.squares_y], metavar=("X", "Y"))
    board.add_argument("--square-m", type=float, default=d.square_m, help="printed square size [m]")
    board.add_argument("--marker-m", type=float, default=d.marker_m, help="printed marker size [m]")
    board.add_argument("--dictionary", default=d.dictionary, help="ArUco dictionary (default: %(default)s)")

    p = sub.add_parser("board", parents=[board], help="write the board as a PNG to print")
    p.add_argument("--png", type=Path, default=Path("charuco_board.png"))
    p.add_argument("--dpi", type=float, default=300.0)
    p.set_defaults(func=cmd_board)

    p = sub.add_parser("intrinsics", parents=[common, board], help="intrinsics from images of a board held in view")
    p.add_argument("--images", type=Path, required=True)
    p.add_argument("--camera", required=True)
    p.set_defaults(func=cmd_intrinsics)

    p = sub.add_parser("head", parents=[common, board], help="a fixed camera's pose from a board at a known pose")
    p.add_argument("--images", type=Path, required=True)
    p.add_argument("--camera", default="head")
    p.add_argument(
        "--board-pose",
        nargs=7,
        type=float,
        required=True,
        metavar=("X", "Y", "Z", "QW", "QX", "QY", "QZ"),
        help="T_world_board: board-frame origin [m] and orientation (w, x, y, z)",
    )
    p.set_defaults(func=cmd_head)

    p = sub.add_parser("hand-eye", parents=[common, board], help="a wrist camera's T_tcp_cam from several arm poses")
    p.add_argument("--images", type=Path, required=True)
    p.add_argument("--tcp-poses", type=Path, required=True, help="YAML: poses: [{image, xyz_m, quat_wxyz}, ...]")
    p.add_argument("--arm", required=True)
    p.add_argument("--camera", help="default: <arm>_wrist")
    p.add_argument("--calibrate-intrinsics", action="store_true", help="calibrate intrinsics from these images too")
    p.set_defaults(func=cmd_hand_eye)

    p = sub.add_parser("sim", parents=[common], help="the whole pipeline on images rendered in the embedded world")
    p.add_argument("--save-images", type=Path, help="also write the rendered images and TCP poses here")
    p.add_argument("--no-write", action="store_true", help="only print the errors")
    p.set_defaults(func=cmd_sim)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--sim" in argv:  # the sim subcommand, spelled as an option
        argv.remove("--sim")
        argv.insert(0, "sim")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except RobodojoError as exc:  # unknown robot, arm or camera; a camera file that does not parse
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
