"""Distortion models against OpenCV's own projection, K scaled exactly for other sizes (the pixel-centre convention
checked on real resized images), and camera_node's per-frame policy (camera_stream)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.perception.camera import CameraModel, camera_file_data, parse_camera_file
from robodojo.perception.camera_stream import (
    ArmStateHistory,
    CameraStream,
    StreamSettings,
    check_output_aspect,
    driver_intrinsics,
)
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics, resize_rgb, scale_K
from robodojo.perception.image_formats import FrameError

K = np.array([[600.0, 0.0, 318.7], [0.0, 602.0, 241.3], [0.0, 0.0, 1.0]])
COEFFS = {
    "plumb_bob": (-0.12, 0.05, 0.001, -0.0007, -0.01),
    "rational_polynomial": (0.4, -0.1, 0.001, -0.0007, 0.02, 0.5, -0.05, 0.03),
    "equidistant": (0.05, -0.02, 0.004, -0.001),
}


def _points(n: int = 50) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.column_stack([rng.uniform(-0.4, 0.4, n), rng.uniform(-0.3, 0.3, n), rng.uniform(0.8, 1.5, n)])


@pytest.mark.parametrize("model", list(COEFFS))
def test_each_model_projects_as_opencv_and_round_trips(model) -> None:
    d = np.array(COEFFS[model])
    cam = CameraModel("c", K, np.eye(4), 640, 480, d, model)
    pts = _points()
    uv, ok = cam.project_uv(pts)
    assert ok.all()
    if model == "equidistant":
        ref, _ = cv2.fisheye.projectPoints(pts.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), K, d)
    else:
        ref, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), K, d)
    np.testing.assert_allclose(uv, ref.reshape(-1, 2), atol=1e-6)
    xy = cam.normalized(uv[:, 1], uv[:, 0])  # back to ideal coordinates
    np.testing.assert_allclose(xy, pts[:, :2] / pts[:, 2:], atol=1e-5)
    if model != "plumb_bob":  # the model name matters: the same numbers read as plumb_bob land elsewhere
        plumb = CameraModel("c", K, np.eye(4), 640, 480, d[:5] if model != "equidistant" else np.r_[d, 0.0])
        assert np.abs(plumb.project_uv(pts)[0] - uv).max() > 0.5


def test_distortion_checks_its_coefficients() -> None:
    with pytest.raises(InvalidCommandError, match=r"'fov'.*plumb_bob, rational_polynomial, equidistant"):
        Distortion("fov", (0.1,))
    with pytest.raises(InvalidCommandError, match="takes 8 coefficients, got 5"):
        Distortion("rational_polynomial", (0.0,) * 5)
    assert Distortion("equidistant", ()).coefficients == (0.0,) * 4  # an empty D: no distortion


def test_camera_files_carry_the_model() -> None:
    for model, d in COEFFS.items():
        cam = CameraModel("c", K, np.eye(4), 640, 480, np.array(d), model)
        back = parse_camera_file(camera_file_data(cam), "mem", "c").model
        assert back.distortion_model == model
        np.testing.assert_allclose(back.distortion, d)
    data = camera_file_data(CameraModel("c", K, np.eye(4), 640, 480))
    data["distortion_model"] = "equidistant"
    with pytest.raises(ConfigError, match="'equidistant' with 5 coefficients"):
        parse_camera_file(data, "mem", "c")


def blob(width: int, height: int, u: float, v: float, sigma: float) -> np.ndarray:
    """A Gaussian spot centred at (u, v) with pixel centres at integers, as an RGB image."""
    cols, rows = np.meshgrid(np.arange(width), np.arange(height))
    g = np.exp(-((cols - u) ** 2 + (rows - v) ** 2) / (2 * sigma**2))
    return np.repeat((g * 250).astype(np.uint8)[..., None], 3, axis=2)


def centroid(rgb: np.ndarray) -> tuple[float, float]:
    g = rgb[..., 0].astype(float)
    rows, cols = np.mgrid[0 : g.shape[0], 0 : g.shape[1]]
    return float((g * cols).sum() / g.sum()), float((g * rows).sum() / g.sum())


@pytest.mark.parametrize("size", [(320, 240), (160, 120), (1280, 960), (480, 360)])
def test_resized_images_agree_with_scaled_K(size) -> None:
    """A spot at a known pixel lands, after cv2.resize, where the scaled K puts it (half-pixel convention): a
    corner-aligned convention (u' = u * s) would be 0.25 px off at half size and 0.5 px at double size."""
    w0, h0 = 640, 480
    u, v = 301.3, 177.8
    image = blob(w0, h0, u, v, sigma=6.0)
    out = resize_rgb(image, *size)
    sx, sy = size[0] / w0, size[1] / h0
    expected = scale_K(np.eye(3), sx, sy) @ np.array([u, v, 1.0])
    got = centroid(out)
    assert abs(got[0] - expected[0]) < 0.05 and abs(got[1] - expected[1]) < 0.05, (got, expected)
    # and the same mapping for a projected point: K scaled projects where the resized image shows it
    Ks = scale_K(K, sx, sy)
    p = np.array([0.1, -0.05, 1.0])
    np.testing.assert_allclose(Ks @ p, scale_K(np.eye(3), sx, sy) @ (K @ p))


def test_scaled_to_refuses_another_aspect_ratio() -> None:
    intr = Intrinsics(K, Distortion(), 640, 480)
    same = intr.scaled_to(1280, 960)
    # cx' = (318.7 + 0.5) * 2 - 0.5, cy' = (241.3 + 0.5) * 2 - 0.5
    np.testing.assert_allclose(same.K, [[1200.0, 0.0, 637.9], [0.0, 1204.0, 483.1], [0.0, 0.0, 1.0]])
    assert intr.scaled_to(640, 480) is intr
    with pytest.raises(FrameError, match=r"848x480 frame has another aspect ratio than the calibration \(640x480") as e:
        intr.scaled_to(848, 480)
    assert e.value.kind == "aspect"


def _intrinsics() -> Intrinsics:
    return Intrinsics(K, Distortion(), 640, 480)


def test_stream_file_intrinsics_scale_and_resize_for_the_agent() -> None:
    stream = CameraStream(_intrinsics(), StreamSettings(intrinsics="file", output_width=320, output_height=240))
    rgb = np.zeros((960, 1280, 3), np.uint8)
    out = stream.frame(rgb)
    assert out.rgb.shape == (240, 320, 3)
    np.testing.assert_allclose(out.intrinsics.K, scale_K(K, 0.5, 0.5))
    with pytest.raises(FrameError, match="aspect ratio"):
        stream.frame(np.zeros((720, 1280, 3), np.uint8))


def test_stream_driver_intrinsics_wait_for_camera_info_and_follow_it() -> None:
    stream = CameraStream(_intrinsics(), StreamSettings(intrinsics="driver"))
    rgb = np.zeros((480, 848, 3), np.uint8)
    with pytest.raises(FrameError, match="no CameraInfo from the driver yet"):
        stream.frame(rgb)
    K848 = [610.0, 0, 424.5, 0, 610.0, 239.0, 0, 0, 1]
    stream.set_driver_info(driver_intrinsics(K848, [0.0] * 5, "plumb_bob", 848, 480))
    out = stream.frame(rgb)
    np.testing.assert_allclose(out.intrinsics.K.ravel(), K848)
    calib = out.calibration(np.eye(4))
    assert (calib.width, calib.height, calib.distortion_model) == (848, 480, "plumb_bob")
    bad = [0.0] * 9
    with pytest.raises(FrameError) as e:
        driver_intrinsics(bad, [], "plumb_bob", 848, 480)
    stream.set_driver_info(e.value)
    with pytest.raises(FrameError, match="no intrinsic matrix"):
        stream.frame(rgb)
    with pytest.raises(FrameError, match="binning"):
        driver_intrinsics(K848, [], "plumb_bob", 848, 480, binning=(2, 2))
    with pytest.raises(FrameError, match="'kannala_brandt'"):
        driver_intrinsics(K848, [0.0] * 4, "kannala_brandt", 848, 480)


def test_arm_history_gives_the_state_nearest_the_frame() -> None:
    history = ArmStateHistory("left", keep_s=1.0)
    with pytest.raises(FrameError, match="no joint state yet for arm 'left'") as e:
        history.at(10.0, 0.1)
    assert e.value.kind == "missing"
    for k in range(11):  # 10.0, 10.1, ... 11.0, q = k
        history.add(10.0 + 0.1 * k, np.full(6, float(k)))
    assert history.at(10.24, 0.1)[0] == 2.0  # nearest, not the latest: a late frame gets the pose of its instant
    assert history.at(10.26, 0.1)[0] == 3.0
    assert history.at(11.05, 0.1)[0] == 10.0  # newer than every state, within the bound: the latest
    with pytest.raises(FrameError, match=r"nearest 1\.000 s away") as e:  # newer by more: the arm may have moved
        history.at(12.0, 0.1)
    assert e.value.kind == "lag"
    assert history.at(9.95, 0.1)[0] == 0.0
    with pytest.raises(FrameError, match=r"within 0.1 s of the frame's stamp \(nearest 0.500 s away") as e:
        history.at(9.5, 0.1)
    assert e.value.kind == "lag"
    history.add(11.5, np.full(6, 15.0))  # states older than 11.5 - 1.0 go
    with pytest.raises(FrameError, match=r"nearest 0\.300 s away"):
        history.at(10.2, 0.1)
    history.add(10.65, np.full(6, 6.5))  # out of order: kept in stamp order
    assert history.at(10.66, 0.1)[0] == 6.5
    history.add(0.5, np.full(6, -1.0))  # the clock jumped back (a restarted simulator): start over
    assert history.at(0.5, 0.1)[0] == -1.0 and history.at(0.55, 0.1)[0] == -1.0


def test_stream_counts_with_rate_limited_warnings() -> None:
    stream = CameraStream(_intrinsics(), StreamSettings())
    errors = [FrameError("lag", "late"), FrameError("missing", "none")]
    warn = [stream.dropped(errors[0], t) for t in (0.0, 1.0, 4.9, 5.0)]
    assert warn == [True, False, False, True]
    assert stream.dropped(errors[1], 1.0)  # another reason is not hidden by the first
    stream.received()
    stream.published()
    window = dict(stream.take_window().values())
    assert window == {
        "frames_received": "1", "frames_published": "1", "frames_dropped": "5", "dropped_lag": "4",
        "dropped_missing": "1",
    }  # fmt: skip
    assert dict(stream.take_window().values())["frames_dropped"] == "0"
    assert stream.total.dropped["lag"] == 4


def test_settings_are_checked_once() -> None:
    with pytest.raises(ConfigError, match="'intrinsics' is 'camera'"):
        StreamSettings(intrinsics="camera")
    with pytest.raises(ConfigError, match="give both"):
        StreamSettings(output_width=320)
    with pytest.raises(ConfigError, match="another aspect ratio"):
        check_output_aspect(_intrinsics(), StreamSettings(output_width=640, output_height=360))
