"""An episode on a Rerun recording: which entity shows what, on one timeline of simulation time.

One place for both ways in: :mod:`robodojo.episodes.viewing.convert` (an episode.mcap after the fact) and
:mod:`robodojo.episodes.viewing.live` (an episode as it runs) call the same :class:`EpisodeLog` methods, so a live
view and a converted file look the same.

Entities (timeline ``sim_time``: the episode's simulation time, as episode.mcap's stamps)::

    robot/<robot>/visual_geometries/...   the scene URDF as Rerun's URDF loader draws it (meshes included: package://
                                          references resolved to files first, robodojo.robots.meshes), static
    tf_static                             the loader's joint frames (static)
    tf                                    every movable joint's child link in its parent (Transform3D with
                                          parent_frame/child_frame: link frames named as in the URDF), per step
    robot/links/<link>                    only where the URDF could not be loaded: axes on every link frame
    world                                 the world frame (x across the table, y away from the robot, z up); the
                                          URDF's root link is attached to it
    world/cameras/<camera>                the camera's pose (Transform3D) and calibration (Pinhole, RDF optical frame)
    world/cameras/<camera>/image          its frames (EncodedImage, JPEG as recorded)
    world/tcp/<arm>                       the grasp point's trail (LineStrips3D, the whole line so far)
    world/targets/<arm>                   move_eef targets (Points3D) and world/targets/<arm>/move the move from the
                                          grasp point to the target (Arrows3D)
    world/planned/<namespace>/<id>        planned paths and targets (visualization_msgs markers, nav_msgs/Path)
    log/instruction, log/agent, log/tool_result, log/error, log/outcome
                                          the episode's texts (TextLog)
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import rerun as rr
import rerun.blueprint as rrb

from robodojo.geometry import quat_from_matrix
from robodojo.robots.urdf import Joint, UrdfModel, parse_urdf

TIMELINE = "sim_time"
WORLD = "world"
ROBOT = "robot"
TF = "tf"
TF_STATIC = "tf_static"
LOG = "log"
NS_PER_S = 1_000_000_000
#: distance of a camera's image plane in the 3D view [m]: small, so the frustums do not hide the table
IMAGE_PLANE_M = 0.1
#: link axes drawn where the URDF could not be loaded [m]
LINK_AXIS_M = 0.05
TRAIL_RADIUS_M = 0.003
TARGET_RADIUS_M = 0.012
ARROW_RADIUS_M = 0.003
#: one color per arm, in first-seen order (RGB 0-255)
ARM_COLORS = ((30, 150, 255), (255, 128, 25), (80, 200, 80), (200, 80, 200))
TEXT_LEVELS = {"instruction": "INFO", "agent": "INFO", "tool_result": "DEBUG", "error": "ERROR", "outcome": "INFO"}
ARM_TARGET_KEYS = ("x", "y", "z")  #: move_eef's position dimensions, ``<arm>_x`` ... (DESIGN.md section 5)

Translation = tuple[float, float, float]
QuatXyzw = tuple[float, float, float, float]
LinkTransform = tuple[str, str, Translation, QuatXyzw]  # parent frame, child frame, translation [m], rotation


@dataclass(frozen=True)
class RobotShown:
    """How the robot got onto the recording: its name, root link, and whether Rerun's URDF loader drew it (meshes
    and primitives) or only its link frames could be shown (``reason`` says why)."""

    name: str
    root_link: str
    loaded: bool
    reason: str = ""


@dataclass(frozen=True)
class LogCounts:
    """What an :class:`EpisodeLog` wrote (rows of each kind)."""

    camera_frames: int
    link_transforms: int
    tcp_points: int
    trail_logs: int
    targets: int
    texts: int
    planned: int


def stamp_of(step: int, within_step_s: float, control_dt_s: float) -> int:
    """Simulation time [ns] of a state ``within_step_s`` past env step ``step`` (as episode.mcap stamps it)."""
    return round((step * control_dt_s + within_step_s) * NS_PER_S)


def transform_parts(T: np.ndarray) -> tuple[Translation, QuatXyzw]:
    """A 4x4 transform as translation and an xyzw quaternion (Rerun's order; robodojo's quaternions are wxyz)."""
    w, x, y, z = (float(v) for v in quat_from_matrix(np.asarray(T, dtype=float)[:3, :3]))
    tx, ty, tz = (float(v) for v in np.asarray(T, dtype=float)[:3, 3])
    return (tx, ty, tz), (x, y, z, w)


def joint_transforms(urdf: UrdfModel, joints: Iterable[Joint], q: Mapping[str, float]) -> list[LinkTransform]:
    """Each joint's child link in its parent at joint positions ``q`` (mimic joints follow), as /tf carries them."""
    out = []
    for joint in joints:
        translation, quat = transform_parts(joint.origin.matrix @ joint.motion(urdf.position_of(joint, q)))
        out.append((joint.parent, joint.child, translation, quat))
    return out


class LinkFrames:
    """The moving links' frames of a URDF at joint positions, computed for all joints at once (the live view does it
    every control step, on a thread that shares the GIL with the control loop): each child link in its parent is the
    joint's fixed origin, then a rotation about (revolute) or a shift along (prismatic) its axis. Same result as
    :func:`joint_transforms` (a test holds them together), about ten times faster."""

    def __init__(self, urdf: UrdfModel) -> None:
        self.urdf = urdf
        self.joints = urdf.movable_joints
        self.parents = [j.parent for j in self.joints]
        self.children = [j.child for j in self.joints]
        origins = np.stack([j.origin.matrix for j in self.joints]) if self.joints else np.zeros((0, 4, 4))
        self._R = origins[:, :3, :3]
        self._t = origins[:, :3, 3]
        wxyz = np.array([quat_from_matrix(R) for R in self._R]).reshape(-1, 4)
        self._q = np.concatenate([wxyz[:, 1:], wxyz[:, :1]], axis=1)  # xyzw
        axes = np.array([j.axis for j in self.joints], dtype=float).reshape(-1, 3)
        self._axes = axes / np.linalg.norm(axes, axis=1, keepdims=True)
        self._prismatic = np.array([j.type == "prismatic" for j in self.joints], dtype=bool)

    def at(self, q: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """Translations (N, 3) [m] and xyzw rotations (N, 4) of each moving link in its parent at positions ``q``
        (joints missing from ``q`` at 0, mimic joints following), in :attr:`children` order."""
        values = np.array([self.urdf.position_of(j, q) for j in self.joints], dtype=float)
        half = np.where(self._prismatic, 0.0, values / 2.0)
        motion_v = self._axes * np.sin(half)[:, None]
        motion_w = np.cos(half)
        origin_v, origin_w = self._q[:, :3], self._q[:, 3]
        # Hamilton product origin * motion: w = a_w b_w - a.b, v = a_w b + b_w a + a x b
        v = origin_w[:, None] * motion_v + motion_w[:, None] * origin_v + np.cross(origin_v, motion_v)
        w = origin_w * motion_w - np.einsum("ij,ij->i", origin_v, motion_v)
        shift = np.where(self._prismatic[:, None], self._axes * values[:, None], 0.0)
        translations = self._t + np.einsum("nij,nj->ni", self._R, shift)
        return translations, np.concatenate([v, w[:, None]], axis=1)


def _duration(stamp_ns: int) -> np.timedelta64:
    return np.timedelta64(int(stamp_ns), "ns")


class EpisodeLog:
    """Logs one episode onto ``rec`` (see the module docstring for the entities). Trails are logged again, whole, at
    most every ``trail_period_s`` of simulation time and by :meth:`finish`."""

    def __init__(self, rec: rr.RecordingStream, *, trail_period_s: float) -> None:
        self.rec = rec
        self.trail_period_ns = round(trail_period_s * NS_PER_S)
        self._trails: dict[str, list[Translation]] = {}
        self._trail_logged_ns: dict[str, int] = {}
        self._trail_stamp_ns: dict[str, int] = {}
        self._arm_colors: dict[str, tuple[int, int, int]] = {}
        self._cameras: set[str] = set()
        self._counts = dict.fromkeys(LogCounts.__dataclass_fields__, 0)
        self.robot_shown: RobotShown | None = None
        # x across the table, y away from the robot, z up: the 3D view's up is +z
        rec.log(WORLD, rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)

    @property
    def counts(self) -> LogCounts:
        return LogCounts(**self._counts)

    @property
    def cameras(self) -> tuple[str, ...]:
        """The cameras that had a frame, sorted."""
        return tuple(sorted(self._cameras))

    def _at(self, stamp_ns: int) -> None:
        self.rec.set_time(TIMELINE, duration=_duration(stamp_ns))

    def _color(self, arm: str) -> tuple[int, int, int]:
        return self._arm_colors.setdefault(arm, ARM_COLORS[len(self._arm_colors) % len(ARM_COLORS)])

    # -- the robot -------------------------------------------------------------------------------------------------
    def robot(self, urdf_text: str) -> RobotShown:
        """The robot's model from its URDF text (/robot_description): Rerun's URDF loader draws it, with the meshes
        resolved to files first; where that fails, axes on every link frame and the fixed joints' frames (the moving
        ones come with :meth:`link_transforms`). The URDF's root link is attached to the world entity."""
        urdf = parse_urdf(urdf_text, "robot_description")  # a URDF robodojo cannot read raises here: nothing logged
        name, root = urdf.name, urdf.root
        try:
            shown = self._load_urdf(urdf_text, name, root)
        except Exception as exc:  # Rerun's loader (a Rust error as RuntimeError/ValueError) or a mesh that fails
            shown = RobotShown(name, root, False, f"{type(exc).__name__}: {exc}")
            self._link_axes(urdf)
        # The named frames of the URDF form their own tree; hang its root under the world entity's frame.
        self.rec.log(f"{WORLD}/{ROBOT}", rr.Transform3D(parent_frame=f"tf#/{WORLD}", child_frame=root), static=True)
        self.robot_shown = shown
        return shown

    def _load_urdf(self, urdf_text: str, name: str, root: str) -> RobotShown:
        from robodojo.robots.meshes import urdf_with_resolved_meshes

        resolved = urdf_with_resolved_meshes(urdf_text)  # package:// -> file:// of the prepared OBJ meshes
        with tempfile.TemporaryDirectory(prefix="robodojo-view-") as folder:
            path = Path(folder) / f"{name}.urdf"
            path.write_text(resolved, encoding="utf-8")
            tree = rr.urdf.UrdfTree.from_file_path(path, entity_path_prefix=ROBOT)
            tree.log_urdf_to_recording(self.rec)  # reads the mesh files now: the folder may go afterwards
        return RobotShown(name, root, True)

    def _link_axes(self, urdf: UrdfModel) -> None:
        for link in urdf.links:
            self.rec.log(
                f"{ROBOT}/links/{link}", rr.CoordinateFrame(link), rr.TransformAxes3D(LINK_AXIS_M), static=True
            )
        fixed = [j for j in urdf.joints.values() if not j.movable]
        self.static_transforms(joint_transforms(urdf, fixed, {}))

    def static_transforms(self, transforms: Sequence[LinkTransform]) -> None:
        """Fixed link frames (the record's /tf_static), needed only where the URDF could not be loaded."""
        if transforms:
            self.rec.send_columns(TF_STATIC, indexes=[], columns=self._transform_columns(transforms))

    def link_transforms(self, stamp_ns: int, transforms: Sequence[LinkTransform]) -> None:
        """The moving links' frames at ``stamp_ns`` (one /tf message)."""
        if transforms:
            parents, children, translations, quats = zip(*transforms, strict=True)
            self.link_frames(stamp_ns, parents, children, np.asarray(translations), np.asarray(quats))

    def link_frames(
        self, stamp_ns: int | Sequence[int], parents: Sequence[str], children: Sequence[str],
        translations: np.ndarray, quats_xyzw: np.ndarray,
    ) -> None:  # fmt: skip
        """Link frames: each child link in its parent, translations (N, 3) [m] and xyzw rotations (N, 4)
        (:class:`LinkFrames`), all at ``stamp_ns`` or each at its own (N stamps: several states in one call)."""
        n = len(children)
        if not n:
            return
        stamps = np.full(n, stamp_ns) if isinstance(stamp_ns, int) else np.asarray(stamp_ns)
        times = rr.TimeColumn(TIMELINE, duration=stamps.astype("timedelta64[ns]"))
        columns = rr.Transform3D.columns(
            translation=np.asarray(translations, dtype=float), quaternion=np.asarray(quats_xyzw, dtype=float),
            parent_frame=list(parents), child_frame=list(children),
        )  # fmt: skip
        self.rec.send_columns(TF, indexes=[times], columns=columns)
        self._counts["link_transforms"] += n

    @staticmethod
    def _transform_columns(transforms: Sequence[LinkTransform]) -> Any:
        parents, children, translations, quats = zip(*transforms, strict=True)
        return rr.Transform3D.columns(
            translation=np.asarray(translations, dtype=float), quaternion=np.asarray(quats, dtype=float),
            parent_frame=list(parents), child_frame=list(children),
        )  # fmt: skip

    # -- cameras ---------------------------------------------------------------------------------------------------
    def camera(
        self, stamp_ns: int, name: str, jpeg: bytes, K: np.ndarray, size: tuple[int, int], T_world_cam: np.ndarray
    ) -> None:
        """One frame of camera ``name``: JPEG bytes, intrinsics ``K`` (3x3), ``size`` (width, height) [px] and its
        optical frame's pose in the world (REP 103: x right, y down, z forward)."""
        self._at(stamp_ns)
        translation, quat = transform_parts(T_world_cam)
        entity = f"{WORLD}/cameras/{name}"
        self.rec.log(
            entity,
            rr.Transform3D(translation=translation, quaternion=rr.Quaternion(xyzw=quat)),
            rr.Pinhole(
                image_from_camera=np.asarray(K, dtype=float), resolution=[int(size[0]), int(size[1])],
                camera_xyz=rr.ViewCoordinates.RDF, image_plane_distance=IMAGE_PLANE_M,
            ),
        )  # fmt: skip
        self.rec.log(f"{entity}/image", rr.EncodedImage(contents=jpeg, media_type="image/jpeg"))
        self._cameras.add(name)
        self._counts["camera_frames"] += 1

    # -- the grasp points ------------------------------------------------------------------------------------------
    def tcp(self, stamp_ns: int, arm: str, xyz: Sequence[float] | np.ndarray) -> None:
        """Arm ``arm``'s grasp point at ``stamp_ns`` [world, m]: a point of its trail (earlier stamps are ignored:
        each trail goes forward in time)."""
        if stamp_ns < self._trail_stamp_ns.get(arm, -1):
            return
        trail = self._trails.setdefault(arm, [])
        point = (float(xyz[0]), float(xyz[1]), float(xyz[2]))
        if trail and trail[-1] == point:
            return
        trail.append(point)
        self._trail_stamp_ns[arm] = stamp_ns
        self._counts["tcp_points"] += 1
        last = self._trail_logged_ns.get(arm)
        if last is None or stamp_ns - last >= self.trail_period_ns:
            self._log_trail(arm, stamp_ns)

    def _log_trail(self, arm: str, stamp_ns: int) -> None:
        self._at(stamp_ns)
        self.rec.log(
            f"{WORLD}/tcp/{arm}",
            rr.LineStrips3D([self._trails[arm]], radii=TRAIL_RADIUS_M, colors=[self._color(arm)], labels=[arm]),
        )
        self._trail_logged_ns[arm] = stamp_ns
        self._counts["trail_logs"] += 1

    def target(self, stamp_ns: int, arm: str, target_xyz: Sequence[float], from_xyz: Sequence[float] | None) -> None:
        """A move_eef target of ``arm`` [world, m], with the move from the grasp point ``from_xyz`` (if known)."""
        self._at(stamp_ns)
        entity = f"{WORLD}/targets/{arm}"
        color = self._color(arm)
        self.rec.log(entity, rr.Points3D([list(target_xyz)], radii=TARGET_RADIUS_M, colors=[color], labels=[arm]))
        if from_xyz is not None:
            vector = np.asarray(target_xyz, dtype=float) - np.asarray(from_xyz, dtype=float)
            self.rec.log(
                f"{entity}/move", rr.Arrows3D(vectors=[vector], origins=[list(from_xyz)], radii=ARROW_RADIUS_M,
                                              colors=[color]),
            )  # fmt: skip
        self._counts["targets"] += 1

    def planned(
        self, stamp_ns: int, name: str, points: Sequence[Sequence[float]], *, line: bool, width_m: float,
        color_rgba: Sequence[float] | None = None,
    ) -> None:  # fmt: skip
        """A planned path (``line``: a line through ``points``) or targets (points), under world/planned/<name>."""
        self._at(stamp_ns)
        colors = None if color_rgba is None else [[round(255 * min(1.0, max(0.0, c))) for c in color_rgba]]
        entity = f"{WORLD}/planned/{name}"
        if line:
            self.rec.log(entity, rr.LineStrips3D([list(map(list, points))], radii=width_m / 2, colors=colors))
        else:
            self.rec.log(entity, rr.Points3D(list(map(list, points)), radii=width_m / 2, colors=colors))
        self._counts["planned"] += 1

    # -- texts -----------------------------------------------------------------------------------------------------
    def text(self, stamp_ns: int, kind: str, text: str) -> None:
        """One of the episode's texts: ``kind`` is instruction, agent, tool_result, error or outcome."""
        self._at(stamp_ns)
        self.rec.log(f"{LOG}/{kind}", rr.TextLog(text, level=TEXT_LEVELS.get(kind, "INFO")))
        self._counts["texts"] += 1

    # -- the end ---------------------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Log every trail whole at its last point, and a layout of views (3D, one per camera, the texts)."""
        for arm, stamp in self._trail_stamp_ns.items():
            if self._trail_logged_ns.get(arm) != stamp:
                self._log_trail(arm, stamp)
        self.send_blueprint()

    def send_blueprint(self, cameras: Iterable[str] = ()) -> None:
        """The default layout: the 3D scene (collision shapes hidden), each camera's images, the texts."""
        names = sorted({*self._cameras, *cameras})
        contents = [f"+ /{WORLD}/**", f"+ /{ROBOT}/**", f"+ /{TF}", f"+ /{TF_STATIC}"]
        if self.robot_shown is not None:
            contents.append(f"- /{ROBOT}/{self.robot_shown.name}/collision_geometries/**")
        views: list[Any] = [rrb.Spatial2DView(origin=f"/{WORLD}/cameras/{c}", name=c) for c in names]
        scene = rrb.Spatial3DView(origin="/", contents=contents, name="scene")
        layout = rrb.Horizontal(
            rrb.Vertical(scene, rrb.TextLogView(origin=f"/{LOG}")), *([rrb.Vertical(*views)] if views else [])
        )
        self.rec.send_blueprint(rrb.Blueprint(layout, collapse_panels=False))


def move_targets(arguments: str | Mapping[str, Any], arms: Iterable[str]) -> dict[str, dict[str, float]]:
    """The position dimensions a move_eef call names, per arm: ``{"left": {"x": 0.1, "z": 0.9}}`` from the call's
    arguments (JSON text as the model sent it, or an object); {} for arguments that are not a move_eef call's."""
    try:
        data = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {}
    targets = data.get("targets") if isinstance(data, Mapping) else None
    if not isinstance(targets, Mapping):
        return {}
    out: dict[str, dict[str, float]] = {}
    for arm in arms:
        for key in ARM_TARGET_KEYS:
            value = targets.get(f"{arm}_{key}")
            if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
                out.setdefault(arm, {})[key] = float(value)
    return out


def target_point(named: Mapping[str, float], tcp_xyz: Sequence[float] | None) -> Translation | None:
    """A target's position: the dimensions named, the rest kept from the grasp point ``tcp_xyz`` (move_eef's rule:
    unnamed dimensions keep their observed values); None when one is missing and the grasp point is unknown."""
    values = []
    for i, key in enumerate(ARM_TARGET_KEYS):
        if key in named:
            values.append(named[key])
        elif tcp_xyz is not None:
            values.append(float(tcp_xyz[i]))
        else:
            return None
    return values[0], values[1], values[2]
