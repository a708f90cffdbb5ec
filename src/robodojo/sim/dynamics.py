"""What moves by itself in a task's world: objects launched with a velocity (a rolling ball), conveyor belts carrying
what rests on them, and scheduled changes of the layout (an object moved mid-episode, as a person would move it).

MuJoCo has no moving surfaces, so a belt drives every free object that touches it, and touches no part of the robot,
at the belt's surface velocity after each physics step: friction then has no slip to act on, and an object a gripper
holds is left to the gripper. Everything here follows the world's own clock (physics and counted env steps), so it
runs the same in process and on the ROS graph's simulator node.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from robodojo.sim.objects import BELT_KINDS
from robodojo.sim.scene import ROBOT_CONTYPE
from robodojo.sim.tasks.base import Layout


def teleport(
    model: mujoco.MjModel, data: mujoco.MjData, body: int, pos: Sequence[float], quat: Sequence[float]
) -> None:
    """Put the free body ``body`` at ``pos`` with orientation ``quat`` (w, x, y, z), at rest; positions and contacts
    are recomputed. Raises ValueError for a body without a free joint."""
    joint = model.body_jntadr[body]
    if joint < 0 or model.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
        raise ValueError(f"body {model.body(body).name!r} is fixed and cannot be moved")
    adr, vadr = model.jnt_qposadr[joint], model.jnt_dofadr[joint]
    data.qpos[adr : adr + 3] = pos
    data.qpos[adr + 3 : adr + 7] = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    data.qvel[vadr : vadr + 6] = 0.0
    mujoco.mj_forward(model, data)


class WorldDynamics:
    """The moving parts of one loaded layout; :class:`~robodojo.sim.world.EmbeddedWorld` calls :meth:`launch` once
    the layout has settled, :meth:`after_physics_step` after every MuJoCo step (only when :attr:`has_belts`) and
    :meth:`after_control_step` after every counted env step."""

    def __init__(self, model: mujoco.MjModel, layout: Layout) -> None:
        self._model = model
        self._layout = layout
        objects = {o.name: model.body(o.name).id for o in layout.objects}
        self._dof = {
            body: int(model.jnt_dofadr[model.body_jntadr[body]])
            for body in objects.values()
            if model.body_jntadr[body] >= 0 and model.jnt_type[model.body_jntadr[body]] == mujoco.mjtJoint.mjJNT_FREE
        }
        belts = [o for o in layout.objects if o.kind in BELT_KINDS and o.moving]
        self._belt_geoms = np.array([model.geom(f"{o.name}_geom").id for o in belts], dtype=int)
        self._belt_velocity = np.array([o.velocity_m_s for o in belts], dtype=float).reshape(-1, 3)
        self._robot_geom = model.geom_contype == ROBOT_CONTYPE  # the arms' collision geoms (fingers included)
        self._launches = [
            (objects[o.name], np.array(o.velocity_m_s, dtype=float), o.size_m[0] if o.kind == "ball" else None)
            for o in layout.objects
            if o.moving and o.kind not in BELT_KINDS
        ]
        self._changes = sorted(layout.changes, key=lambda c: c.at_step)
        #: Layout changes made so far (the first ``changes_made`` of ``layout.changes`` by step).
        self.changes_made = 0

    @property
    def has_belts(self) -> bool:
        return len(self._belt_geoms) > 0

    def launch(self, data: mujoco.MjData) -> None:
        """Give launched objects their velocity; a ball rolls without slipping (spin matching its speed)."""
        for body, velocity, radius in self._launches:
            dof = self._dof[body]
            data.qvel[dof : dof + 3] = velocity
            if radius is not None:
                spin_world = np.cross([0.0, 0.0, 1.0], velocity) / radius
                # A free joint's angular velocity is in the body's frame.
                data.qvel[dof + 3 : dof + 6] = data.xmat[body].reshape(3, 3).T @ spin_world

    def after_physics_step(self, data: mujoco.MjData) -> None:
        """Carry what rests on a belt along at the belt's velocity (horizontal; gravity keeps it down)."""
        n = data.ncon
        if n == 0:
            return
        g1, g2 = data.contact.geom1[:n], data.contact.geom2[:n]
        b1, b2 = self._model.geom_bodyid[g1], self._model.geom_bodyid[g2]
        held = set(b1[self._robot_geom[g2]]) | set(b2[self._robot_geom[g1]])
        for geom, velocity in zip(self._belt_geoms, self._belt_velocity, strict=True):
            riders = set(b2[g1 == geom]) | set(b1[g2 == geom])
            for body in riders - held:
                dof = self._dof.get(int(body))
                if dof is not None:
                    data.qvel[dof : dof + 2] = velocity[:2]

    def after_control_step(self, data: mujoco.MjData, steps_used: int) -> None:
        """Make the layout changes due once ``steps_used`` env steps are used."""
        while self.changes_made < len(self._changes) and self._changes[self.changes_made].at_step <= steps_used:
            self.make_next_change(data)

    def make_next_change(self, data: mujoco.MjData) -> None:
        """Make the next layout change now (the world at its step; tests put a task in its goal state with it)."""
        change = self._changes[self.changes_made]
        half_yaw = change.yaw_rad / 2
        quat = (np.cos(half_yaw), 0.0, 0.0, np.sin(half_yaw))
        teleport(self._model, data, self._model.body(change.name).id, change.pos_m, quat)
        self.changes_made += 1

    @property
    def changes_pending(self) -> int:
        return len(self._changes) - self.changes_made
