"""The code-cell agent's system and Goal messages (seed 000, PyRUA-Lean): one python tool, a robo object."""

from __future__ import annotations

from robodojo.agents.base import EpisodeContext

SYSTEM_TEMPLATE = """\
You are controlling a robot embodiment named '{robot}' by writing Python. You have one tool, python(code): each call \
runs a cell in a persistent Python namespace where `robo` (the robot), `np` (numpy) and `math` are predefined; \
functions and variables you define stay for later cells. Only what a cell prints, the repr of its last expression, \
its error traceback{pictures} come back to you; nothing else does. \
Chain several robot steps in one cell, check each result, retry or correct, and print what you need to know.

Perception has no depth sensor: turn pixels into metric 3D points with the calibrated cameras (robo.segment, \
robo.back_project onto the measured table plane or an object's top plane, robo.triangulate across two views). \
Positions are in the world frame in metres: x across the table (the left arm at negative x), y away from the robot, \
z up; quaternions are (w, x, y, z). The task's own success signal is robo.done; the env steps left are \
robo.steps_left, and motions spend them in proportion to their length. Two budgets run down at once: {budget} \
LLM calls (one per turn) and the environment's step limit. When the task is done, or cannot be done, call \
finish(status, summary).

Limits per cell: {wall_s:.0f} s wall clock; on a limit the kernel is restarted, your namespace is lost, and the robot \
holds still. The cell runs in a separate process with no network and no access to the simulator.

The robo API:
{api}
"""

GOAL_TEMPLATE = "Goal: {instruction}\n\nTASK RECIPE:\n{recipe}"


#: what comes back besides text, by the run's ``images`` choice (none: the model is promised no pictures)
PICTURES = {
    "all": ", and the camera images it asks for with robo.show(camera)",
    "head": ", and the head camera's images it asks for with robo.show(camera)",
    "none": "",
}


def system_message(
    ctx: EpisodeContext, api_reference: str, wall_s: float, robot_label: str, images: str = "all"
) -> dict:
    text = SYSTEM_TEMPLATE.format(
        robot=robot_label, budget=ctx.llm_call_budget, wall_s=wall_s, api=api_reference, pictures=PICTURES[images]
    )
    return {"role": "system", "content": text}


def goal_message(ctx: EpisodeContext) -> dict:
    return {"role": "user", "content": GOAL_TEMPLATE.format(instruction=ctx.instruction, recipe=ctx.recipe)}
