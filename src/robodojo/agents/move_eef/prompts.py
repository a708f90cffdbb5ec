"""The system and Goal messages of the move_eef agent (seed 002 section 3 and appendix A).

The system message is the seed's header (controller role, interaction rules, budgets) followed by embodiment notes
generated from the robot config: world axes, arm bases, table height, reach, gripper polarity, the orientation
convention, the cameras, active-view and contact-step advice, and returning the arms when the task scores it. It is the
same under every probe (the seed adds no explanation of a perturbation). The Goal message is
``Goal: <instruction>`` and ``TASK RECIPE: <the task's recipe and score ladder>``. The optional one-shot
demonstration message follows the Goal message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import Message
from robodojo.agents.move_eef.observation import format_dimension
from robodojo.agents.move_eef.probes import DemonstrationStep, Probes
from robodojo.robots.config import RobotConfig


@dataclass(frozen=True)
class Embodiment:
    """Facts for the system message that the robot config does not hold (config/agents/move_eef.yaml, robots)."""

    name: str  # the embodiment name the model is told, e.g. robodojo-arx-x5
    reach_forward_m: float  # straight-down grasps near the table reach this far in front of an arm's base
    reach_sideways_m: float  # and this far to either side of it


HEADER = (
    "You are controlling a real robot embodiment named '{name}'. You receive {pictures}the current world-frame "
    "grasp-point state of {arms} in the same {n_dims} dimensions move_eef takes, arm joint angles as context you "
    "cannot command, and a task instruction. Move with move_eef by naming only the world-frame dimensions you "
    "want to change. {estimate} Respond with exactly one tool call per turn. After each motion the next "
    "observation reports how far the grasp point ended up from what you asked for, so check it before assuming a "
    "motion landed. Two budgets run down at once and whichever empties first ends the episode: {calls} LLM calls, "
    "one per turn, and the environment's own step limit, reported with each observation as the env steps "
    "remaining. A motion spends env steps in proportion to how far it travels, so a small correction is cheap and "
    "a long reach is not. Embodiment notes:"
)

RECIPE_NOTE = (
    "The Goal instruction is authoritative for this episode's specifics. The environment alone judges success; the "
    "process-score ladder lists its partial-credit scores and is no substitute for full success."
)


def _xyz(p: tuple[float, float, float] | np.ndarray) -> str:
    return "(" + ", ".join(f"{v:.3f}".replace("-0.000", "0.000") for v in p) + ")"


def _heading(robot: RobotConfig, arm_name: str) -> str:
    """The world axis an arm faces (its base x axis), e.g. ``+y``."""
    R = robot.arm(arm_name).base_link_pose[:3, :3]
    x = R[:, 0]
    axis = int(np.argmax(np.abs(x)))
    return ("+" if x[axis] > 0 else "-") + "xyz"[axis]


#: what the header says the model sees and estimates targets from, by the run's ``images`` choice
PICTURES = {"all": "RGB camera images, ", "head": "RGB images of the head camera, ", "none": "no camera images; "}
ESTIMATES = {
    "all": "Cartesian targets must be estimated from RGB; no depth or world-coordinate query is available.",
    "head": "Cartesian targets must be estimated from RGB; no depth or world-coordinate query is available.",
    "none": "Cartesian targets must be worked out from the instruction, the state and the arrival checks; no "
    "camera, depth or world-coordinate query is available.",
}


def embodiment_notes(robot: RobotConfig, embodiment: Embodiment, control_dt_s: float, images: str = "all") -> list[str]:
    """The task-independent geometry and operating notes, one paragraph per item (camera advice only where the
    model is sent camera pictures: ``images``)."""
    arms = robot.arm_names
    bases = "; ".join(f"{a} arm at {_xyz(robot.arm(a).base_xyz_m)} facing {_heading(robot, a)}" for a in arms)
    finger = np.asarray(robot.motion.zero_orientation_finger_axis)
    finger_axis = "xyz"[int(np.argmax(np.abs(finger)))]
    opening_mm = 2 * robot.arms[0].gripper_max_m * 1e3
    cameras = ", ".join(f"'{c}'" for c in robot.camera_names)
    sides = (
        " The left arm sits at negative x, the right arm at positive x."
        if {"left", "right"} <= set(arms) and robot.arm("left").base_xyz_m[0] < robot.arm("right").base_xyz_m[0]
        else ""
    )
    notes = [
        f"World frame: metres; z points up; x runs across the table and y points away from the robot.{sides} "
        f"Arm bases: {bases}.",
        f"The table top is at z = {robot.table.top_z_m:.3f} m; targets that would put the grasp point below it are "
        "rejected. The grasp point is the spot between the fingertips, so to grasp an object put it at the object's "
        "height, not above it.",
        f"Reach: straight-down grasps near table height reach about {embodiment.reach_forward_m:.2f} m in front of "
        f"an arm's base and about {embodiment.reach_sideways_m:.2f} m to either side of it; higher up or farther out "
        "the reach shrinks, and such targets are rejected as out of reach. Use the arm on the object's side.",
        f"Gripper: 1 is fully open (about {opening_mm:.0f} mm between the fingers) and 0 is closed. A gripper "
        "closed on an object reads partly open; that is expected.",
        "Orientation: pitch_deg, roll_deg and yaw_deg are degrees from a straight-down grasp. All zero points the "
        f"fingers straight down, opening along the world {finger_axis} axis. The rotation is yaw about world z after "
        "roll about world y after pitch about world x: positive pitch tilts the fingertips towards +y (away from the "
        "robot), roll tilts them sideways, and yaw turns the grip about the vertical, which is how you align the "
        "fingers with an object's faces. Roll is limited to [-90, 90].",
        f"Cameras: {cameras}; a wrist camera moves with its gripper and looks along the fingers. Active view: when an "
        "object is hidden, occluded by a held object, or hard to judge, move an idle arm so that its wrist camera "
        "looks at the work area, and use that view before committing.",
        "Contact: near objects and the table, move in small steps of a few centimetres and check the arrival check "
        "and the wrist view after each; change the gripper in a move of its own so the fingers close where you "
        "expect. A long fast reach into an object can knock it over.",
        "Some tasks score the final arm pose: when the task recipe asks for it, finish by returning both arms to their "
        "starting poses (the state in the first observation).",
        f"Timing: control runs at {1 / control_dt_s:.0f} Hz; each executed waypoint is one env step.",
    ]
    if images != "all":  # no wrist pictures: no advice to look at them
        notes = [n.replace("the arrival check and the wrist view after each", "the arrival check after each")
                 for n in notes]  # fmt: skip
    if images == "none":
        notes = [n for n in notes if not n.startswith("Cameras:")]
    elif images == "head":
        notes = [
            "Cameras: you are sent the head camera's images only." if n.startswith("Cameras:") else n for n in notes
        ]
    return notes


def system_text(
    robot: RobotConfig, embodiment: Embodiment, llm_call_budget: int, control_dt_s: float, images: str = "all"
) -> str:
    n_arms = len(robot.arm_names)
    arms = "both arms" if n_arms == 2 else ("the arm" if n_arms == 1 else f"all {n_arms} arms")
    header = HEADER.format(
        name=embodiment.name, arms=arms, n_dims=7 * n_arms, calls=llm_call_budget, pictures=PICTURES[images],
        estimate=ESTIMATES[images],
    )  # fmt: skip
    notes = "\n".join(f"- {note}" for note in embodiment_notes(robot, embodiment, control_dt_s, images))
    return f"{header}\n{notes}"


def system_message(
    robot: RobotConfig, embodiment: Embodiment, llm_call_budget: int, control_dt_s: float, images: str = "all"
) -> Message:
    return {"role": "system", "content": system_text(robot, embodiment, llm_call_budget, control_dt_s, images)}


def goal_text(instruction: str, recipe: str) -> str:
    return f"Goal: {instruction}\nTASK RECIPE: {recipe}\n{RECIPE_NOTE}"


def goal_message(instruction: str, recipe: str) -> Message:
    return {"role": "user", "content": goal_text(instruction, recipe)}


DEMONSTRATION_INTRO = (
    "DEMONSTRATION: one successful episode of this task, recorded on a different layout. Objects are placed "
    "differently here, so take the approach from it, not its coordinates. Each step gives what was done and the "
    "grasp-point pose afterwards, in the dimensions move_eef takes{images}."
)


def demonstration_message(
    steps: Sequence[DemonstrationStep],
    probes: Probes,
    *,
    with_images: bool,
    jpeg_quality: int,
    cameras: Sequence[str] | None = None,
) -> Message:
    """The one-shot demonstration as one user message (poses in the model's frame; images probe-transformed; only
    those of ``cameras`` when given)."""
    intro = DEMONSTRATION_INTRO.format(images=", with the camera images at that moment" if with_images else "")
    content: list[Message] = [{"type": "text", "text": intro}]
    for i, step in enumerate(steps, start=1):
        pose = " ".join(format_dimension(k, v) for k, v in probes.to_model(step.pose).items())
        text = f"Step {i}: {step.text}".rstrip() + f"\nPose: {pose}"
        content.append({"type": "text", "text": text})
        if with_images:
            for camera, rgb in step.images.items():
                if cameras is not None and camera not in cameras:
                    continue
                content.append({"type": "text", "text": f"demonstration step {i}, camera '{camera}':"})
                content.append(image_part(probes.transform_image(rgb), jpeg_quality))
    return {"role": "user", "content": content}
