"""The conversation history of one episode and its context policy (seed 002 appendix A; DESIGN.md section 5).

The request at turn t is: the preamble (system message, Goal message, optional demonstration), then every earlier
observation, assistant reply and tool result in order, with the current observation last. With ``image_horizon`` = k
the k most recent observation messages keep their images; in older ones every image part is replaced by the text part
``[earlier camera image omitted to save context]``. All text (observation text, camera labels, notes, tool calls,
tool results) is kept whole. ``image_horizon`` None keeps every image. The stored history always holds the full
messages; the policy is applied when a request is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from robodojo.agents.llm.types import ChatReply, Message, ToolCall
from robodojo.errors import ConfigError, InvalidCommandError

V = TypeVar("V")

OMITTED_IMAGE_TEXT = "[earlier camera image omitted to save context]"


@dataclass
class _Entry:
    message: Message
    observation: bool


class Conversation:
    """Messages of one episode; :meth:`request` applies the image horizon."""

    def __init__(self, image_horizon: int | None = 2) -> None:
        if image_horizon is not None and (
            isinstance(image_horizon, bool) or not isinstance(image_horizon, int) or image_horizon < 1
        ):
            raise ConfigError(f"image_horizon must be a positive integer or None (unlimited), got {image_horizon!r}")
        self.image_horizon = image_horizon
        self._entries: list[_Entry] = []

    def add(self, message: Message) -> None:
        """Append a message that is not an observation (system, goal, assistant, tool results, errors)."""
        self._entries.append(_Entry(message, observation=False))

    def add_observation(self, message: Message) -> None:
        """Append an observation user message (its images count against the horizon)."""
        self._entries.append(_Entry(message, observation=True))

    def add_tool_result(self, call_id: str, text: str) -> None:
        """Append the result of one tool call (the chat API needs one per call id)."""
        self.add({"role": "tool", "tool_call_id": call_id, "content": text})

    def accept_tool_call(
        self, reply: ChatReply, validate: Callable[[ToolCall], V], *, no_call_text: str, several_text: str
    ) -> tuple[V | None, list[str]]:
        """The reply's single tool call, validated; or None and the texts already answered to the model.

        Exactly one call is allowed: none gets a user message, several get a tool result each. A call ``validate``
        rejects (InvalidCommandError) gets its message as the tool result. Nothing is executed here.
        """
        if not reply.tool_calls:
            self.add({"role": "user", "content": no_call_text})
            return None, [no_call_text]
        if len(reply.tool_calls) > 1:
            for call in reply.tool_calls:
                self.add_tool_result(call.id, several_text)
            return None, [several_text] * len(reply.tool_calls)
        call = reply.tool_calls[0]
        try:
            return validate(call), []
        except InvalidCommandError as exc:
            self.add_tool_result(call.id, str(exc))
            return None, [str(exc)]

    @property
    def history(self) -> list[Message]:
        """Every message as added, images included."""
        return [e.message for e in self._entries]

    def request(self) -> list[Message]:
        """The messages to send now, with images outside the horizon replaced by the omission text."""
        n_obs = sum(e.observation for e in self._entries)
        keep_from = 0 if self.image_horizon is None else n_obs - self.image_horizon
        out = []
        index = 0
        for entry in self._entries:
            if entry.observation:
                out.append(entry.message if index >= keep_from else without_images(entry.message))
                index += 1
            else:
                out.append(entry.message)
        return out


def without_images(message: Message) -> Message:
    """A copy of ``message`` whose image parts are replaced by the omission text part."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = [
        {"type": "text", "text": OMITTED_IMAGE_TEXT} if part.get("type") == "image_url" else part for part in content
    ]
    return {**message, "content": parts}
