"""What ``observe`` and the resources answer: camera images encoded for MCP, the state text, the calibrations.

Images are PNG (lossless: the pixels the simulator rendered) or JPEG, as config/agents/mcp.yaml says. The camera
calibrations are the shell harness's cameras.json (:func:`~robodojo.agents.shell.commands.camera_calibrations`), so
a client reads the same document a shell agent reads from obs/.
"""

from __future__ import annotations

import json

import cv2
import numpy as np

from robodojo.agents.base import EpisodeContext
from robodojo.agents.mcp.channel import Answer, ImagePart
from robodojo.agents.mcp.settings import McpSettings
from robodojo.agents.mcp.toolset import ToolSet
from robodojo.agents.move_eef.observation import camera_label
from robodojo.agents.shell.commands import camera_calibrations
from robodojo.agents.shell.prompts import GOAL_TEMPLATE
from robodojo.observation import Observation

INSTRUCTION_URI = "robodojo://episode/instruction"
CAMERAS_URI = "robodojo://episode/cameras"
MANUAL_URI = "robodojo://manual"
#: uri -> (name, description, MIME type)
RESOURCES = {
    INSTRUCTION_URI: (
        "instruction",
        "The episode's goal and the task recipe (its partial-credit ladder).",
        "text/plain",
    ),
    CAMERAS_URI: (
        "cameras",
        "Per camera: image size, intrinsics K, distortion and T_world_cam (4x4, optical frame to world) now; a wrist "
        "camera moves with its arm.",
        "application/json",
    ),
    MANUAL_URI: ("manual", "How the tools move the robot: frames, units, bounds, what each returns.", "text/markdown"),
}


def encode_image(rgb: np.ndarray, settings: McpSettings) -> ImagePart:
    """An HxWx3 uint8 RGB image in the configured format."""
    params = [cv2.IMWRITE_JPEG_QUALITY, settings.jpeg_quality] if settings.image_format == "jpeg" else []
    ok, data = cv2.imencode(f".{settings.image_format}", np.ascontiguousarray(rgb[:, :, ::-1]), params)
    if not ok:
        raise OSError(f"OpenCV could not encode a {settings.image_format} image")
    return ImagePart(settings.mime_type, data.tobytes())


def observation_answer(obs: Observation, state_text: str, settings: McpSettings) -> Answer:
    """The state text, then per camera a label (``camera 'head' (step 12):``) and its image."""
    parts: list[str | ImagePart] = [state_text]
    for name, frame in obs.cameras.items():
        parts += [camera_label(name, obs.step), encode_image(frame.rgb, settings)]
    return Answer(tuple(parts))


def resource_answer(uri: str, episode: EpisodeContext, tools: ToolSet, settings: McpSettings) -> Answer:
    """The content of a resource of :data:`RESOURCES`; an error answer for any other URI."""
    if uri not in RESOURCES:
        return Answer.error(f"unknown resource; the resources are {', '.join(RESOURCES)}")
    mime_type = RESOURCES[uri][2]
    if uri == INSTRUCTION_URI:
        text = GOAL_TEMPLATE.format(instruction=episode.instruction, recipe=episode.recipe)
    elif uri == CAMERAS_URI:
        obs = episode.backend.observe(episode.robot.camera_names)
        text = json.dumps(camera_calibrations(obs, settings.image_format), indent=1)
    else:
        text = tools.manual()
    return Answer((text,), mime_type=mime_type)
