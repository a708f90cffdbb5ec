"""OpenAI chat completions (``POST .../chat/completions``), the proxy's own wire format, and its streamed form: a
completion sent as the ``chat.completion.chunk`` server-sent events of ``stream: true`` (its text as one delta, its
tool calls whole, the finish reason, the usage when ``stream_options.include_usage`` asks, then ``[DONE]``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from robodojo.errors import RobodojoError

SUFFIX = "/chat/completions"


class WireError(RobodojoError):
    """A request that is not one of its API's (answered 400 with this text)."""


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """The request itself, checked: chat completions need ``messages``."""
    if not isinstance(body.get("messages"), list):
        raise WireError("expected a JSON object with 'messages'")
    return body


def listed(body: dict[str, Any], key: str) -> list[Any]:
    """``body[key]`` when it is a list, [] when absent or empty (WireError on anything else)."""
    value = body.get(key) or []
    if not isinstance(value, list):
        raise WireError(f"expected {key!r}: a list")
    return value


def sse_event(event: str | None, data: Any) -> bytes:
    """One server-sent event (``event:`` only when named; chat completions' are not)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def completion_chunks(completion: dict[str, Any], request: dict[str, Any]) -> Iterator[bytes]:
    """A chat completion as the events of its stream."""
    common = {
        "id": completion.get("id", "robodojo"), "object": "chat.completion.chunk",
        "created": completion.get("created", 0), "model": completion.get("model"),
    }  # fmt: skip
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": k, **call} for k, call in enumerate(message["tool_calls"])]
    yield sse_event(None, {**common, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}
    yield sse_event(None, {**common, "choices": [finish]})
    if (request.get("stream_options") or {}).get("include_usage") and completion.get("usage"):
        yield sse_event(None, {**common, "choices": [], "usage": completion["usage"]})
    yield sse_event(None, "[DONE]")


def answer(completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
    """The completion itself, or its stream when the request asked for one."""
    return completion_chunks(completion, request) if request.get("stream") else completion


def error(chat_error: dict[str, Any]) -> dict[str, Any]:
    """Chat completions' own error body."""
    return chat_error
