"""The robo API: the robot object agents drive (seed 000, PyRUA-Lean; DESIGN.md section 5).

It runs in the agent's process on an :class:`EpisodeContext` (the agent-side backend, the motion server and the
benchmark's done signal, nothing privileged). Code cells call it from their sandboxed kernel over RPC
(:func:`robodojo.agents.robo.reference.call_robo`), the shell harness's base commands
(:mod:`robodojo.agents.shell.commands`) call it directly, and so do tests. Each public method is one capability and
returns a frozen result from :mod:`robodojo.agents.robo.results`.

Errors: misuse (wrong types, unknown arm or camera names, targets outside the workspace bounds, pixels outside the
image) raises a short TypeError or ValueError that quotes the bad value and lists the valid ones; nothing moves. The
motion arguments (arm, xyz, quat, gripper) are checked by the motion targets' rules (:mod:`robodojo.motion.targets`),
whose rejections become these errors. Outcomes on the robot's side (unreachable targets, motions that stop short,
nothing found in an image) are result fields with a ``reason``; a refused motion's reason is its rejection's text.

The docstrings are the API reference the model reads (:mod:`robodojo.agents.robo.reference`); every parameter
of every public method must be documented under ``Args:``, which is checked when that module is imported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from robodojo.agents.base import EpisodeContext
from robodojo.agents.robo.flange import flange_to_tcp
from robodojo.agents.robo.results import (
    ArmState,
    CameraInfo,
    MoveResult,
    PlaneHit,
    Segment,
    State,
    TableHeight,
    TaskInfo,
    Triangulated,
    WorldMap,
)
from robodojo.geometry import matrix_from_quat, quat_from_matrix, transform, wxyz_tuple, xyz_tuple
from robodojo.motion.rejection import Refused, Rejection, render_rejection
from robodojo.motion.report import MoveReport, StopReason
from robodojo.motion.targets import TargetError, check_arm, check_arm_pose, check_number, check_vector
from robodojo.observation import CameraFrame, Observation
from robodojo.perception import geometry as pgeom
from robodojo.perception import segmentation as pseg
from robodojo.perception.camera import CameraModel
from robodojo.perception.table_plane import measure_table_height
from robodojo.robots.config import RobotConfig
from robodojo.text import quote

OPEN = 1.0
CLOSED = 0.0
HOLD_MIN_OPENING = 0.03  # a closed gripper that stops more open than this has something between its fingers
GRIP_SETTLE_MAX_STEPS = 8  # after a gripper command the fingers lag the trajectory by a few steps
GRIP_SETTLE_EPS = 0.002  # the fingers have stopped when the opening changes less than this in one step
WAIT_MAX_S = 10.0  # one wait call at most; a longer wait is several calls, each a chance to look
TABLE_Z_RANGE_M = (0.5, 1.2)  # the table-height search range
REFUSED_ADVICE = ": change the target, repeating it fails again"  # after a refused motion's rejection text


# -- validation: the motion targets' rules, raised as TypeError or ValueError ------------------------------------------
def _misuse(rejection: Rejection) -> NoReturn:
    """Raise a rejected argument as the robo API's error: TypeError for a wrong type, ValueError otherwise."""
    text = rejection.describe()
    raise TypeError(text) if rejection.type_error else ValueError(text)


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _number(name: str, value: object) -> float:
    try:
        return check_number(name, value)
    except TargetError as exc:
        _misuse(exc.rejection)


def _vector(name: str, value: object, n: int, what: str) -> NDArray[np.float64]:
    try:
        return check_vector(name, value, n, what)
    except TargetError as exc:
        _misuse(exc.rejection)


# -- the robot object ------------------------------------------------------------------------------------------------
class Robo:
    """The robot. Call its methods in a cell; each returns a result you can print and test.

    Conventions: world frame with x across the table (the left arm at negative x), y away from the robot, z up,
    in metres; angles in degrees; quaternions (w, x, y, z); pixels (row, col), (0, 0) at the top-left of the
    image; gripper 0 = closed (robo.CLOSED) .. 1 = open (robo.OPEN). Positions you give and get are the grasp
    point (TCP, between the fingertip pads) unless named eef (the flange).

    Wrong argument types, unknown names and targets outside the workspace raise TypeError or ValueError and
    nothing moves; what happens on the robot is reported in the result's fields, with a reason.
    """

    OPEN = OPEN
    CLOSED = CLOSED

    def __init__(self, context: EpisodeContext) -> None:
        self._ctx = context
        self._robot: RobotConfig = context.robot
        self._arm_names = self._robot.arm_names
        self._camera_names = self._robot.camera_names
        self._flange = {a: flange_to_tcp(self._robot.name, a) for a in self._arm_names}
        self._tcp_from_flange = {a: np.linalg.inv(T) for a, T in self._flange.items()}
        self._table_z: float | None = None
        self._shown: list[tuple[str, NDArray[np.uint8]]] = []

    # -- state ------------------------------------------------------------------------------------------------------
    def state(self) -> State:
        """The robot now: per arm the grasp point (tcp_pos, tcp_quat), the flange (eef_pos, eef_quat), the gripper
        opening, the approach vector and the joint angles; the env steps left; the task's success signal.

        Returns:
            State. Read an arm as ``state.left``, ``state.right`` or ``state.arm('left')``; on a single-arm robot
            also directly (``state.tcp_pos``). See ArmState for the fields and their frames.
        """
        return self._state(self._observe())

    @property
    def done(self) -> bool:
        """True once the task is solved (the benchmark's own success check). Stop acting when it is True."""
        return bool(self._ctx.is_success())

    @property
    def steps_left(self) -> int:
        """Env steps left in the episode (25 per second of motion). At 0 nothing moves any more."""
        return int(self._ctx.backend.steps_left)

    @property
    def task(self) -> TaskInfo:
        """The task: its name, this episode's instruction, and the recipe (how it is usually done and scored)."""
        return TaskInfo(name=self._ctx.task, instruction=self._ctx.instruction, recipe=self._ctx.recipe)

    # -- motion -----------------------------------------------------------------------------------------------------
    def move_to(
        self, arm: str, xyz: Sequence[float], quat: Sequence[float] | None = None, *, gripper: float | None = None
    ) -> MoveResult:
        """Move one arm's grasp point (TCP) in a straight line to ``xyz``, optionally turning it and setting the
        gripper.

        The motion is planned first (inverse kinematics along the whole line, joint limits, the table); if it cannot
        be planned nothing moves and ``planned`` is False with the reason: change the target (nearer the arm's base,
        higher, another orientation), do not repeat it. Otherwise it plays at 25 Hz, one env step per waypoint
        (about 25 per 10 cm), and stops early when the task is solved or the env steps run out. ``reached`` says
        whether the grasp point ended within 10 mm and 5 deg of the target; when it did not, something blocked
        the arm (an object, the table) or the target is at the edge of the workspace: look before retrying.

        Args:
            arm: which arm moves (the robot's arm names, e.g. 'left' or 'right'; 'arm' on a single-arm robot).
            xyz: target of the grasp point (TCP) in the world frame [m], 3 numbers. To place the flange instead,
                add ``d * approach`` (see ArmState.eef_pos). Must lie inside the arm's workspace bounds.
            quat: target orientation of the TCP (w, x, y, z); None keeps the current orientation. Fingers pointing
                straight down with the default finger direction is the arm's home orientation:
                ``robo.state().arm(arm).tcp_quat`` right after ``robo.home()``.
            gripper: opening to command during the motion, 0 (closed) .. 1 (open); None keeps the current command.

        Returns:
            MoveResult.
        """
        try:
            pose = check_arm_pose(self._robot, arm, xyz, quat, gripper)
        except TargetError as exc:
            _misuse(exc.rejection)
        report = self._ctx.motion.move_to(
            pose.arm, pose.pos_m, pose.quat_wxyz, pose.gripper, is_success=self._ctx.is_success
        )
        return self._move_result(report)

    def grasp(self, arm: str) -> MoveResult:
        """Close one gripper where it is (the arm holds still) and report whether it holds something.

        The fingers close until they meet resistance (the grip force is limited) and the call waits until they
        have stopped. ``holding`` is True when they stopped part open (an object is between them), False when
        they closed fully (nothing grasped: the object was missed; open with release, look, and re-aim).
        For a partial opening use ``move_to(arm, xyz, gripper=value)``.

        Args:
            arm: which arm's gripper closes (the robot's arm names).

        Returns:
            MoveResult with ``gripper`` (measured opening after closing) and ``holding``.
        """
        arm = self._check_arm(arm)
        result, opening = self._gripper_in_place(arm, CLOSED)
        holding = opening > HOLD_MIN_OPENING
        reason = result.reason
        if result.planned and not holding:
            reason = reason or "the fingers closed fully: nothing is between them (missed); release, look and re-aim"
        return self._replace(result, gripper=opening, holding=holding, reason=reason)

    def release(self, arm: str) -> MoveResult:
        """Open one gripper fully where it is (the arm holds still); a held object is let go.

        Args:
            arm: which arm's gripper opens (the robot's arm names).

        Returns:
            MoveResult with ``gripper`` (measured opening after opening).
        """
        arm = self._check_arm(arm)
        result, opening = self._gripper_in_place(arm, OPEN)
        return self._replace(result, gripper=opening)

    def wait(self, seconds: float) -> MoveResult:
        """Hold every arm and gripper where it is while ``seconds`` of robot time pass (one env step per 0.04 s):
        for things that move by themselves (a belt, a rolling object, a layout that changes). Stops early when the
        task is solved or the env steps run out. ``state().time_s`` tells the robot time now.

        Args:
            seconds: how long to hold [s], 0 .. 10, rounded to whole env steps.

        Returns:
            MoveResult with ``steps_used``; the distances are 0 (nothing was asked to move).
        """
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise TypeError(f"seconds must be a number, got {seconds!r}")
        if not 0 <= seconds <= WAIT_MAX_S:
            raise ValueError(
                f"seconds must be from 0 to {WAIT_MAX_S:g} (a longer wait is several calls), got {seconds}"
            )
        steps = round(seconds / self._ctx.backend.control_dt_s)
        waited = 0
        while waited < steps and self.steps_left > 0 and not self.done:
            self._ctx.backend.step()  # hold every command one more control step
            waited += 1
        done = self.done
        stop = "task_success" if done else "budget_exhausted" if waited < steps else "completed"
        reason = {
            "task_success": "the task was solved while waiting: the episode is over",
            "budget_exhausted": f"the env steps ran out after {waited} of {steps}: the episode is over",
        }.get(stop, "")
        return MoveResult(
            planned=True,
            reached=True,
            final_dist_m=0.0,
            final_angle_deg=0.0,
            waypoints=0,
            steps_used=waited,
            stop_reason=stop,
            terminated=done or self.steps_left <= 0,
            reason=reason,
        )

    def home(self) -> MoveResult:
        """Move every arm to its home pose (joint space; grippers keep their command): the ready pose the episode
        starts from, grasp point above the table with the fingers pointing down. Useful after a bad motion.

        Returns:
            MoveResult (distances are to the home pose).
        """
        return self._move_result(self._ctx.motion.home(is_success=self._ctx.is_success))

    # -- cameras ----------------------------------------------------------------------------------------------------
    def image(self, camera: str) -> NDArray[np.uint8]:
        """The camera's current RGB image (not shown to you; use show for that).

        Args:
            camera: the camera's name (e.g. 'head', 'left_wrist', 'right_wrist'; 'head', 'wrist' on a single-arm
                robot).

        Returns:
            HxWx3 uint8 numpy array, indexed [row, col, channel] with channels R, G, B.
        """
        camera = self._check_camera(camera)
        return self._frames([camera])[camera].rgb.copy()

    def camera(self, camera: str) -> CameraInfo:
        """The camera's calibration now: intrinsics K and its pose T_world_cam (wrist cameras move with the arm,
        so ask again after a motion).

        Args:
            camera: the camera's name.

        Returns:
            CameraInfo.
        """
        camera = self._check_camera(camera)
        model = self._model(self._frames([camera])[camera])
        return CameraInfo(
            name=camera, K=model.K.copy(), T_world_cam=model.T_world_cam.copy(), width=model.width, height=model.height
        )

    def show(self, camera: str) -> None:
        """Queue the camera's current image for your next observation: it comes back with the cell's output.
        Images cost context; ask for the ones you need.

        Args:
            camera: the camera's name.
        """
        camera = self._check_camera(camera)
        self._shown.append((camera, self._frames([camera])[camera].rgb.copy()))

    def take_shown(self) -> list[tuple[str, NDArray[np.uint8]]]:
        """The images queued by show since the last call, as (camera, rgb), in order; the queue is emptied."""
        shown, self._shown = self._shown, []
        return shown

    # -- perception -------------------------------------------------------------------------------------------------
    def table_height(self) -> TableHeight:
        """The table top's height [m], measured from the cameras' images (plane sweep) the first time it is asked
        for, then remembered for the episode. back_project and segment use it.

        Returns:
            TableHeight; when ``found`` is False, pass heights explicitly (back_project's plane_z).
        """
        if self._table_z is not None:
            return TableHeight(found=True, z=self._table_z)
        frames = self._frames(self._camera_names)
        views = [(f.rgb, self._model(f)) for f in frames.values()]
        measured = measure_table_height(views, *TABLE_Z_RANGE_M)
        if not measured.found:
            return TableHeight(found=False, reason=f"the cameras could not measure the table: {measured.reason}")
        self._table_z = float(measured.height_m)  # type: ignore[arg-type]
        return TableHeight(found=True, z=self._table_z)

    def back_project(self, row: float, col: float, camera: str, *, plane_z: float | None = None) -> PlaneHit:
        """The world point seen at pixel (row, col) of a camera, assuming it lies on the horizontal plane z = plane_z.

        Exact for points on the table (the default plane); for the top of an object pass its height. The camera's
        pose is taken now.

        Args:
            row: pixel row (0 at the top), may be fractional.
            col: pixel column (0 at the left), may be fractional.
            camera: the camera's name.
            plane_z: height of the plane [m]; None uses the measured table height (see table_height).

        Returns:
            PlaneHit; ``found`` is False when the ray does not meet the plane in front of the camera.
        """
        camera = self._check_camera(camera)
        frame = self._frames([camera])[camera]
        model = self._model(frame)
        r, c = self._check_pixel(row, col, model)
        if plane_z is None:
            table = self.table_height()
            if not table.found:
                return PlaneHit(found=False, reason=f"{table.reason}; pass plane_z")
            z = float(table.z)  # type: ignore[arg-type]
        else:
            z = _number("plane_z", plane_z)
        hit = pgeom.back_project(model, r, c, z)
        if not hit.found:
            return PlaneHit(found=False, reason=hit.reason)
        return PlaneHit(found=True, xyz=hit.point_m, distance_m=hit.distance_m)

    def triangulate(self, observations: Sequence[tuple[str, float, float]]) -> Triangulated:
        """The world point seen at given pixels in two or more cameras (images and poses now), without assuming a
        plane. The views must look from different directions (e.g. head and a wrist camera).

        Args:
            observations: a list of (camera, row, col), one per view, at least two, with different cameras.

        Returns:
            Triangulated; ``found`` is False when the rays are nearly parallel or the pixels do not show one point
            (``reprojection_px`` and ``ray_gap_mm`` say how far apart).
        """
        if isinstance(observations, str | bytes) or not isinstance(observations, Sequence):
            raise TypeError(f"observations must be a list of (camera, row, col), got {quote(observations)}")
        if len(observations) < 2:
            raise ValueError(f"observations needs at least two views (camera, row, col), got {len(observations)}")
        parsed = []
        for obs in observations:
            if isinstance(obs, str | bytes) or not isinstance(obs, Sequence) or len(obs) != 3:
                raise TypeError(f"each observation must be (camera, row, col), got {quote(obs)}")
            parsed.append((self._check_camera(obs[0]), obs[1], obs[2]))
        names = [p[0] for p in parsed]
        if len(set(names)) != len(names):
            raise ValueError(f"observations must come from different cameras, got {_names(names)}")
        frames = self._frames(names)
        views = []
        for name, row, col in parsed:
            model = self._model(frames[name])
            views.append((model, self._check_pixel(row, col, model)))
        tri = pgeom.triangulate(views)
        return Triangulated(
            found=tri.found,
            xyz=tri.point_m,
            reprojection_px=tri.reprojection_error_px,
            ray_gap_mm=tri.ray_gap_mm,
            reason=tri.reason,
        )

    def segment(self, point: Sequence[float], camera: str, *, second_view: str | None = None) -> Segment:
        """Segment the object whose top face shows at pixel ``point`` of a camera, and measure where it stands.

        Click the object's top face (its upper, usually brightest face). Works for upright objects resting on the
        table (blocks, cylinders, plates, pads); the 3D position assumes vertical sides. With ``second_view`` the
        object is also found in another camera and the height is measured from both (more accurate).

        Args:
            point: pixel (row, col) on the object's top face.
            camera: the camera's name.
            second_view: another camera's name that also sees the object, or None.

        Returns:
            Segment; ``found`` is False on the table or background, for tiny or cut-off regions, or when the mask
            is not an upright object (reason says which).
        """
        camera = self._check_camera(camera)
        p = _vector("point", point, 2, "(row, col)")
        names = [camera]
        if second_view is not None:
            second_view = self._check_camera(second_view, "second_view")
            if second_view == camera:
                raise ValueError(f"second_view must be another camera than {camera!r}")
            names.append(second_view)
        frames = self._frames(names)
        model = self._model(frames[camera])
        row, col = self._check_pixel(p[0], p[1], model)
        table = self.table_height()
        if not table.found:
            return Segment(found=False, reason=table.reason)
        second = None
        if second_view is not None:
            second = (frames[second_view].rgb, self._model(frames[second_view]))
        seg = pseg.segment(frames[camera].rgb, model, row, col, table_z_m=float(table.z), second_view=second)  # type: ignore[arg-type]
        return Segment(
            found=seg.found,
            mask=seg.mask,
            centroid_px=seg.centroid_px,
            area_px=seg.area_px,
            world_xyz=seg.world_xyz_m,
            top_z=seg.top_z_m,
            height_m=seg.height_m,
            footprint_xy=seg.footprint_xy_m,
            touches_border=seg.touches_border,
            reason=seg.reason,
        )

    def world_map(self, camera: str) -> WorldMap:
        """The world point [m] seen at every pixel of a camera, from its depth image (where the camera has depth).

        Args:
            camera: the camera's name.

        Returns:
            WorldMap with ``xyz`` HxWx3 (NaN where there is no reading); ``ok`` is False when the camera has no
            depth: use back_project, triangulate or segment instead.
        """
        camera = self._check_camera(camera)
        if not self._ctx.has_depth:  # the episode declares whether its backend's cameras give depth
            return WorldMap(ok=False, reason=f"camera {camera!r} has no depth: use back_project or triangulate")
        observe: Callable[..., Observation] = self._ctx.backend.observe  # depth=True: beyond the RobotBackend protocol
        frame = observe(cameras=[camera], depth=True).camera(camera)
        wm = pgeom.world_map(self._model(frame), frame.depth_m)
        if not wm.ok:
            return WorldMap(ok=False, reason=wm.reason)
        return WorldMap(ok=True, xyz=wm.xyz_m)

    # -- internals --------------------------------------------------------------------------------------------------
    def _check_arm(self, arm: object) -> str:
        try:
            return check_arm(self._robot, arm)
        except TargetError as exc:
            _misuse(exc.rejection)

    def _check_camera(self, camera: object, what: str = "camera") -> str:
        if not isinstance(camera, str):
            raise TypeError(f"{what} must be a string, one of {_names(self._camera_names)}; got {quote(camera)}")
        if camera not in self._camera_names:
            raise ValueError(f"unknown camera {camera!r}; cameras: {_names(self._camera_names)}")
        return camera

    @staticmethod
    def _check_pixel(row: object, col: object, model: CameraModel) -> tuple[float, float]:
        r, c = _number("row", row), _number("col", col)
        if not model.in_image(r, c):
            raise ValueError(
                f"pixel (row={r:g}, col={c:g}) is outside the {model.width}x{model.height} image of {model.name!r} "
                f"(rows 0..{model.height - 1}, cols 0..{model.width - 1})"
            )
        return r, c

    def _observe(self, cameras: Iterable[str] = ()) -> Observation:
        return self._ctx.backend.observe(cameras=tuple(cameras))

    def _frames(self, cameras: Iterable[str]) -> dict[str, CameraFrame]:
        obs = self._observe(cameras)
        return dict(obs.cameras)

    @staticmethod
    def _model(frame: CameraFrame) -> CameraModel:
        return CameraModel.from_calibration(frame.name, frame.calibration)

    def _arm_state(self, obs: Observation, arm: str) -> ArmState:
        s = obs.arm(arm)
        R = matrix_from_quat(s.tcp_quat_wxyz)
        T_eef = transform(R, s.tcp_pos_m) @ self._tcp_from_flange[arm]
        return ArmState(
            name=arm,
            tcp_pos=xyz_tuple(s.tcp_pos_m),
            tcp_quat=wxyz_tuple(s.tcp_quat_wxyz),
            eef_pos=xyz_tuple(T_eef[:3, 3]),
            eef_quat=wxyz_tuple(quat_from_matrix(T_eef[:3, :3])),
            gripper=float(s.gripper_opening),
            approach=xyz_tuple(R[:, 2]),
            joints=tuple(float(v) for v in s.joint_positions_rad),
        )

    def _state(self, obs: Observation) -> State:
        return State(
            arms={a: self._arm_state(obs, a) for a in self._arm_names},
            steps_left=obs.steps_left,
            done=self.done,
            time_s=obs.time_s,
        )

    def _move_result(self, report: MoveReport, extra_steps: int = 0) -> MoveResult:
        arms = list(report.arms.values())
        dist = max((r.pos_error_mm for r in arms), default=math.nan) / 1e3
        angle = max((r.rot_error_deg for r in arms), default=math.nan)
        reached = report.accepted and bool(arms) and all(r.reached for r in arms)
        done = self.done
        terminated = done or self.steps_left <= 0
        stop = report.stop_reason
        if not report.accepted:
            rejection = report.rejection or Refused(report.tool_text)
            reason = render_rejection(rejection) + (REFUSED_ADVICE if rejection.nothing_moved else "")
        elif stop is StopReason.TASK_SUCCESS:
            reason = "the task was solved during the motion, which stopped there: the episode is over"
        elif stop is StopReason.BUDGET_EXHAUSTED:
            reason = (
                f"the env steps ran out after {report.steps_used} of {report.waypoints} waypoints: the episode is over"
            )
        elif stop is StopReason.STOPPED:
            reason = "the motion was stopped from outside before it completed"
        elif stop is StopReason.ABORTED:
            holds = report.holding_text or "the arms hold where they are"
            reason = f"the robot's controllers cut the motion short ({report.stop_detail}); {holds}"
        elif stop is StopReason.BACKEND_LOST:
            holds = report.holding_text or "the arms hold where they are"
            reason = (
                f"the robot stopped answering after {report.steps_used} of {report.waypoints} waypoints "
                f"({report.stop_detail}); {holds}"
            )
        elif not reached:
            reason = (
                f"the motion completed but the grasp point stopped {dist * 1e3:.0f} mm and {angle:.1f} deg from the "
                "target: something blocked the arm (an object, the table) or the target is at the edge of the "
                "workspace; look (state, show) before retrying"
            )
        else:
            reason = ""
        return MoveResult(
            planned=report.accepted,
            reached=reached,
            final_dist_m=dist,
            final_angle_deg=angle,
            waypoints=report.waypoints,
            steps_used=report.steps_used + extra_steps,
            stop_reason=stop.value,
            terminated=terminated,
            reason=reason,
        )

    def _gripper_in_place(self, arm: str, opening: float) -> tuple[MoveResult, float]:
        """Command ``opening`` with the arm holding its pose, wait for the fingers to stop; (result, measured)."""
        s = self._observe().arm(arm)
        report = self._ctx.motion.move_to(arm, s.tcp_pos_m, s.tcp_quat_wxyz, opening, is_success=self._ctx.is_success)
        waited = 0
        measured = s.gripper_opening if report.steps_used == 0 else self._observe().arm(arm).gripper_opening
        if report.accepted and report.stop_reason is StopReason.COMPLETED:
            previous = math.inf
            while (
                waited < GRIP_SETTLE_MAX_STEPS
                and abs(measured - previous) >= GRIP_SETTLE_EPS
                and self.steps_left > 0
                and not self.done
            ):
                self._ctx.backend.step()  # hold every command one more control step
                waited += 1
                previous, measured = measured, self._observe().arm(arm).gripper_opening
        return self._move_result(report, extra_steps=waited), float(measured)

    @staticmethod
    def _replace(result: MoveResult, **changes: Any) -> MoveResult:
        return dataclasses.replace(result, **changes)
