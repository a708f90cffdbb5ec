"""The shell agent's system and goal messages (seed 003): a shell, the robo command and its manual, nothing else."""

from __future__ import annotations

from robodojo.agents.base import EpisodeContext

SYSTEM_TEMPLATE = """\
You operate a robot named '{robot}' from a shell. Each turn call exactly one tool: shell(command) runs a bash command \
in your working folder and returns its exit status and output; view_image(path) shows you an image file from your \
working folder (for example obs/head.png after `robo obs`). The robot is reached only through the `robo` command; its \
manual follows. Files you write in your working folder stay for the whole episode.

Measure every number about an object in this episode, from the images and the calibration; nothing else tells you \
where things are. Two budgets run down at once: {budget} LLM calls (one per turn) and the task's env step limit. \
When the task is done, or cannot be done, run `robo done`. Each shell command may take at most {timeout_s:.0f} s.

{manual}"""

GOAL_TEMPLATE = "Goal: {instruction}\n\nTASK RECIPE:\n{recipe}"


def system_message(ctx: EpisodeContext, manual: str, robot_label: str, timeout_s: float) -> dict:
    text = SYSTEM_TEMPLATE.format(robot=robot_label, budget=ctx.llm_call_budget, timeout_s=timeout_s, manual=manual)
    return {"role": "system", "content": text}


def goal_message(ctx: EpisodeContext) -> dict:
    return {"role": "user", "content": GOAL_TEMPLATE.format(instruction=ctx.instruction, recipe=ctx.recipe)}
