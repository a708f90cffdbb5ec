"""The OpenAI Responses API (``POST .../responses``, what Codex CLI speaks) over the proxy's chat completions.

A request's ``instructions`` and ``input`` items become chat messages and its function tools chat tools; the chat reply
becomes a response object, streamed as the server-sent events the Responses API sends when ``stream`` is set
(``response.created``, each output item added and done, the text as one delta, ``response.completed``). What chat
completions cannot carry is left out, not faked: hosted tools (web search, file search, ...) are dropped from the
tools offered, reasoning items from the history. Freeform ("custom") tools become functions with one string argument,
``input``, and their calls go back as custom tool calls; the functions of a namespace (Codex puts each MCP server's
tools in one, ``mcp__<server>``) become ``<namespace>__<tool>``, and their calls go back with the namespace.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

from robodojo.agents.llm.wire.chat import WireError, listed, sse_event

SUFFIX = "/responses"
CUSTOM_INPUT = "input"  # the one argument a freeform tool's function takes
_ids = itertools.count(1)


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request for a Responses request (WireError on what is not one)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise WireError("expected 'input': a string or a list of items")
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        if not isinstance(item, dict):
            raise WireError("every input item must be an object")
        _add_item(messages, item)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [tool for t in listed(body, "tools") for tool in _chat_tools(t)]
    if tools:
        chat["tools"] = tools
        chat["tool_choice"] = _tool_choice(body.get("tool_choice"))
    return chat


def namespaced_tools(body: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The request's tools inside namespaces (Codex's MCP servers), by the name chat completions calls them:
    ``<namespace>__<tool>`` -> (namespace, tool)."""
    found = {}
    for group in body.get("tools") or []:
        if isinstance(group, dict) and group.get("type") == "namespace":
            for tool in group.get("tools") or []:
                if isinstance(tool, dict) and tool.get("type") == "function":
                    namespace, name = str(group.get("name")), str(tool.get("name"))
                    found[_qualified(namespace, name)] = (namespace, name)
    return found


def custom_tool_names(body: dict[str, Any]) -> frozenset[str]:
    """The request's freeform tools: their calls go back as ``custom_tool_call`` items."""
    tools = body.get("tools") or []
    return frozenset(str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("type") == "custom")


def response_object(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The Responses API's response for a chat completion answering ``request`` (the Responses request)."""
    message = chat["choices"][0]["message"]
    output: list[dict[str, Any]] = []
    n = next(_ids)
    if message.get("content"):
        text = message["content"] if isinstance(message["content"], str) else _text_of(message["content"])
        output.append({
            "type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })  # fmt: skip
    custom, namespaced = custom_tool_names(request), namespaced_tools(request)
    for k, call in enumerate(message.get("tool_calls") or []):
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        if name in namespaced:
            namespace, tool = namespaced[name]
            output.append({
                "type": "function_call", "id": f"fc_{n}_{k}", "call_id": call["id"], "name": tool,
                "namespace": namespace, "arguments": arguments, "status": "completed",
            })  # fmt: skip
        elif name in custom:
            output.append({
                "type": "custom_tool_call", "id": f"ctc_{n}_{k}", "call_id": call["id"], "name": name,
                "input": _custom_input(arguments), "status": "completed",
            })  # fmt: skip
        else:
            output.append({
                "type": "function_call", "id": f"fc_{n}_{k}", "call_id": call["id"], "name": name,
                "arguments": arguments, "status": "completed",
            })  # fmt: skip
    usage = chat.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return {
        "id": f"resp_{n}", "object": "response", "created_at": int(time.time()), "status": "completed",
        "model": chat.get("model") or request.get("model"), "output": output,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("total_tokens", 0),
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": details.get("reasoning_tokens", 0)},
        },
    }  # fmt: skip


def response_events(response: dict[str, Any]) -> Iterator[bytes]:
    """``response`` as the Responses API streams it: created, each output item added and done (a message's text as
    one delta), completed."""
    seq = itertools.count()
    started = {**response, "status": "in_progress", "output": []}
    yield sse_event("response.created", {"type": "response.created", "response": started, "sequence_number": next(seq)})
    for index, item in enumerate(response["output"]):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        yield sse_event(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": added, "sequence_number": next(seq)},
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            for kind, fields in (("delta", {"delta": text}), ("done", {"text": text})):
                event = f"response.output_text.{kind}"
                yield sse_event(event, {"type": event, **common, **fields, "sequence_number": next(seq)})
        yield sse_event(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item, "sequence_number": next(seq)},
        )
    done = {"type": "response.completed", "response": response, "sequence_number": next(seq)}
    yield sse_event("response.completed", done)


def answer(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any] | Iterator[bytes]:
    """The response object for a chat completion, or its events when the request asked for a stream."""
    response = response_object(chat, request)
    return response_events(response) if request.get("stream") else response


def error(chat_error: dict[str, Any]) -> dict[str, Any]:
    """The Responses API's errors have chat completions' shape."""
    return chat_error


# -- requests ---------------------------------------------------------------------------------------------------------
def _add_item(messages: list[dict[str, Any]], item: dict[str, Any]) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role", "user")
        role = "system" if role == "developer" else role
        if role not in ("system", "user", "assistant"):
            raise WireError(f"message role {item.get('role')!r} is not one of developer, system, user, assistant")
        content = item.get("content")
        parts = _chat_parts(content) if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
        if role == "user":
            messages.append({"role": "user", "content": parts})
        else:
            messages.append({"role": role, "content": _text_of(parts)})
    elif kind in ("function_call", "custom_tool_call"):
        if kind == "function_call":
            arguments = item.get("arguments")
        else:
            arguments = json.dumps({CUSTOM_INPUT: item.get("input", "")})
        name = str(item.get("name"))
        if item.get("namespace"):
            name = _qualified(str(item["namespace"]), name)
        function = {"name": name, "arguments": arguments}
        call = {"id": item.get("call_id"), "type": "function", "function": function}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)  # parallel calls, or the text before them
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        parts = _chat_parts(output) if isinstance(output, list) else [{"type": "text", "text": str(output or "")}]
        messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text_of(parts)})
        images = [p for p in parts if p["type"] == "image_url"]
        if images:  # chat completions carries no images in a tool result: they follow as the user's
            messages.append({"role": "user", "content": images})
    elif kind != "reasoning":  # reasoning is the model's own, kept encrypted: nothing a chat model can read
        raise WireError(f"input item type {kind!r} is not served here")


def _chat_parts(content: list[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            raise WireError("every content part must be an object")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            raise WireError(f"content part type {kind!r} is not served here")
    return parts


def _text_of(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text")


def _qualified(namespace: str, name: str) -> str:
    return f"{namespace}__{name}"  # Codex names an MCP server's namespace mcp__<server>: mcp__<server>__<tool>


def _chat_tools(tool: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    if not isinstance(tool, dict):
        raise WireError("every tool must be an object")
    if tool.get("type") == "namespace" and namespace is None:  # one level: the tools of an MCP server, say
        return [t for inner in tool.get("tools") or [] for t in _chat_tools(inner, str(tool.get("name")))]
    if tool.get("type") == "function":
        name = str(tool.get("name"))
        description = str(tool.get("description", ""))
        parameters = tool.get("parameters") or {"type": "object", "properties": {}}
        function = {"name": _qualified(namespace, name) if namespace else name, "description": description}
        return [{"type": "function", "function": {**function, "parameters": parameters}}]
    chat_tool = _custom_function(tool) if namespace is None else None
    return [chat_tool] if chat_tool is not None else []


def _custom_function(tool: dict[str, Any]) -> dict[str, Any] | None:
    if tool.get("type") == "custom":
        parameters = {
            "type": "object", "properties": {CUSTOM_INPUT: {"type": "string", "description": "the tool's whole input"}},
            "required": [CUSTOM_INPUT],
        }  # fmt: skip
        function = {"name": tool.get("name"), "description": tool.get("description", ""), "parameters": parameters}
        return {"type": "function", "function": function}
    return None  # hosted tools: nothing a chat completion can call


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice if choice in ("auto", "required", "none") else "auto"


def _custom_input(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments  # the model wrote the input itself: it is the input
    return str(value.get(CUSTOM_INPUT, "")) if isinstance(value, dict) else str(value)
