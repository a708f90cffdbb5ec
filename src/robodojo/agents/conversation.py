"""The conversation history of one episode and its context policy (seed 002 appendix A; DESIGN.md section 5).

The request at turn t is: the preamble (system message, Goal message, optional demonstration), then every earlier
observation, assistant reply and tool result in order, with the current observation last. With ``image_horizon`` = k
the k most recent observation messages keep their images; in older ones every image part is replaced by the text part
``[earlier camera image omitted to save context]``. All text (observation text, camera labels, notes, tool calls,
tool results) is kept whole, the model's own within its text limits (below). ``image_horizon`` None keeps every
image; it is never 0: a run without pictures adds none (``images: none``, :mod:`robodojo.agents.context_budget`).
The stored history always holds the full messages; the policy is applied when a request is built.

What the model wrote is kept as it was used, within :mod:`robodojo.agents.text_limits`: a reply's text is cleaned and
cut, the free-text arguments of its valid tool call are replaced by what was used (the call's arguments re-serialized
only when something changed), and the raw arguments of a refused call keep their head and tail. The model is told in
the next tool result (or user message) what was cut; :attr:`Conversation.cleaned` holds the flags of the last reply
for the turn record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from robodojo.agents.code_cell.kernel_main import trim_text
from robodojo.agents.llm.types import ChatReply, Message, ToolCall
from robodojo.agents.text_limits import MAX_QUOTED_CHARS, CleanText, TextLimits, clean_text, default_text_limits
from robodojo.errors import ConfigError, InvalidCommandError


class CheckedCall(Protocol):
    """What a tool-call validator returns: the arguments as used and the free-text ones it changed."""

    @property
    def arguments(self) -> Mapping[str, Any]: ...

    @property
    def cleaned(self) -> Mapping[str, CleanText]: ...


V = TypeVar("V", bound=CheckedCall)

OMITTED_IMAGE_TEXT = "[earlier camera image omitted to save context]"


@dataclass
class _Entry:
    message: Message
    observation: bool


class Conversation:
    """Messages of one episode; :meth:`request` applies the image horizon."""

    def __init__(self, image_horizon: int | None = 2, text_limits: TextLimits | None = None) -> None:
        if image_horizon is not None and (
            isinstance(image_horizon, bool) or not isinstance(image_horizon, int) or image_horizon < 1
        ):
            raise ConfigError(f"image_horizon must be a positive integer or None (unlimited), got {image_horizon!r}")
        self.image_horizon = image_horizon
        self.text_limits = text_limits or default_text_limits()
        self._entries: list[_Entry] = []
        self._notices: list[str] = []  # what was cut from the last reply, told with the next tool result
        #: free text of the last reply that was cleaned or cut: "content" or the argument's name -> the record's flag
        self.cleaned: dict[str, dict[str, Any]] = {}

    def add(self, message: Message) -> None:
        """Append a message that is not an observation (system, goal, assistant, tool results, errors)."""
        self._entries.append(_Entry(message, observation=False))

    def add_observation(self, message: Message) -> None:
        """Append an observation user message (its images count against the horizon)."""
        self._entries.append(_Entry(message, observation=True))

    def add_tool_result(self, call_id: str, text: str) -> str:
        """Append the result of one tool call (the chat API needs one per call id), with the notices of what was cut
        from the reply; returns the text as added."""
        text = self._with_notices(text)
        self.add({"role": "tool", "tool_call_id": call_id, "content": text})
        return text

    def add_reply(self, reply: ChatReply) -> None:
        """Append the model's reply as the assistant message, its text cleaned and cut and the raw arguments of its
        tool calls bounded (a valid call's are replaced by what was used in :meth:`accept_tool_call`)."""
        limits = self.text_limits
        self.cleaned, self._notices = {}, []
        message = reply.assistant_message()
        if message.get("content"):
            content = self._clean("content", message["content"], limits.max_content_chars, "your reply's text")
            message["content"] = content
        for entry in message.get("tool_calls", []):
            function = entry["function"]
            function["name"] = clean_text(function["name"], MAX_QUOTED_CHARS).text
            function["arguments"] = trim_text(clean_text(function["arguments"], len(function["arguments"])).text,
                                              limits.max_arguments_chars)  # fmt: skip
        self.add(message)

    def accept_tool_call(
        self,
        reply: ChatReply,
        validate: Callable[[ToolCall, TextLimits], V],
        *,
        no_call_text: str,
        several_text: str,
    ) -> tuple[V | None, list[str]]:
        """The reply's single tool call, validated against the text limits; or None and the texts already answered to
        the model. Call after :meth:`add_reply`.

        Exactly one call is allowed: none gets a user message, several get a tool result each. A call ``validate``
        rejects (InvalidCommandError) gets its message as the tool result. A valid call whose free text was cleaned
        or cut is kept in the history as used. Nothing is executed here.
        """
        if not reply.tool_calls:
            text = self._with_notices(no_call_text)
            self.add({"role": "user", "content": text})
            return None, [text]
        if len(reply.tool_calls) > 1:
            return None, [self.add_tool_result(call.id, several_text) for call in reply.tool_calls]
        call = reply.tool_calls[0]
        try:
            valid = validate(call, self.text_limits)
        except InvalidCommandError as exc:
            return None, [self.add_tool_result(call.id, str(exc))]
        for name, cleaned in valid.cleaned.items():
            self._record(name, cleaned, f"'{name}'")
        # Kept as used: re-serialized when free text changed or the JSON was only leniently valid (raw control
        # characters, which a strict server may refuse when the history is sent back), else exactly as sent
        # (add_reply may have bounded it).
        resend = bool(valid.cleaned) or not _strict_json(call.arguments)
        self._use_arguments(call.id, json.dumps(dict(valid.arguments), ensure_ascii=False) if resend
                            else call.arguments)  # fmt: skip
        return valid, []

    def with_text_flags(self, details: dict[str, Any]) -> dict[str, Any]:
        """``details`` for the turn record, with ``text_limits``: the flags of the last reply's cleaned or cut text."""
        return {**details, "text_limits": dict(self.cleaned)} if self.cleaned else details

    def _clean(self, name: str, text: str, max_chars: int, what: str) -> str:
        cleaned = clean_text(text, max_chars)
        if cleaned.changed:
            self._record(name, cleaned, what)
        return cleaned.text

    def _record(self, name: str, text: CleanText, what: str) -> None:
        self.cleaned[name] = text.record()
        notice = text.notice(what)
        if notice:
            self._notices.append(notice)

    def _with_notices(self, text: str) -> str:
        if not self._notices:
            return text
        notices, self._notices = self._notices, []
        return f"{text}\n[{'; '.join(notices)}]"

    def _use_arguments(self, call_id: str, arguments: str) -> None:
        """Replace the stored arguments of the last reply's call ``call_id`` with the ones used."""
        for entry in reversed(self._entries):
            calls = entry.message.get("tool_calls") if entry.message.get("role") == "assistant" else None
            if calls is None:
                continue
            for stored in calls:
                if stored["id"] == call_id:
                    stored["function"]["arguments"] = arguments
            return

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


def _strict_json(text: str) -> bool:
    """Whether ``text`` (a tool call's arguments) is JSON without raw control characters in its strings."""
    try:
        json.loads(text or "{}")
    except (ValueError, RecursionError):
        return False
    return True


def without_images(message: Message) -> Message:
    """A copy of ``message`` whose image parts are replaced by the omission text part."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = [
        {"type": "text", "text": OMITTED_IMAGE_TEXT} if part.get("type") == "image_url" else part for part in content
    ]
    return {**message, "content": parts}
