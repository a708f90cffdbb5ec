"""The model proxy's wire formats, read by the real ``openai`` client over the proxy's Unix socket: chat completions
(whole and streamed) and the Responses API (what Codex CLI speaks), translated to the chat completions the episode's
LLM client makes and back. The episode's side is played by a thread answering each exchange."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest

from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy

TOOLS_RESPONSES = [
    {"type": "function", "name": "exec_command", "description": "run", "strict": False,
     "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
    {"type": "custom", "name": "apply_patch", "description": "patch files", "format": {"type": "text"}},
    {"type": "web_search", "external_web_access": True},
    {"type": "namespace", "name": "multi_agent_v1", "tools": []},
]  # fmt: skip


def completion(content: str | None, calls: list[tuple[str, str, dict[str, Any]]] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "upstream-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                  "completion_tokens_details": {"reasoning_tokens": 3}},
    }  # fmt: skip


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[openai.OpenAI, list[ChatExchange], Callable[[dict[str, Any]], None]]]:
    """The real openai client on the proxy's socket; the episode side answers each exchange with the next reply."""
    proxy = ModelProxy(tmp_path / "model.sock", model="robodojo")
    seen: list[ChatExchange] = []
    replies: list[dict[str, Any]] = []
    stop = threading.Event()

    def episode() -> None:
        while not stop.is_set():
            try:
                exchange = proxy.pending.get(timeout=0.1)
            except Exception:  # queue.Empty
                continue
            seen.append(exchange)
            exchange.answer(replies.pop(0))

    thread = threading.Thread(target=episode, daemon=True)
    thread.start()
    http = httpx.Client(transport=httpx.HTTPTransport(uds=str(proxy.path)))
    client = openai.OpenAI(base_url="http://sandbox/v1", api_key="sandbox-has-no-key", http_client=http, max_retries=0)
    try:
        yield client, seen, replies.append
    finally:
        stop.set()
        thread.join(timeout=5)
        http.close()
        proxy.close()


def test_chat_completions_stream_to_the_same_message_and_tool_calls(served):
    client, seen, reply = served
    reply(completion("looking", [("call_1", "bash", {"command": "robo obs"})]))
    stream = client.chat.completions.create(
        model="robodojo", messages=[{"role": "user", "content": "go"}], stream=True,
        stream_options={"include_usage": True},
        tools=[{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
    )  # fmt: skip
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert text == "looking"
    assert [(t.id, t.function.name, json.loads(t.function.arguments)) for t in calls] == [
        ("call_1", "bash", {"command": "robo obs"})
    ]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 18
    assert seen[0].body["messages"] == [{"role": "user", "content": "go"}]


def test_a_responses_request_becomes_chat_and_the_reply_streams_back_as_responses_events(served):
    client, seen, reply = served
    reply(completion("I look first.", [("call_7", "exec_command", {"cmd": "robo status"})]))
    events = list(
        client.responses.create(
            model="robodojo", stream=True, instructions="You drive a robot.", tools=TOOLS_RESPONSES,
            input=[
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be careful"}]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "pick the cube"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            ],
        )
    )  # fmt: skip
    body = seen[0].body
    assert [m["role"] for m in body["messages"]] == ["system", "system", "user"]
    assert body["messages"][1]["content"] == "be careful"
    assert body["messages"][2]["content"][1] == {
        "type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}
    }  # fmt: skip
    # the function and the freeform tool are offered; hosted tools and namespaces are not
    assert [t["function"]["name"] for t in body["tools"]] == ["exec_command", "apply_patch"]
    assert body["tools"][1]["function"]["parameters"]["required"] == ["input"]
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    done = events[-1].response
    assert done.output[0].type == "message" and done.output[0].content[0].text == "I look first."
    call = done.output[1]
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
        "function_call", "call_7", "exec_command", {"cmd": "robo status"}
    )  # fmt: skip
    assert (done.usage.input_tokens, done.usage.output_tokens) == (11, 7)
    assert done.usage.output_tokens_details.reasoning_tokens == 3
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "I look first."


def test_a_tool_round_trip_and_freeform_tools_keep_their_call_ids(served):
    client, seen, reply = served
    reply(completion(None, [("call_9", "apply_patch", {"input": "*** Begin Patch\n*** End Patch"})]))
    answer = client.responses.create(
        model="robodojo", tools=TOOLS_RESPONSES,
        input=[
            {"type": "message", "role": "user", "content": "go"},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": '{"cmd": "ls"}'},
            {"type": "function_call", "call_id": "call_2", "name": "exec_command", "arguments": '{"cmd": "pwd"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "function_call_output", "call_id": "call_2", "output": "/home/agent"},
            {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "call_3", "output": "applied"},
        ],
    )  # fmt: skip
    messages = seen[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_1", "call_2"]  # parallel calls: one message
    assert json.loads(messages[4]["tool_calls"][0]["function"]["arguments"]) == {"input": "*** Begin Patch"}
    assert [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"] == [
        ("call_1", "a.txt"), ("call_2", "/home/agent"), ("call_3", "applied")
    ]  # fmt: skip
    (call,) = answer.output  # not streamed: the response object itself
    assert (call.type, call.call_id, call.input) == ("custom_tool_call", "call_9", "*** Begin Patch\n*** End Patch")


@pytest.mark.parametrize(
    "body, why",
    [
        ({"input": 5}, "'input'"),
        ({"input": [{"type": "computer_call", "call_id": "c"}]}, "computer_call"),
        ({"input": [{"type": "message", "role": "tool", "content": "x"}]}, "role"),
        ({"input": [{"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
         "input_file"),
        ({"input": "go", "tools": ["exec"]}, "tool"),
    ],
)  # fmt: skip
def test_what_is_not_a_responses_request_is_refused_and_never_reaches_the_episode(served, body, why):
    client, seen, _ = served
    with pytest.raises(openai.BadRequestError, match=why):
        client.post("/responses", body={"model": "robodojo", **body}, cast_to=httpx.Response)
    assert seen == []
