"""An episode's episode.mcap onto a Rerun recording (``robodojo view``): :func:`log_episode_mcap`.

The file is read once, in file order, through :func:`robodojo.episodes.mcap_record.read_mcap`, and every message
goes to :class:`~robodojo.episodes.viewing.episode_log.EpisodeLog` at its stamp (simulation time):

* /robot_description: the robot model; /tf and /tf_static: the link frames (and, walked from the root, each arm's
  grasp-point trail at every step, where the robot's configuration names its TCP link); /<arm>/tcp_pose: trail points
  too (the only ones for a robot robodojo does not know);
* /cameras/<camera>/image_raw/compressed with the latest camera_info and pose of that camera;
* /agent/action: the model's text and tool calls, and each move_eef call's targets (unnamed dimensions from the grasp
  point the turn began at); /agent/tool_result, /episode/error, /episode/instruction: texts;
* visualization_msgs Marker/MarkerArray and nav_msgs/Path on any topic (/motion/planned_path): planned paths.

A file cut short (a killed episode) gives what was readable before the cut, and the summary says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robodojo.episodes.mcap_record import (
    ACTION_TOPIC,
    ERROR_TOPIC,
    INSTRUCTION_TOPIC,
    ROBOT_DESCRIPTION_TOPIC,
    TF_STATIC_TOPIC,
    TF_TOPIC,
    TOOL_RESULT_TOPIC,
    McapCutShort,
    RecordedMessage,
    read_mcap,
)
from robodojo.episodes.viewing.episode_log import (
    EpisodeLog,
    LinkTransform,
    LogCounts,
    RobotShown,
    move_targets,
    target_point,
)
from robodojo.geometry import matrix_from_quat, transform
from robodojo.robots import topic_names

CAMERA_PREFIX = "/cameras/"
TCP_POSE_SUFFIX = "/tcp_pose"
_CAMERA_IMAGE_TAIL = topic_names.camera_image_compressed("{}").split("{}", 1)[1]  # "/image_raw/compressed"
_CAMERA_INFO_TAIL = topic_names.camera_info("{}").split("{}", 1)[1]
_CAMERA_POSE_TAIL = topic_names.camera_pose("{}").split("{}", 1)[1]
_MARKER_TYPES = ("visualization_msgs/msg/MarkerArray", "visualization_msgs/msg/Marker")
_PATH_TYPE = "nav_msgs/msg/Path"
_MARKER_LINE_TYPES = (4, 5)  # visualization_msgs/Marker LINE_STRIP, LINE_LIST
_MARKER_DELETE = (2, 3)  # DELETE, DELETEALL: nothing to draw
_PATH_WIDTH_M = 0.005
MAX_SKIPPED_LINES = 20  #: skipped messages named in a summary; a hostile file could have millions


@dataclass(frozen=True)
class ConversionSummary:
    """What :func:`log_episode_mcap` put on the recording, and what it could not."""

    mcap: Path  #: the file read
    messages: int  #: messages read
    last_stamp_s: float  #: the latest stamp [s of simulation time]
    counts: LogCounts  #: rows written, by kind
    cameras: tuple[str, ...]  #: cameras with frames
    arms: tuple[str, ...]  #: arms with a trail
    robot: RobotShown | None  #: how the robot was shown (None: the file has no /robot_description)
    cut_short: str = ""  #: why the file ended early ("" for a complete file); what was readable is on the recording
    skipped: tuple[str, ...] = ()  #: messages that could not be shown, one line each (bad JSON, unknown robot, ...)


class _Frames:
    """The link frames of /tf_static and /tf (child -> parent and transform), to walk from a link to the root."""

    def __init__(self) -> None:
        self._parent: dict[str, tuple[str, np.ndarray]] = {}

    def update(self, transforms: list[LinkTransform]) -> None:
        for parent, child, translation, (x, y, z, w) in transforms:
            self._parent[child] = (parent, transform(matrix_from_quat((w, x, y, z)), translation))

    def position(self, link: str, root: str) -> np.ndarray | None:
        """``link``'s origin in ``root`` [m], None while a frame on the way is unknown."""
        T = np.eye(4)
        seen = 0
        while link != root:
            step = self._parent.get(link)
            if step is None or seen > len(self._parent):  # unknown, or a loop in a hostile file
                return None
            link, T_parent_link = step
            T = T_parent_link @ T
            seen += 1
        return T[:3, 3]


def _transforms(message: Any) -> list[LinkTransform]:
    out = []
    for t in message.transforms:
        tr, r = t.transform.translation, t.transform.rotation
        out.append((t.header.frame_id, t.child_frame_id, (tr.x, tr.y, tr.z), (r.x, r.y, r.z, r.w)))
    return out


def _camera_topic(topic: str) -> tuple[str, str] | None:
    """(camera, what) of a camera topic: what is image, info or pose."""
    if not topic.startswith(CAMERA_PREFIX):
        return None
    rest = topic[len(CAMERA_PREFIX) :]
    for tail, what in ((_CAMERA_IMAGE_TAIL, "image"), (_CAMERA_INFO_TAIL, "info"), (_CAMERA_POSE_TAIL, "pose")):
        if rest.endswith(tail) and "/" not in rest[: -len(tail)] and rest[: -len(tail)]:
            return rest[: -len(tail)], what
    return None


def _pose_matrix(pose: Any) -> np.ndarray:
    p, o = pose.position, pose.orientation
    return transform(matrix_from_quat((o.w, o.x, o.y, o.z)), (p.x, p.y, p.z))


def _tcp_links(robot_name: str) -> dict[str, str]:
    """Arm -> its TCP link, from the robot's configuration (config/robots/<name>.yaml); {} for a robot robodojo does
    not know (its trails then come from /<arm>/tcp_pose alone)."""
    from robodojo.errors import RobodojoError
    from robodojo.robots.config import load_robot_config

    try:
        return {arm.name: arm.tcp_link for arm in load_robot_config(robot_name).arms}
    except (RobodojoError, OSError):
        return {}


class _Converter:
    def __init__(self, log: EpisodeLog) -> None:
        self.log = log
        self.frames = _Frames()
        self.root = ""
        self.tcp_links: dict[str, str] = {}  # arms whose trail comes from the link frames
        self.tcp_now: dict[str, tuple[float, float, float]] = {}  # arm -> its latest grasp point
        self.info: dict[str, tuple[np.ndarray, tuple[int, int]]] = {}  # camera -> K, (width, height)
        self.pose: dict[str, np.ndarray] = {}  # camera -> T_world_cam
        self.skipped: list[str] = []
        self.skipped_count = 0
        self.arms: set[str] = set()

    def skip(self, line: str) -> None:
        """A message that could not be shown; the first MAX_SKIPPED_LINES are kept word for word."""
        self.skipped_count += 1
        if len(self.skipped) < MAX_SKIPPED_LINES:
            self.skipped.append(line)

    def skipped_lines(self) -> tuple[str, ...]:
        more = self.skipped_count - len(self.skipped)
        return (*self.skipped, f"... and {more} more") if more else tuple(self.skipped)

    def message(self, m: RecordedMessage) -> None:
        topic, msg, stamp = m.topic, m.message, m.stamp_ns
        if topic == TF_TOPIC:
            transforms = _transforms(msg)
            self.log.link_transforms(stamp, transforms)
            self.frames.update(transforms)
            self._trails_from_frames(stamp)
        elif topic == TF_STATIC_TOPIC:
            transforms = _transforms(msg)
            self.frames.update(transforms)
            if self.log.robot_shown is None or not self.log.robot_shown.loaded:
                self.log.static_transforms(transforms)
        elif topic.endswith(TCP_POSE_SUFFIX) and m.datatype == "geometry_msgs/msg/PoseStamped":
            arm = topic[1 : -len(TCP_POSE_SUFFIX)]
            p = msg.pose.position
            self.tcp_now[arm] = (p.x, p.y, p.z)
            self.arms.add(arm)
            if arm not in self.tcp_links:
                self.log.tcp(stamp, arm, self.tcp_now[arm])
        elif (camera := _camera_topic(topic)) is not None:
            self._camera(stamp, *camera, msg)
        elif topic == ROBOT_DESCRIPTION_TOPIC:
            self._robot(msg.data)
        elif topic in (INSTRUCTION_TOPIC, ACTION_TOPIC, TOOL_RESULT_TOPIC, ERROR_TOPIC):
            self._text(stamp, topic, msg.data)
        elif m.datatype in _MARKER_TYPES:
            markers = msg.markers if m.datatype == _MARKER_TYPES[0] else [msg]
            for marker in markers:
                self._marker(stamp, marker)
        elif m.datatype == _PATH_TYPE:
            points = [(p.pose.position.x, p.pose.position.y, p.pose.position.z) for p in msg.poses]
            if points:
                self.log.planned(stamp, topic.strip("/").replace("/", "_"), points, line=True, width_m=_PATH_WIDTH_M)

    def _robot(self, urdf_text: str) -> None:
        if self.log.robot_shown is not None:
            return
        from robodojo.errors import RobodojoError

        try:
            shown = self.log.robot(urdf_text)
        except (RobodojoError, ValueError) as exc:  # a URDF robodojo cannot read: links come from /tf alone
            self.skip(f"{ROBOT_DESCRIPTION_TOPIC}: {exc}")
            return
        self.root = shown.root_link
        self.tcp_links = _tcp_links(shown.name)

    def _trails_from_frames(self, stamp: int) -> None:
        for arm, link in self.tcp_links.items():
            xyz = self.frames.position(link, self.root)
            if xyz is not None:
                self.arms.add(arm)
                self.log.tcp(stamp, arm, xyz)

    def _camera(self, stamp: int, camera: str, what: str, msg: Any) -> None:
        if what == "info":
            self.info[camera] = (np.asarray(msg.k, dtype=float).reshape(3, 3), (int(msg.width), int(msg.height)))
        elif what == "pose":
            self.pose[camera] = _pose_matrix(msg.pose)
        elif camera in self.info and camera in self.pose:  # the record writes both before each image
            K, size = self.info[camera]
            self.log.camera(stamp, camera, bytes(msg.data), K, size, self.pose[camera])
        else:
            self.skip(f"{camera} frame at {stamp / 1e9:.3f} s: no camera_info or pose before it")

    def _text(self, stamp: int, topic: str, data: str) -> None:
        if topic == INSTRUCTION_TOPIC:
            self.log.text(stamp, "instruction", data)
            return
        try:
            payload = json.loads(data)
        except ValueError as exc:
            self.skip(f"{topic} at {stamp / 1e9:.3f} s: not JSON ({exc})")
            return
        if not isinstance(payload, Mapping):
            self.skip(f"{topic} at {stamp / 1e9:.3f} s: not a JSON object")
            return
        turn = payload.get("turn")
        if topic == ACTION_TOPIC:
            self._action(stamp, turn, payload)
        elif topic == TOOL_RESULT_TOPIC:
            for result in payload.get("tool_results") or []:
                self.log.text(stamp, "tool_result", f"turn {turn}: {result}")
        else:
            self.log.text(stamp, "error", f"turn {turn}: {payload.get('error', '')}")

    def _action(self, stamp: int, turn: Any, payload: Mapping[str, Any]) -> None:
        content = payload.get("content")
        if content:
            self.log.text(stamp, "agent", f"turn {turn}: {content}")
        for call in payload.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            name, arguments = str(call.get("name", "")), call.get("arguments", "")
            self.log.text(stamp, "agent", f"turn {turn}: {name}({arguments if isinstance(arguments, str) else ''})")
            if not isinstance(arguments, str | Mapping):
                continue
            # The turn's state before it: the grasp points the file holds when the action (written at the turn's
            # end, stamped at its start) comes; the tool calls as the model sent them (before any probe's mapping).
            arms = self.arms | set(self.tcp_links)
            for arm, named in move_targets(arguments, arms).items():
                tcp = self.tcp_now.get(arm)
                point = target_point(named, tcp)
                if point is not None:
                    self.log.target(stamp, arm, point, tcp)

    def _marker(self, stamp: int, marker: Any) -> None:
        if marker.action in _MARKER_DELETE:
            return
        name = f"{marker.ns or 'marker'}/{marker.id}"
        c = marker.color
        color = (c.r, c.g, c.b, c.a)
        if marker.type in _MARKER_LINE_TYPES and len(marker.points) >= 2:
            points = [(p.x, p.y, p.z) for p in marker.points]
            self.log.planned(stamp, name, points, line=True, width_m=marker.scale.x, color_rgba=color)
        else:
            p = marker.pose.position
            self.log.planned(stamp, name, [(p.x, p.y, p.z)], line=False, width_m=marker.scale.x, color_rgba=color)


def log_episode_mcap(path: Path, log: EpisodeLog) -> ConversionSummary:
    """Log the episode.mcap at ``path`` onto ``log``'s recording (see the module docstring), then finish it (whole
    trails, the view layout). A file cut short gives what was readable (``cut_short`` says why it ended);
    a file that is not MCAP raises :class:`~robodojo.episodes.mcap_record.McapReadError`."""
    converter = _Converter(log)
    count, last_ns, cut = 0, 0, ""
    try:
        for message in read_mcap(path):
            count += 1
            last_ns = max(last_ns, message.stamp_ns)
            try:
                converter.message(message)
            # A message whose fields do not fit its topic (another writer's file, a hostile one) is skipped and
            # named; the rest of the episode is still worth showing.
            except (AttributeError, TypeError, ValueError, IndexError, KeyError, RuntimeError) as exc:
                converter.skip(f"{message.topic} at {message.stamp_ns / 1e9:.3f} s: {type(exc).__name__}: {exc}")
    except McapCutShort as exc:
        cut = str(exc)
    log.finish()
    return ConversionSummary(
        mcap=path, messages=count, last_stamp_s=last_ns / 1e9, counts=log.counts, cameras=log.cameras,
        arms=tuple(sorted(converter.arms)), robot=log.robot_shown, cut_short=cut, skipped=converter.skipped_lines(),
    )  # fmt: skip
