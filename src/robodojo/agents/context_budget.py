"""Which camera pictures reach the model, and a request-size check against a known context length (issue 13).

``images`` (both agents' config, ``robodojo run --images``) says which cameras' pictures are sent in messages:

- ``all`` (default): every visible camera, as before;
- ``head``: only the head camera (the cameras not mounted on a wrist);
- ``none``: no pictures at all, for text-only models. move_eef still sends its state text; the code-cell agent keeps
  robo.image() and the perception calls for code, but robo.show() is not part of its API and no prompt or tool text
  promises pictures.

The image horizon is separate: a positive number of observations whose pictures stay in the context, or unlimited.
It cannot be 0; ``images: none`` is the one way to send no pictures.

:class:`ContextBudget` holds a context length known for the run (``context_tokens``, ``robodojo run
--context-tokens``, measured by ``robodojo doctor``). With it, :class:`~robodojo.agents.conversation.Conversation`
leaves the oldest exchanges of a long episode out of a request that would not fit with ``reply_reserve_tokens`` to
spare (seed 000's code-cell episodes outgrow an 8k context in about a dozen calls), and refuses a request that cannot
fit even then before it is sent, so a local server with a small context does not answer HTTP 400 after pasting the
images into its prompt. The estimate is cheap:

- text (message text, tool-call arguments, the tool schemas as JSON): characters / 4, scaled by what the server
  reports (:class:`TokenScale`: small models' tokenizers count more tokens than that for code);
- an image: by default the length of its data URL / 4, i.e. what a server that pastes the base64 text into the
  prompt counts (tens of thousands of tokens for one JPEG); with ``image_tokens`` set, that fixed number per image,
  for vision servers that charge a fixed cost per picture (e.g. about 800 for a 640x480 picture on OpenAI models).

The completion's own tokens are not counted in the refusal (servers differ in whether they reserve them); dropping
keeps ``reply_reserve_tokens`` free for them.
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
    """The model's context length if known, how to count an image, and how much room to keep for the reply (see the
    module docstring)."""

    context_tokens: int | None = None  #: None: unknown, nothing is dropped or refused
    image_tokens: int | None = None  #: None: an image counts as its pasted data URL (length / 4)
    reply_reserve_tokens: int = 1024  #: left free for the reply when older turns are dropped
    #: dropping leaves the history this share of its room (the limit less preamble and tools), so the next turns keep
    #: the same prefix for a while
    trim_to_fraction: float = 0.75

    def __post_init__(self) -> None:
        check_positive_or_none(self.context_tokens, "context_tokens")
        check_positive_or_none(self.image_tokens, "image_tokens")
        if (
            isinstance(self.reply_reserve_tokens, bool)
            or not isinstance(self.reply_reserve_tokens, int)
            or (self.reply_reserve_tokens < 0)
        ):
            raise ConfigError(f"reply_reserve_tokens must be an integer >= 0, got {self.reply_reserve_tokens!r}")
        if not isinstance(self.trim_to_fraction, int | float) or not 0.1 <= self.trim_to_fraction <= 1.0:
            raise ConfigError(f"trim_to_fraction must be a number in [0.1, 1], got {self.trim_to_fraction!r}")

    @property
    def history_limit_tokens(self) -> int | None:
        """The estimate above which older turns are dropped: the context less the reply's reserve (None: unknown)."""
        if self.context_tokens is None:
            return None
        return max(1, self.context_tokens - self.reply_reserve_tokens)

    def message_tokens(self, message: Message) -> int:
        """One message's size in tokens, estimated (text / 4 plus its images)."""
        chars = 0
        image_tokens = 0
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

    @staticmethod
    def tools_tokens(tools: Sequence[dict[str, Any]]) -> int:
        """The tool schemas' size in tokens, estimated (their JSON / 4)."""
        return len(json.dumps(list(tools), ensure_ascii=False)) // CHARS_PER_TOKEN if tools else 0

    def estimate(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
        """The request's size in tokens, estimated (an over-estimate for vision servers when ``image_tokens`` is
        None; tokenizers differ, so :class:`TokenScale` corrects it with what the server reports)."""
        return self.tools_tokens(tools) + sum(self.message_tokens(m) for m in messages)

    def check(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = (), scale: float = 1.0) -> int:
        """The request's raw estimate; LlmError (the episode ends as llm_error) when, scaled, it would not fit:
        nothing is sent then."""
        raw = self.estimate(messages, tools)
        estimate = round(raw * scale)
        if self.context_tokens is None or estimate <= self.context_tokens:
            return raw
        has_images = any(
            isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
            for m in messages
        )
        advice = (
            "use --images none or head"
            if has_images
            else "it holds no images and no older turn is left to drop; use a model with a longer context "
            "(--context-tokens states it)"
        )
        raise LlmError(
            f"request of ~{estimate} tokens exceeds the model's context of {self.context_tokens}: {advice}", attempts=0
        )


class TokenScale:
    """Server tokens per estimated token, learnt from the prompt sizes the server reports (one per episode).

    The characters / 4 estimate runs low for small models' tokenizers and for code (measured: SmolLM2 on
    llama-cpp-python counted 1.18x the estimate for the first request and 1.33x for a history of code cells); the
    highest ratio seen is kept, so the estimate errs high from the first reply on.
    """

    MAX = 4.0  #: a bound against a server that reports nonsense

    def __init__(self) -> None:
        self.value = 1.0

    def update(self, estimated_tokens: int, reported_tokens: int) -> None:
        """Learn from one request: its estimate and the prompt tokens the server reported (0: not reported)."""
        if estimated_tokens > 0 and reported_tokens > 0:
            self.value = min(self.MAX, max(self.value, reported_tokens / estimated_tokens))
