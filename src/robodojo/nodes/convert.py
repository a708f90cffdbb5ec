"""Messages <-> library types. Pure functions; the nodes call them and nothing else builds messages."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from numpy.typing import ArrayLike, NDArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import ColorRGBA, Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from robodojo.control.trajectory_controller import TrajectoryReport
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.geometry import matrix_from_quat, quat_from_matrix, transform, wxyz_tuple, xyz_tuple
from robodojo.motion.path_markers import MarkerKind, PathMarker
from robodojo.motion.rejection import Refused, rejection_from_json, rejection_to_json
from robodojo.motion.report import ArmReport, MoveReport, StopReason
from robodojo.observation import CameraCalibration, EpisodeState
from robodojo.perception import camera_stream
from robodojo.perception.frame_intrinsics import Intrinsics
from robodojo.perception.image_formats import compressed_to_rgb, raw_to_rgb
from robodojo.robots.topic_names import WORLD_FRAME

# -- time ---------------------------------------------------------------------------------------------------------


def time_msg(t_s: float) -> Time:
    sec = math.floor(t_s)
    return Time(sec=int(sec), nanosec=min(round((t_s - sec) * 1e9), 999_999_999))


def seconds(stamp: Time | Duration) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def duration_msg(t_s: float) -> Duration:
    sec = math.floor(t_s)
    return Duration(sec=int(sec), nanosec=min(round((t_s - sec) * 1e9), 999_999_999))


def header(t_s: float, frame_id: str) -> Header:
    return Header(stamp=time_msg(t_s), frame_id=frame_id)


def path_markers_from(msg: MarkerArray) -> tuple[PathMarker, ...]:
    """The markers of a planned path (:func:`marker_array_msg`'s message) as plain data; markers of other types are
    left out."""
    out = []
    for m in msg.markers:
        if m.type not in iter(MarkerKind):
            continue
        p, c = m.pose.position, m.color
        out.append(
            PathMarker(
                m.ns, int(m.id), MarkerKind(m.type), float(m.scale.x), (float(c.r), float(c.g), float(c.b), float(c.a)),
                points_m=tuple((float(q.x), float(q.y), float(q.z)) for q in m.points),
                position_m=(float(p.x), float(p.y), float(p.z)),
            )
        )  # fmt: skip
    return tuple(out)


def marker_array_msg(markers: Sequence[PathMarker], t_s: float, frame_id: str) -> MarkerArray:
    """visualization_msgs/MarkerArray of ``markers`` (robodojo.motion.path_markers), stamped ``t_s``, in
    ``frame_id``."""
    out = []
    for m in markers:
        msg = Marker(header=header(t_s, frame_id), ns=m.namespace, id=m.id, type=int(m.kind), action=Marker.ADD)
        msg.pose.orientation.w = 1.0
        msg.pose.position = Point(x=m.position_m[0], y=m.position_m[1], z=m.position_m[2])
        msg.scale.x = msg.scale.y = msg.scale.z = m.scale_m
        msg.color = ColorRGBA(r=m.color_rgba[0], g=m.color_rgba[1], b=m.color_rgba[2], a=m.color_rgba[3])
        msg.points = [Point(x=x, y=y, z=z) for x, y, z in m.points_m]
        out.append(msg)
    return MarkerArray(markers=out)


# -- controllers and diagnostics ------------------------------------------------------------------------------------


def trajectory_status_msg(status_type, report: TrajectoryReport, t_s: float):
    """A controller's report on one trajectory, stamped ``t_s``; ``status_type`` is agent_bringup.msg.TrajectoryStatus
    (the package's own interfaces are built by colcon, so this module, loaded without them, does not import them)."""
    return status_type(
        header=header(t_s, ""), controller=report.controller, start=time_msg(report.start_s), state=int(report.state),
        points_played=report.points_played, points=report.points, holding=report.holding, reason=report.reason,
    )  # fmt: skip


def episode_status_msg(status_type, state: EpisodeState, robot: str, t_s: float):
    """The episode's state, stamped ``t_s``; ``status_type`` is agent_bringup.msg.EpisodeStatus (see
    :func:`trajectory_status_msg`)."""
    values = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    return status_type(header=header(t_s, WORLD_FRAME), robot=robot, **values)


def diagnostic_status(
    level: bytes, name: str, message: str, hardware_id: str, values: Mapping[str, object] | None = None
) -> DiagnosticStatus:
    """One /diagnostics entry; ``level`` is DiagnosticStatus.OK, WARN or ERROR, values are written with str()."""
    pairs = [KeyValue(key=k, value=str(v)) for k, v in (values or {}).items()]
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id, values=pairs)


def diagnostic_array(t_s: float, statuses: Sequence[DiagnosticStatus]) -> DiagnosticArray:
    return DiagnosticArray(header=header(t_s, ""), status=list(statuses))


# -- images and calibration -----------------------------------------------------------------------------------------


def image_msg(rgb: NDArray[np.uint8], t_s: float, frame_id: str) -> Image:
    """An HxWx3 uint8 RGB array as a sensor_msgs/Image (rgb8)."""
    h, w, _ = rgb.shape
    return Image(
        header=header(t_s, frame_id), height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3,
        data=np.ascontiguousarray(rgb).tobytes(),
    )  # fmt: skip


def image_rgb(msg: Image) -> NDArray[np.uint8]:
    """A sensor_msgs/Image in any encoding robodojo.perception.image_formats takes (rows possibly padded) as an HxWx3
    RGB array; FrameError (an InvalidCommandError) for a frame that is not what its header says."""
    return raw_to_rgb(msg.encoding, msg.width, msg.height, msg.step, msg.data)


def compressed_rgb(msg: CompressedImage) -> NDArray[np.uint8]:
    """A sensor_msgs/CompressedImage (JPEG or PNG; image_transport's format string) as an HxWx3 RGB array."""
    return compressed_to_rgb(msg.format, msg.data)


def driver_intrinsics(info: CameraInfo) -> Intrinsics:
    """A driver's CameraInfo as Intrinsics (FrameError when it describes no usable camera)."""
    roi = info.roi
    return camera_stream.driver_intrinsics(
        info.k, info.d, info.distortion_model, info.width, info.height, binning=(info.binning_x, info.binning_y),
        roi=(roi.x_offset, roi.y_offset, roi.height, roi.width),
    )  # fmt: skip


def camera_info_msg(calibration: CameraCalibration, t_s: float, frame_id: str) -> CameraInfo:
    """Intrinsics as CameraInfo (its distortion model and coefficients; P = K [I | 0] for a monocular camera)."""
    K = np.asarray(calibration.K, dtype=float)
    P = np.zeros((3, 4))
    P[:, :3] = K
    return CameraInfo(
        header=header(t_s, frame_id),
        height=calibration.height,
        width=calibration.width,
        distortion_model=calibration.distortion_model,
        d=[float(v) for v in calibration.distortion],
        k=[float(v) for v in K.reshape(-1)],
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=[float(v) for v in P.reshape(-1)],
    )


def calibration_from(info: CameraInfo, pose: PoseStamped) -> CameraCalibration:
    """CameraInfo plus the optical frame's world pose as a CameraCalibration."""
    K = np.array(info.k, dtype=float).reshape(3, 3)
    distortion = tuple(float(v) for v in info.d) or (0.0,) * 5
    return CameraCalibration(
        K=K, T_world_cam=pose_matrix(pose.pose), width=info.width, height=info.height, distortion=distortion,
        distortion_model=info.distortion_model or "plumb_bob",
    )  # fmt: skip


# -- poses and joints ---------------------------------------------------------------------------------------------


def pose(position_m: ArrayLike, quat_wxyz: ArrayLike) -> Pose:
    w, x, y, z = wxyz_tuple(quat_wxyz)
    px, py, pz = xyz_tuple(position_m)
    return Pose(position=Point(x=px, y=py, z=pz), orientation=Quaternion(x=x, y=y, z=z, w=w))


def pose_from_matrix(T: NDArray[np.float64]) -> Pose:
    return pose(T[:3, 3], quat_from_matrix(T[:3, :3]))


def pose_stamped(T: NDArray[np.float64], t_s: float, frame_id: str) -> PoseStamped:
    return PoseStamped(header=header(t_s, frame_id), pose=pose_from_matrix(T))


def position_quat(msg: Pose) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    p, q = msg.position, msg.orientation
    return (p.x, p.y, p.z), (q.w, q.x, q.y, q.z)


def pose_matrix(msg: Pose) -> NDArray[np.float64]:
    position, quat = position_quat(msg)
    return transform(matrix_from_quat(quat), position)


def joint_state_msg(
    names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], t_s: float
) -> JointState:
    return JointState(
        header=header(t_s, ""), name=list(names), position=[float(v) for v in positions],
        velocity=[float(v) for v in velocities],
    )  # fmt: skip


def trajectory_command(msg: JointTrajectory) -> TrajectoryCommand:
    """A received JointTrajectory as the controllers take it: ``positions[k]`` at ``header.stamp + time_from_start``."""
    return TrajectoryCommand(
        joint_names=tuple(msg.joint_names),
        times_from_start_s=tuple(seconds(p.time_from_start) for p in msg.points),
        positions=tuple(tuple(p.positions) for p in msg.points),
        start_s=seconds(msg.header.stamp),
    )


def joint_trajectory_msg(
    joint_names: Sequence[str], positions: NDArray[np.float64], dt_s: float, start_s: float
) -> JointTrajectory:
    """Points ``positions[k]`` (one row per point) at ``(k + 1) * dt_s`` after ``start_s``; no points means stop."""
    rows = np.atleast_2d(np.asarray(positions, dtype=float)) if len(positions) else np.zeros((0, len(joint_names)))
    points = [
        JointTrajectoryPoint(positions=[float(v) for v in row], time_from_start=duration_msg((k + 1) * dt_s))
        for k, row in enumerate(rows)
    ]
    return JointTrajectory(header=header(start_s, ""), joint_names=list(joint_names), points=points)


# -- MoveEef results ----------------------------------------------------------------------------------------------


def fill_move_result(result, report: MoveReport, dt_s: float, arrival_type) -> None:
    """Copy ``report`` into a MoveEef result message; ``arrival_type`` is agent_bringup.msg.ArmArrival."""
    result.accepted = report.accepted
    result.error = "" if report.accepted else report.tool_text
    result.tool_text = report.tool_text
    result.waypoints = report.waypoints
    result.duration_s = report.steps_used * dt_s
    result.steps_used = report.steps_used
    result.stop_reason = report.stop_reason.value
    result.stop_detail = report.stop_detail
    result.holding = bool(report.holding)
    result.holding_unknown = report.holding is None
    result.rejection = rejection_to_json(report.rejection) if report.rejection is not None else ""
    result.arms = [
        arrival_type(
            arm=a.arm, planned=a.planned, reached=a.reached, pos_error_mm=a.pos_error_mm,
            rot_error_deg=a.rot_error_deg, final_pose=pose(a.final_pos_m, a.final_quat_wxyz),
            waypoints=a.waypoints, steps_used=a.steps_used, stop_reason=a.stop_reason.value,
        )
        for a in report.arms.values()
    ]  # fmt: skip


def move_report(result) -> MoveReport:
    """A MoveEef result message as the MoveReport the in-process motion server would have returned.

    A refusal without facts (a server that sends none) keeps its text as a :class:`Refused`.
    """
    arms: dict[str, ArmReport] = {}
    for a in result.arms:
        position, quat = position_quat(a.final_pose)
        arms[a.arm] = ArmReport(
            arm=a.arm, planned=a.planned, reached=a.reached, pos_error_mm=a.pos_error_mm,
            rot_error_deg=a.rot_error_deg, final_pos_m=position, final_quat_wxyz=quat, waypoints=a.waypoints,
            steps_used=a.steps_used, stop_reason=StopReason(a.stop_reason),
        )  # fmt: skip
    rejection = None
    if result.rejection:
        rejection = rejection_from_json(result.rejection)
    elif not result.accepted:
        rejection = Refused(result.tool_text)
    return MoveReport(
        accepted=result.accepted,
        tool_text=result.tool_text,
        arms=arms,
        waypoints=result.waypoints,
        steps_used=result.steps_used,
        stop_reason=StopReason(result.stop_reason),
        rejection=rejection,
        stop_detail=result.stop_detail,
        holding=None if result.holding_unknown else result.holding,
    )
