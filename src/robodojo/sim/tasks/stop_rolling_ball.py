"""Stop a rolling ball: a ball rolls across the table and would roll out of the arms' reach; stop it so it rests on
the table within reach (seed 002's dynamic axis: a target that moves while the robot acts).

The ball rolls along x through the middle of the workspace, from one side towards the other, slowing only a little
(rolling friction, sim.yaml ``ball_contact``): left alone it ends past ``REACH_X_M``. Its lane is kept clear of every
other object, distractors included, so nothing but the robot stops it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robodojo.sim.objects import ObjectSpec
from robodojo.sim.tasks.base import GoalWriter, Layout, Task, TaskView, Workspace, pick_colors

BALL_RADIUS_M = 0.025
START_X_M = 0.40  # the ball starts this far to one side of the middle, rolling towards the other
LANE_Y_M = (-0.27, -0.15)  # where its lane runs (both arms reach it from above)
SPEED_M_S = (0.09, 0.12)  # launch speed; left alone the ball rolls about 0.6-1.2 m
REACH_X_M = 0.45  # success: at rest no further out than this
AT_REST_M_S = 0.005
LANE_MARGIN_M = 0.03  # the lane kept clear: the ball's width plus this on each side


class StopRollingBall(Task):
    name = "stop_rolling_ball"
    capability = "dynamic"
    step_limit = 400
    instruction_template = (
        "A {color} ball is rolling across the table towards the {side} side. Stop it before it rolls out of reach: "
        "it must come to rest on the table."
    )
    recipe = (
        "Watch the ball twice, a moment apart, to find where it is heading and how fast. Put a gripper down on the "
        "table in its path, well ahead of it, with the fingers closed so they form a wall, and hold still: the "
        "ball runs into the fingers and stops. Do not chase it from behind. The ball must end at rest on the table "
        f"no more than {REACH_X_M * 100:.0f} cm from the middle of the table (x)."
    )
    score_ladder = (
        (0.25, "a gripper is within 5 cm of the ball"),
        (0.5, f"the ball is within {REACH_X_M * 100:.0f} cm of the middle and at half its starting speed or less"),
        (0.75, f"the ball is within {REACH_X_M * 100:.0f} cm of the middle and at a quarter of its speed or less"),
        (1.0, f"the ball rests on the table, at most {REACH_X_M * 100:.0f} cm from the middle (success)"),
    )

    def sample_objects(self, rng: np.random.Generator) -> tuple[list[ObjectSpec], dict[str, str]]:
        (color,) = pick_colors(rng, 1)
        direction = float(rng.choice([-1.0, 1.0]))  # +1: rolls towards +x (the right arm's side)
        speed = float(rng.uniform(*SPEED_M_S))
        y = float(rng.uniform(*LANE_Y_M))
        ball = self.rest_object("ball", "ball", color, (BALL_RADIUS_M,), (-direction * START_X_M, y), mass=0.05)
        ball = ObjectSpec(**{**ball.__dict__, "velocity_m_s": (direction * speed, 0.0, 0.0)})
        return [ball], {"color": color, "side": "right" if direction > 0 else "left"}

    def keep_clear(self, objects: Sequence[ObjectSpec]) -> tuple[Workspace, ...]:
        """The ball's lane, from where it starts to the table's end it rolls towards."""
        ball = next(o for o in objects if o.name == "ball")
        half_width = BALL_RADIUS_M + LANE_MARGIN_M
        x0, y = ball.pos_m[0], ball.pos_m[1]
        x_end = 1.0 if ball.velocity_m_s[0] > 0 else -1.0  # past the table's edge
        return (Workspace(x_m=(min(x0, x_end), max(x0, x_end)), y_m=(y - half_width, y + half_width)),)

    @staticmethod
    def _launch_speed(layout: Layout) -> float:
        return float(np.linalg.norm(layout.object("ball").velocity_m_s))

    def success(self, layout: Layout, view: TaskView) -> bool:
        pos = view.object_pos("ball")
        return (
            view.object_speed("ball") < AT_REST_M_S
            and abs(pos[0]) <= REACH_X_M
            and view.touching_table("ball")
            and abs(pos[2] - layout.object("ball").pos_m[2]) < 0.005
        )

    def score(self, layout: Layout, view: TaskView) -> float:
        if self.success(layout, view):
            return 1.0
        speed, launched = view.object_speed("ball"), self._launch_speed(layout)
        ball = view.object_pos("ball")
        within = abs(ball[0]) <= REACH_X_M
        if within and speed <= launched / 4:
            return 0.75
        if within and speed <= launched / 2:
            return 0.5
        return 0.25 if any(np.linalg.norm(view.tcp_pos(a) - ball) < 0.05 for a in view.arm_names) else 0.0

    def put_in_goal_state(self, layout: Layout, world: GoalWriter) -> None:
        _, y, z = layout.object("ball").pos_m
        world.set_object_pose("ball", (0.0, y, z - 0.0005))  # just touching: contacts need a little overlap
