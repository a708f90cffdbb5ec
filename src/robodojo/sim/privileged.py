"""Privileged access to the embedded world: object poses, contacts, success and score, teleports.

Used by the episode runner (success/score), benchmarks and tests. Agents and code cells never receive this object;
the kernel process that runs code cells cannot import robodojo.sim at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from robodojo.errors import RobodojoError, UnknownNameError
from robodojo.sim.dynamics import WorldDynamics, teleport
from robodojo.sim.tasks.base import Layout, Task
from robodojo.sim.world import EmbeddedWorld

TOUCH_TOLERANCE_M = 1e-4  # a gap this small between an object and the table counts as touching


class PrivilegedView:
    """Ground truth of the world's current task (implements the TaskView and GoalWriter protocols)."""

    def __init__(self, world: EmbeddedWorld) -> None:
        if world.task is None or world.layout is None:
            raise RobodojoError("no task loaded; call reset(task, seed) first")
        self.world = world
        self.task: Task = world.task
        self.layout: Layout = world.layout
        self.table_z_m = world.robot.table.top_z_m
        self.arm_names = world.robot.arm_names
        m = world.model
        self._finger_bodies = {arm.name: self._fingers(m, arm.prefix) for arm in world.robot.arms}
        self._pad_geoms = {
            arm: {g for g in range(m.ngeom) if m.geom_bodyid[g] in bodies and m.geom_contype[g]}
            for arm, bodies in self._finger_bodies.items()
        }
        self._table_geoms = {m.geom("table_collision0").id}

    @staticmethod
    def _fingers(m: mujoco.MjModel, prefix: str) -> set[int]:
        """Bodies moved by this arm's prismatic (finger) joints."""
        return {
            int(m.jnt_bodyid[j])
            for j in range(m.njnt)
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE and m.joint(j).name.startswith(prefix)
        }

    def _body(self, name: str) -> int:
        if name not in self.object_names:
            raise UnknownNameError("object", name, self.object_names)
        return self.world.model.body(name).id

    @property
    def object_names(self) -> list[str]:
        return [o.name for o in self.layout.objects]

    def object_pos(self, name: str) -> np.ndarray:
        return self.world.data.xpos[self._body(name)].copy()

    def object_quat(self, name: str) -> np.ndarray:
        return self.world.data.xquat[self._body(name)].copy()

    def initial_pos(self, name: str) -> np.ndarray:
        self._body(name)
        return self.world.initial_object_pos[name].copy()

    def tcp_pos(self, arm: str) -> np.ndarray:
        return np.array(self.world.arm_state(arm).tcp_pos_m)

    def gripper_opening(self, arm: str) -> float:
        return self.world.arm_state(arm).gripper_opening

    def _contact_geoms(self, name: str) -> set[int]:
        m, d = self.world.model, self.world.data
        body = self._body(name)
        touching = set()
        for c in d.contact[: d.ncon]:
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            if b1 == body:
                touching.add(int(c.geom2))
            elif b2 == body:
                touching.add(int(c.geom1))
        return touching

    def finger_pad_geoms(self, arm: str) -> tuple[int, ...]:
        """The collision geoms of ``arm``'s fingers (the pads that touch what it grasps), in id order."""
        return tuple(sorted(self._pad_geoms[arm]))

    def touching_gripper(self, name: str, arm: str) -> bool:
        return bool(self._contact_geoms(name) & self._pad_geoms[arm])

    def touching_table(self, name: str) -> bool:
        if self._contact_geoms(name) & self._table_geoms:
            return True
        # An object put exactly on the table (a teleport to a goal state) is at distance 0, where MuJoCo makes no
        # contact; resting objects sink a little and do. Within the tolerance, it touches.
        m, d = self.world.model, self.world.data
        body = self._body(name)
        geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body and m.geom_contype[g]]
        return any(
            mujoco.mj_geomDistance(m, d, g, t, TOUCH_TOLERANCE_M, None) < TOUCH_TOLERANCE_M  # capped at it
            for g in geoms
            for t in self._table_geoms
        )

    def success(self) -> bool:
        return bool(self.task.success(self.layout, self))

    def score(self) -> float:
        return float(self.task.score(self.layout, self))

    @property
    def _dynamics(self) -> WorldDynamics:
        assert self.world.dynamics is not None  # set whenever a task is loaded
        return self.world.dynamics

    @property
    def changes_made(self) -> int:
        return self._dynamics.changes_made

    def object_speed(self, name: str) -> float:
        """Linear speed [m/s] of a free object (0 for a fixed one)."""
        m, d = self.world.model, self.world.data
        joint = m.body(self._body(name)).jntadr[0]
        if joint < 0:
            return 0.0
        vadr = m.jnt_dofadr[joint]
        return float(np.linalg.norm(d.qvel[vadr : vadr + 3]))

    def set_object_pose(self, name: str, pos: Sequence[float], quat: Sequence[float] = (1, 0, 0, 0)) -> None:
        """Teleport a free object (velocity zeroed) and recompute positions and contacts."""
        try:
            teleport(self.world.model, self.world.data, self._body(name), pos, quat)
        except ValueError:
            raise RobodojoError(f"object {name!r} is fixed and cannot be moved") from None

    def make_changes(self) -> None:
        """Make the layout's pending changes now, as the world does when their env step comes."""
        while self._dynamics.changes_pending:
            self._dynamics.make_next_change(self.world.data)

    def set_gripper_opening(self, arm: str, opening: float) -> None:
        """Teleport the fingers to ``opening`` (0..1) and command it; closed on an object, the fingers pinch it."""
        w = self.world
        q = opening * w.robot.arm(arm).gripper_max_m
        for j in range(w.model.njnt):
            if w.model.jnt_bodyid[j] in self._finger_bodies[arm]:
                w.data.qpos[w.model.jnt_qposadr[j]] = q
        w.set_gripper_target(arm, opening)
        mujoco.mj_forward(w.model, w.data)

    def put_in_goal_state(self) -> None:
        self.task.put_in_goal_state(self.layout, self)
