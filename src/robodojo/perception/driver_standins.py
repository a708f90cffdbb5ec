"""Stand-ins for two ROS 2 camera drivers, realsense2_camera (4.x) and usb_cam: NOT the drivers, but what they publish
(topics, encodings, sizes, QoS, CameraInfo), made from frames a simulator renders. The FR3 and X5 test worlds
(test/hardware/fr3_cameras.py, x5_world.py ``--camera-drivers``) publish them, so the graph tests run the rig's path
(driver -> camera_node -> agent) at the drivers' sizes and encodings. No rclpy here: a :class:`StandinProfile` says
what to publish, :func:`raw_frame`, :func:`compressed_frame` and :func:`camera_info` turn a rendered RGB frame into
message fields, and the caller publishes them on each topic that has subscribers (both drivers do only that).

realsense2_camera 4.x (IntelRealSense/realsense-ros, ros2-development), colour stream:
- ``/<camera_namespace>/<camera_name>/color/image_raw`` and ``.../color/camera_info``; both default to ``camera``, so
  /camera/camera/color/... (since 4.54); rgb8 (rgb_camera.color_format RGB8) at rgb_camera.color_profile, here
  848x480x30.
- QoS: ``color_qos`` SYSTEM_DEFAULT (the middleware's own defaults: rmw_qos_profile_system_default), ``color_info_qos``
  DEFAULT (reliable, keep last 10, volatile).
- frame_id ``<camera_name>_color_optical_frame``; CameraInfo from the device's intrinsics: K, R = I, P = [K | 0];
  distortion ``plumb_bob`` with 5 coefficients for every model but Kannala-Brandt (``equidistant``, 4). A D435's
  colour stream reports inverse Brown-Conrady with all coefficients 0: plumb_bob, five zeros, as a render has.

usb_cam (ros-drivers/usb_cam, ROS 2), under the node's namespace:
- ``image_raw`` and ``camera_info`` (image_transport CameraPublisher), ``image_raw/compressed`` (image_transport's
  compressed plugin), all at ``rclcpp::QoS(100)``: reliable, keep last 100, volatile.
- ``pixel_format`` yuyv: image_raw in ``yuv422_yuy2`` (V4L2 YUYV as the device sends it: BT.601, limited range);
  mjpeg2rgb: rgb8 (the device's MJPEG decoded). The compressed plugin encodes rgb8 as JPEG of BGR at quality 95 (its
  default ``jpeg_quality``) with format ``"rgb8; jpeg compressed bgr8"``; it compresses colour encodings only, so a
  yuyv camera has no compressed topic here.
- frame_id: the ``frame_id`` parameter (default ``default_cam``). CameraInfo from camera_info_manager: with a
  ``camera_info_url`` (a lab's calibration) K, plumb_bob D, R and P; without one only width, height and frame_id,
  K all zero (``calibrated`` False): camera_node then needs ``intrinsics: file``.

The rendered view: MuJoCo's ``fovy`` is vertical, so a camera rendered at another size keeps its vertical field of view
and pixel pitch; :func:`view_K` gives the K of that view from the K at the size the scene was built for. Frames are
rendered at the stand-in's size, never stretched from another (:func:`raw_frame` refuses a frame of another size).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.errors import ConfigError, InvalidCommandError

REALSENSE = "realsense2_camera"
USB_CAM = "usb_cam"
DRIVERS = (REALSENSE, USB_CAM)
USB_CAM_PIXEL_FORMATS = ("yuyv", "mjpeg2rgb")  # usb_cam's pixel_format -> image_raw in yuv422_yuy2, rgb8
#: image_transport compressed plugin's default ``jpeg_quality``.
JPEG_QUALITY = 95
COMPRESSED_SUFFIX = "/compressed"


@dataclass(frozen=True)
class TopicQos:
    """A publisher's QoS as the driver sets it: ``system_default`` leaves every policy to the middleware
    (rmw_qos_profile_system_default); otherwise reliable (or best effort), keep last ``depth``, volatile."""

    system_default: bool = False
    depth: int = 10
    reliable: bool = True


REALSENSE_IMAGE_QOS = TopicQos(system_default=True)  # color_qos: SYSTEM_DEFAULT
REALSENSE_INFO_QOS = TopicQos(depth=10)  # color_info_qos: DEFAULT
USB_CAM_QOS = TopicQos(depth=100)  # rclcpp::QoS(100), for image_raw, camera_info and the compressed topic


@dataclass(frozen=True)
class StandinProfile:
    """What one driver stand-in publishes: sizes, topics, encodings, QoS and the CameraInfo's fixed fields."""

    driver: str  # REALSENSE or USB_CAM
    width: int
    height: int
    fps: float  # the driver's nominal rate [Hz]; a test world publishes as fast as it renders, at most this
    image_topic: str
    info_topic: str
    compressed_topic: str | None  # image_transport's compressed topic; None: the driver publishes none
    encoding: str  # of image_topic
    frame_id: str
    image_qos: TopicQos
    info_qos: TopicQos
    calibrated: bool = True  # False: CameraInfo with K all zero (usb_cam without a camera_info_url)

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0 or self.fps <= 0:
            raise ConfigError(f"{self.driver} stand-in: size {self.width}x{self.height} at {self.fps} Hz is not valid")
        if self.encoding == "yuv422_yuy2" and self.width % 2:
            raise ConfigError(f"{self.driver} stand-in: yuyv needs an even width, got {self.width}")

    @property
    def size(self) -> tuple[int, int]:
        return self.width, self.height

    @property
    def compressed_format(self) -> str:
        """CompressedImage.format as image_transport's compressed plugin writes it for this image's encoding."""
        return f"{self.encoding}; jpeg compressed bgr8"


def realsense_color(
    *,
    width: int = 848,
    height: int = 480,
    fps: float = 30.0,
    camera_namespace: str = "camera",
    camera_name: str = "camera",
) -> StandinProfile:
    """realsense2_camera's colour stream at ``rgb_camera.color_profile`` ``width`` x ``height`` x ``fps``."""
    base = f"/{camera_namespace.strip('/')}/{camera_name}/color".replace("//", "/")
    return StandinProfile(
        driver=REALSENSE, width=width, height=height, fps=fps, image_topic=f"{base}/image_raw",
        info_topic=f"{base}/camera_info", compressed_topic=None, encoding="rgb8",
        frame_id=f"{camera_name}_color_optical_frame", image_qos=REALSENSE_IMAGE_QOS, info_qos=REALSENSE_INFO_QOS,
    )  # fmt: skip


def usb_cam(
    namespace: str,
    *,
    width: int = 800,
    height: int = 600,
    fps: float = 30.0,
    pixel_format: str = "yuyv",
    frame_id: str = "default_cam",
    calibrated: bool = True,
) -> StandinProfile:
    """usb_cam's node in ``namespace`` (``/wrist_cam``) at ``image_width`` x ``image_height``, ``framerate`` ``fps``."""
    if pixel_format not in USB_CAM_PIXEL_FORMATS:
        raise ConfigError(
            f"usb_cam stand-in: pixel_format {pixel_format!r} is not modelled; choose one of: "
            + ", ".join(USB_CAM_PIXEL_FORMATS)
        )
    base = "/" + namespace.strip("/") if namespace.strip("/") else ""
    rgb = pixel_format == "mjpeg2rgb"
    return StandinProfile(
        driver=USB_CAM, width=width, height=height, fps=fps, image_topic=f"{base}/image_raw",
        info_topic=f"{base}/camera_info", compressed_topic=f"{base}/image_raw{COMPRESSED_SUFFIX}" if rgb else None,
        encoding="rgb8" if rgb else "yuv422_yuy2", frame_id=frame_id, image_qos=USB_CAM_QOS, info_qos=USB_CAM_QOS,
        calibrated=calibrated,
    )  # fmt: skip


# -- the rendered view ------------------------------------------------------------------------------------------------
def view_K(base_K: ArrayLike, base_size: tuple[int, int], size: tuple[int, int]) -> NDArray[np.float64]:
    """K of a camera rendered at ``size`` (width, height) whose K at ``base_size`` is ``base_K``: the same vertical
    field of view (MuJoCo's fovy), the pixel pitch scaled by the height ratio, the principal point keeping its offset
    from the image centre (scaled). Pixel centres at integers: the centre of a W-wide image is (W - 1) / 2.

    At the same aspect ratio this is frame_intrinsics.scale_K; a wider sensor (848x480 beside 640x480) sees more to
    the sides with the same focal length."""
    K = np.asarray(base_K, dtype=float)
    (w0, h0), (w, h) = base_size, size
    s = h / h0
    out = K.copy()
    out[0, 0], out[1, 1], out[0, 1] = K[0, 0] * s, K[1, 1] * s, K[0, 1] * s
    out[0, 2] = (K[0, 2] - (w0 - 1) / 2) * s + (w - 1) / 2
    out[1, 2] = (K[1, 2] - (h0 - 1) / 2) * s + (h - 1) / 2
    return out


# -- message payloads -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RawFrame:
    """sensor_msgs/Image's fields (is_bigendian 0)."""

    encoding: str
    width: int
    height: int
    step: int
    data: bytes


@dataclass(frozen=True)
class CompressedFrame:
    """sensor_msgs/CompressedImage's fields."""

    format: str
    data: bytes


@dataclass(frozen=True)
class CameraInfoFields:
    """sensor_msgs/CameraInfo's fields as the driver fills them (binning and roi left unset)."""

    width: int
    height: int
    distortion_model: str
    d: tuple[float, ...]
    k: tuple[float, ...]
    r: tuple[float, ...]
    p: tuple[float, ...]
    frame_id: str


def _check_frame(profile: StandinProfile, rgb: NDArray[np.uint8]) -> None:
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise InvalidCommandError(
            f"{profile.driver} stand-in: expected an HxWx3 uint8 frame, got {rgb.shape} {rgb.dtype}"
        )
    if (rgb.shape[1], rgb.shape[0]) != profile.size:
        raise InvalidCommandError(
            f"{profile.driver} stand-in publishes {profile.width}x{profile.height}; got a "
            f"{rgb.shape[1]}x{rgb.shape[0]} frame (render at the stand-in's size, do not stretch)"
        )


def raw_frame(profile: StandinProfile, rgb: NDArray[np.uint8]) -> RawFrame:
    """The driver's image_raw for a rendered RGB frame: rgb8 as it is, yuv422_yuy2 packed Y0 U Y1 V (BT.601 limited
    range, chroma averaged over each pixel pair, as cv2.COLOR_RGB2YUV_YUYV packs it)."""
    _check_frame(profile, rgb)
    if profile.encoding == "rgb8":
        return RawFrame("rgb8", profile.width, profile.height, 3 * profile.width, np.ascontiguousarray(rgb).tobytes())
    yuyv = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YUV_YUYV)  # H x W x 2
    return RawFrame(profile.encoding, profile.width, profile.height, 2 * profile.width, yuyv.tobytes())


def compressed_frame(profile: StandinProfile, rgb: NDArray[np.uint8], quality: int = JPEG_QUALITY) -> CompressedFrame:
    """image_raw/compressed as image_transport's compressed plugin makes it: JPEG of the BGR image."""
    if profile.compressed_topic is None:
        raise InvalidCommandError(f"{profile.driver} stand-in ({profile.encoding}) has no compressed topic")
    _check_frame(profile, rgb)
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise InvalidCommandError(f"{profile.driver} stand-in: OpenCV could not encode a JPEG")
    return CompressedFrame(profile.compressed_format, jpeg.tobytes())


def camera_info(profile: StandinProfile, K: ArrayLike) -> CameraInfoFields:
    """The driver's CameraInfo for a view with intrinsics ``K`` (undistorted, as rendered): plumb_bob with five zero
    coefficients, R = I, P = [K | 0]; an uncalibrated usb_cam's has only its size and frame (K, R, P all zero, no D)."""
    K = np.asarray(K, dtype=float)
    if K.shape != (3, 3):
        raise InvalidCommandError(f"camera_info: K must be 3x3, got shape {K.shape}")
    if not profile.calibrated:
        zeros9, zeros12 = (0.0,) * 9, (0.0,) * 12
        return CameraInfoFields(profile.width, profile.height, "", (), zeros9, zeros9, zeros12, profile.frame_id)
    P = np.zeros((3, 4))
    P[:, :3] = K
    return CameraInfoFields(
        width=profile.width, height=profile.height, distortion_model="plumb_bob", d=(0.0,) * 5,
        k=tuple(float(v) for v in K.reshape(-1)), r=(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
        p=tuple(float(v) for v in P.reshape(-1)), frame_id=profile.frame_id,
    )  # fmt: skip
