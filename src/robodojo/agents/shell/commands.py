"""The shell harness's base commands (seed 003, section 3.1): argv in, one JSON-ready record out.

``move``, ``rotate``, ``point``, ``gripper``, ``home``, ``wait``, ``obs``, ``status`` and ``done``, over the robo
API (:class:`robodojo.agents.robo.api.Robo`: the same motion server, planner and perception as code cells). The
harness translates and never decides: it checks the command line and the bounds (at most ``max_translation_m`` per
axis, ``max_rotation_deg`` per axis), plans, executes, and reports what happened. A command line that is not
understood, a bound exceeded or a target the planner refuses produces ``ok: false`` with the reason, and nothing moves.

Every record has ``ok``, ``command``, ``verdict`` (``executed``, ``refused``, ``usage``), ``reason``, ``steps_used``
(by this command), ``steps_left``, ``task_done`` (the benchmark's own success signal) and every arm's pose after it.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import cv2
import numpy as np

from robo_shell import CAMERAS_FILE, STATE_FILE
from robo_shell.protocol import BASE_COMMANDS
from robodojo.agents.base import EpisodeContext
from robodojo.agents.robo.api import Robo
from robodojo.agents.robo.results import MoveResult
from robodojo.agents.shell import host_files
from robodojo.agents.shell.settings import CommandLimits
from robodojo.errors import RobodojoError
from robodojo.geometry import matrix_from_quat, quat_from_matrix, rotation_about_axis
from robodojo.observation import Observation

DIRECTIONS = {"down": (0, 0, -1), "forward": (0, 1, 0), "back": (0, -1, 0), "left": (-1, 0, 0), "right": (1, 0, 0)}
AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}
MOTIONS = ("move", "rotate", "point", "gripper", "home", "wait")  # commands that can spend env steps
DIGITS = 5  # metres to 10 µm, angles to 1e-5 deg, in records


class UsageError(RobodojoError):
    """A command line the harness does not understand; nothing was run."""


class CommandRefused(RobodojoError):
    """A command the harness refuses before anything moves (a bound, a bad value)."""


def _parser() -> argparse.ArgumentParser:
    def error(message: str) -> NoReturn:
        raise UsageError(message)

    def sub(name: str, text: str) -> argparse.ArgumentParser:
        p = commands.add_parser(name, help=text, add_help=False, exit_on_error=False)
        p.error = error  # type: ignore[method-assign]
        return p

    parser = argparse.ArgumentParser(prog="robo", add_help=False, exit_on_error=False)
    parser.error = error  # type: ignore[method-assign]
    commands = parser.add_subparsers(dest="command", required=True)
    p = sub("move", "translate a TCP along world axes")
    p.add_argument("--arm", required=True)
    for axis in "xyz":
        p.add_argument(f"--d{axis}", type=float, default=0.0)
    p = sub("rotate", "turn a gripper about its TCP")
    p.add_argument("--arm", required=True)
    for angle in ("roll", "pitch", "yaw"):
        p.add_argument(f"--{angle}", type=float, default=0.0)
    p = sub("point", "set a gripper orientation from the named set")
    p.add_argument("--arm", required=True)
    p.add_argument("--direction", choices=list(DIRECTIONS), default="down")
    p.add_argument("--fingers", choices=list(AXES), required=True)
    p = sub("gripper", "open, close or set a gripper")
    p.add_argument("--arm", required=True)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--open", action="store_true")
    how.add_argument("--close", action="store_true")
    how.add_argument("--opening", type=float)
    sub("home", "every arm to its home pose")
    p = sub("wait", "hold while robot time passes")
    p.add_argument("--seconds", type=float, required=True)
    sub("obs", "refresh obs/")
    sub("status", "poses, joints, steps")
    p = sub("done", "declare the episode over")
    p.add_argument("--reason", default="")
    return parser


def _round(values: Sequence[float]) -> list[float]:
    return [round(float(v), DIGITS) for v in values]


class BaseCommands:
    """Runs base commands for one episode. ``obs_dir`` is the obs/ folder the sandbox shows the agent (the
    harness's own, read-only inside: ShellWorkspace.obs_dir); ``obs_note()`` says, for the ``robo obs`` record, when
    the agent's ``obs`` link no longer leads there (ShellWorkspace.obs_note)."""

    def __init__(
        self,
        context: EpisodeContext,
        limits: CommandLimits,
        obs_dir: Path,
        *,
        obs_note: Callable[[], str] | None = None,
    ) -> None:
        self.context = context
        self.robo = Robo(context)
        self.limits = limits
        self.obs_dir = obs_dir
        self.obs_note = obs_note
        self.parser = _parser()
        self.declared_done: str | None = None  # the reason given with `robo done`, once it was called

    # -- entry point -------------------------------------------------------------------------------------------------
    def run(self, argv: Sequence[str]) -> dict[str, Any]:
        """The record of one command line (never raises for anything the agent sends)."""
        name = argv[0] if argv else ""
        steps_before = self.robo.steps_left
        try:
            if not all(isinstance(a, str) for a in argv):
                raise UsageError("every argument must be a string")
            args = self.parser.parse_args(list(argv))
            fields = getattr(self, f"_{args.command}")(args)
        except (UsageError, argparse.ArgumentError) as exc:
            known = ", ".join(BASE_COMMANDS)
            hint = f"'{name}' is not a command" if name and name not in BASE_COMMANDS else str(exc)
            reason = f"{hint}; commands: {known} (robo help shows the manual); nothing moved"
            return self._record(name, steps_before, ok=False, verdict="usage", reason=reason)
        except CommandRefused as exc:
            return self._record(name, steps_before, ok=False, verdict="refused", reason=f"{exc}; nothing moved")
        except (TypeError, ValueError) as exc:  # the robo API's own checks (workspace bounds, names)
            return self._record(name, steps_before, ok=False, verdict="refused", reason=f"{exc}; nothing moved")
        executed = fields.get("verdict", "executed") == "executed"
        if args.command in MOTIONS and executed and self.limits.frames_after_motion:
            self.context.backend.observe(self.context.robot.camera_names)  # the episode record keeps the frames
        return self._record(name, steps_before, **fields)

    def _record(self, command: str, steps_before: int, **fields: Any) -> dict[str, Any]:
        obs = self.context.backend.observe(())  # state only: no camera is rendered
        steps_left = int(obs.steps_left)
        fields.setdefault("ok", True)
        fields.setdefault("verdict", "executed")
        fields.setdefault("reason", "")
        return {
            "command": command,
            **fields,
            "steps_used": max(0, steps_before - steps_left),
            "steps_left": steps_left,
            "step": int(obs.step),  # env steps since the episode began: the frames in the record are named by it
            "task_done": self.robo.done,
            "arms": self._arms(obs),
        }

    @staticmethod
    def _arms(obs: Observation) -> dict[str, dict[str, Any]]:
        return {
            name: {
                "tcp_pos_m": _round(a.tcp_pos_m),
                "tcp_quat_wxyz": _round(a.tcp_quat_wxyz),
                "gripper_opening": round(float(a.gripper_opening), 4),
            }
            for name, a in obs.arms.items()
        }

    @staticmethod
    def _motion(result: MoveResult) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "ok": result.planned,
            "verdict": "executed" if result.planned else "refused",
            "reason": result.reason,
            "planned": result.planned,
            "reached": result.reached,
            "final_dist_m": None if math.isnan(result.final_dist_m) else round(result.final_dist_m, DIGITS),
            "final_angle_deg": None if math.isnan(result.final_angle_deg) else round(result.final_angle_deg, 3),
            "waypoints": result.waypoints,
            "stop_reason": result.stop_reason,
            "episode_over": result.terminated,
        }
        if result.gripper is not None:
            fields["gripper_opening"] = round(result.gripper, 4)
        if result.holding is not None:
            fields["holding"] = result.holding
        return fields

    def _finite(self, **values: float) -> None:
        for name, value in values.items():
            if not math.isfinite(value):
                raise CommandRefused(f"--{name} must be a finite number, got {value}")

    def _within(self, values: dict[str, float], limit: float, unit: str, what: str) -> None:
        """Finite values of at most ``limit`` in magnitude, else a CommandRefused naming the first that is not."""
        self._finite(**values)
        for name, value in values.items():
            if abs(value) > limit + 1e-12:
                raise CommandRefused(f"--{name} {value:g} {unit} is beyond the {limit:g} {unit} {what}")

    def _arm(self, arm: str) -> str:
        arms = self.context.robot.arm_names
        if arm not in arms:
            raise CommandRefused(f"unknown arm {arm!r}; arms: {', '.join(arms)}")
        return arm

    # -- commands ------------------------------------------------------------------------------------------------
    def _move(self, args: argparse.Namespace) -> dict[str, Any]:
        arm = self._arm(args.arm)
        delta = {"dx": args.dx, "dy": args.dy, "dz": args.dz}
        self._within(delta, self.limits.max_translation_m, "m", "a move may go along one axis")
        start = np.asarray(self.robo.state().arm(arm).tcp_pos)
        target = start + np.array([args.dx, args.dy, args.dz])
        return self._motion(self.robo.move_to(arm, target.tolist()))

    def _rotate(self, args: argparse.Namespace) -> dict[str, Any]:
        arm = self._arm(args.arm)
        angles = {"roll": args.roll, "pitch": args.pitch, "yaw": args.yaw}
        self._within(angles, self.limits.max_rotation_deg, "deg", "a rotate may turn about one axis")
        state = self.robo.state().arm(arm)
        turn = (
            rotation_about_axis((0, 0, 1), math.radians(args.yaw))
            @ rotation_about_axis((0, 1, 0), math.radians(args.pitch))
            @ rotation_about_axis((1, 0, 0), math.radians(args.roll))
        )
        R = turn @ matrix_from_quat(state.tcp_quat)
        return self._motion(self.robo.move_to(arm, state.tcp_pos, quat_from_matrix(R).tolist()))

    def _point(self, args: argparse.Namespace) -> dict[str, Any]:
        arm = self._arm(args.arm)
        z = np.array(DIRECTIONS[args.direction], dtype=float)  # the TCP z axis: out of the fingers
        y = np.array(AXES[args.fingers], dtype=float)  # the TCP y axis: the fingers open along it
        if abs(float(z @ y)) > 1e-9:
            raise CommandRefused(f"the fingers cannot open along {args.fingers} while pointing {args.direction}")
        state = self.robo.state().arm(arm)
        if float(matrix_from_quat(state.tcp_quat)[:, 1] @ y) < 0:  # the fingers are symmetric: the nearer sign
            y = -y
        R = np.column_stack([np.cross(y, z), y, z])
        return self._motion(self.robo.move_to(arm, state.tcp_pos, quat_from_matrix(R).tolist()))

    def _gripper(self, args: argparse.Namespace) -> dict[str, Any]:
        arm = self._arm(args.arm)
        if args.close:
            return self._motion(self.robo.grasp(arm))
        if args.open:
            return self._motion(self.robo.release(arm))
        self._finite(opening=args.opening)
        if not 0.0 <= args.opening <= 1.0:
            raise CommandRefused(f"--opening must be from 0 (closed) to 1 (open), got {args.opening:g}")
        state = self.robo.state().arm(arm)
        return self._motion(self.robo.move_to(arm, state.tcp_pos, gripper=args.opening))

    def _home(self, args: argparse.Namespace) -> dict[str, Any]:
        return self._motion(self.robo.home())

    def _wait(self, args: argparse.Namespace) -> dict[str, Any]:
        self._finite(seconds=args.seconds)
        if not 0.0 <= args.seconds <= self.limits.max_wait_s:
            raise CommandRefused(f"--seconds must be from 0 to {self.limits.max_wait_s:g}, got {args.seconds:g}")
        return self._motion(self.robo.wait(args.seconds))

    def _obs(self, args: argparse.Namespace) -> dict[str, Any]:
        obs = self.context.backend.observe(self.context.robot.camera_names)
        files = write_obs_folder(obs, self.obs_dir, self.limits.image_format)
        fields: dict[str, Any] = {"files": files, "cameras": list(obs.cameras), "step": obs.step}
        note = self.obs_note() if self.obs_note is not None else ""
        if note:
            fields["note"] = note
        return fields

    def _status(self, args: argparse.Namespace) -> dict[str, Any]:
        state = self.robo.state()
        task = self.robo.task
        return {
            "instruction": task.instruction,
            "joints_rad": {name: _round(a.joints) for name, a in state.arms.items()},
            "time_s": round(state.time_s, 3),
        }

    def _done(self, args: argparse.Namespace) -> dict[str, Any]:
        self.declared_done = args.reason
        return {"episode_over": True}


def camera_calibrations(obs: Observation, image_format: str = "png") -> dict[str, Any]:
    """cameras.json of the obs/ folder: per camera of ``obs`` its image file's name, size, K, distortion model and
    coefficients, and T_world_cam (the optical frame's pose in the world at the time of ``obs``)."""
    cameras: dict[str, Any] = {}
    for name, frame in obs.cameras.items():
        c = frame.calibration
        cameras[name] = {
            "image": f"{name}.{image_format}",
            "width": c.width,
            "height": c.height,
            "K": np.asarray(c.K).tolist(),
            "distortion_model": c.distortion_model,
            "distortion": list(c.distortion),
            "T_world_cam": np.asarray(c.T_world_cam).tolist(),
        }
    return cameras


def write_obs_folder(obs: Observation, folder: Path, image_format: str = "png") -> list[str]:
    """The obs/ folder of seed 003: each camera's RGB image, ``cameras.json`` (per camera: image file, size, K,
    distortion model and coefficients, T_world_cam, the optical frame's pose in the world), ``state.json`` (per arm:
    TCP pose, gripper, joints; the step and the steps left). No depth. Files are replaced one by one, state.json
    last, each written under a random temporary name and renamed (host_files.write_replace), in ``folder`` opened
    without following a link: a link there is refused, not written through."""
    folder.mkdir(parents=True, exist_ok=True)
    cameras = camera_calibrations(obs, image_format)
    files = []
    with host_files.opened_dir(folder) as dir_fd:
        for name, frame in obs.cameras.items():
            image = cameras[name]["image"]
            ok, encoded = cv2.imencode(f".{image_format}", np.ascontiguousarray(frame.rgb[:, :, ::-1]))
            if not ok:
                raise OSError(f"OpenCV could not encode {image}")
            host_files.write_replace(image, encoded.tobytes(), dir_fd=dir_fd)
            files.append(image)
        state = {
            "step": obs.step,
            "steps_left": obs.steps_left,
            "time_s": obs.time_s,
            "arms": {
                name: {
                    "tcp_pos_m": list(a.tcp_pos_m),
                    "tcp_quat_wxyz": list(a.tcp_quat_wxyz),
                    "gripper_opening": a.gripper_opening,
                    "joint_names": list(a.joint_names),
                    "joint_positions_rad": list(a.joint_positions_rad),
                }
                for name, a in obs.arms.items()
            },
        }
        for file, doc in ((CAMERAS_FILE, cameras), (STATE_FILE, state)):
            host_files.write_replace(file, json.dumps(doc, indent=1).encode(), dir_fd=dir_fd)
            files.append(file)
    return files
