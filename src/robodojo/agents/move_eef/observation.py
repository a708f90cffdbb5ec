"""The observation user message of the move_eef agent (seed 002, appendix A; DESIGN.md section 5).

One user message per turn, content parts in this order:

1. one text part with these lines::

       Instruction: <official episode instruction>
       World-frame grasp-point state (metres; degrees from straight down): left_x=-0.300 ... right_gripper=1.00
       Arm joint angles, radians, for context; not commandable: left_joint1=0.000 ... right_joint6=0.000
       Arrival check for the previous move_eef target: left 20 mm and 0.0 deg away.
       Env steps remaining before the episode ends: 400

   The arrival line appears once a move_eef target was accepted and repeats the last accepted one until the next.
   Decimals: positions 3 (mm), angles 1 (0.1 deg), gripper 2, joint angles 3 (mrad); -0 prints as 0.
2. per visible camera a text part ``camera 'head' (step 12):`` (step = env steps taken so far) followed by the image
   as an OpenAI ``image_url`` part holding a base64 JPEG data URL.
"""

from __future__ import annotations

from collections.abc import Mapping

from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import Message
from robodojo.agents.move_eef.probes import Probes
from robodojo.motion.targets import SUFFIXES, observed_dimensions
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

INSTRUCTION_PREFIX = "Instruction: "
STATE_PREFIX = "World-frame grasp-point state (metres; degrees from straight down): "
JOINTS_PREFIX = "Arm joint angles, radians, for context; not commandable: "
ARRIVAL_PREFIX = "Arrival check for the previous move_eef target: "
STEPS_PREFIX = "Env steps remaining before the episode ends: "
DECIMALS = {"x": 3, "y": 3, "z": 3, "pitch_deg": 1, "roll_deg": 1, "yaw_deg": 1, "gripper": 2}
JOINT_DECIMALS = 3


def format_number(value: float, decimals: int) -> str:
    """Fixed decimals, with a rounded negative zero printed as zero."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def format_dimension(name: str, value: float) -> str:
    """``left_x=-0.300``: decimals by the dimension's suffix (see DECIMALS)."""
    suffix = next(s for s in SUFFIXES if name.endswith("_" + s))
    return f"{name}={format_number(value, DECIMALS[suffix])}"


def state_values(robot: RobotConfig, obs: Observation) -> dict[str, float]:
    """The world-frame move_eef dimensions of every arm, in the tool's order."""
    values: dict[str, float] = {}
    for arm in robot.arm_names:
        values.update(observed_dimensions(robot, obs.arm(arm)))
    return values


def state_line(values: Mapping[str, float]) -> str:
    return STATE_PREFIX + " ".join(format_dimension(k, v) for k, v in values.items())


def joints_line(robot: RobotConfig, obs: Observation) -> str:
    parts = []
    for arm in robot.arm_names:
        state = obs.arm(arm)
        parts += [
            f"{name}={format_number(q, JOINT_DECIMALS)}"
            for name, q in zip(state.joint_names, state.joint_positions_rad, strict=True)
        ]
    return JOINTS_PREFIX + " ".join(parts)


def observation_text(
    instruction: str, model_state: Mapping[str, float], robot: RobotConfig, obs: Observation, arrival: str | None
) -> str:
    """The text part: ``model_state`` is the state as the model sees it (after the probes' coordinate transform)."""
    lines = [INSTRUCTION_PREFIX + instruction, state_line(model_state), joints_line(robot, obs)]
    if arrival:
        lines.append(f"{ARRIVAL_PREFIX}{arrival}.")
    lines.append(f"{STEPS_PREFIX}{obs.steps_left}")
    return "\n".join(lines)


def camera_label(camera: str, step: int) -> str:
    return f"camera '{camera}' (step {step}):"


def observation_message(
    *,
    instruction: str,
    robot: RobotConfig,
    obs: Observation,
    probes: Probes,
    arrival: str | None,
    jpeg_quality: int,
) -> Message:
    """The user message for one turn: text, then a label and a JPEG per camera in ``obs`` (already the visible ones)."""
    model_state = probes.to_model(state_values(robot, obs))
    content: list[Message] = [{"type": "text", "text": observation_text(instruction, model_state, robot, obs, arrival)}]
    for name, frame in obs.cameras.items():
        content.append({"type": "text", "text": camera_label(name, obs.step)})
        content.append(image_part(probes.transform_image(frame.rgb), jpeg_quality))
    return {"role": "user", "content": content}
