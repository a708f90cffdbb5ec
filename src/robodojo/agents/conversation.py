"""The conversation history of one episode and its context policy (seed 002 appendix A; DESIGN.md section 5).

The request at turn t is: the preamble (system message, Goal message, optional demonstration), then every earlier
observation, assistant reply and tool result in order, with the current observation last. With ``image_horizon`` = k
the k most recent observation messages keep their images; in older ones every image part is replaced by the text part
``[earlier camera image omitted to save context]``. All text (observation text, camera labels, notes, tool calls,
tool results) is kept whole. ``image_horizon`` None keeps every image. The stored history always holds the full
messages; the policy is applied when a request is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from robodojo.agents.llm.types import ChatReply, Message, ToolCall
from robodojo.errors import ConfigError

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

    def only_tool_call(self, reply: ChatReply, *, no_call_text: str, several_text: str) -> ToolCall | None:
        """The reply's single tool call; or None after answering the model that it must make exactly one (a user
        message when it made none, a tool result for each call when it made several). Nothing is executed."""
        if not reply.tool_calls:
            self.add({"role": "user", "content": no_call_text})
            return None
        if len(reply.tool_calls) > 1:
            for call in reply.tool_calls:
                self.add_tool_result(call.id, several_text)
            return None
        return reply.tool_calls[0]

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
