"""The conversation history of one episode and its context policy (seed 002 appendix A; DESIGN.md section 5).

The request at turn t is: the preamble (system message, Goal message, optional demonstration), then every earlier
observation, assistant reply and tool result in order, with the current observation last. With ``image_horizon`` = k
the k most recent observation messages keep their images; in older ones every image part is replaced by the text part
``[earlier camera image omitted to save context]``. All text (observation text, camera labels, notes, tool calls,
tool results) is kept whole, the model's own within its text limits (below). ``image_horizon`` None keeps every
image; it is never 0: a run without pictures adds none (``images: none``, :mod:`robodojo.agents.context_budget`).
The stored history always holds the full messages; the policy is applied when a request is built.

When the model's context length is known (:class:`~robodojo.agents.context_budget.ContextBudget`), a request that
would not fit leaves out the oldest exchanges (an observation or a reply with its tool results) after the preamble,
which says how many are left out; the latest exchange is always sent. Dropping leaves the history only a share of its
room (``trim_to_fraction``) and never takes an exchange back, so the next requests share their prefix (a local
server's prompt cache keeps working). When the server still says a request does not fit (the estimate runs low for
its tokenizer or chat template), :func:`robodojo.agents.context_fit.chat_within_context` teaches the conversation
the true size (:meth:`Conversation.learn_overflow`) and sends it again, shorter.

What the model wrote is kept as it was used, within :mod:`robodojo.agents.text_limits`: a reply's text is cleaned and
cut, the free-text arguments of its valid tool call are replaced by what was used (the call's arguments re-serialized
only when something changed or they were longer than their bound), and the raw arguments of a call longer than
``max_arguments_chars`` (a refused one: a valid call fits once re-serialized) keep only their head and tail, so one
2 MB ``targets`` object is not re-sent with every later request. The model is told in the next tool result (or user
message) what was cut; :attr:`Conversation.cleaned` holds the flags of the last reply for the turn record.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from robodojo.agents.context_budget import CHARS_PER_TOKEN, ContextBudget, TokenScale
from robodojo.agents.llm.types import ChatReply, ContextOverflowError, Message, ToolCall
from robodojo.agents.text_limits import (
    INVISIBLE,
    MAX_QUOTED_CHARS,
    CleanText,
    TextLimits,
    clean_text,
    default_text_limits,
)
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.text import trim_text


class CheckedCall(Protocol):
    """What a tool-call validator returns: the arguments as used and the free-text ones it changed."""

    @property
    def arguments(self) -> Mapping[str, Any]: ...

    @property
    def cleaned(self) -> Mapping[str, CleanText]: ...


V = TypeVar("V", bound=CheckedCall)

OMITTED_IMAGE_TEXT = "[earlier camera image omitted to save context]"
OMITTED_TURNS_TEXT = (
    "[The oldest {n} exchange(s) of this episode are left out of this request to fit the model's context of "
    "{context} tokens; the most recent ones follow. The robot's state is as the latest messages report it.]"
)


@dataclass
class _Entry:
    message: Message
    observation: bool


class Conversation:
    """Messages of one episode; :meth:`request` applies the image horizon."""

    def __init__(
        self,
        image_horizon: int | None = 2,
        text_limits: TextLimits | None = None,
        context: ContextBudget | None = None,
        *,
        max_arguments_chars: int | None = None,
    ) -> None:
        """``context``: the model's context length, if known: older exchanges are left out of a request that would
        not fit, and a request that cannot fit even then is refused (LlmError) before it is sent.
        ``max_arguments_chars``: the longest raw arguments of a tool call kept in the history (head and tail); by
        default ``text_limits.max_arguments_chars``, which holds a code cell's whole code; an agent whose calls are
        small passes its own (move_eef: ``text_limits.max_call_chars``)."""
        if image_horizon is not None and (
            isinstance(image_horizon, bool) or not isinstance(image_horizon, int) or image_horizon < 1
        ):
            raise ConfigError(f"image_horizon must be a positive integer or None (unlimited), got {image_horizon!r}")
        self.image_horizon = image_horizon
        self.text_limits = text_limits or default_text_limits()
        self.context = context or ContextBudget()
        self.max_arguments_chars = max_arguments_chars or self.text_limits.max_arguments_chars
        self._entries: list[_Entry] = []
        self._scale = TokenScale()
        self._last_estimate = 0  # the last request's raw estimate, to learn the scale from the reply's usage
        self._dropped = 0  # exchanges left out; it only grows, so the requests of later turns share their prefix
        #: how many of the oldest exchanges the last request left out to fit the context
        self.omitted_turns = 0
        self._notices: list[str] = []  # what was cut from the last reply, told with the next tool result
        #: free text of the last reply that was cleaned or cut: "content" or the argument's name -> the record's flag
        self.cleaned: dict[str, dict[str, Any]] = {}
        #: what the server said about requests of this turn that did not fit its context (for the turn record)
        self.overflows: list[str] = []
        # learnt from a context overflow: the answer length asked for (None: the client's) and its floor
        self._answer_default: int | None = None
        self._answer_floor: int | None = None

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
        self._scale.update(self._last_estimate, reply.usage.input_tokens)
        self.cleaned, self._notices = {}, []
        message = reply.assistant_message()
        if message.get("content"):
            content = self._clean("content", message["content"], limits.max_content_chars, "your reply's text")
            message["content"] = content
        for entry in message.get("tool_calls", []):
            function = entry["function"]
            function["name"] = clean_text(function["name"], MAX_QUOTED_CHARS).text
            function["arguments"] = self._bound_arguments(function["arguments"])
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
            self._tell_bounded(reply.tool_calls)
            return None, [self.add_tool_result(call.id, several_text) for call in reply.tool_calls]
        call = reply.tool_calls[0]
        try:
            valid = validate(call, self.text_limits)
        except InvalidCommandError as exc:
            self._tell_bounded(reply.tool_calls)
            return None, [self.add_tool_result(call.id, str(exc))]
        for name, cleaned in valid.cleaned.items():
            self._record(name, cleaned, f"'{name}'")
        # Kept as used: re-serialized when free text changed, the JSON was only leniently valid (raw control
        # characters, which a strict server may refuse when the history is sent back) or longer than the bound
        # (padding: a valid call's values are bounded by its validator), else exactly as sent.
        long = len(call.arguments) > self.max_arguments_chars
        resend = bool(valid.cleaned) or long or not _strict_json(call.arguments)
        self._use_arguments(call.id, json.dumps(dict(valid.arguments), ensure_ascii=False) if resend
                            else call.arguments)  # fmt: skip
        return valid, []

    def turn_details(self, details: dict[str, Any]) -> dict[str, Any]:
        """``details`` for the turn record, with ``text_limits`` (the flags of the last reply's cleaned or cut text)
        and ``omitted_turns`` (exchanges the request left out to fit the context), each when there is one."""
        extra: dict[str, Any] = {}
        if self.cleaned:
            extra["text_limits"] = dict(self.cleaned)
        if self.omitted_turns:
            extra["omitted_turns"] = self.omitted_turns
        if self.overflows:
            extra["context_overflows"] = list(self.overflows)
        return {**details, **extra} if extra else details

    def _bound_arguments(self, arguments: str) -> str:
        """A call's raw arguments as stored until validated: invisible characters removed, then head and tail of at
        most ``max_arguments_chars``."""
        return trim_text(INVISIBLE.sub("", arguments), self.max_arguments_chars)

    def _tell_bounded(self, calls: Sequence[ToolCall]) -> None:
        """Refused calls stay in the history as :meth:`add_reply` bounded them: tell the model which were cut."""
        for call in calls:
            if len(call.arguments) > self.max_arguments_chars:
                bounded = CleanText("", len(call.arguments), 0, self.max_arguments_chars)
                self._record("arguments", bounded, "the arguments of your tool call (in this chat)")

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

    def request(self, tools: Sequence[dict[str, Any]] = ()) -> list[Message]:
        """The messages to send now: images outside the horizon replaced by the omission text and, when the context
        length is known, the oldest exchanges left out until the request fits with room for the reply. LlmError
        (nothing sent) when even the preamble and the latest exchange do not fit."""
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
        if self.context.context_tokens is None:  # nothing to fit: no estimate to make
            return out
        out = self._fit(out, tools)
        self._last_estimate = self.context.check(out, tools, self._scale.value)  # one pass: refusal and scale
        return out

    @property
    def token_scale(self) -> float:
        """Server tokens per estimated token, as learnt from usage and context errors (>= 1)."""
        return self._scale.value

    @property
    def at_minimum(self) -> bool:
        """Whether the last request left out every exchange it may (the preamble and the latest one remain)."""
        return self._dropped >= len(self._exchange_starts()) - 1

    def learn_overflow(
        self, error: ContextOverflowError, sent: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> str:
        """Learn from a server's "does not fit" answer to ``sent``: its prompt count scales the estimate, its context
        length becomes the budget's (the size that failed, when it states none), and the answer length and its floor
        are kept for :meth:`answer_tokens`. The next :meth:`request` then leaves out more. Returns one line for the
        record."""
        o = error.overflow
        raw = self.context.estimate(sent, tools)
        answer = error.max_output_tokens if error.max_output_tokens is not None else o.completion_tokens
        context = o.context_tokens
        prompt = o.prompt_tokens
        if prompt is None and context is not None:
            prompt = context - (o.completion_tokens or 0) + 1  # at least this much, or it would have fit
        if prompt is not None:
            self._scale.update(raw, prompt)
        if context is None:  # what was sent did not fit: the context is smaller than that
            context = max(1, math.ceil(raw * self._scale.value) - 1)
        if self.context.context_tokens is None or context < self.context.context_tokens:
            self.context = dataclasses.replace(self.context, context_tokens=context)
        self._answer_default, self._answer_floor = answer, error.min_output_tokens
        said = f"~{raw} estimated, {o.prompt_tokens} counted" if o.prompt_tokens else f"~{raw} estimated"
        line = (
            f"did not fit a context of {o.context_tokens or 'unknown'} tokens ({said}, answer {answer}); "
            f"token scale now {self._scale.value:.2f}"
        )
        self.overflows.append(line)
        return line

    def answer_tokens(self) -> tuple[int | None, int]:
        """(answer length to send, room the last request left) after a context overflow taught the server's counts:
        the answer length the client asked for, lowered to what the context has room for next to the last request
        (never below the floor, min_output_tokens); (None, room) when the client's own needs no change."""
        context = self.context.context_tokens
        if self._answer_default is None or self._answer_floor is None or context is None:
            return None, context or 0
        room = context - math.ceil(self._last_estimate * self._scale.value)
        if room >= self._answer_default:
            return None, room
        return max(room, self._answer_floor), room

    @property
    def answer_floor(self) -> int | None:
        """The lowest answer length a context overflow may lower the answer to (None: no overflow yet)."""
        return self._answer_floor

    def _exchange_starts(self) -> list[int]:
        """Where each exchange begins: an observation, or a reply that no observation leads (code cells). Tool
        results and error messages stay with the reply before them, as the chat API needs."""
        starts = []
        after_observation = False
        for i, entry in enumerate(self._entries):
            if (entry.observation or entry.message.get("role") == "assistant") and not after_observation:
                starts.append(i)
            after_observation = entry.observation
        return starts

    def _fit(self, messages: list[Message], tools: Sequence[dict[str, Any]]) -> list[Message]:
        self.omitted_turns = 0
        limit = self.context.history_limit_tokens
        starts = self._exchange_starts()
        if limit is None or len(starts) < 2:
            return messages
        sizes = [self.context.message_tokens(m) for m in messages]
        note_tokens = len(OMITTED_TURNS_TEXT) // CHARS_PER_TOKEN + 8  # the note on what is left out, numbers filled in
        fixed = self.context.tools_tokens(tools) + sum(sizes[: starts[0]]) + note_tokens
        scale = self._scale.value

        def estimate(dropped: int) -> float:
            return (fixed + sum(sizes[starts[dropped] :])) * scale

        dropped = min(self._dropped, len(starts) - 1)
        if estimate(dropped) > limit:
            # the margin is a share of the room the history has beside the preamble and tools, not of the context
            low_water = fixed * scale + (limit - fixed * scale) * self.context.trim_to_fraction
            while dropped < len(starts) - 1 and estimate(dropped) > low_water:
                dropped += 1
        self._dropped = self.omitted_turns = dropped
        if not dropped:
            return messages
        note = OMITTED_TURNS_TEXT.format(n=dropped, context=self.context.context_tokens)
        preamble = list(messages[: starts[0]]) or [{"role": "user", "content": ""}]
        preamble[-1] = with_note(preamble[-1], note)  # no message of its own: some templates need roles alternating
        return preamble + messages[starts[dropped] :]


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


def with_note(message: Message, note: str) -> Message:
    """A copy of ``message`` with ``note`` appended to its text (a text part when its content is a list)."""
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": note}]}
    return {**message, "content": f"{content}\n\n{note}" if content else note}
