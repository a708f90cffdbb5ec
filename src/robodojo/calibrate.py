"""`robodojo calibrate`: the robot's cameras calibrated from the running graph, sim or real, with the same commands.

    robodojo calibrate board --png board.png                   print the board (config/calibration.yaml)
    robodojo calibrate capture --camera left_wrist --move      the arm moves the wrist camera around the board
    robodojo calibrate hand-eye --capture out/calib/left_wrist T_tcp_cam (and --intrinsics) from that capture
    robodojo calibrate capture --camera head --views 5         a fixed camera's views of the board lying still
    robodojo calibrate head --capture out/calib/head --board-from out/calib/left_wrist
                                                               the head's pose, the board placed by the wrist camera
    robodojo calibrate intrinsics --capture DIR                intrinsics alone (a board waved in front of it)
    robodojo calibrate check                                   every camera against the others, exit 1 past bounds

`capture` saves frames taken at rest with the joint angles and TCP poses (perception/calibrate/captures.py); the
solving steps write config/cameras/<robot>/<camera>.yaml (or --out) with the residuals and the date under
`calibration:`. Motions go through the motion server (MoveEef): its bounds, planner, leases and stop apply; `capture
--move` checks every pose before the first motion and asks the operator to confirm the first one (--yes: don't ask).
docs/calibration.md walks a real rig through it.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat, quat_from_matrix, transform
from robodojo.perception.calibrate.captures import Capture, read_capture
from robodojo.perception.calibrate.settings import CalibrationSettings, load_calibration_settings
from robodojo.perception.calibrate.solve import (
    board_in_world,
    check_size,
    detect_views,
    solve_fixed,
    solve_hand_eye,
    solve_intrinsics,
)
from robodojo.perception.calibration import board_image
from robodojo.perception.camera import CameraFile, CameraModel, load_camera_file, write_camera_file
from robodojo.perception.mounted_camera import calibration_dir

HEADER = "Written by `robodojo calibrate {step}` on {today} from {source}."
MOVE_OK = ("completed", "off_target")  # a view is taken where the arm stopped: reaching it exactly is not needed


def _say(text: str) -> None:
    print(text, flush=True)


def _settings(args: argparse.Namespace) -> CalibrationSettings:
    return load_calibration_settings(args.config) if args.config else load_calibration_settings()


def _camera_file(folder: Path, robot: str, camera: str) -> CameraFile:
    """``camera``'s file in ``folder``, else the robot's shipped one (config/cameras/<robot>/): the starting point."""
    for path in (folder / f"{camera}.yaml", calibration_dir(robot) / f"{camera}.yaml"):
        if path.is_file():
            return load_camera_file(path)
    raise ConfigError(f"{folder / camera}.yaml not found: the camera needs its intrinsics to solve this step")


def _out_dir(args: argparse.Namespace, robot: str) -> Path:
    return Path(args.out) if args.out else calibration_dir(robot)


def _pose_text(T: np.ndarray) -> str:
    q = quat_from_matrix(T[:3, :3])
    return f"xyz {np.round(T[:3, 3], 4).tolist()} m, quat_wxyz {np.round(q, 5).tolist()}"


def _record(step: str, capture: Capture, **figures: float | int | str) -> dict[str, Any]:
    return {"step": step, "date": date.today().isoformat(), "views": len(capture.views), **figures}


# -- board ------------------------------------------------------------------------------------------------------------
def cmd_board(args: argparse.Namespace) -> int:
    import cv2

    board = _settings(args).board
    pixels_per_m = args.dpi / 0.0254
    image = board_image(board, pixels_per_m, margin_m=board.square_m / 2)
    cv2.imwrite(str(args.png), image)
    width_mm = image.shape[1] / pixels_per_m * 1000
    _say(f"{args.png}: {image.shape[1]} x {image.shape[0]} px, {width_mm:.0f} mm wide at {args.dpi:g} dpi; measure")
    _say(f"the printed squares (config/calibration.yaml says {board.square_m * 1000:g} mm) and set what you measured")
    return 0


# -- capture ----------------------------------------------------------------------------------------------------------
def _graph(settings: CalibrationSettings, timeout_s: float) -> Any:
    """The graph client, this package's interfaces built and importable first (as `robodojo judge` does)."""
    from robodojo.nodes.process_graph import build_interfaces, use_interfaces_here

    build_interfaces()
    use_interfaces_here()
    from robodojo.nodes.calibration_client import CalibrationGraph

    return CalibrationGraph(settings.capture, speed_scale=settings.motions.speed_scale, timeout_s=timeout_s)


def cmd_capture(args: argparse.Namespace) -> int:
    from robodojo.perception.calibrate.captures import CaptureWriter

    settings = _settings(args)
    with _graph(settings, args.timeout_s) as graph:
        robot = graph.robot
        arm = robot.camera_arm(args.camera)
        folder = Path(args.out or f"out/calibration/{args.camera}")
        first = graph.snapshot(args.camera)
        calib = first.frame.calibration
        writer = CaptureWriter(folder, robot.name, args.camera, arm, CameraModel.from_calibration(args.camera, calib))
        if args.move:
            if arm is None:
                raise ConfigError(f"camera {args.camera} is fixed: --move is for wrist cameras (hand-eye)")
            return _capture_moving(graph, args, settings, arm, first, writer)
        for i in range(args.views):
            if i:
                time.sleep(args.interval_s)  # an operator moving a hand-held board between views
            shot = graph.snapshot(args.camera) if i else first
            writer.add(shot.frame.rgb, shot.stamp_s, shot.joints_rad, shot.T_world_tcp)
            _say(f"view {i + 1}/{args.views}: {args.camera} at {shot.stamp_s:.3f} s")
        _say(f"{args.views} views in {folder}")
    return 0


def _why(report: Any) -> str:
    """What a MoveReport says of why it ended where it did."""
    return report.stop_detail or report.tool_text


def _confirm(args: argparse.Namespace, arm: str, T_world_tcp: np.ndarray) -> bool:
    """The operator's go for the first motion (--yes: given)."""
    _say(f"  first motion: the {arm} TCP to {_pose_text(T_world_tcp)}")
    return bool(args.yes) or input("move? [y/N] ").strip().lower() in ("y", "yes")


def _look_at(graph: Any, args: argparse.Namespace, arm: str, shot: Any, T_tcp_cam: np.ndarray) -> bool:
    """Move ``arm`` so that its wrist camera looks down at --look-at (the operator confirms); whether it moved."""
    from robodojo.perception.calibrate.view_plan import look_at_view
    from robodojo.robots.ik import ArmKinematics

    motions = _settings(args).motions
    q = np.array([shot.joints_rad[j] for j in graph.robot.arm(arm).joints])
    view = look_at_view(graph.robot, ArmKinematics(graph.robot), arm, q, T_tcp_cam, np.array(args.look_at),
                        motions.look_distance_m, motions.look_elevations_deg)  # fmt: skip
    if isinstance(view, str):
        raise ConfigError(f"--look-at: {view}")
    if not _confirm(args, arm, view.T_world_tcp):
        _say("not moved")
        return False
    report = graph.move_tcp(arm, view.T_world_tcp)
    if report.stop_reason.value not in MOVE_OK:
        raise ConfigError(f"--look-at: the motion ended {report.stop_reason.value}: {_why(report)}")
    return True


def _capture_moving(
    graph: Any, args: argparse.Namespace, settings: CalibrationSettings, arm: str, first: Any, writer: Any
) -> int:
    from robodojo.perception.calibrate.view_plan import plan_wrist_views
    from robodojo.perception.calibration import board_pose, detect_charuco
    from robodojo.robots.ik import ArmKinematics

    robot, kinematics, motions = graph.robot, ArmKinematics(graph.robot), settings.motions
    T_start = first.T_world_tcp[arm]
    # What the graph believes of the camera now (its published pose against the TCP): views are planned with it.
    T_tcp_cam = np.linalg.inv(T_start) @ np.asarray(first.frame.calibration.T_world_cam)
    confirmed = False
    if args.look_at:
        if not _look_at(graph, args, arm, first, T_tcp_cam):
            return 1
        confirmed = True
        first = graph.snapshot(args.camera)
    calib = first.frame.calibration
    detection = detect_charuco(first.frame.rgb, settings.board)
    pose = board_pose(detection, np.asarray(calib.K), np.asarray(calib.distortion))
    if not pose.ok:
        raise ConfigError(
            f"the board is not in {args.camera}'s view ({pose.reason or detection.reason}): move the arm so that the "
            "camera sees the whole board, or give --look-at with the board's rough position"
        )
    T_world_board = np.asarray(calib.T_world_cam) @ pose.T_cam_board
    width, height = settings.board.size_m
    center = T_world_board[:3, :3] @ np.array([width / 2, height / 2, 0.0]) + T_world_board[:3, 3]
    q_now = np.array([first.joints_rad[j] for j in robot.arm(arm).joints])
    plan = plan_wrist_views(robot, kinematics, arm, q_now, T_tcp_cam, center, motions)
    for reason in plan.skipped:
        _say(f"  skipped {reason}")
    if len(plan.views) < 4:
        raise ConfigError(f"only {len(plan.views)} calibration poses are reachable within the bounds: move the arm")
    _say(f"{len(plan.views)} calibration poses around the board at {np.round(center, 3).tolist()} m")
    if not confirmed and not _confirm(args, arm, plan.views[0].T_world_tcp):
        _say("not moved")
        return 1
    taken = 0
    for i, view in enumerate(plan.views):
        report = graph.move_tcp(arm, view.T_world_tcp)
        if report.stop_reason.value not in MOVE_OK:
            # stopped, refused, lost: whatever stopped it decides what moves next, not this command
            _say(f"  pose {i + 1}: {report.stop_reason.value} ({_why(report)}); the arm stays where it stopped")
            _say(f"{taken} views in {writer.folder}")
            return 1
        shot = graph.snapshot(args.camera)
        writer.add(shot.frame.rgb, shot.stamp_s, shot.joints_rad, shot.T_world_tcp)
        taken += 1
        _say(f"  pose {i + 1}/{len(plan.views)}: view taken")
    back = graph.move_tcp(arm, T_start)
    _say(f"  back to the start: {back.stop_reason.value}")
    _say(f"{taken} views in {writer.folder}")
    return 0


# -- solving ----------------------------------------------------------------------------------------------------------
def cmd_intrinsics(args: argparse.Namespace) -> int:
    settings, capture = _settings(args), read_capture(args.capture)
    out = _out_dir(args, capture.robot)
    result = solve_intrinsics(capture, detect_views(capture, settings.board))
    if not result.ok:
        _say(f"{capture.camera}: intrinsics failed: {result.reason}")
        return 1
    _print_intrinsics(capture.camera, result)
    old = (out / f"{capture.camera}.yaml").is_file() and load_camera_file(out / f"{capture.camera}.yaml")
    model = CameraModel(capture.camera, result.K, np.eye(4), capture.width, capture.height, result.distortion)
    header = HEADER.format(step="intrinsics", today=date.today(), source=capture.folder)
    record = _record("intrinsics", capture, rms_px=result.rms_px, tilt_spread_deg=result.tilt_spread_deg)
    if old:
        path = write_camera_file(
            out, model.with_pose(old.model.T_world_cam), header, T_tcp_cam=old.T_tcp_cam, arm=old.arm, record=record
        )
    else:
        T_tcp_cam = np.eye(4) if capture.arm else None
        path = write_camera_file(out, model, header, T_tcp_cam=T_tcp_cam, arm=capture.arm, record=record)
        _say(f"  the pose in {path} is a placeholder until `{'hand-eye' if capture.arm else 'head'}` runs")
    _say(f"  wrote {path}")
    return 0


def _print_intrinsics(camera: str, result: Any) -> None:
    K = result.K
    _say(
        f"{camera}: fx {K[0, 0]:.2f} fy {K[1, 1]:.2f} cx {K[0, 2]:.2f} cy {K[1, 2]:.2f} px, rms {result.rms_px:.3f} px "
        f"over {result.views_used} views (tilt spread {result.tilt_spread_deg:.0f} deg)"
    )


def cmd_hand_eye(args: argparse.Namespace) -> int:
    settings, capture = _settings(args), read_capture(args.capture)
    out = _out_dir(args, capture.robot)
    detections = detect_views(capture, settings.board)
    _say(f"{capture.camera}: board found in {sum(d.found for d in detections)} of {len(detections)} views")
    figures: dict[str, float | int | str] = {}
    if args.published_intrinsics:
        model = capture.published
    elif args.intrinsics:
        intrinsics = solve_intrinsics(capture, detections)
        if not intrinsics.ok:
            _say(f"  intrinsics failed: {intrinsics.reason}")
            return 1
        _print_intrinsics(capture.camera, intrinsics)
        model = CameraModel(capture.camera, intrinsics.K, np.eye(4), capture.width, capture.height,
                            intrinsics.distortion)  # fmt: skip
        figures["intrinsics_rms_px"] = intrinsics.rms_px
    else:
        model = _camera_file(out, capture.robot, capture.camera).model
        check_size(model, capture)
    result = solve_hand_eye(capture, detections, model, board_flat=args.board_flat)
    if not result.ok:
        _say(f"  hand-eye failed: {result.reason}")
        return 1
    _say(
        f"  T_tcp_cam {_pose_text(result.T_tcp_cam)} ({result.method}); board scatter "
        f"{result.residual_m * 1000:.2f} mm / {result.residual_deg:.3f} deg"
    )
    record = _record("hand-eye", capture, method=result.method, board_scatter_mm=result.residual_m * 1000,
                     board_scatter_deg=result.residual_deg, **figures)  # fmt: skip
    header = HEADER.format(step="hand-eye", today=date.today(), source=capture.folder)
    path = write_camera_file(out, model, header, T_tcp_cam=result.T_tcp_cam, arm=capture.arm, record=record)
    _say(f"  wrote {path}")
    return 0


def cmd_head(args: argparse.Namespace) -> int:
    settings, capture = _settings(args), read_capture(args.capture)
    out = _out_dir(args, capture.robot)
    if capture.arm is not None:
        raise ConfigError(f"{capture.camera} is on the {capture.arm} arm: use `hand-eye` for wrist cameras")
    old = _camera_file(out, capture.robot, capture.camera)
    model = capture.published if args.published_intrinsics else old.model
    check_size(model, capture)
    if args.board_pose:
        v = args.board_pose
        T_world_board = transform(matrix_from_quat(np.array(v[3:]) / np.linalg.norm(v[3:])), v[:3])
        source = "the board pose given"
    else:
        wrist = read_capture(args.board_from)
        wrist_file = _camera_file(out, wrist.robot, wrist.camera)
        placed = board_in_world(wrist, detect_views(wrist, settings.board), wrist_file, board_flat=args.board_flat)
        if not placed.ok:
            _say(f"{wrist.camera} could not place the board: {placed.reason}")
            return 1
        T_world_board = placed.T_world_board
        source = f"{wrist.camera} ({placed.views_used} views, scatter {placed.scatter_m * 1000:.2f} mm)"
        _say(f"board placed by {source}: {_pose_text(T_world_board)}")
    detections = detect_views(capture, settings.board)
    result = solve_fixed(capture, detections, model, T_world_board)
    if not result.ok:
        _say(f"{capture.camera}: failed: {result.reason}")
        return 1
    _say(f"{capture.camera}: T_world_cam {_pose_text(result.T_world_cam)}, {result.rms_px:.3f} px")
    record = _record("head", capture, rms_px=result.rms_px, board_from=source)
    header = HEADER.format(step="head", today=date.today(), source=capture.folder)
    path = write_camera_file(out, model.with_pose(result.T_world_cam), header, record=record)
    _say(f"  wrote {path}")
    return 0


# -- check ------------------------------------------------------------------------------------------------------------
def cmd_check(args: argparse.Namespace) -> int:
    import cv2

    from robodojo.perception.calibrate.check import check_cameras, overlay
    from robodojo.perception.calibration import detect_charuco

    settings = _settings(args)
    with _graph(settings, args.timeout_s) as graph:
        robot = graph.robot
        folder = Path(args.calibration_dir) if args.calibration_dir else calibration_dir(robot.name)
        cameras = args.cameras or list(robot.camera_names)
        moved: dict[str, np.ndarray] = {}  # arm -> where its TCP started
        if args.look_at:  # wrist cameras first turned to the board, one arm after the other
            for camera in cameras:
                file = _camera_file(folder, robot.name, camera)
                if file.arm is not None and file.T_tcp_cam is not None:
                    shot = graph.snapshot(camera)
                    if not _look_at(graph, args, file.arm, shot, file.T_tcp_cam):
                        return 1
                    moved[file.arm] = shot.T_world_tcp[file.arm]
        shots = {c: graph.snapshot(c) for c in cameras}
        for arm, T_start in moved.items():  # back where they were, as capture --move leaves them
            _say(f"  {arm} back to the start: {graph.move_tcp(arm, T_start).stop_reason.value}")
    models, detections = {}, {}
    for camera, shot in shots.items():
        file = _camera_file(folder, robot.name, camera)
        model = file.at(shot.T_world_tcp[file.arm]) if file.arm else file.model
        if (model.width, model.height) != (shot.frame.calibration.width, shot.frame.calibration.height):
            raise ConfigError(f"{camera}: frames are not the size of {folder / (camera + '.yaml')}'s intrinsics")
        models[camera] = model
        detections[camera] = detect_charuco(shot.frame.rgb, settings.board)
    checks = check_cameras(models, detections, settings.board)
    limits = settings.check
    failed = []
    for c in checks:
        verdict = "ok" if c.passes(limits.max_reprojection_px, limits.max_board_error_mm) else "FAILED"
        if verdict != "ok":
            failed.append(c.camera)
        figures = (
            f"{c.reprojection_px:.2f} px, {c.board_error_mm:.2f} mm" if not math.isnan(c.reprojection_px) else c.note
        )
        _say(
            f"{c.camera}: {verdict}: board {'found' if c.board_found else 'not found'} ({c.corners} corners); {figures}"
        )
    if args.images:
        out = Path(args.images)
        out.mkdir(parents=True, exist_ok=True)
        tcp = {arm: T[:3, 3] for arm, T in next(iter(shots.values())).T_world_tcp.items()}
        T_world_board = next((c.T_world_board for c in checks if c.T_world_board is not None), None)
        for camera, shot in shots.items():
            image = overlay(shot.frame.rgb, models[camera], T_world_board, settings.board, tcp)
            cv2.imwrite(str(out / f"check_{camera}.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
        _say(f"overlays in {out}: the board's corners as the first camera that found it places them, grasp points")
    _say(f"bounds: {limits.max_reprojection_px:g} px, {limits.max_board_error_mm:g} mm (config/calibration.yaml)")
    return 1 if failed else 0


# -- command line -----------------------------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """`robodojo calibrate ...` on the top-level command's subparsers."""
    calibrate = sub.add_parser(
        "calibrate",
        help="calibrate the cameras from the running graph (capture, hand-eye, head, intrinsics, check)",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    steps = calibrate.add_subparsers(dest="step", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="calibration settings (default config/calibration.yaml)")
    solving = argparse.ArgumentParser(add_help=False, parents=[common])
    solving.add_argument("--capture", required=True, type=Path, help="a folder `capture` wrote")
    solving.add_argument("--out", help="where <camera>.yaml is read and written (default config/cameras/<robot>/)")
    solving.add_argument(
        "--board-flat", action="store_true", help="the board lies face up on the level table (its normal is world z)"
    )
    solving.add_argument(
        "--published-intrinsics",
        action="store_true",
        help="use the intrinsics the graph published at capture (a driver's factory CameraInfo, intrinsics: driver)",
    )
    graph = argparse.ArgumentParser(add_help=False, parents=[common])
    graph.add_argument("--timeout-s", type=float, default=20.0, help="for the graph to show up (default %(default)s)")

    p = steps.add_parser("board", parents=[common], help="write the board as a PNG to print")
    p.add_argument("--png", type=Path, default=Path("charuco_board.png"))
    p.add_argument("--dpi", type=float, default=300.0)
    p.set_defaults(func=cmd_board)

    p = steps.add_parser("capture", parents=[graph], help="save frames at rest with the robot's state")
    p.add_argument("--camera", required=True)
    p.add_argument("--out", help="capture folder (default out/calibration/<camera>)")
    p.add_argument("--move", action="store_true", help="wrist cameras: move the arm through calibration poses")
    p.add_argument("--views", type=int, default=3, help="without --move: frames to take (default %(default)s)")
    p.add_argument("--interval-s", type=float, default=0.0, help="without --move: pause between frames")
    p.add_argument("--yes", action="store_true", help="do not ask before the first motion")
    p.add_argument("--look-at", nargs=3, type=float, metavar=("X", "Y", "Z"),
                   help="with --move: first look down at this world point (the board's rough centre) [m]")  # fmt: skip
    p.set_defaults(func=_interruptible(cmd_capture))

    p = steps.add_parser("intrinsics", parents=[solving], help="intrinsics from a capture of the board at many tilts")
    p.set_defaults(func=cmd_intrinsics)

    p = steps.add_parser("hand-eye", parents=[solving], help="a wrist camera's T_tcp_cam from a --move capture")
    p.add_argument("--intrinsics", action="store_true", help="calibrate the intrinsics from the same views too")
    p.set_defaults(func=cmd_hand_eye)

    p = steps.add_parser("head", parents=[solving], help="a fixed camera's pose from the board lying still")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--board-from", type=Path, help="a wrist camera's capture of the same board placement")
    where.add_argument("--board-pose", nargs=7, type=float, metavar=("X", "Y", "Z", "QW", "QX", "QY", "QZ"),
                       help="the board frame's world pose, measured")  # fmt: skip
    p.set_defaults(func=cmd_head)

    p = steps.add_parser("check", parents=[graph], help="every camera against the others; exit 1 past the bounds")
    p.add_argument("--cameras", nargs="+", help="default: every camera of the robot")
    p.add_argument("--calibration-dir", help="the files to check (default config/cameras/<robot>/)")
    p.add_argument("--images", help="write overlay images (projected board corners, grasp points) here")
    p.add_argument(
        "--look-at",
        nargs=3,
        type=float,
        metavar=("X", "Y", "Z"),
        help="first turn the wrist cameras to look down at this world point (the board's rough centre)",
    )
    p.add_argument("--yes", action="store_true", help="do not ask before a motion")  # fmt: skip
    p.set_defaults(func=_interruptible(cmd_check))


def _interruptible(func: Any) -> Any:
    """Ctrl-C during a step: the graph client's exit cancels a running motion (the arm stops where it is, and
    nothing moves it back); one line instead of a traceback, exit code 130."""

    def run(args: argparse.Namespace) -> int:
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill ends it as Ctrl-C does: motion cancelled
        try:
            return int(func(args))
        except KeyboardInterrupt:
            print("robodojo calibrate: interrupted; a running motion was cancelled", file=sys.stderr, flush=True)
            return 130

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="robodojo")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
