"""robodojo.perception.driver_standins: what the realsense2_camera and usb_cam stand-ins publish, checked against
the project's own decoders (image_formats) and camera_node's policy (camera_stream), on frames the embedded world
renders at the stand-ins' sizes."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.errors import InvalidCommandError
from robodojo.perception import driver_standins as ds
from robodojo.perception.camera_stream import CameraStream, StreamSettings, driver_intrinsics
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics, scale_K
from robodojo.perception.image_formats import FrameError, compressed_codec, compressed_to_rgb, raw_to_rgb
from robodojo.sim.render import CameraRenderer, Marker

SIZES = [(848, 480), (800, 600), (1280, 720)]


@pytest.fixture(scope="module")
def renders(dual_world):
    """The dual arm's head camera rendered at 640x480 and at each stand-in size: size -> RGB; and the world."""
    world = dual_world
    world.reset("general_pickup", 0)
    model = world.model
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, 1280)
    model.vis.global_.offheight = max(model.vis.global_.offheight, 720)
    out = {}
    for size in [(640, 480), *SIZES]:
        renderer = CameraRenderer(*size, world.settings.render)
        renderer.bind(model)
        out[size] = renderer.rgb(world.data, world.camera_ids["head"])
        renderer.close()
    return world, out


# -- profiles ---------------------------------------------------------------------------------------------------------
def test_realsense_profile_is_the_wrappers_colour_stream():
    p = ds.realsense_color()
    assert (p.image_topic, p.info_topic) == ("/camera/camera/color/image_raw", "/camera/camera/color/camera_info")
    assert (p.width, p.height, p.fps, p.encoding) == (848, 480, 30.0, "rgb8")
    assert p.frame_id == "camera_color_optical_frame" and p.compressed_topic is None
    assert p.image_qos.system_default and not p.info_qos.system_default and p.info_qos.reliable
    named = ds.realsense_color(camera_namespace="", camera_name="head_rs")
    assert named.image_topic == "/head_rs/color/image_raw" and named.frame_id == "head_rs_color_optical_frame"


def test_usb_cam_profiles_follow_its_pixel_format():
    yuyv = ds.usb_cam("/left_cam", width=800, height=600)
    assert (yuyv.image_topic, yuyv.info_topic, yuyv.encoding) == (
        "/left_cam/image_raw", "/left_cam/camera_info", "yuv422_yuy2"
    )  # fmt: skip
    assert yuyv.compressed_topic is None  # image_transport compresses colour encodings only
    mjpeg = ds.usb_cam("right_cam", pixel_format="mjpeg2rgb")
    assert mjpeg.encoding == "rgb8" and mjpeg.compressed_topic == "/right_cam/image_raw/compressed"
    assert mjpeg.compressed_format == "rgb8; jpeg compressed bgr8"
    assert mjpeg.image_qos == mjpeg.info_qos == ds.TopicQos(depth=100, reliable=True)
    assert mjpeg.frame_id == "default_cam"
    with pytest.raises(Exception, match=r"pixel_format 'h264'.*yuyv, mjpeg2rgb"):
        ds.usb_cam("x", pixel_format="h264")
    with pytest.raises(Exception, match="even width"):
        ds.usb_cam("x", width=801)


# -- the rendered view ------------------------------------------------------------------------------------------------
def test_view_K_at_the_same_aspect_is_camera_node_s_scaling():
    K = np.array([[432.9, 0.0, 319.4], [0.0, 433.3, 239.5], [0.0, 0.0, 1.0]])
    assert np.allclose(ds.view_K(K, (640, 480), (800, 600)), scale_K(K, 1.25, 1.25))
    assert np.allclose(ds.view_K(K, (640, 480), (640, 480)), K)


def test_a_wider_render_is_the_narrower_one_with_more_at_the_sides(renders):
    """848x480 keeps the vertical field and the pixel pitch: its middle 640 columns are the 640x480 image, which is
    what view_K says (the same focal length, the principal point moved by 104 px)."""
    _, images = renders
    K = ds.view_K(_ideal_K(images[(640, 480)]), (640, 480), (848, 480))
    assert K[0, 2] - 319.5 == 104.0 and K[0, 0] == _ideal_K(images[(640, 480)])[0, 0]
    middle = images[(848, 480)][:, 104 : 104 + 640].astype(int)
    assert np.abs(middle - images[(640, 480)].astype(int)).mean() < 1.0


@pytest.mark.parametrize("size", SIZES)
def test_a_marker_lands_where_the_stand_ins_camera_info_projects_it(dual_world, size):
    """The CameraInfo's K describes the rendered view: a sphere drawn at a known point is found within half a pixel
    of its projection through K and the camera's pose."""
    world = dual_world
    world.reset("general_pickup", 0)
    calibration = world.calibration("head")
    K = ds.view_K(calibration.K, (calibration.width, calibration.height), size)
    profile = ds.usb_cam("/cam", width=size[0], height=size[1], pixel_format="mjpeg2rgb")
    info = ds.camera_info(profile, K)
    point = np.array([0.05, -0.2, 0.80])
    cam = np.linalg.inv(calibration.T_world_cam) @ np.append(point, 1.0)
    Kinfo = np.reshape(info.k, (3, 3))
    expected = (Kinfo @ cam[:3])[:2] / cam[2]
    model = world.model
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, size[0])
    model.vis.global_.offheight = max(model.vis.global_.offheight, size[1])
    renderer = CameraRenderer(*size, world.settings.render)
    try:
        renderer.bind(model)
        plain = renderer.rgb(world.data, world.camera_ids["head"]).astype(int)
        marked = renderer.rgb(world.data, world.camera_ids["head"], [Marker(tuple(point), 0.01)]).astype(int)
    finally:
        renderer.close()
    rows, cols = np.nonzero(np.abs(marked - plain).sum(axis=2) > 30)
    assert len(rows) > 20
    found = np.array([cols.mean(), rows.mean()])
    assert np.linalg.norm(found - expected) < 0.5, (found, expected)


def _ideal_K(rgb: np.ndarray) -> np.ndarray:
    """The dual arm's head camera K at 640x480 (its robot config's fovy)."""
    from robodojo.robots.config import load_robot_config

    cam = load_robot_config("dual_arx_x5").camera("head")
    h, w = rgb.shape[:2]
    f = (h / 2) / np.tan(np.radians(cam.fovy_deg) / 2)
    return np.array([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]])


# -- payloads ---------------------------------------------------------------------------------------------------------
def test_rgb8_comes_back_exactly(renders):
    _, images = renders
    rgb = images[(848, 480)]
    raw = ds.raw_frame(ds.realsense_color(), rgb)
    assert (raw.encoding, raw.width, raw.height, raw.step, len(raw.data)) == ("rgb8", 848, 480, 848 * 3, rgb.size)
    assert np.array_equal(raw_to_rgb(raw.encoding, raw.width, raw.height, raw.step, raw.data), rgb)


def test_yuyv_decodes_to_the_rendered_frame(renders):
    """yuv422_yuy2 as camera_node reads it (image_formats): BT.601 limited range, chroma shared by pixel pairs, so
    a few levels off on average and at colour edges only."""
    _, images = renders
    rgb = images[(800, 600)]
    raw = ds.raw_frame(ds.usb_cam("/cam", width=800, height=600), rgb)
    assert (raw.encoding, raw.step, len(raw.data)) == ("yuv422_yuy2", 1600, 800 * 600 * 2)
    back = raw_to_rgb(raw.encoding, raw.width, raw.height, raw.step, raw.data).astype(int)
    error = np.abs(back - rgb.astype(int))
    assert error.mean() < 2.0 and np.percentile(error, 99) < 20, (error.mean(), np.percentile(error, 99))
    luma = np.array([0.299, 0.587, 0.114])
    assert np.abs(back @ luma - rgb.astype(int) @ luma).mean() < 1.0  # the luma is exact but for rounding


def test_jpeg_decodes_to_the_rendered_frame(renders):
    _, images = renders
    rgb = images[(1280, 720)]
    profile = ds.usb_cam("/cam", width=1280, height=720, pixel_format="mjpeg2rgb")
    jpeg = ds.compressed_frame(profile, rgb)
    assert jpeg.format == "rgb8; jpeg compressed bgr8" and compressed_codec(jpeg.format) == ("jpeg", False)
    assert len(jpeg.data) < rgb.size / 5  # compressed
    back = compressed_to_rgb(jpeg.format, jpeg.data)
    assert back.shape == rgb.shape
    mse = np.mean((back.astype(float) - rgb.astype(float)) ** 2)
    assert 10 * np.log10(255**2 / mse) > 35.0  # PSNR of a quality-95 JPEG; channels in the right order


def test_a_frame_of_another_size_or_a_missing_topic_is_refused(renders):
    _, images = renders
    with pytest.raises(InvalidCommandError, match="publishes 848x480; got a 640x480 frame"):
        ds.raw_frame(ds.realsense_color(), images[(640, 480)])
    with pytest.raises(InvalidCommandError, match="no compressed topic"):
        ds.compressed_frame(ds.usb_cam("/cam", width=800, height=600), images[(800, 600)])


# -- CameraInfo through camera_node's policy --------------------------------------------------------------------------
def test_camera_info_is_the_devices_and_camera_node_takes_it():
    K = ds.view_K(_ideal_K(np.zeros((480, 640, 3))), (640, 480), (1280, 720))
    profile = ds.usb_cam("/cam", width=1280, height=720, pixel_format="mjpeg2rgb")
    info = ds.camera_info(profile, K)
    assert info.distortion_model == "plumb_bob" and info.d == (0.0,) * 5
    assert np.allclose(np.reshape(info.p, (3, 4))[:, :3], K) and not any(np.reshape(info.p, (3, 4))[:, 3])
    assert info.r == (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0) and info.frame_id == "default_cam"
    # camera_node (intrinsics: driver, output 640x360): the driver's K scaled exactly to the agent's size
    stream = CameraStream(_file_intrinsics(), StreamSettings(intrinsics="driver", output_width=640, output_height=360))
    stream.set_driver_info(driver_intrinsics(info.k, info.d, info.distortion_model, info.width, info.height))
    frame = stream.frame(np.zeros((720, 1280, 3), np.uint8))
    assert frame.rgb.shape == (360, 640, 3)
    assert np.allclose(frame.intrinsics.K, scale_K(K, 0.5, 0.5))


def test_an_uncalibrated_usb_cam_gives_no_intrinsics():
    profile = ds.usb_cam("/cam", calibrated=False)
    info = ds.camera_info(profile, np.eye(3))
    assert (info.width, info.height, info.frame_id) == (800, 600, "default_cam")
    assert not any(info.k) and info.d == () and info.distortion_model == ""
    with pytest.raises(FrameError, match="no intrinsic matrix"):
        driver_intrinsics(info.k, info.d, info.distortion_model, info.width, info.height)


def _file_intrinsics() -> Intrinsics:
    K = _ideal_K(np.zeros((480, 640, 3)))
    return Intrinsics(K, Distortion("plumb_bob", (0.0,) * 5), 640, 480)
