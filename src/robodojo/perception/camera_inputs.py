"""Camera inputs: which driver topic each camera's camera_node reads, how, and at what size the agent gets it, written
once per rig in config/camera_inputs/<name>.yaml and read here only (the launch file's ``camera_inputs:=`` and
`robodojo graph`'s hardware graphs, robodojo.nodes.process_graph, turn it into camera_node parameters).

    robot: fr3                                  # the robot the file is for; every camera of it has an entry
    cameras:
      head:
        topic: /camera/camera/color/image_raw   # the driver's image topic (camera_node ``input_topic``)
        transport: raw                          # raw (sensor_msgs/Image) | compressed (CompressedImage); default raw
        reliable: false                         # subscribe reliably (a driver that publishes so); default false
        intrinsics: driver                      # driver (its CameraInfo) | file (config/cameras/); default file
        camera_info_topic: ""                   # default: camera_info beside the image topic
        output: [640, 480]                      # the agent's size, K scaled exactly; omitted: the driver's size
        driver: {name: realsense2_camera, width: 848, height: 480, fps: 30}   # optional, below

``driver`` (optional) says what publishes the topic: ``realsense2_camera`` (width, height, fps) or ``usb_cam`` (width,
height, fps, ``pixel_format`` yuyv | mjpeg2rgb, ``calibrated``: whether it has a camera_info_url). It is checked
against the topic, transport and intrinsics (a usb_cam without calibration publishes K = 0, a yuyv usb_cam has no
compressed topic, an output of another aspect ratio than the driver's frames would be refused by camera_node), and the
test worlds start a stand-in of it (robodojo.perception.driver_standins) from the same file. Every error is one line
naming the file, the key and the valid choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError
from robodojo.perception import driver_standins
from robodojo.perception.camera_stream import INTRINSICS_SOURCES
from robodojo.perception.driver_standins import REALSENSE, USB_CAM, StandinProfile
from robodojo.perception.frame_intrinsics import ASPECT_TOLERANCE_PX
from robodojo.robots.config import load_robot_config

CAMERA_INPUTS_DIR = CONFIG_DIR / "camera_inputs"
TRANSPORTS = ("raw", "compressed")
CAMERA_KEYS = ("topic", "transport", "reliable", "intrinsics", "camera_info_topic", "output", "driver")
DRIVER_KEYS = {REALSENSE: ("name", "width", "height", "fps"), USB_CAM: ("name", "width", "height", "fps",
               "pixel_format", "calibrated")}  # fmt: skip
REALSENSE_COLOR_SUFFIX = "/color/image_raw"


@dataclass(frozen=True)
class DriverSpec:
    """The driver publishing a camera's topic, as the file names it."""

    name: str
    width: int
    height: int
    fps: float
    pixel_format: str = ""  # usb_cam only
    calibrated: bool = True  # usb_cam only: a camera_info_url is set


@dataclass(frozen=True)
class CameraInput:
    """One camera's entry: what its camera_node subscribes to and the size the agent gets."""

    camera: str
    topic: str
    transport: str = "raw"
    reliable: bool = False
    intrinsics: str = "file"
    camera_info_topic: str = ""
    output_size: tuple[int, int] | None = None
    driver: DriverSpec | None = None

    def camera_node_parameters(self) -> dict[str, object]:
        """camera_node's parameters for this input (the caller adds robot and camera)."""
        width, height = self.output_size or (0, 0)
        return {
            "input_topic": self.topic, "input_transport": self.transport, "input_reliable": self.reliable,
            "intrinsics": self.intrinsics, "camera_info_topic": self.camera_info_topic, "output_width": width,
            "output_height": height,
        }  # fmt: skip

    def standin_profile(self) -> StandinProfile | None:
        """The driver stand-in that publishes this camera's topic (None without a ``driver``)."""
        d = self.driver
        if d is None:
            return None
        if d.name == REALSENSE:
            prefix = self.topic[: -len(REALSENSE_COLOR_SUFFIX)]
            namespace, _, name = prefix.rpartition("/")
            return driver_standins.realsense_color(
                width=d.width, height=d.height, fps=d.fps, camera_namespace=namespace, camera_name=name
            )
        base = self.topic.removesuffix(driver_standins.COMPRESSED_SUFFIX).removesuffix("/image_raw")
        return driver_standins.usb_cam(
            base, width=d.width, height=d.height, fps=d.fps, pixel_format=d.pixel_format, calibrated=d.calibrated
        )


@dataclass(frozen=True)
class CameraInputs:
    """A robot's camera inputs file, loaded and checked."""

    robot: str
    path: Path
    inputs: tuple[CameraInput, ...]

    def camera(self, name: str) -> CameraInput:
        for entry in self.inputs:
            if entry.camera == name:
                return entry
        raise ConfigError(f"{self.path}: no camera {name!r}; cameras: {', '.join(e.camera for e in self.inputs)}")

    def camera_node_parameters(self, camera: str) -> dict[str, object]:
        """camera_node's parameters for ``camera``: robot, camera and the input's."""
        return {"robot": self.robot, "camera": camera, **self.camera(camera).camera_node_parameters()}


def shipped_camera_inputs() -> list[str]:
    """The names of the files in config/camera_inputs/."""
    return sorted(p.stem for p in CAMERA_INPUTS_DIR.glob("*.yaml"))


def camera_inputs_path(source: str | Path) -> Path:
    """A camera inputs file: a path (with a '/' or ending in .yaml), or a name in config/camera_inputs/."""
    text = str(source).strip()
    if not text:
        raise ConfigError("camera inputs: empty name; give a file or one of: " + ", ".join(shipped_camera_inputs()))
    if "/" in text or text.endswith((".yaml", ".yml")):
        return Path(text)
    path = CAMERA_INPUTS_DIR / f"{text}.yaml"
    if not path.is_file():
        raise ConfigError(f"camera inputs {text!r} not found in {CAMERA_INPUTS_DIR}; shipped: " + ", ".join(
            shipped_camera_inputs()))  # fmt: skip
    return path


def load_camera_inputs(source: str | Path, robot: str) -> CameraInputs:
    """The camera inputs file ``source`` (camera_inputs_path) for ``robot``; ConfigError in one line when it is for
    another robot, misses or adds a camera, or an entry is not valid."""
    path = camera_inputs_path(source)
    data = load_yaml(path)
    where = str(path)
    reject_unknown_keys(data, ("robot", "cameras"), where)
    root = Section(data, where)
    file_robot = root.str("robot")
    if file_robot != robot:
        raise ConfigError(f"{where}: the file is for robot {file_robot!r}, not {robot!r}")
    cameras = root.section("cameras")
    names = load_robot_config(robot).camera_names
    unknown = [c for c in cameras.names() if c not in names]
    if unknown:
        raise ConfigError(f"{where}: {robot} has no camera {unknown[0]!r}; cameras: {', '.join(names)}")
    missing = [c for c in names if c not in cameras.names()]
    if missing:
        raise ConfigError(
            f"{where}: no entry for camera(s) {', '.join(missing)}; every camera of {robot} needs one "
            f"({', '.join(names)})"
        )
    return CameraInputs(robot, path, tuple(_camera_input(name, cameras.section(name)) for name in names))


def _choice(section: Section, key: str, choices: tuple[str, ...], default: str) -> str:
    value = section.data.get(key, default)
    if value not in choices:
        raise ConfigError(f"{section.where}.{key}: {value!r} is not one of: {', '.join(choices)}")
    return str(value)


def _camera_input(camera: str, c: Section) -> CameraInput:
    reject_unknown_keys(c.data, CAMERA_KEYS, c.where)
    topic = c.str("topic")
    transport = _choice(c, "transport", TRANSPORTS, "raw")
    if (transport == "compressed") != topic.rstrip("/").endswith(driver_standins.COMPRESSED_SUFFIX):
        raise ConfigError(
            f"{c.where}: topic {topic!r} with transport {transport}: image_transport's compressed topics end in "
            "/compressed (transport compressed), raw ones do not (transport raw)"
        )
    info_topic = c.data.get("camera_info_topic", "")
    if not isinstance(info_topic, str):
        raise ConfigError(f"{c.where}.camera_info_topic: expected a topic name, got {info_topic!r}")
    output = _output_size(c)
    entry = CameraInput(
        camera=camera, topic=topic, transport=transport, reliable=c.boolean("reliable", False),
        intrinsics=_choice(c, "intrinsics", INTRINSICS_SOURCES, "file"), camera_info_topic=info_topic,
        output_size=output,
    )  # fmt: skip
    driver_section = c.optional_section("driver")
    if driver_section is None:
        return entry
    driver = _driver(driver_section)
    _check_driver(entry, driver, c.where)
    return CameraInput(**{**entry.__dict__, "driver": driver})


def _output_size(c: Section) -> tuple[int, int] | None:
    value: Any = c.data.get("output")
    if value is None:
        return None
    if (
        not isinstance(value, list | tuple) or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):  # fmt: skip
        raise ConfigError(f"{c.where}.output: expected [width, height] in pixels (> 0), got {value!r}")
    return int(value[0]), int(value[1])


def _driver(d: Section) -> DriverSpec:
    name = d.str("name")
    if name not in driver_standins.DRIVERS:
        raise ConfigError(f"{d.where}.name: {name!r} is not one of: {', '.join(driver_standins.DRIVERS)}")
    reject_unknown_keys(d.data, DRIVER_KEYS[name], d.where)
    width, height, fps = (
        d.integer("width", positive=True),
        d.integer("height", positive=True),
        d.number("fps", positive=True),
    )
    if name == REALSENSE:
        return DriverSpec(name, width, height, fps)
    pixel_format = _choice(d, "pixel_format", driver_standins.USB_CAM_PIXEL_FORMATS, "yuyv")
    return DriverSpec(name, width, height, fps, pixel_format, d.boolean("calibrated", True))


def _check_driver(entry: CameraInput, driver: DriverSpec, where: str) -> None:
    """The entry reads what ``driver`` publishes, and camera_node can take it."""
    topic = entry.topic.rstrip("/")
    if driver.name == REALSENSE:
        if entry.transport != "raw" or not topic.endswith(REALSENSE_COLOR_SUFFIX) or topic.count("/") < 3:
            raise ConfigError(
                f"{where}: realsense2_camera publishes its colour image on /<namespace>/<name>{REALSENSE_COLOR_SUFFIX} "
                f"(transport raw; default /camera/camera{REALSENSE_COLOR_SUFFIX}), not {entry.topic!r}"
            )
    else:
        suffix = "/image_raw" + (driver_standins.COMPRESSED_SUFFIX if entry.transport == "compressed" else "")
        if not topic.endswith(suffix):
            raise ConfigError(f"{where}: usb_cam publishes <namespace>{suffix} for transport {entry.transport}, "
                              f"not {entry.topic!r}")  # fmt: skip
        if entry.transport == "compressed" and driver.pixel_format != "mjpeg2rgb":
            raise ConfigError(
                f"{where}: usb_cam with pixel_format {driver.pixel_format} publishes yuv422_yuy2, which "
                "image_transport's compressed plugin does not compress; use transport raw or pixel_format mjpeg2rgb"
            )
        if entry.intrinsics == "driver" and not driver.calibrated:
            raise ConfigError(
                f"{where}: usb_cam without a camera_info_url (calibrated: false) publishes K = 0; use intrinsics: file "
                "or calibrate it (camera_calibration) and set its camera_info_url"
            )
        if driver.pixel_format == "yuyv" and driver.width % 2:
            raise ConfigError(f"{where}.driver.width: yuyv needs an even width, got {driver.width}")
    if entry.output_size is not None:
        w, h = entry.output_size
        if abs(driver.height * w / driver.width - h) > ASPECT_TOLERANCE_PX:
            raise ConfigError(
                f"{where}.output: {w}x{h} has another aspect ratio than the driver's {driver.width}x{driver.height} "
                "frames (camera_node would drop them all); choose a size of the same aspect ratio or omit output"
            )
