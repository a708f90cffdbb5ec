"""The embedded world: a robot scene plus one task in MuJoCo, stepped at the 25 Hz control rate.

Agent side: :meth:`EmbeddedWorld.observe` (images, calibration, joint and TCP state, steps left) and
:meth:`EmbeddedWorld.step` (joint position targets and gripper openings). Task state (object poses, success, score)
is reachable only through :meth:`EmbeddedWorld.privileged`, for the episode runner, benchmarks and tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from robodojo.errors import ConfigError, InvalidCommandError, RobodojoError, UnknownNameError
from robodojo.geometry import quat_from_matrix, transform, wxyz_tuple, xyz_tuple
from robodojo.observation import ArmState, CameraCalibration, CameraFrame, Observation
from robodojo.robots.arm_state import gripper_opening
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.robots.urdf import load_urdf
from robodojo.sim.describe import describe_layout
from robodojo.sim.description import SceneDescription, matrix_rows
from robodojo.sim.dynamics import WorldDynamics
from robodojo.sim.render import CameraRenderer, Marker
from robodojo.sim.scene import build_scene_spec
from robodojo.sim.settings import SimSettings, load_sim_settings
from robodojo.sim.tasks import get_task
from robodojo.sim.tasks.base import Layout, Task

# A joint target may lead the commanded one by this multiple of (velocity limit x control period), leaving room for
# the trapezoidal profiles of the motion server while rejecting jumps that no real controller would accept.
VELOCITY_MARGIN = 1.5


class EpisodeOverError(RobodojoError):
    """The episode's env step budget is used up; reset to start another."""


class EmbeddedWorld:
    """MuJoCo world for one robot; :meth:`reset` loads a task layout. Not thread-safe."""

    # Compiled in the constructor and again by every reset (a new layout adds bodies), so always set.
    model: mujoco.MjModel
    data: mujoco.MjData
    scene: SceneDescription  # what the model was built from

    def __init__(
        self,
        robot: str = "dual_arx_x5",
        settings: SimSettings | None = None,
        scene_extras: Sequence[Callable[[mujoco.MjSpec], None]] = (),
    ) -> None:
        """``scene_extras`` edit the scene spec before every compile (e.g. a calibration board for tests)."""
        self.robot: RobotConfig = load_robot_config(robot)
        self.scene_extras = tuple(scene_extras)
        self.settings = settings or load_sim_settings()
        #: Physics steps per control step (the robot's control period over the physics time step).
        self.substeps = self.settings.substeps(self.robot.control_dt_s)
        self._urdf = load_urdf(self.robot.scene_urdf)
        self._renderers: dict[tuple[int, int], CameraRenderer] = {}
        self.task: Task | None = None
        self.layout: Layout | None = None
        self.dynamics: WorldDynamics | None = None  # a layout's moving parts (None with no task loaded)
        self.step_count = 0
        self._step_limit = 0  # 0: the task's step_limit (reset's step_limit)
        #: Called with the world after every control step (recorders, the demo's contact sheet, ROS publishers).
        self.step_observers: list[Callable[[EmbeddedWorld], None]] = []
        #: (lower, upper, velocity) from the URDF of every arm joint and every gripper's driven finger joint.
        self.joint_limits = {
            j: (self._urdf.joint(j).lower, self._urdf.joint(j).upper, self._urdf.joint(j).velocity)
            for arm in self.robot.arms
            for j in (*arm.joints, arm.gripper_joint)
        }
        for arm in self.robot.arms:
            for name, q in zip(arm.joints, arm.home_joints_rad, strict=True):
                lower, upper, _ = self.joint_limits[name]
                if not lower <= q <= upper:
                    raise ConfigError(f"robot {robot!r}: home position of {name!r} ({q}) is outside [{lower}, {upper}]")
        self._load(task=None, layout=None)

    # -- episode ------------------------------------------------------------------------------------------------
    def reset(self, task: str, seed: int = 0, variant: str = "standard", step_limit: int = 0) -> Observation:
        """Build the task's seeded layout (its objects and how the scene looks), put the arms at home, let objects
        settle, and observe. ``step_limit`` > 0 replaces the task's step budget (a calibration session in the
        simulator plays more points than an episode)."""
        if step_limit < 0:
            raise InvalidCommandError(f"step_limit must be >= 0 (0: the task's), got {step_limit}")
        task_cls = get_task(task)
        if task_cls.robot != self.robot.name:
            raise InvalidCommandError(
                f"task {task!r} runs on robot {task_cls.robot!r}, this world is {self.robot.name!r}"
            )
        instance = task_cls(self.robot.table.top_z_m)
        layout = instance.layout(seed, variant, bounds=self.settings.randomized)
        self._load(instance, layout)
        self._step_limit = step_limit
        return self.observe()

    @property
    def control_dt_s(self) -> float:
        """Control period [s]: the robot's, as a whole number of physics steps."""
        return self.substeps * self.settings.timestep_s

    @property
    def step_limit(self) -> int:
        """The episode's step budget: the task's, or the one reset was given."""
        if self.task is None:
            return 0
        return self._step_limit or self.task.step_limit

    @property
    def steps_left(self) -> int:
        return max(self.step_limit - self.step_count, 0)

    @property
    def instruction(self) -> str:
        if self.task is None or self.layout is None:
            raise RobodojoError("no task loaded; call reset(task, seed) first")
        return self.task.instruction(self.layout)

    def describe(self) -> SceneDescription:
        """The scene as it is now, simulator-neutral: objects where they are, the arms' joints as they are, every
        camera's pose; building it (:meth:`load_scene`, or in another simulator) gives this scene back."""
        m, scene = self.model, self.scene
        # Poses of the state itself (those of self.data lag it by the physics step that produced it).
        now = mujoco.MjData(m)
        now.qpos[:] = self.data.qpos
        mujoco.mj_kinematics(m, now)
        mujoco.mj_camlight(m, now)
        joints = {name: float(now.qpos[m.joint(name).qposadr[0]]) for name in scene.robot.joint_positions_rad}
        return replace(
            scene,
            robot=replace(scene.robot, joint_positions_rad=joints),
            objects=tuple(
                replace(obj, pos_m=xyz_tuple(now.xpos[body]), quat_wxyz=wxyz_tuple(now.xquat[body]))
                for obj, body in ((o, m.body(o.name).id) for o in scene.objects)
            ),
            cameras=tuple(
                replace(cam, T_world_cam=matrix_rows(_optical_pose(now, self.camera_ids[cam.name])))
                for cam in scene.cameras
            ),
        )

    def load_scene(self, scene: SceneDescription) -> Observation:
        """Build a described scene exactly as described (objects where it puts them, no settling) with no task: a
        scene to look at and move in, not an episode."""
        self._build(scene)
        self.task, self.layout, self.dynamics = None, None, None
        return self.observe()

    def _load(self, task: Task | None, layout: Layout | None) -> None:
        self._build(describe_layout(self.robot, layout, self.settings, self._urdf))
        self.task, self.layout = task, layout
        if layout is not None:
            m, d = self.model, self.data
            for _ in range(self.settings.settle_steps):
                self._advance()
            self.initial_object_pos = {o.name: d.xpos[m.body(o.name).id].copy() for o in layout.objects}
            # Set in motion only once settled, so a launched object starts from rest on the table.
            self.dynamics = WorldDynamics(m, layout)
            self.dynamics.launch(d)

    def _build(self, scene: SceneDescription) -> None:
        """Compile ``scene`` and put the robot in its described joint state, holding it."""
        spec, self._names = build_scene_spec(self.robot, self.settings, scene, self._urdf)
        for extra in self.scene_extras:
            extra(spec)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.scene = scene
        self.step_count = 0
        self.dynamics = None
        m, d = self.model, self.data
        # MuJoCo indices, public for privileged tools (scripted checks, benchmarks); agents use observe/step.
        self.arm_qpos_adr = {a.name: [m.joint(j).qposadr[0] for j in a.joints] for a in self.robot.arms}
        self.arm_ctrl_ids = {
            a.name: [m.actuator(n).id for n in self._names.arm_actuators[a.name]] for a in self.robot.arms
        }
        self.gripper_qpos_adr = {a.name: m.joint(a.gripper_joint).qposadr[0] for a in self.robot.arms}
        self.gripper_ctrl_ids = {a.name: m.actuator(self._names.gripper_actuators[a.name]).id for a in self.robot.arms}
        self.tcp_site_ids = {a.name: m.site(self._names.tcp_sites[a.name]).id for a in self.robot.arms}
        self.camera_ids = {c.name: m.camera(c.name).id for c in self.robot.cameras}
        q = scene.robot.joint_positions_rad
        for arm in self.robot.arms:
            d.qpos[self.arm_qpos_adr[arm.name]] = [q[j] for j in arm.joints]
            d.ctrl[self.arm_ctrl_ids[arm.name]] = [q[j] for j in arm.joints]
            d.qpos[self.gripper_qpos_adr[arm.name]] = d.ctrl[self.gripper_ctrl_ids[arm.name]] = q[arm.gripper_joint]
        for joint in self._urdf.movable_joints:
            if joint.mimic is not None:  # the mimicking finger as described, or where its constraint holds it
                d.qpos[m.joint(joint.name).qposadr[0]] = q.get(joint.name, self._urdf.position_of(joint, q))
        mujoco.mj_forward(m, d)
        for renderer in self._renderers.values():
            renderer.bind(m)

    # -- acting -------------------------------------------------------------------------------------------------
    def step(
        self,
        joint_targets: Mapping[str, ArrayLike] | None = None,
        gripper_targets: Mapping[str, float] | None = None,
        *,
        counted: bool = True,
        slices: int = 1,
        on_slice: Callable[[], None] | None = None,
    ) -> None:
        """Advance one control step (the robot's control period) after setting position targets.

        ``joint_targets`` maps arm name -> joint angles [rad] in the arm's joint order; ``gripper_targets`` maps arm
        name -> opening in [0, 1] (0 closed). Arms not named keep their previous targets. Every value is checked
        first; on any error InvalidCommandError is raised and nothing changes.

        ``counted=False`` is time passing between motions in a real-time backend (the ROS simulator node): it uses
        none of the episode's step budget and is allowed after the budget is spent, but it may not command joints.
        ``on_slice`` runs after each of ``slices`` equal parts of the physics substeps (state published at 100 Hz).
        """
        if counted and self.task is not None and self.steps_left <= 0:
            raise EpisodeOverError(f"the episode's {self.step_limit} env steps are used up")
        if not counted and (joint_targets or gripper_targets):
            raise InvalidCommandError("an uncounted step only lets time pass; joint and gripper targets need a step")
        if slices < 1 or self.substeps % slices:
            raise InvalidCommandError(f"{self.substeps} physics substeps do not split into {slices} slices")
        new_joint = self._validated_joint_targets(joint_targets or {})
        new_grip = self._validated_gripper_targets(gripper_targets or {})
        d = self.data
        for arm, q in new_joint.items():
            d.ctrl[self.arm_ctrl_ids[arm]] = q
        for arm, opening in new_grip.items():
            self.set_gripper_target(arm, opening)
        for _ in range(slices):
            self._advance(self.substeps // slices)
            if on_slice is not None:
                on_slice()
        if not counted:
            return
        self.step_count += 1
        if self.dynamics is not None:
            self.dynamics.after_control_step(d, self.step_count)
        for observer in self.step_observers:
            observer(self)

    def hold(self) -> None:
        """Command every arm to hold its measured joint positions (gripper commands stay); no step is consumed."""
        for arm in self.robot.arm_names:
            self.data.ctrl[self.arm_ctrl_ids[arm]] = self.data.qpos[self.arm_qpos_adr[arm]]

    def _advance(self, substeps: int | None = None) -> None:
        belts = self.dynamics if self.dynamics is not None and self.dynamics.has_belts else None
        for _ in range(self.substeps if substeps is None else substeps):
            mujoco.mj_step(self.model, self.data)
            if belts is not None:
                belts.after_physics_step(self.data)

    def set_gripper_target(self, arm: str, opening: float) -> None:
        """Command a gripper opening in [0, 1] as given (step() validates before calling this)."""
        self.data.ctrl[self.gripper_ctrl_ids[arm]] = opening * self.robot.arm(arm).gripper_max_m

    def _validated_joint_targets(self, targets: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
        out = {}
        dt = self.control_dt_s
        for arm_name, values in targets.items():
            arm = self.robot.arm(arm_name) if arm_name in self.robot.arm_names else None
            if arm is None:
                raise UnknownNameError("arm", arm_name, self.robot.arm_names)
            try:
                q = np.asarray(values, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise InvalidCommandError(
                    f"{arm_name} joint targets must be {len(arm.joints)} numbers, got {values!r}"
                ) from None
            if q.shape != (len(arm.joints),):
                raise InvalidCommandError(f"{arm_name} joint targets must be {len(arm.joints)} numbers, got {q.size}")
            current = self.data.ctrl[self.arm_ctrl_ids[arm_name]]
            for name, value, prev in zip(arm.joints, q, current, strict=True):
                lower, upper, velocity = self.joint_limits[name]
                if not math.isfinite(value):
                    raise InvalidCommandError(f"target for {name!r} must be a finite number, got {value}")
                if not lower <= value <= upper:
                    raise InvalidCommandError(f"target for {name!r} is {value:.4f} rad, outside [{lower}, {upper}]")
                max_step = VELOCITY_MARGIN * velocity * dt
                if abs(value - prev) > max_step:
                    raise InvalidCommandError(
                        f"target for {name!r} jumps {abs(value - prev):.3f} rad in one {dt * 1e3:.0f} ms step; "
                        f"its velocity limit allows {max_step:.3f} rad"
                    )
            out[arm_name] = q
        return out

    def _validated_gripper_targets(self, targets: Mapping[str, float]) -> dict[str, float]:
        out = {}
        for arm_name, value in targets.items():
            if arm_name not in self.robot.arm_names:
                raise UnknownNameError("arm", arm_name, self.robot.arm_names)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InvalidCommandError(f"{arm_name} gripper target must be a finite number in [0, 1], got {value!r}")
            if not 0.0 <= value <= 1.0:
                raise InvalidCommandError(f"{arm_name} gripper target {value} is outside [0, 1] (0 closed, 1 open)")
            out[arm_name] = float(value)
        return out

    # -- observing ----------------------------------------------------------------------------------------------
    def arm_state(self, arm_name: str) -> ArmState:
        arm = self.robot.arm(arm_name)
        d = self.data
        site = self.tcp_site_ids[arm_name]
        return ArmState(
            name=arm_name,
            joint_names=arm.joints,
            joint_positions_rad=tuple(float(v) for v in d.qpos[self.arm_qpos_adr[arm_name]]),
            tcp_pos_m=xyz_tuple(d.site_xpos[site]),
            tcp_quat_wxyz=wxyz_tuple(quat_from_matrix(d.site_xmat[site].reshape(3, 3))),
            gripper_opening=gripper_opening(arm, float(d.qpos[self.gripper_qpos_adr[arm_name]])),
        )

    def calibration(self, camera: str) -> CameraCalibration:
        """Intrinsics and camera-to-world pose (REP 103 optical frame) of ``camera`` now."""
        cam = self.robot.camera(camera)
        m, d = self.model, self.data
        cid = self.camera_ids[camera]
        fy = (cam.height / 2) / math.tan(math.radians(m.cam_fovy[cid]) / 2)
        K = np.array([[fy, 0.0, (cam.width - 1) / 2], [0.0, fy, (cam.height - 1) / 2], [0.0, 0.0, 1.0]])
        return CameraCalibration(K=K, T_world_cam=_optical_pose(d, cid), width=cam.width, height=cam.height)

    def render(
        self, camera: str, *, depth: bool = False, segmentation: bool = False, markers: Sequence[Marker] = ()
    ) -> CameraFrame:
        """Render one camera: RGB always (with optional visual-only ``markers``), depth and geom ids on request."""
        cam = self.robot.camera(camera)
        renderer = self._renderer(cam.width, cam.height)
        cid = self.camera_ids[camera]
        if depth:
            rgb, depth_m = renderer.rgb_depth(self.data, cid, markers)
        else:
            rgb, depth_m = renderer.rgb(self.data, cid, markers), None
        return CameraFrame(
            name=camera,
            rgb=rgb,
            calibration=self.calibration(camera),
            depth_m=depth_m,
            segmentation=renderer.segmentation(self.data, cid) if segmentation else None,
        )

    def observe(
        self, cameras: Iterable[str] | None = None, *, depth: bool = False, segmentation: bool = False
    ) -> Observation:
        """The agent-side view. ``cameras`` defaults to all; pass ``()`` for state only."""
        names = self.robot.camera_names if cameras is None else tuple(cameras)
        for name in names:
            self.robot.camera(name)  # unknown names raise before any rendering
        return Observation(
            step=self.step_count,
            steps_left=self.steps_left,
            time_s=float(self.data.time),
            arms={a: self.arm_state(a) for a in self.robot.arm_names},
            cameras={n: self.render(n, depth=depth, segmentation=segmentation) for n in names},
        )

    def _renderer(self, width: int, height: int) -> CameraRenderer:
        key = (width, height)
        if key not in self._renderers:
            renderer = CameraRenderer(width, height, self.settings.render)
            renderer.bind(self.model)
            self._renderers[key] = renderer
        return self._renderers[key]

    # -- privileged ---------------------------------------------------------------------------------------------
    def privileged(self):  # -> PrivilegedView (imported lazily: agents never need it)
        """Task ground truth for the episode runner, benchmarks and tests. Never hand this to an agent."""
        from robodojo.sim.privileged import PrivilegedView

        return PrivilegedView(self)

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()


def _optical_pose(data: mujoco.MjData, camera_id: int) -> np.ndarray:
    """T_world_cam of a MuJoCo camera in the optical convention (MuJoCo's x right, y up, looking along -z, turned to
    y down, z forward)."""
    R = data.cam_xmat[camera_id].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])
    return transform(R, data.cam_xpos[camera_id])
