"""Camera models, back-projection, triangulation and world maps: exact on synthetic cameras, within the targets on
rendered scenes (ground truth read only here)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.errors import ConfigError
from robodojo.geometry import rotation_from_rpy, transform
from robodojo.perception.camera import CameraModel, camera_file_data, parse_camera_file
from robodojo.perception.geometry import back_project, triangulate, world_map

K = np.array([[500.0, 0.0, 319.5], [0.0, 500.0, 239.5], [0.0, 0.0, 1.0]])


def looking_down(name="cam", xyz=(0.0, 0.0, 1.5), tilt_deg=0.0, distortion=None):
    """An optical frame above the table looking down (z forward = world -z), tilted about world x."""
    R = rotation_from_rpy([math.pi + math.radians(tilt_deg), 0.0, 0.0])
    return CameraModel(name, K, transform(R, xyz), 640, 480, np.zeros(5) if distortion is None else distortion)


def test_projection_and_rays_are_exact_inverses():
    cam = looking_down(tilt_deg=20)
    rng = np.random.default_rng(0)
    pts = np.column_stack([rng.uniform(-0.3, 0.3, 50), rng.uniform(-0.3, 0.3, 50), rng.uniform(0.6, 1.0, 50)])
    uv, ok = cam.project_uv(pts)
    assert ok.all()
    dirs = cam.pixel_rays(uv[:, 1], uv[:, 0])
    expected = (pts - cam.position_m) / np.linalg.norm(pts - cam.position_m, axis=1, keepdims=True)
    np.testing.assert_allclose(dirs, expected, atol=1e-12)
    assert cam.project([0.0, 0.0, 2.0]) is None  # behind the camera


def test_distortion_round_trip_matches_opencv():
    import cv2

    dist = np.array([-0.12, 0.05, 0.001, -0.0008, 0.0])
    cam = looking_down(distortion=dist, tilt_deg=10)
    pts = np.array([[0.1, -0.2, 0.8], [-0.25, 0.15, 0.9], [0.0, 0.0, 0.7]])
    uv, _ = cam.project_uv(pts)
    T = cam.T_cam_world
    rvec, _ = cv2.Rodrigues(T[:3, :3])
    cv_uv, _ = cv2.projectPoints(pts, rvec, T[:3, 3], K, dist)
    np.testing.assert_allclose(uv, cv_uv.reshape(-1, 2), atol=1e-9)
    back = [back_project(cam, v, u, z) for (u, v), z in zip(uv, pts[:, 2], strict=True)]
    np.testing.assert_allclose([b.point_m for b in back], pts, atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.floats(-0.4, 0.4), st.floats(-0.4, 0.4), st.floats(0.6, 1.0), st.floats(-30, 30))
def test_back_projection_is_exact_on_a_synthetic_camera(x, y, z, tilt):
    cam = looking_down(tilt_deg=tilt)
    px = cam.project([x, y, z])
    if px is None or not cam.in_image(*px):
        return
    hit = back_project(cam, *px, z)
    assert hit.found
    np.testing.assert_allclose(hit.point_m, [x, y, z], atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), st.floats(0.7, 1.0))
def test_triangulation_is_exact_on_synthetic_cameras(x, y, z):
    views = [looking_down("a", (-0.3, 0.0, 1.5), 0), looking_down("b", (0.3, -0.4, 1.4), 25)]
    pxs = [c.project([x, y, z]) for c in views]
    if not all(px is not None and c.in_image(*px) for c, px in zip(views, pxs, strict=True)):
        return
    result = triangulate(list(zip(views, pxs, strict=True)))
    assert result.found, result.reason
    np.testing.assert_allclose(result.point_m, [x, y, z], atol=1e-7)
    assert result.reprojection_error_px < 1e-6 and result.ray_gap_mm < 1e-6


def test_triangulation_reports_the_gap_of_mismatched_pixels():
    a, b = looking_down("a", (-0.3, 0.0, 1.5)), looking_down("b", (0.3, -0.4, 1.4), 25)
    p = np.array([0.0, 0.0, 0.8])
    row, col = b.project(p)
    slightly_off = triangulate([(a, a.project(p)), (b, (row + 3, col))])
    assert slightly_off.found and 1 < slightly_off.reprojection_error_px < 3 and slightly_off.ray_gap_mm > 1
    far_off = triangulate([(a, a.project(p)), (b, (row + 150, col - 100))])
    assert not far_off.found and "do not show one point" in far_off.reason


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (lambda c: back_project(c, 500, 10, 0.8), "pixel (500, 10) is outside the 640x480 image of 'cam'"),
        (lambda c: back_project(c, -1, 10, 0.8), "outside the 640x480 image"),
        (lambda c: back_project(c, "a", 10, 0.8), "pixel (row, col) must be two numbers"),
        (lambda c: back_project(c, 10, math.nan, 0.8), "is not finite"),
        (lambda c: back_project(c, 10, 10, math.inf), "plane_z must be a finite height"),
        (lambda c: back_project(c, 10, 10, 2.0), "is behind 'cam'"),
        (lambda c: triangulate([(c, (10, 10))]), "need at least two views, got 1"),
        (lambda c: triangulate([(c, (10, 10)), (c, (10, 10))]), "within 0.00 deg of parallel"),
        (lambda c: triangulate([(c, (10, 10)), (c, 5)]), "pixel for 'cam' must be (row, col)"),
        (lambda c: world_map(c, None), "camera 'cam' has no depth"),
        (lambda c: world_map(c, np.ones((10, 10))), "depth image is 10x10, camera 'cam' is 640x480"),
    ],
)
def test_bad_input_returns_a_reason(call, reason):
    result = call(looking_down())
    assert not (getattr(result, "found", None) or getattr(result, "ok", None))
    assert reason in result.reason


def test_parallel_ray():
    cam = CameraModel("side", K, transform(rotation_from_rpy([-math.pi / 2, 0, 0]), [0, -1, 0.8]), 640, 480)
    hit = back_project(cam, 239.5, 319.5, 0.8)  # the optical axis is horizontal: parallel to z = 0.8
    assert not hit.found and "runs parallel" in hit.reason


def test_camera_file_round_trip_and_errors():
    cam = looking_down(distortion=np.array([0.01, -0.02, 0.0, 0.0, 0.003]), tilt_deg=5)
    loaded = parse_camera_file(camera_file_data(cam), "head.yaml", "cam")
    np.testing.assert_allclose(loaded.model.K, cam.K)
    np.testing.assert_allclose(loaded.model.T_world_cam, cam.T_world_cam, atol=1e-12)
    np.testing.assert_allclose(loaded.model.distortion, cam.distortion)
    T_tcp_cam = transform(rotation_from_rpy([0.1, 0.2, 0.3]), [0.05, 0.0, -0.1])
    wrist = parse_camera_file(camera_file_data(cam, T_tcp_cam=T_tcp_cam, arm="left"), "w.yaml", "left_wrist")
    assert wrist.is_wrist and wrist.arm == "left"
    T_world_tcp = transform(rotation_from_rpy([3.0, 0.1, -0.4]), [0.2, -0.3, 0.9])
    np.testing.assert_allclose(wrist.at(T_world_tcp).T_world_cam, T_world_tcp @ T_tcp_cam, atol=1e-12)
    bad = camera_file_data(cam)
    bad["T_tcp_cam"] = bad["T_world_cam"]
    with pytest.raises(ConfigError, match="exactly one of T_world_cam"):
        parse_camera_file(bad, "x.yaml", "x")
    bad = camera_file_data(cam)
    bad["camera_matrix"]["data"][8] = 2.0
    with pytest.raises(ConfigError, match="not an intrinsic matrix"):
        parse_camera_file(bad, "x.yaml", "x")


# -- rendered scenes (ground truth from the privileged view, in tests only) -----------------------------------


def _models(world):
    return {n: CameraModel.from_calibration(n, world.calibration(n)) for n in world.robot.camera_names}


def _top_face_points(world, name, rng, n=8):
    truth = world.privileged()
    obj = truth.layout.object(name)
    centre = truth.object_pos(name)
    half = 0.4 * min(obj.size_m[0], obj.size_m[1]) if obj.kind == "block" else 0.5 * obj.size_m[0]
    top = centre[2] + obj.height_m / 2
    return [np.array([centre[0] + dx, centre[1] + dy, top]) for dx, dy in rng.uniform(-half, half, (n, 2))]


def test_back_projection_of_rendered_top_faces(dual_world):
    """Pixels picked on object top faces land within 3 mm (head) / 2 mm (wrists) of the true point."""
    rng = np.random.default_rng(4)
    errors = {"head": [], "wrist": []}
    for seed in range(4):
        dual_world.reset("general_pickup", seed=seed)
        cams = _models(dual_world)
        for p in _top_face_points(dual_world, "target", rng):
            for name, cam in cams.items():
                px = cam.project(p)
                if px is None or not cam.in_image(*px):
                    continue
                # Round to the pixel grid, as a pixel picked in an image would be.
                hit = back_project(cam, round(px[0]), round(px[1]), p[2])
                errors["head" if name == "head" else "wrist"].append(np.linalg.norm(np.array(hit.point_m) - p))
    assert np.median(errors["head"]) * 1e3 <= 3.0
    if errors["wrist"]:
        assert np.median(errors["wrist"]) * 1e3 <= 2.0


def test_triangulation_from_head_and_wrist_views(dual_world):
    """Move a wrist just beyond an object (its camera looks back towards -y), then triangulate top-face points from
    head + wrist pixels: median <= 3 mm."""
    from robodojo.motion.server import MotionServer

    errors = []
    for seed in range(3):
        dual_world.reset("general_pickup", seed=seed)
        truth = dual_world.privileged()
        target = truth.object_pos("target")
        arm = "left" if target[0] < 0 else "right"
        move = MotionServer(dual_world).move_eef(
            {f"{arm}_x": target[0], f"{arm}_y": target[1] + 0.025, f"{arm}_z": 0.9}
        )
        assert move.accepted and move.arms[arm].reached, move.tool_text
        cams = _models(dual_world)
        wrist = cams[f"{arm}_wrist"]
        for p in _top_face_points(dual_world, "target", np.random.default_rng(seed)):
            a, b = cams["head"].project(p), wrist.project(p)
            if b is None or not wrist.in_image(*b):
                continue
            result = triangulate([(cams["head"], (round(a[0]), round(a[1]))), (wrist, (round(b[0]), round(b[1])))])
            assert result.found, result.reason
            errors.append(np.linalg.norm(np.array(result.point_m) - p))
    assert len(errors) >= 8 and np.median(errors) * 1e3 <= 3.0


def test_world_map_from_rendered_depth(dual_world):
    dual_world.reset("general_pickup", seed=2)  # its target's top face is in the head camera's view
    frame = dual_world.render("head", depth=True)
    wm = world_map(CameraModel.from_calibration("head", frame.calibration), frame.depth_m)
    assert wm.ok and wm.valid.mean() > 0.99
    truth = dual_world.privileged()
    top = truth.object_pos("target") + np.array([0, 0, truth.layout.object("target").height_m / 2])
    row, col = np.round(CameraModel.from_calibration("head", frame.calibration).project(top)).astype(int)
    np.testing.assert_allclose(wm.xyz_m[row, col], top, atol=0.004)
    table = wm.xyz_m[470, 320]
    assert table[2] == pytest.approx(dual_world.robot.table.top_z_m, abs=0.002)
