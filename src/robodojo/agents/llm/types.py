"""Message and reply types shared by the LLM client, the replay server, the agents and the episode recorder.

Messages are OpenAI chat-completions dicts (role, content, tool_calls, tool_call_id); images are content parts of
type image_url with a base64 JPEG data URL. Replies are frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robodojo.agents.llm.server_errors import ContextOverflow
from robodojo.errors import RobodojoError

Message = dict[str, Any]
ToolSchema = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model sent it; ``arguments`` is the raw JSON text (it may be invalid JSON)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one call, or a sum of calls. ``output_tokens`` is everything the model wrote and is billed
    for, its ``reasoning_tokens`` (thinking it did not show) included."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost_usd + other.cost_usd,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True)
class AttemptRecord:
    """One HTTP request of a chat() call: how long it took and, if it failed, why (for the episode record)."""

    attempt: int  # 1-based
    latency_s: float  # this request alone, without the backoff before it
    error: str | None = None  # None: it answered
    status: int | None = None  # the HTTP status of a failed request, if it got one


@dataclass(frozen=True)
class ChatReply:
    """The model's answer to one chat request."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    model: str
    finish_reason: str
    latency_s: float
    attempts: int  # 1 + retries
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # the response body, for the episode record
    #: the request body as sent (after the profile's rewrites: messages, tools, tool_choice, ...), for the record
    request: dict[str, Any] = field(default_factory=dict, repr=False)
    #: every attempt of this call, failed ones first; ``latency_s`` above is their total, backoff included
    attempt_log: tuple[AttemptRecord, ...] = ()

    def assistant_message(self) -> Message:
        """This reply as the assistant message to append to the history (content None if it only called tools;
        "" if it called none and said nothing, since the chat API rejects an assistant message with neither)."""
        content = "" if self.content is None and not self.tool_calls else self.content
        message: Message = {"role": "assistant", "content": content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class LlmError(RobodojoError):
    """The model could not be reached, rejected the request, or kept failing after the bounded retries.

    ``request`` is the body that was sent and ``attempt_log`` every attempt, so the record holds failed calls too.
    """

    def __init__(
        self,
        message: str,
        attempts: int,
        *,
        request: dict[str, Any] | None = None,
        attempt_log: tuple[AttemptRecord, ...] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.request = request or {}
        self.attempt_log = attempt_log


class ContextOverflowError(LlmError):
    """The server said the request does not fit its context (HTTP 400 or 500 with a context-length message).

    ``overflow`` holds the numbers it stated; ``max_output_tokens`` is the answer length the request asked for (None:
    not sent) and ``min_output_tokens`` the lowest one the settings allow, so the caller can drop history or lower the
    answer length and send again (:func:`robodojo.agents.context_fit.chat_within_context`).
    """

    def __init__(
        self,
        message: str,
        attempts: int,
        *,
        overflow: ContextOverflow,
        max_output_tokens: int | None,
        min_output_tokens: int,
        request: dict[str, Any] | None = None,
        attempt_log: tuple[AttemptRecord, ...] = (),
    ) -> None:
        super().__init__(message, attempts, request=request, attempt_log=attempt_log)
        self.overflow = overflow
        self.max_output_tokens = max_output_tokens
        self.min_output_tokens = min_output_tokens
