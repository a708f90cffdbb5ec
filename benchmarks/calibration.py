"""Accuracy of `robodojo calibrate`'s solving steps on captures rendered in the embedded world, against the true
cameras.

Per robot (``--robots``; fr3 only with ``--smoke``) and per wrist camera: a hand-eye capture as `capture --move
--look-at <board>` takes it (perception/calibrate/rehearsal.py: the board of config/calibration.yaml on the table,
the views planned from the shipped calibration, the arm teleported to each, rendered), then

1. hand-eye, three ways on the same views: OpenCV's closed form alone (the baseline: the best of its five methods by
   board scatter, as before this refinement existed), refined over every corner (board pose free), refined with the
   board flat on the table; error of T_tcp_cam against the truth [mm, deg], the board's scatter over the views, and
   the solve time;
2. the board as the refined, flat-board wrist camera places it, against its true pose [mm, deg];
3. the head camera's pose from that placed board (what `head --board-from` does) and, for scale, from the true board
   pose: error [mm, deg] and its reprojection RMS [px].

Run: ``.venv/bin/python benchmarks/calibration.py [--robots fr3 dual_arx_x5] [--smoke] [--json out.json]``; about 20 s,
``--smoke`` about 8 s. The figures do not depend on the machine's load (only the solve times do).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import table, write_figures

from robodojo.geometry import rotation_angle_between
from robodojo.perception.calibrate.rehearsal import RenderedRig
from robodojo.perception.calibrate.settings import load_calibration_settings
from robodojo.perception.calibrate.solve import board_in_world, detect_views, solve_fixed, solve_hand_eye
from robodojo.perception.camera import CameraFile, load_camera_file
from robodojo.perception.mounted_camera import default_calibration_path

ROBOTS = ("fr3", "dual_arx_x5")


def errors(T: np.ndarray, T_true: np.ndarray) -> tuple[float, float]:
    """Position [mm] and rotation [deg] between two poses."""
    return (
        1000 * float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])),
        math.degrees(rotation_angle_between(T[:3, :3], T_true[:3, :3])),
    )


def bench_robot(robot: str, folder: Path) -> dict:
    board = load_calibration_settings().board
    out: dict = {}
    with RenderedRig(robot) as rig:
        head = load_camera_file(default_calibration_path(robot, "head"))
        for camera in (c for c in rig.robot.camera_names if rig.robot.camera_arm(c)):
            believed = load_camera_file(default_calibration_path(robot, camera))
            rehearsal = rig.hand_eye_capture(camera, believed, folder / camera)
            capture, truth = rehearsal.capture, rehearsal.T_tcp_cam_true
            detections = detect_views(capture, board)
            row: dict = {"views": len(capture.views), "found": sum(d.found for d in detections)}
            for name, kwargs in (
                ("closed form", {"refine": False}),
                ("refined", {}),
                ("refined, board flat", {"board_flat": True}),
            ):
                start = time.perf_counter()
                result = solve_hand_eye(capture, detections, believed.model, **kwargs)
                elapsed_ms = 1000 * (time.perf_counter() - start)
                mm, deg = errors(result.T_tcp_cam, truth) if result.ok else (math.nan, math.nan)
                row[name] = {
                    "ok": result.ok, "mm": mm, "deg": deg, "scatter_mm": 1000 * result.residual_m,
                    "scatter_deg": result.residual_deg, "solve_ms": elapsed_ms, "method": result.method,
                }  # fmt: skip
            flat = solve_hand_eye(capture, detections, believed.model, board_flat=True)
            placed = board_in_world(capture, detections, CameraFile(believed.model, flat.T_tcp_cam, capture.arm),
                                    board_flat=True)  # fmt: skip
            row["board"] = dict(zip(("mm", "deg"), errors(placed.T_world_board, rig.board_pose), strict=True))
            head_capture = rig.fixed_capture("head", folder / f"head_{camera}")
            head_detections = detect_views(head_capture, board)
            true_head = rig.truth("head").T_world_cam
            for name, T_board in (("head from placed board", placed.T_world_board), ("head from true board",
                                                                                     rig.board_pose)):  # fmt: skip
                fixed = solve_fixed(head_capture, head_detections, head.model, T_board)
                mm, deg = errors(fixed.T_world_cam, true_head)
                row[name] = {"mm": mm, "deg": deg, "rms_px": fixed.rms_px}
            out[camera] = row
    return out


def print_robot(robot: str, figures: dict) -> None:
    print(f"\n== {robot}")
    rows = []
    for camera, row in figures.items():
        for name in ("closed form", "refined", "refined, board flat"):
            r = row[name]
            rows.append((camera, f"hand-eye {name}", f"{r['mm']:.2f}", f"{r['deg']:.3f}",
                         f"{r['scatter_mm']:.2f} mm / {r['scatter_deg']:.3f} deg", f"{r['solve_ms']:.0f}"))  # fmt: skip
        base, best = row["closed form"], row["refined, board flat"]
        rows.append((camera, "  refined flat / closed form", f"{best['mm'] / base['mm']:.2f}x",
                     f"{best['deg'] / base['deg']:.2f}x", "", ""))  # fmt: skip
        rows.append((camera, "board placed by the wrist", f"{row['board']['mm']:.2f}", f"{row['board']['deg']:.3f}",
                     "", ""))  # fmt: skip
        for name in ("head from placed board", "head from true board"):
            r = row[name]
            rows.append((camera, name, f"{r['mm']:.2f}", f"{r['deg']:.3f}", f"{r['rms_px']:.3f} px", ""))
    table(("camera", "step", "error mm", "error deg", "residual", "solve ms"), rows, "<<>><>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", choices=ROBOTS, help="default: both (fr3 with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="the FR3 only")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    robots = args.robots or (("fr3",) if args.smoke else ROBOTS)
    print(f"robodojo calibration benchmark{' (smoke)' if args.smoke else ''}: recovered vs the simulator's truth")
    figures = {}
    with tempfile.TemporaryDirectory(prefix="calibration_bench_") as tmp:
        for robot in robots:
            figures[robot] = bench_robot(robot, Path(tmp) / robot)
            print_robot(robot, figures[robot])
    if args.json:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
