"""The embedded world as a robot with controllers: what the simulator node plays, without ROS.

The twin of ``hardware.arm_driver.ArmDriver`` for the simulator: a joint trajectory controller per arm and per gripper
(``control.trajectory_controller``, the same class the real-arm drivers use), trajectories and leases handed to them,
one control step of the world per call with the controllers' samples, stops, and the episode's identity and simulated
time, which keeps counting across resets so that a graph clock never runs backwards. One thread owns it (the world's
GL context is bound to the thread that made it); the simulator node converts messages and publishes what it reports.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from robodojo.control.settings import TrajectoryLimits, load_trajectory_limits
from robodojo.control.trajectory_controller import (
    ControllerNames,
    Lease,
    TrajectoryController,
    TrajectoryReport,
    TrajectoryState,
)
from robodojo.control.trajectory_player import JointLimit, TrajectoryCommand, TrajectoryPlayer
from robodojo.errors import ConfigError, InvalidCommandError, RobodojoError
from robodojo.observation import EpisodeState
from robodojo.sim.world import VELOCITY_MARGIN, EmbeddedWorld

ARM, GRIPPER = "arm", "gripper"  # the two controller kinds of each arm
EPISODE_ID_CHARS = 12


@dataclass
class ArmControllers:
    """One arm's joint and gripper controllers (the gripper's in metres of opening)."""

    arm: str
    joints: TrajectoryController
    gripper: TrajectoryController
    gripper_max_m: float

    def both(self) -> tuple[TrajectoryController, TrajectoryController]:
        return self.joints, self.gripper


@dataclass(frozen=True)
class StepProblem:
    """Why a control step stopped every trajectory (the arms hold); ``error`` for a refused step, else a warning."""

    text: str
    error: bool


def max_trajectory_bytes(points: int, joints: int) -> int:
    """The largest serialised JointTrajectory a controller reads: ``points`` points of ``joints`` joints, each with
    positions, velocities, accelerations and efforts (8-byte floats), plus the header and joint names."""
    per_point = 4 * 4 + 8 + 4 * 8 * joints  # four sequence lengths, time_from_start, four float64 per joint
    return 4096 + 256 * joints + points * per_point


class ControlledWorld:
    """An :class:`EmbeddedWorld` with a trajectory controller per arm and gripper, stepped one control period a call.

    Each step that plays a point uses one step of the episode's budget; time between motions does not.
    """

    def __init__(
        self,
        robot: str,
        task: str,
        variant: str,
        seed: int,
        controller_names: Callable[[str], ControllerNames],
        *,
        joint_state_slices: int = 1,
        trajectory_limits: TrajectoryLimits | None = None,
        scene_extras: Sequence[Callable[[mujoco.MjSpec], None]] = (),
        step_limit: int = 0,
    ) -> None:
        self.world = EmbeddedWorld(robot, scene_extras=scene_extras)
        self.step_limit = step_limit  # every episode's budget; 0: each task's own
        self.robot = self.world.robot
        self.trajectory_limits = trajectory_limits or load_trajectory_limits()
        substeps = self.world.substeps
        if joint_state_slices < 1 or substeps % joint_state_slices:
            raise ConfigError(
                f"parameter 'joint_state_slices' must divide the {substeps} physics steps of a control step, "
                f"got {joint_state_slices}"
            )
        self.slices = joint_state_slices
        self._time_offset_s = 0.0
        self.reset(task, variant, seed)
        limits = {name: JointLimit(*limit) for name, limit in self.world.joint_limits.items()}
        self.controllers: dict[str, ArmControllers] = {}
        for arm in self.robot.arms:
            names = controller_names(arm.name)
            self.controllers[arm.name] = ArmControllers(
                arm.name,
                TrajectoryController(names.arm, TrajectoryPlayer(arm.joints, limits, VELOCITY_MARGIN)),
                TrajectoryController(names.gripper, TrajectoryPlayer((arm.gripper_joint,), limits, VELOCITY_MARGIN)),
                arm.gripper_max_m,
            )
        self.joint_names = [j for a in self.robot.arms for j in (*a.joints, a.gripper_joint)]
        m = self.world.model
        self._qpos_adr = np.array([m.joint(j).qposadr[0] for j in self.joint_names])
        self._dof_adr = np.array([m.joint(j).dofadr[0] for j in self.joint_names])

    # -- time and episode ----------------------------------------------------------------------------------------
    @property
    def control_dt_s(self) -> float:
        return self.world.control_dt_s

    @property
    def now_s(self) -> float:
        """Simulation time on the graph: it keeps counting across resets, so a clock never runs backwards."""
        return self._time_offset_s + self.world.data.time

    def reset(self, task: str, variant: str, seed: int) -> None:
        """A new episode (trajectories stop first when controllers exist); a bad task or seed raises and the old
        episode goes on."""
        before = self.now_s if hasattr(self, "truth") else 0.0
        if hasattr(self, "controllers"):
            self.stop_all(TrajectoryState.STOPPED, "a new episode started")
        self.world.reset(task, seed=seed, variant=variant or "standard", step_limit=self.step_limit)
        # the new episode's time 0 continues one control period after the old episode's last step
        self._time_offset_s = before + self.world.control_dt_s - self.world.data.time
        self.truth = self.world.privileged()
        self.episode_id = uuid.uuid4().hex[:EPISODE_ID_CHARS]
        self.episode = (task, variant or "standard", seed)

    def episode_state(self) -> EpisodeState:
        w, (task, variant, seed) = self.world, self.episode
        assert w.task is not None
        return EpisodeState(
            episode_id=self.episode_id, task=task, variant=variant, seed=seed, instruction=w.instruction,
            recipe=w.task.recipe_text(), steps_used=w.step_count, step_limit=w.step_limit,
            steps_left=w.steps_left, success=bool(self.truth.success()), score=round(float(self.truth.score()), 6),
        )  # fmt: skip

    def joint_state(self) -> tuple[list[str], list[float], list[float]]:
        """Every joint's name, position and velocity, in the order of :attr:`joint_names`."""
        d = self.world.data
        return self.joint_names, d.qpos[self._qpos_adr].tolist(), d.qvel[self._dof_adr].tolist()

    # -- commands ------------------------------------------------------------------------------------------------
    def controller(self, arm: str, kind: str) -> TrajectoryController:
        c = self.controllers[arm]
        return c.joints if kind == ARM else c.gripper

    def max_message_bytes(self, arm: str, kind: str) -> int:
        """The largest serialised trajectory ``arm``'s ``kind`` controller reads (bigger ones are refused unread)."""
        joints = len(self.robot.arm(arm).joints) if kind == ARM else 1
        return max_trajectory_bytes(self.trajectory_limits.max_points(self.control_dt_s), joints)

    def check_sizes(self, arm: str, kind: str, joint_names: Sequence[str], points: int, start_s: float) -> None:
        """Refuse a trajectory on its sizes alone, before its points are read (raises InvalidCommandError)."""
        self.controller(arm, kind).check_sizes(joint_names, points, self.control_dt_s, start_s)

    def refuse(self, arm: str, kind: str, reason: str) -> None:
        """Report a trajectory that could not even be read as refused, and raise InvalidCommandError."""
        self.controller(arm, kind).refuse(0.0, 0, reason)
        raise InvalidCommandError(reason)

    def submit(self, arm: str, kind: str, cmd: TrajectoryCommand) -> None:
        """Hand a trajectory to its controller (after :meth:`check_sizes`, which the node calls before converting the
        message's points); it starts from what the arm is commanded now. A refusal raises RobodojoError (and is in
        the controller's reports); nothing moves."""
        w = self.world
        ids = w.arm_ctrl_ids[arm] if kind == ARM else [w.gripper_ctrl_ids[arm]]
        commanded = w.data.ctrl[ids]
        self.controller(arm, kind).submit(cmd, self.now_s, commanded, self.control_dt_s)

    def renew(self, lease: Lease) -> None:
        for arm_controllers in self.controllers.values():
            for controller in arm_controllers.both():
                controller.renew(lease)

    def stop_all(self, state: TrajectoryState, reason: str) -> None:
        for arm_controllers in self.controllers.values():
            for controller in arm_controllers.both():
                controller.stop(state, reason)

    # -- the control step ----------------------------------------------------------------------------------------
    @property
    def playing(self) -> bool:
        """Whether any controller is playing a trajectory."""
        return any(c.playing for arm in self.controllers.values() for c in arm.both())

    def step(self, on_slice: Callable[[], None]) -> StepProblem | None:
        """One control period: each controller's sample for this tick to the world, ``on_slice`` after each of the
        configured physics slices. A step the world refuses, or one past the episode's budget, stops every
        trajectory and holds the arms (the returned problem says why)."""
        w, dt = self.world, self.control_dt_s
        tick = self.now_s
        problem = None
        if self.playing and w.steps_left <= 0:  # before sampling, so that no report counts a point that never played
            problem = StepProblem("the episode's env steps are used up", error=False)
            self.stop_all(TrajectoryState.STOPPED, problem.text)
        joints, grippers = {}, {}
        for arm, c in self.controllers.items():
            q = c.joints.sample(tick, dt)
            if q is not None:
                joints[arm] = q
            g = c.gripper.sample(tick, dt)
            if g is not None:
                grippers[arm] = float(np.clip(g[0] / c.gripper_max_m, 0.0, 1.0))
        counted = bool(joints or grippers)
        try:
            w.step(joints, grippers, counted=counted, slices=self.slices, on_slice=on_slice)
        except RobodojoError as exc:
            problem = StepProblem(f"the simulator refused the control step: {exc}", error=True)
            self.stop_all(TrajectoryState.STOPPED, problem.text)
            w.hold()
            w.step(counted=False, slices=self.slices, on_slice=on_slice)
        return problem

    def reports(self, *, holding_too: bool) -> list[TrajectoryReport]:
        """Every end and refusal since the last call; the playing controllers' progress; the holding controllers'
        state too when ``holding_too`` (a commander confirming a stop sees it)."""
        out: list[TrajectoryReport] = []
        for arm_controllers in self.controllers.values():
            for controller in arm_controllers.both():
                out += controller.take_reports()
                if controller.playing or holding_too:
                    out.append(controller.status())
        return out

    def close(self) -> None:
        self.world.close()
