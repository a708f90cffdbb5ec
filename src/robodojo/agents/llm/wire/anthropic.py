"""The Anthropic Messages API (``POST .../messages``, what Claude Code speaks) over the proxy's chat completions.

A request's system blocks and messages become chat messages: text and images (base64 or URL) as content parts,
``tool_use`` blocks as tool calls, ``tool_result`` blocks as tool messages (their images following as the user's,
since a chat tool message carries text only), system messages met mid-conversation as system messages. Its tools
(``input_schema``) become chat functions and ``tool_choice`` its chat equivalent. What chat completions cannot carry
is left out, not faked: thinking blocks and their settings, cache control, effort and context-management options. The
chat reply becomes a message (text, then ``tool_use`` blocks), streamed as the Messages API's events when ``stream``
is set: ``message_start``, each content block's start, one delta and stop, ``message_delta`` with the stop reason and
usage, ``message_stop``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from robodojo.agents.llm.wire.chat import WireError, listed, sse_event

SUFFIX = "/messages"
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn", "content_filter": "refusal"}
INVALID_ARGUMENTS = "invalid_json_arguments"  # the key a call's unparseable arguments are handed back under
_ids = itertools.count(1)


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request for a Messages request (WireError on what is not one)."""
    if not isinstance(body.get("messages"), list):
        raise WireError("expected 'messages': a list")
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _system_text(system)})
    for message in body["messages"]:
        if not isinstance(message, dict):
            raise WireError("every message must be an object")
        _add_message(messages, message)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [_chat_tool(t) for t in listed(body, "tools")]
    tools = [t for t in tools if t is not None]
    if tools:
        chat["tools"] = tools
        chat["tool_choice"] = _tool_choice(body.get("tool_choice"))
    return chat


def message_object(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The Messages API's message for a chat completion answering ``request`` (the Messages request)."""
    choice = chat["choices"][0]
    message = choice["message"]
    content: list[dict[str, Any]] = []
    text = message.get("content")
    if text:
        content.append({"type": "text", "text": text if isinstance(text, str) else json.dumps(text)})
    for call in message.get("tool_calls") or []:
        content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                        "input": _tool_input(call["function"]["arguments"])})  # fmt: skip
    usage = chat.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return {
        "id": f"msg_robodojo_{next(_ids)}", "type": "message", "role": "assistant",
        "model": chat.get("model") or request.get("model"), "content": content,
        "stop_reason": STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn"), "stop_sequence": None,
        "usage": {"input_tokens": usage.get("prompt_tokens", 0) - cached, "cache_read_input_tokens": cached,
                  "output_tokens": usage.get("completion_tokens", 0)},
    }  # fmt: skip


def message_events(message: dict[str, Any]) -> Iterator[bytes]:
    """``message`` as the Messages API streams it."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 0}}
    yield sse_event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            first: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield sse_event("content_block_start", {"type": "content_block_start", "index": index, "content_block": first})
        yield sse_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield sse_event("content_block_stop", {"type": "content_block_stop", "index": index})
    ending = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield sse_event("message_delta", {"type": "message_delta", "delta": ending, "usage": usage})
    yield sse_event("message_stop", {"type": "message_stop"})


def answer(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
    """The message for a chat completion, or its events when the request asked for a stream."""
    message = message_object(chat, request)
    return message_events(message) if request.get("stream") else message


def error(chat_error: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions error body in the Messages API's shape."""
    found = chat_error.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = str(error.get("type") or "api_error")
    return {"type": "error", "error": {"type": kind, "message": str(error.get("message") or chat_error)}}


# -- requests ---------------------------------------------------------------------------------------------------------
def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list) and all(isinstance(b, dict) for b in system):
        return "\n\n".join(str(b.get("text", "")) for b in system if b.get("type") == "text")
    raise WireError("expected 'system': a string or a list of text blocks")


def _add_message(messages: list[dict[str, Any]], message: dict[str, Any]) -> None:
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant", "system"):
        raise WireError(f"message role {role!r} is not one of user, assistant, system")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise WireError("expected a message's 'content': a string or a list of blocks")
    if role == "system":
        messages.append({"role": "system", "content": _system_text(blocks)})
    elif role == "assistant":
        text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        calls = [
            {"id": b.get("id"), "type": "function",
             "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input", {}))}}
            for b in blocks if b.get("type") == "tool_use"
        ]  # fmt: skip
        for b in blocks:
            if b.get("type") not in ("text", "tool_use", "thinking", "redacted_thinking"):
                raise WireError(f"assistant content block type {b.get('type')!r} is not served here")
        reply: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            reply["tool_calls"] = calls
        messages.append(reply)
    else:
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if block.get("type") == "tool_result":
                result = _content_parts(block.get("content", ""))
                text = "\n".join(p["text"] for p in result if p["type"] == "text")
                if block.get("is_error"):
                    text = f"error: {text}"
                messages.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text})
                parts.extend(p for p in result if p["type"] == "image_url")  # the images follow, as the user's
            else:
                parts.extend(_content_parts([block]))
        if parts:
            messages.append({"role": "user", "content": parts})


def _content_parts(content: Any) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise WireError("expected content: a string or a list of blocks")
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image" and isinstance(block.get("source"), dict):
            parts.append({"type": "image_url", "image_url": {"url": _image_url(block["source"])}})
        else:
            raise WireError(f"content block type {kind!r} is not served here")
    return parts


def _image_url(source: dict[str, Any]) -> str:
    if source.get("type") == "base64":
        return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return str(source["url"])
    raise WireError(f"image source type {source.get('type')!r} is not served here")


def _chat_tool(tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        raise WireError("every tool must be an object")
    if "input_schema" not in tool:
        return None  # a server tool (web search, code execution, ...): nothing a chat completion can call
    schema = tool["input_schema"]
    function = {"name": tool.get("name"), "description": tool.get("description", ""), "parameters": schema}
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return {"any": "required", "none": "none"}.get(str(kind), "auto")


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {INVALID_ARGUMENTS: arguments}  # the CLI's check then says so
