"""Which camera pictures reach the model, and a request-size check against a known context length (issue 13).

``images`` (both agents' config, ``robodojo run --images``) says which cameras' pictures are sent in messages:

- ``all`` (default): every visible camera, as before;
- ``head``: only the head camera (the cameras not mounted on a wrist);
- ``none``: no pictures at all, for text-only models. move_eef still sends its state text; the code-cell agent keeps
  robo.image() and the perception calls for code, but robo.show() is not part of its API and no prompt or tool text
  promises pictures.

The image horizon is separate: a positive number of observations whose pictures stay in the context, or unlimited.
It cannot be 0; ``images: none`` is the one way to send no pictures.

:class:`ContextBudget` refuses a request that would not fit a context length known for the run (``context_tokens``,
``robodojo run --context-tokens``) before it is sent, so a local server with a small context does not answer HTTP 400
after pasting the images into its prompt. The estimate is deliberately cheap and errs high:

- text (message text, tool-call arguments, the tool schemas as JSON): characters / 4;
- an image: by default the length of its data URL / 4, i.e. what a server that pastes the base64 text into the
  prompt counts (tens of thousands of tokens for one JPEG); with ``image_tokens`` set, that fixed number per image,
  for vision servers that charge a fixed cost per picture (e.g. about 800 for a 640x480 picture on OpenAI models).

The completion's own tokens are not counted: servers differ in whether they reserve them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robodojo.agents.llm.types import LlmError, Message
from robodojo.errors import ConfigError
from robodojo.robots.config import RobotConfig

IMAGE_CHOICES = ("none", "head", "all")
CHARS_PER_TOKEN = 4


def check_images(value: object, where: str = "images") -> str:
    """``value`` if it is one of :data:`IMAGE_CHOICES`, else a ConfigError naming ``where``."""
    if not isinstance(value, str) or value not in IMAGE_CHOICES:
        raise ConfigError(f"{where} must be one of {', '.join(IMAGE_CHOICES)}, got {value!r}")
    return value


def head_cameras(robot: RobotConfig) -> tuple[str, ...]:
    """The cameras not mounted on a wrist (the head camera), in the robot's order."""
    wrists = {arm.wrist_camera_frame for arm in robot.arms}
    return tuple(cam.name for cam in robot.cameras if cam.frame not in wrists)


def cameras_sent(images: str, robot: RobotConfig, cameras: Sequence[str]) -> tuple[str, ...]:
    """Of ``cameras``, those whose pictures ``images`` lets through."""
    if images == "none":
        return ()
    if images == "head":
        heads = set(head_cameras(robot))
        return tuple(c for c in cameras if c in heads)
    return tuple(cameras)


def check_positive_or_none(value: object, where: str) -> int | None:
    """A positive integer or None; a ConfigError naming ``where`` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where} must be a positive integer or null, got {value!r}")
    return value


@dataclass(frozen=True)
class ContextBudget:
    """The model's context length if known, and how to count an image (see the module docstring)."""

    context_tokens: int | None = None  #: None: unknown, nothing is refused
    image_tokens: int | None = None  #: None: an image counts as its pasted data URL (length / 4)

    def __post_init__(self) -> None:
        check_positive_or_none(self.context_tokens, "context_tokens")
        check_positive_or_none(self.image_tokens, "image_tokens")

    def estimate(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        """The request's size in tokens, estimated (an over-estimate for vision servers when ``image_tokens`` is
        None)."""
        chars = len(json.dumps(list(tools), ensure_ascii=False)) if tools else 0
        image_tokens = 0
        for message in messages:
            content = message.get("content")
            if isinstance(content, str):
                chars += len(content)
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "image_url":
                        url = str(part.get("image_url", {}).get("url", ""))
                        image_tokens += self.image_tokens if self.image_tokens is not None else len(url) // 4
                    else:
                        chars += len(str(part.get("text", "")))
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                chars += len(function.get("name", "")) + len(function.get("arguments", ""))
        return chars // CHARS_PER_TOKEN + image_tokens

    def check(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> None:
        """Raise LlmError (the episode ends as llm_error) when the request would not fit; nothing is sent then."""
        if self.context_tokens is None:
            return
        estimate = self.estimate(messages, tools)
        if estimate <= self.context_tokens:
            return
        has_images = any(
            isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
            for m in messages
        )
        advice = (
            "use --images none or head"
            if has_images
            else "it holds no images; use a model with a longer context (--context-tokens states it)"
        )
        raise LlmError(
            f"request of ~{estimate} tokens exceeds the model's context of {self.context_tokens}: {advice}", attempts=0
        )
