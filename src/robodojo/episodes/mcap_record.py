"""The episode as an MCAP file (``episode.mcap``): what the recorder sees, as ROS 2 messages on named topics.

Foxglove opens the file, ``ros2 bag info`` / ``ros2 bag play`` read it (ROS 2 profile, CDR messages, ``ros2msg``
schemas: the message definitions with their dependencies, as rosbag2 writes them), and so does the ``rosbags``
library. The messages are written with mcap-ros2-support from the .msg texts below, so the library needs no ROS
message packages.

Topics (camera, joint and pose names as on the graph: robodojo.robots.topic_names)::

    /episode/instruction             std_msgs/String: once, with the first state
    /robot_description               std_msgs/String: once, the robot's URDF (the scene's: arms, table, cameras)
    /tf_static                       tf2_msgs/TFMessage: once, every fixed joint of that URDF (camera frames too)
    /joint_states                    sensor_msgs/JointState: the first state, then the state after every control
                                     step where the host reports them (the embedded world: WorldHost.follow_steps),
                                     else after each turn; every arm joint [rad] and each gripper's driven joint [m]
    /tf                              tf2_msgs/TFMessage: with each joint state, every movable joint's child link in
                                     its parent (mimic fingers included): Foxglove's 3D panel and RViz draw the
                                     moving robot from the file alone
    /<arm>/tcp_pose                  geometry_msgs/PoseStamped: the grasp point in the world frame, with the joints
    /cameras/<camera>/image_raw/compressed
                                     sensor_msgs/CompressedImage (JPEG): every camera frame the agent took (move_eef:
                                     each turn's observation; code cells: robo.image, show, segment, ...), and in
                                     process every camera at config/record.yaml's camera_rate_hz (5 Hz of simulation
                                     time); once per camera and step
    /motion/planned_path             visualization_msgs/MarkerArray, per motion the robot plays: each moving arm's
                                     planned grasp-point path (a line strip) and target (a sphere), stamped where
                                     the motion starts (in process from the motion server; on the graph, what the
                                     motion server node draws for RViz)
    /agent/observed                  std_msgs/String, per observation the agent took: JSON {step, cameras}, the frames
                                     it saw among those above
    /cameras/<camera>/camera_info    sensor_msgs/CameraInfo: that frame's calibration (K, P = K [I | 0], size, frame)
    /cameras/<camera>/pose           geometry_msgs/PoseStamped: its optical frame in the world (wrist cameras move)
    /agent/action                    std_msgs/String, per answered call, stamped when the turn began: JSON
                                     {turn, action, content, tool_calls}, the action as in turns.jsonl and the tool
                                     calls (id, name, arguments) as the model sent them
    /agent/tool_result               std_msgs/String, per turn, stamped with the state after it: JSON
                                     {turn, tool_results}
    /episode/error                   std_msgs/String: what ended the episode early, JSON {turn, error}

Stamps are the episode's simulation time: the env step count times the robot's control period
(``RobotConfig.control_dt_s``), 0 at the episode's start; on the graph this is not the simulator node's /clock, which
counts on across resets and through steps that use no budget. Every message's log time and publish time equal its
header stamp, and each topic's stamps never decrease. The file also carries two metadata records: ``episode``
(meta.json) when it opens and ``metrics`` (metrics.json's last state) when it closes.

:func:`camera_frames` reads the camera frames back (the shell harness's repair loop shows them to its optimizer).

Written as the episode runs: one chunk per turn reaches the file when the turn ends, so a process killed mid-episode
leaves every finished turn readable by a streaming reader; :meth:`McapRecord.close` (the runner's ``finally``) writes
the summary and footer that indexed readers (rosbags, ``ros2 bag``, the mcap package's reader) need.
:func:`repair_mcap` (``robodojo record repair``) rewrites a file cut short that way as a complete one: every record
before the cut, the last partial chunk dropped, indexed, with its summary and footer.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mcap.exceptions import McapError
from mcap.records import Channel, Footer, Message, Metadata, Schema
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter
from mcap_ros2.writer import Writer as Ros2Writer

from robodojo.agents.base import TurnRecord
from robodojo.episodes.frame_jpeg import JPEG_QUALITY, frame_jpeg
from robodojo.geometry import quat_from_matrix
from robodojo.motion.path_markers import PathMarker
from robodojo.observation import CameraFrame, Observation
from robodojo.robots import topic_names
from robodojo.robots.config import RobotConfig
from robodojo.robots.urdf import Joint, parse_urdf

MCAP_FILE = "episode.mcap"
INSTRUCTION_TOPIC = "/episode/instruction"
ERROR_TOPIC = "/episode/error"
ACTION_TOPIC = "/agent/action"
TOOL_RESULT_TOPIC = "/agent/tool_result"
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
OBSERVED_TOPIC = "/agent/observed"
TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"
#: JPEG does not compress further; zstd on each chunk would cost time for the few kilobytes of state and text
COMPRESSION = CompressionType.NONE
NS_PER_S = 1_000_000_000

# -- message definitions (ros2msg: the type's .msg text, then each dependency after a delimiter) --------------------
_DELIMITER = "=" * 80
_MSG: dict[str, str] = {
    "builtin_interfaces/msg/Time": "int32 sec\nuint32 nanosec\n",
    "std_msgs/msg/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
    "std_msgs/msg/String": "string data\n",
    "geometry_msgs/msg/Point": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/msg/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
    "geometry_msgs/msg/Pose": "Point position\nQuaternion orientation\n",
    "geometry_msgs/msg/PoseStamped": "std_msgs/Header header\nPose pose\n",
    "sensor_msgs/msg/CompressedImage": "std_msgs/Header header\nstring format\nuint8[] data\n",
    "sensor_msgs/msg/RegionOfInterest": (
        "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n"
    ),
    "sensor_msgs/msg/CameraInfo": (
        "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\nfloat64[9] k\n"
        "float64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\nRegionOfInterest roi\n"
    ),
    "sensor_msgs/msg/JointState": (
        "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n"
    ),
    "geometry_msgs/msg/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/msg/Transform": "Vector3 translation\nQuaternion rotation\n",
    "geometry_msgs/msg/TransformStamped": "std_msgs/Header header\nstring child_frame_id\nTransform transform\n",
    "tf2_msgs/msg/TFMessage": "geometry_msgs/TransformStamped[] transforms\n",
    "builtin_interfaces/msg/Duration": "int32 sec\nuint32 nanosec\n",
    "std_msgs/msg/ColorRGBA": "float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n",
    "visualization_msgs/msg/UVCoordinate": "float32 u\nfloat32 v\n",
    "visualization_msgs/msg/MeshFile": "string filename\nuint8[] data\n",
    # Jazzy's Marker.msg, field for field (ros2 bag play hands the bytes to RViz as they are), with its constants
    "visualization_msgs/msg/Marker": (
        "int32 ARROW=0\nint32 CUBE=1\nint32 SPHERE=2\nint32 CYLINDER=3\nint32 LINE_STRIP=4\nint32 LINE_LIST=5\n"
        "int32 CUBE_LIST=6\nint32 SPHERE_LIST=7\nint32 POINTS=8\nint32 TEXT_VIEW_FACING=9\nint32 MESH_RESOURCE=10\n"
        "int32 TRIANGLE_LIST=11\nint32 ARROW_STRIP=12\nint32 ADD=0\nint32 MODIFY=0\nint32 DELETE=2\nint32 DELETEALL=3\n"
        "std_msgs/Header header\nstring ns\nint32 id\nint32 type\nint32 action\ngeometry_msgs/Pose pose\n"
        "geometry_msgs/Vector3 scale\nstd_msgs/ColorRGBA color\nbuiltin_interfaces/Duration lifetime\n"
        "bool frame_locked\ngeometry_msgs/Point[] points\nstd_msgs/ColorRGBA[] colors\nstring texture_resource\n"
        "sensor_msgs/CompressedImage texture\nUVCoordinate[] uv_coordinates\nstring text\nstring mesh_resource\n"
        "MeshFile mesh_file\nbool mesh_use_embedded_materials\n"
    ),
    "visualization_msgs/msg/MarkerArray": "Marker[] markers\n",
}
_HEADER_DEPS = ("std_msgs/msg/Header", "builtin_interfaces/msg/Time")
_POSE_DEPS = ("geometry_msgs/msg/Pose", "geometry_msgs/msg/Point", "geometry_msgs/msg/Quaternion")
_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "std_msgs/msg/String": (),
    "geometry_msgs/msg/PoseStamped": (*_HEADER_DEPS, *_POSE_DEPS),
    "sensor_msgs/msg/CompressedImage": _HEADER_DEPS,
    "sensor_msgs/msg/CameraInfo": (*_HEADER_DEPS, "sensor_msgs/msg/RegionOfInterest"),
    "sensor_msgs/msg/JointState": _HEADER_DEPS,
    "tf2_msgs/msg/TFMessage": (
        "geometry_msgs/msg/TransformStamped",
        *_HEADER_DEPS,
        "geometry_msgs/msg/Transform",
        "geometry_msgs/msg/Vector3",
        "geometry_msgs/msg/Quaternion",
    ),
}
_MARKER_DEPS = (
    "visualization_msgs/msg/Marker",
    *_HEADER_DEPS,
    *_POSE_DEPS,
    "geometry_msgs/msg/Vector3",
    "std_msgs/msg/ColorRGBA",
    "builtin_interfaces/msg/Duration",
    "sensor_msgs/msg/CompressedImage",
    "visualization_msgs/msg/UVCoordinate",
    "visualization_msgs/msg/MeshFile",
)
_DEPENDENCIES["visualization_msgs/msg/MarkerArray"] = _MARKER_DEPS
_IDENTITY_R = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


def message_definition(datatype: str) -> str:
    """The complete ``ros2msg`` definition of ``datatype`` (e.g. ``sensor_msgs/msg/CameraInfo``) as rosbag2 stores
    it: the type's fields, then every type it uses after a line of 80 ``=`` and ``MSG: <type>``."""
    parts = [_MSG[datatype]]
    parts += [f"{_DELIMITER}\nMSG: {dep}\n{_MSG[dep]}" for dep in _DEPENDENCIES[datatype]]
    return "".join(parts)


def _header(stamp_ns: int, frame_id: str) -> dict[str, Any]:
    return {"stamp": {"sec": stamp_ns // NS_PER_S, "nanosec": stamp_ns % NS_PER_S}, "frame_id": frame_id}


def _pose(position: Any, quat_wxyz: Any) -> dict[str, Any]:
    w, x, y, z = (float(v) for v in quat_wxyz)
    px, py, pz = (float(v) for v in position)
    return {"position": {"x": px, "y": py, "z": pz}, "orientation": {"x": x, "y": y, "z": z, "w": w}}


def _metadata(values: Mapping[str, Any]) -> dict[str, str]:
    """MCAP metadata holds strings: strings as they are, everything else as JSON."""
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


class McapRecord:
    """Writes one episode's ``episode.mcap`` as it runs (see the module docstring for topics and stamps).

    ``robot`` names the joints, the grippers' joints and the cameras' optical frames and gives the control period;
    ``meta`` (JSON-ready values) becomes the ``episode`` metadata record.
    """

    def __init__(
        self, path: Path, robot: RobotConfig, meta: Mapping[str, Any], *, jpeg_quality: int = JPEG_QUALITY
    ) -> None:
        self.path = path
        self.robot = robot
        self.control_dt_s = robot.control_dt_s
        self.jpeg_quality = jpeg_quality
        self._stream = path.open("wb")
        try:
            self._writer = Ros2Writer(self._stream, compression=COMPRESSION)
            self._schemas: dict[str, Schema] = {
                datatype: self._writer.register_msgdef(datatype, message_definition(datatype))
                for datatype in _DEPENDENCIES
            }
            self._writer.add_metadata("episode", _metadata(meta))
        except BaseException:
            self._stream.close()
            raise
        self._last_ns: dict[str, int] = {}  # topic -> its latest stamp: no topic goes back in time
        self._latest_ns = 0  # the latest stamp of any message: errors are stamped with it
        self._turn_start_ns = 0  # the stamp of the state the current turn began from
        self._frame_steps: dict[str, int] = {}  # camera -> the step of its latest frame written
        self._joints_step: int | None = None  # the step of the latest joint states written
        self._description = robot.scene_urdf.read_text()  # read once: /robot_description, and the frames of /tf
        self._urdf = parse_urdf(self._description, str(robot.scene_urdf))
        self._closed = False
        # The host's control steps may come on a thread of their own (the graph's joint states): one writer at a time
        self._lock = threading.RLock()

    # -- what the recorder sees ---------------------------------------------------------------------------------
    def start(self, state: Observation, instruction: str) -> None:
        """The episode's first state and its instruction; the robot's URDF and its fixed frames (the cameras' too)."""
        with self._lock:
            stamp = self._stamp(state.step)
            self._write(INSTRUCTION_TOPIC, "std_msgs/msg/String", {"data": instruction}, stamp)
            self._write(ROBOT_DESCRIPTION_TOPIC, "std_msgs/msg/String", {"data": self._description}, stamp)
            fixed = [j for j in self._urdf.joints.values() if not j.movable]
            self._write(TF_STATIC_TOPIC, "tf2_msgs/msg/TFMessage", self._transforms(fixed, {}, stamp), stamp)
            self._state(state, stamp)
            self.flush()

    def tick(self, state: Observation, within_step_s: float = 0.0) -> None:
        """The joints after one control step, the moving links' frames with them, and the camera frames rendered for
        the record at that step, if any. ``within_step_s``: a state between steps (the graph's joint states come at
        the physics rate), stamped that far past the step's start, never as far as the next step."""
        step_ns = self._stamp(1)
        within_ns = min(max(0, round(within_step_s * NS_PER_S)), step_ns - 1)
        stamp = self._stamp(state.step) + within_ns
        with self._lock:
            if self._closed:  # a host's step feed may outlive the episode by a state
                return
            self._joints(state, stamp)
            self._frames(state, stamp)

    def observation(self, obs: Observation) -> None:
        """The camera frames of an observation the agent took, and /agent/observed naming them (state-only
        observations write nothing)."""
        with self._lock:
            if not obs.cameras:
                return
            stamp = self._stamp(obs.step)
            self._frames(obs, stamp)
            seen = {"step": obs.step, "cameras": list(obs.cameras)}
            self._write(OBSERVED_TOPIC, "std_msgs/msg/String", {"data": json.dumps(seen)}, stamp)

    def _frames(self, obs: Observation, stamp_ns: int) -> None:
        for name, frame in obs.cameras.items():
            if self._frame_steps.get(name) == obs.step:  # already written at this step: the same picture
                continue
            self._frame_steps[name] = obs.step
            self._camera(frame, stamp_ns)

    def turn(self, record: TurnRecord, state: Observation) -> None:
        """One answered call: what the model sent (at the turn's start), the tool results and the state after it."""
        with self._lock:
            reply = record.reply
            action = {
                "turn": record.turn,
                "action": record.action,
                "content": reply.content,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
                "latency_applied_s": record.latency_applied_s,
            }
            self._write(ACTION_TOPIC, "std_msgs/msg/String", {"data": json.dumps(action)}, self._turn_start_ns)
            stamp = self._stamp(state.step)
            result = {"turn": record.turn, "tool_results": list(record.tool_results)}
            self._write(TOOL_RESULT_TOPIC, "std_msgs/msg/String", {"data": json.dumps(result)}, stamp)
            self._state(state, stamp)
            self.flush()

    def markers(self, markers: Iterable[PathMarker]) -> None:
        """A planned motion's markers (robodojo.motion.path_markers: paths and targets), stamped with the latest
        joint state, where the motion starts."""
        with self._lock:
            if self._closed:
                return
            stamp = self._last_ns.get(topic_names.JOINT_STATES, 0)
            array = {"markers": [_marker(m, stamp, topic_names.WORLD_FRAME) for m in markers]}
            self._write(topic_names.PLANNED_PATH, "visualization_msgs/msg/MarkerArray", array, stamp)

    def error(self, turn: int, text: str) -> None:
        """What ended the episode early, stamped with the latest time recorded (the host may be gone)."""
        with self._lock:
            data = json.dumps({"turn": turn, "error": text})
            self._write(ERROR_TOPIC, "std_msgs/msg/String", {"data": data}, self._latest_ns)
            self.flush()

    def flush(self) -> None:
        """Put everything written so far into the file (one chunk; compression, if any, works per chunk)."""
        with self._lock:
            # mcap-ros2-support's writer has no flush of its own; the McapWriter it wraps has one from mcap 1.6 on. An
            # older mcap writes a chunk only when it is full and at close: the file is as complete, a kill loses more.
            flush = getattr(self._writer._writer, "flush", None)
            if flush is not None:
                flush()

    def close(self, metrics: Mapping[str, Any] | None = None) -> None:
        """Write ``metrics`` as the ``metrics`` metadata record, then the summary and footer; close the file."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if metrics is not None:
                    self._writer.add_metadata("metrics", _metadata(metrics))
                self._writer.finish()
            finally:
                self._stream.close()

    # -- messages -----------------------------------------------------------------------------------------------
    def _stamp(self, step: int) -> int:
        """Simulation time [ns] of env step ``step``."""
        return round(step * self.control_dt_s * NS_PER_S)

    def _write(
        self, topic: str, datatype: str, fields: dict[str, Any], stamp_ns: int, *, frame_id: str | None = None
    ) -> None:
        """One message; ``frame_id`` given: a stamped type, whose header gets the stamp and the frame."""
        stamp_ns = max(stamp_ns, self._last_ns.get(topic, 0))
        message = fields if frame_id is None else {"header": _header(stamp_ns, frame_id), **fields}
        self._writer.write_message(topic, self._schemas[datatype], message, log_time=stamp_ns, publish_time=stamp_ns)
        self._last_ns[topic] = stamp_ns
        self._latest_ns = max(self._latest_ns, stamp_ns)

    def _state(self, state: Observation, stamp_ns: int) -> None:
        """Every arm's joints (the gripper's driven joint in metres) and grasp-point pose; the next turn starts here."""
        for arm_name, arm in state.arms.items():
            pose = {"pose": _pose(arm.tcp_pos_m, arm.tcp_quat_wxyz)}
            self._write(
                topic_names.tcp_pose(arm_name), "geometry_msgs/msg/PoseStamped", pose, stamp_ns,
                frame_id=topic_names.WORLD_FRAME,
            )  # fmt: skip
        if self._joints_step != state.step:  # a control step's tick wrote them already
            self._joints(state, stamp_ns)
        self._turn_start_ns = max(self._turn_start_ns, stamp_ns)

    def _joints(self, state: Observation, stamp_ns: int) -> None:
        """/joint_states (each arm's joints and its gripper's driven joint [m]) and /tf (each movable joint's child
        link in its parent, mimic fingers included) at ``stamp_ns``."""
        q: dict[str, float] = {}
        for arm_name, arm in state.arms.items():
            config = self.robot.arm(arm_name)
            q.update(zip(arm.joint_names, (float(v) for v in arm.joint_positions_rad), strict=True))
            q[config.gripper_joint] = float(arm.gripper_opening * config.gripper_max_m)
        joints = {"name": list(q), "position": list(q.values()), "velocity": [], "effort": []}
        # frame_id empty, as robot_state_publisher and the simulator node publish joint states
        self._write(topic_names.JOINT_STATES, "sensor_msgs/msg/JointState", joints, stamp_ns, frame_id="")
        transforms = self._transforms(self._urdf.movable_joints, q, stamp_ns)
        self._write(TF_TOPIC, "tf2_msgs/msg/TFMessage", transforms, stamp_ns)
        self._joints_step = state.step

    def _transforms(self, joints: Iterable[Joint], q: Mapping[str, float], stamp_ns: int) -> dict[str, Any]:
        """A TFMessage: each joint's child link in its parent link at the positions ``q`` (mimic joints follow)."""
        out = []
        for joint in joints:
            T = joint.origin.matrix @ joint.motion(self._urdf.position_of(joint, q))
            w, x, y, z = (float(v) for v in quat_from_matrix(T[:3, :3]))
            tx, ty, tz = (float(v) for v in T[:3, 3])
            out.append({
                "header": _header(stamp_ns, joint.parent), "child_frame_id": joint.child,
                "transform": {"translation": {"x": tx, "y": ty, "z": tz}, "rotation": {"x": x, "y": y, "z": z, "w": w}},
            })  # fmt: skip
        return {"transforms": out}

    def _camera(self, frame: CameraFrame, stamp_ns: int) -> None:
        calibration = frame.calibration
        optical_frame = self.robot.camera(frame.name).frame
        K = np.asarray(calibration.K, dtype=float)
        P = np.zeros((3, 4))
        P[:, :3] = K
        image = {"format": "jpeg", "data": frame_jpeg(frame.rgb, self.jpeg_quality)}
        info = {
            "height": calibration.height,
            "width": calibration.width,
            "distortion_model": calibration.distortion_model,
            "d": [float(v) for v in calibration.distortion],
            "k": [float(v) for v in K.reshape(-1)],
            "r": list(_IDENTITY_R),
            "p": [float(v) for v in P.reshape(-1)],
            "binning_x": 0,
            "binning_y": 0,
            "roi": {"x_offset": 0, "y_offset": 0, "height": 0, "width": 0, "do_rectify": False},
        }
        T = np.asarray(calibration.T_world_cam, dtype=float)
        pose = {"pose": _pose(T[:3, 3], quat_from_matrix(T[:3, :3]))}
        name = frame.name
        # The image last, as the simulator node publishes them: a reader that has the image has its calibration.
        self._write(topic_names.camera_info(name), "sensor_msgs/msg/CameraInfo", info, stamp_ns, frame_id=optical_frame)
        self._write(
            topic_names.camera_pose(name), "geometry_msgs/msg/PoseStamped", pose, stamp_ns,
            frame_id=topic_names.WORLD_FRAME,
        )  # fmt: skip
        self._write(
            topic_names.camera_image_compressed(name), "sensor_msgs/msg/CompressedImage", image, stamp_ns,
            frame_id=optical_frame,
        )  # fmt: skip


def _marker(marker: PathMarker, stamp_ns: int, frame_id: str) -> dict[str, Any]:
    """visualization_msgs/Marker fields of ``marker``."""
    r, g, b, a = marker.color_rgba
    position = dict(zip("xyz", marker.position_m, strict=True))
    return {
        "header": _header(stamp_ns, frame_id), "ns": marker.namespace, "id": marker.id, "type": int(marker.kind),
        "action": 0, "pose": {"position": position, "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}},
        "scale": {"x": marker.scale_m, "y": marker.scale_m, "z": marker.scale_m},
        "color": {"r": r, "g": g, "b": b, "a": a}, "lifetime": {"sec": 0, "nanosec": 0}, "frame_locked": False,
        "points": [dict(zip("xyz", p, strict=True)) for p in marker.points_m], "colors": [], "texture_resource": "",
        "texture": {"header": _header(0, ""), "format": "", "data": b""}, "uv_coordinates": [], "text": "",
        "mesh_resource": "", "mesh_file": {"filename": "", "data": b""}, "mesh_use_embedded_materials": False,
    }  # fmt: skip


def camera_frames(path: Path, cameras: Iterable[str], *, seen_only: bool = False) -> Iterator[tuple[str, int, bytes]]:
    """The frames of ``cameras`` in an episode.mcap, in file order: (camera, stamp [ns], JPEG bytes); ``seen_only``:
    only those the agent took (listed on /agent/observed), not those rendered for the record."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    topics = {topic_names.camera_image_compressed(camera): camera for camera in cameras}
    with path.open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        seen: set[tuple[str, int]] | None = None
        if seen_only:
            seen = {
                (camera, message.log_time)
                for _schema, _channel, message, decoded in reader.iter_decoded_messages(topics=[OBSERVED_TOPIC])
                for camera in json.loads(decoded.data)["cameras"]
            }
        for _schema, channel, message, decoded in reader.iter_decoded_messages(topics=list(topics)):
            camera = topics[channel.topic]
            if seen is None or (camera, message.log_time) in seen:
                yield camera, message.log_time, bytes(decoded.data)


# -- a record cut short (a killed try) --------------------------------------------------------------------------------
ROS2_PROFILE = "ros2"
CUT_SUFFIX = ".cut"  #: repair_mcap keeps the file as it was found beside the repaired one, with this suffix added


@dataclass(frozen=True)
class McapRepair:
    """What :func:`repair_mcap` found and kept."""

    intact: bool  #: the file had its footer: nothing was rewritten
    messages: int  #: messages in the (repaired) file
    topics: tuple[str, ...]  #: topics with at least one message
    last_stamp_s: float  #: the latest message's log time [s] (0 with none)
    metadata: tuple[str, ...]  #: metadata records kept (``episode``; ``metrics`` only in a file that was closed)
    dropped_bytes: int  #: bytes after the last complete record (the partial chunk the kill cut off)
    kept: Path | None = None  #: where the file as found was kept (None when intact)

    def text(self) -> str:
        if self.intact:
            return f"intact: {self.messages} messages on {len(self.topics)} topics; nothing to repair"
        return (
            f"repaired: {self.messages} messages on {len(self.topics)} topics up to {self.last_stamp_s:.3f} s, "
            f"metadata {', '.join(self.metadata) or 'none'}; {self.dropped_bytes} bytes after the last complete record "
            f"dropped; the file as found is kept as {self.kept}"
        )


def _salvage(path: Path) -> tuple[list[Any], bool, int]:
    """Every record of ``path`` a streaming reader gets before the file ends or breaks; whether it had a footer; the
    offset after the last complete record."""
    records: list[Any] = []
    footer = False
    end = 0
    with path.open("rb") as f:
        reader = StreamReader(f, validate_crcs=True)
        try:
            for record in reader.records:
                records.append(record)
                footer = footer or isinstance(record, Footer)
                end = f.tell()
        except (McapError, ValueError, EOFError, OSError):  # the cut: a record (often a chunk) ends past the file
            pass
    return records, footer, end


def _intact(path: Path) -> McapRepair | None:
    """What a complete file holds, read from its summary alone (None when it has none: cut short, or unindexed)."""
    from mcap.reader import make_reader

    with path.open("rb") as f:
        reader = make_reader(f)
        try:
            summary = reader.get_summary()
            metadata = tuple(m.name for m in reader.iter_metadata())
        except (McapError, ValueError, EOFError, OSError, struct.error):  # no footer, or it does not add up
            return None
    if summary is None or summary.statistics is None:
        return None
    stats = summary.statistics
    counts = stats.channel_message_counts
    topics = tuple(sorted({c.topic for i, c in summary.channels.items() if counts.get(i)}))
    return McapRepair(True, stats.message_count, topics, stats.message_end_time / NS_PER_S, metadata, 0)


def repair_mcap(path: Path) -> McapRepair:
    """Make ``path`` a complete MCAP again if it was cut short (see :class:`McapRepair`): the schemas, channels,
    messages and metadata before the cut are written, indexed and chunked, to a new file that replaces it; the file
    as found is kept beside it (``<name>.cut``). A file with its footer is left as it is (read from its summary)."""
    intact = _intact(path)
    if intact is not None:
        return intact
    records, footer, end = _salvage(path)
    messages = [r for r in records if isinstance(r, Message)]
    channels = {r.id: r for r in records if isinstance(r, Channel)}
    topics = tuple(sorted({channels[m.channel_id].topic for m in messages if m.channel_id in channels}))
    metadata = tuple(r.name for r in records if isinstance(r, Metadata))
    last_s = max((m.log_time for m in messages), default=0) / NS_PER_S
    if footer:
        return McapRepair(True, len(messages), topics, last_s, metadata, 0)
    repaired = path.with_name(path.name + ".repairing")
    with repaired.open("wb") as out:
        writer = McapWriter(out, compression=COMPRESSION)
        writer.start(profile=ROS2_PROFILE, library="robodojo record repair")
        schema_ids: dict[int, int] = {}
        channel_ids: dict[int, int] = {}
        for record in records:
            if isinstance(record, Schema):
                schema_ids[record.id] = writer.register_schema(record.name, record.encoding, record.data)
            elif isinstance(record, Channel) and record.schema_id in schema_ids:
                channel_ids[record.id] = writer.register_channel(
                    record.topic, record.message_encoding, schema_ids[record.schema_id], dict(record.metadata)
                )
            elif isinstance(record, Message) and record.channel_id in channel_ids:
                writer.add_message(
                    channel_ids[record.channel_id], record.log_time, record.data, record.publish_time,
                    record.sequence,
                )  # fmt: skip
            elif isinstance(record, Metadata):
                writer.add_metadata(record.name, dict(record.metadata))
        writer.finish()
    kept = path.with_name(path.name + CUT_SUFFIX)
    os.replace(path, kept)
    os.replace(repaired, path)
    size = kept.stat().st_size
    return McapRepair(False, len(messages), topics, last_s, metadata, max(0, size - end), kept)


# -- reading a record back (robodojo view: robodojo.episodes.viewing) ------------------------------------------------
from robodojo.errors import RobodojoError  # noqa: E402 - this section's alone: the writer above raises none of its own


class McapReadError(RobodojoError):
    """An episode.mcap that cannot be read as MCAP at all."""


class McapCutShort(McapReadError):
    """An episode.mcap that ends before its footer: a killed episode, or one still being written. :func:`read_mcap`
    raises it after yielding every message before the cut."""

    def __init__(self, path: Path, messages: int, last_stamp_ns: int, why: str) -> None:
        self.path = path
        self.messages = messages  #: messages read before the cut
        self.last_stamp_ns = last_stamp_ns  #: the latest stamp among them [ns] (0 with none)
        super().__init__(
            f"{path} ends early ({why}): {messages} messages up to {last_stamp_ns / NS_PER_S:.2f} s were readable. "
            "A killed episode leaves it so; `robodojo record repair` makes it a complete file (every record before "
            "the cut, indexed)"
        )


@dataclass(frozen=True)
class RecordedMessage:
    """One message of an episode.mcap, decoded: topic, ROS type (``sensor_msgs/msg/CameraInfo``), stamp [ns] of
    simulation time (the log time, equal to its header stamp) and the message (mcap-ros2-support's decoded object:
    the .msg fields as attributes)."""

    topic: str
    datatype: str
    stamp_ns: int
    message: Any


def read_mcap(path: Path, topics: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
    """Every message of the episode.mcap at ``path`` (only those of ``topics``, if given), decoded, in file order.

    The file is read as a stream, so a file cut short still gives every message before the cut; then
    :class:`McapCutShort` is raised (it says to run ``robodojo record repair``). A file that is not MCAP raises
    :class:`McapReadError`; so does a message of a type the file has no schema for."""
    from mcap.exceptions import RecordLengthLimitExceeded
    from mcap.records import Header
    from mcap_ros2.decoder import DecoderFactory

    wanted = None if topics is None else set(topics)
    factory = DecoderFactory()
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    decoders: dict[int, Any] = {}
    count, last_ns, started, ended = 0, 0, False, False
    with path.open("rb") as f:
        # No record can be longer than the file: a length field cut or garbled past that is the cut, not a read
        # of gigabytes.
        reader = StreamReader(f, validate_crcs=True, record_size_limit=max(1, os.fstat(f.fileno()).st_size))
        records = iter(reader.records)
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except (McapError, RecordLengthLimitExceeded, ValueError, EOFError, OSError, struct.error) as exc:
                if not started:
                    raise McapReadError(f"{path} is not an MCAP file ({type(exc).__name__}: {exc})") from None
                raise McapCutShort(path, count, last_ns, f"{type(exc).__name__}: {exc}") from None
            if isinstance(record, Header):
                started = True
            elif isinstance(record, Footer):
                ended = True
            elif isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None or (wanted is not None and channel.topic not in wanted):
                    continue
                schema = schemas.get(channel.schema_id)
                if schema is None:
                    raise McapReadError(f"{path}: topic {channel.topic} has no schema ({channel.schema_id})")
                decoder = decoders.get(channel.id)
                if decoder is None:
                    decoder = decoders[channel.id] = factory.decoder_for(channel.message_encoding, schema)
                if decoder is None:
                    raise McapReadError(f"{path}: cannot decode {channel.message_encoding} message {schema.name}")
                count += 1
                last_ns = max(last_ns, record.log_time)
                yield RecordedMessage(channel.topic, schema.name, record.log_time, decoder(record.data))
    if not ended:
        raise McapCutShort(path, count, last_ns, "no footer")
