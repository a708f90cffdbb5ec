"""Lift tray: both arms lift a long flat tray with a block standing on it, and the block must ride along (a two-arm
task: one hand lifts the tray by an end and tips the block off)."""

from __future__ import annotations

import math

import numpy as np

from robodojo.geometry import matrix_from_quat
from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors

# A plank-like tray: long enough to want a hand on each side of its middle (and to span both grasp points of the
# arms' ready pose, 60 cm apart, where the goal state puts it), narrow enough for the fingers to close across it.
TRAY_SIZE_M = (0.64, 0.05, 0.035)
TRAY_MASS_KG = 0.45
CARGO_M = 0.035  # the cube standing on the tray's middle
CARGO_MASS_KG = 0.06
LIFT_M = 0.08  # the instruction asks for 10 cm; 8 cm counts
START_LIFT_M = 0.03
MAX_TILT_DEG = 10.0
MAX_YAW_RAD = 0.12
CARGO_OFFSET_M = 0.06  # the cube starts up to this far along the tray from its middle
# Where the tray's centre starts: in front of both arms, near the middle, so each arm reaches its half.
CENTRE_REGION = Workspace(x_m=(-0.03, 0.03), y_m=(-0.27, -0.17))


class LiftTray(Task):
    name = "lift_tray"
    capability = "bimanual"
    step_limit = 800
    instruction_template = (
        "Lift the {tray_color} tray 10 cm with both hands, keeping it level so the {cargo_color} block on it stays on."
    )
    recipe = (
        "The tray is too long for one hand, and lifting one end tips the block off: grasp the tray from above with "
        "both grippers, one on each side of the block at the same distance from the tray's middle (fingers closing "
        "across the tray, clear of the block), then raise the two hands together, or in small alternate steps of "
        "2 cm or less so the tray never tilts much, until it is 10 cm above the table. Do not touch the block. "
        "It counts when both grippers hold the tray at least 8 cm up, tilted less than 10 deg, with the block "
        "resting on it (off the table, not in a gripper)."
    )
    score_ladder = (
        (0.25, "a gripper touches the tray"),
        (0.5, "both grippers touch the tray, the block on it"),
        (0.75, "both grippers hold the tray 3 cm above the table, the block on it"),
        (1.0, "both grippers hold the tray 8 cm above the table, tilted less than 10 deg, the block on it (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        tray_color, cargo_color = pick_colors(rng, 2)
        region = CENTRE_REGION
        xy = np.array([rng.uniform(*region.x_m), rng.uniform(*region.y_m)])
        yaw = float(rng.uniform(-MAX_YAW_RAD, MAX_YAW_RAD))
        tray = self.rest_object("tray", "block", tray_color, TRAY_SIZE_M, tuple(xy), yaw=yaw, mass=TRAY_MASS_KG)
        along = float(rng.uniform(-CARGO_OFFSET_M, CARGO_OFFSET_M))
        cargo_xy = xy + along * np.array([math.cos(yaw), math.sin(yaw)])
        cargo_z = self.table_z_m + TRAY_SIZE_M[2] + CARGO_M / 2
        cargo = ObjectSpec(
            name="cargo",
            kind="block",
            color=cargo_color,
            size_m=(CARGO_M,) * 3,
            pos_m=(float(cargo_xy[0]), float(cargo_xy[1]), cargo_z),
            yaw_rad=yaw + float(rng.uniform(-0.3, 0.3)),
            mass_kg=CARGO_MASS_KG,
        )
        return [tray, cargo], {"tray_color": tray_color, "cargo_color": cargo_color}

    @staticmethod
    def tilt_deg(view: TaskView) -> float:
        """Angle [deg] between the tray's top face and the horizontal."""
        up = matrix_from_quat(view.object_quat("tray"))[:, 2]
        return math.degrees(math.acos(min(1.0, abs(float(up[2])))))

    @staticmethod
    def cargo_on_tray(view: TaskView) -> bool:
        """The block rests on the tray's top face: over it, at the face's height, off the table, in no gripper."""
        rot = matrix_from_quat(view.object_quat("tray"))
        local = rot.T @ (view.object_pos("cargo") - view.object_pos("tray"))
        over = abs(local[0]) <= TRAY_SIZE_M[0] / 2 and abs(local[1]) <= TRAY_SIZE_M[1] / 2 + 0.005
        on_face = abs(local[2] - (TRAY_SIZE_M[2] + CARGO_M) / 2) <= 0.01
        held = any(view.touching_gripper("cargo", arm) for arm in view.arm_names)
        return over and on_face and not held and not view.touching_table("cargo")

    def _held_by_both(self, view: TaskView) -> bool:
        return all(view.touching_gripper("tray", arm) for arm in view.arm_names)

    def success(self, layout: Layout, view: TaskView) -> bool:
        raised = self.lifted_by(view, "tray") >= LIFT_M and not view.touching_table("tray")
        level = self.tilt_deg(view) < MAX_TILT_DEG
        return raised and level and self._held_by_both(view) and self.cargo_on_tray(view)

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        touching = [view.touching_gripper("tray", arm) for arm in view.arm_names]
        if all(touching) and self.cargo_on_tray(view):
            return 0.75 if self.lifted_by(view, "tray") >= START_LIFT_M else 0.5
        return 0.25 if any(touching) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        # Through both grasp points (the arms' ready pose is 10+ cm above the table), fingers closed on it, the
        # block on its middle.
        left, right = world.tcp_pos("left"), world.tcp_pos("right")
        yaw = math.atan2(right[1] - left[1], right[0] - left[0])
        quat = (math.cos(yaw / 2), 0, 0, math.sin(yaw / 2))
        centre = (left + right) / 2
        world.set_object_pose("tray", tuple(centre), quat)
        world.set_object_pose("cargo", tuple(centre + (0, 0, (TRAY_SIZE_M[2] + CARGO_M) / 2)), quat)
        for arm in ("left", "right"):
            world.set_gripper_opening(arm, 0.0)
