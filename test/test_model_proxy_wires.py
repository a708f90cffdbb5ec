"""The model proxy's wire formats, read by the real ``openai`` client over the proxy's Unix socket: chat completions
(whole and streamed) and the Responses API (what Codex CLI speaks), translated to the chat completions the episode's
LLM client makes and back. The episode's side is played by a thread answering each exchange."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.agents.llm.wire import WIRES, WireError
from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy

SOCKET = "model.sock"
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
    proxy = ModelProxy(tmp_path / SOCKET, model="robodojo")
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


def test_an_mcp_servers_namespaced_tools_are_offered_qualified_and_called_back_with_their_namespace(served):
    client, seen, reply = served
    observe = {"type": "function", "name": "observe", "description": "look", "parameters": {"type": "object"}}
    namespace = {"type": "namespace", "name": "mcp__robodojo", "description": "the robot", "tools": [observe]}
    reply(completion(None, [("call_2", "mcp__robodojo__observe", {})]))
    answer = client.responses.create(
        model="robodojo", tools=[namespace],
        input=[
            {"type": "message", "role": "user", "content": "look twice"},
            {"type": "function_call", "call_id": "call_1", "name": "observe", "namespace": "mcp__robodojo",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "head camera, step 0"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
        ],
    )  # fmt: skip
    body = seen[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["mcp__robodojo__observe"]
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "mcp__robodojo__observe"
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "head camera, step 0"}
    assert body["messages"][3]["content"][0]["type"] == "image_url"  # the tool's image, after it
    (call,) = answer.output
    assert (call.name, call.namespace, call.call_id) == ("observe", "mcp__robodojo", "call_2")


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


# -- the Anthropic Messages API (Claude Code) -------------------------------------------------------------------------
TOOLS_ANTHROPIC = [
    {"name": "Bash", "description": "run a command",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"type": "web_search_20250305", "name": "web_search"},
]  # fmt: skip


@pytest.fixture
def messages_client(served, tmp_path) -> Iterator[tuple[anthropic.Anthropic, list[ChatExchange], Callable]]:
    _, seen, reply = served
    http = httpx.Client(transport=httpx.HTTPTransport(uds=str(tmp_path / SOCKET)))
    yield anthropic.Anthropic(base_url="http://sandbox", api_key="sandbox-has-no-key", http_client=http,
                              max_retries=0), seen, reply  # fmt: skip
    http.close()


def test_a_messages_request_becomes_chat_and_the_reply_streams_back_as_messages_events(messages_client):
    client, seen, reply = messages_client
    reply(completion("I look first.", [("toolu_7", "Bash", {"command": "robo status"})]))
    with client.messages.stream(
        model="robodojo", max_tokens=100, tools=TOOLS_ANTHROPIC,
        system=[{"type": "text", "text": "You drive a robot.", "cache_control": {"type": "ephemeral"}}],
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[
            {"role": "user", "content": [
                {"type": "text", "text": "pick the cube"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
        ],
    ) as stream:  # fmt: skip
        events = [event.type for event in stream]
        message = stream.get_final_message()
    body = seen[0].body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == "You drive a robot."
    assert body["messages"][1]["content"][1] == {
        "type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}
    }  # fmt: skip
    assert [t["function"]["name"] for t in body["tools"]] == ["Bash"]  # the server tool is not offered
    assert "thinking" not in body
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "I look first."
    assert (message.content[1].id, message.content[1].name, message.content[1].input) == (
        "toolu_7", "Bash", {"command": "robo status"}
    )  # fmt: skip
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)


def test_tool_results_come_back_as_tool_messages_with_their_images_after_them(messages_client):
    client, seen, reply = messages_client
    reply(completion("done"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    listing = [{"type": "text", "text": "a.png"}, image]
    answer = client.messages.create(
        model="robodojo", max_tokens=100, tools=TOOLS_ANTHROPIC, tool_choice={"type": "any"},
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "two commands"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "false"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": listing},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "exit 1", "is_error": True},
                {"type": "text", "text": "go on"}]},
        ],
    )  # fmt: skip
    body = seen[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool", "user"]
    assert body["messages"][1]["content"] == "two commands"  # the thinking block is the model's own: left out
    assert [c["id"] for c in body["messages"][1]["tool_calls"]] == ["toolu_1", "toolu_2"]
    assert [(m["tool_call_id"], m["content"]) for m in body["messages"][2:4]] == [
        ("toolu_1", "a.png"), ("toolu_2", "error: exit 1")
    ]  # fmt: skip
    assert [p["type"] for p in body["messages"][4]["content"]] == ["image_url", "text"]
    assert body["tool_choice"] == "required"
    assert [b.type for b in answer.content] == ["text"] and answer.stop_reason == "end_turn"


def test_what_is_not_a_messages_request_is_refused_in_the_messages_apis_shape(messages_client):
    client, seen, _ = messages_client
    with pytest.raises(anthropic.BadRequestError, match="image source type 'file'"):
        client.messages.create(
            model="robodojo", max_tokens=10,
            messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}],
        )  # fmt: skip
    assert seen == []


def test_unparseable_tool_arguments_are_handed_back_for_the_cli_to_refuse(messages_client):
    client, _, reply = messages_client
    broken = completion(None, [("toolu_1", "Bash", {})])
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"command": "ls'
    reply(broken)
    answer = client.messages.create(model="robodojo", max_tokens=10, messages=[{"role": "user", "content": "go"}])
    assert answer.content[0].input == {"invalid_json_arguments": '{"command": "ls'}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(
        ["message", "user", "developer", "function_call", "function_call_output", "namespace", "custom", "input_text",
         "input_image", "image", "tool_use", "tool_result", "base64", "text", "tool", "any"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "role", "content", "text", "input", "output", "tools", "name", "namespace",
                         "call_id", "arguments", "source", "image_url", "tool_use_id", "messages", "system"]),
        inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["input", "messages", "tools", "system", "instructions", "tool_choice"]), JSON))
def test_any_json_body_is_translated_or_refused_with_a_wire_error_never_a_crash(body):
    for wire in WIRES:
        with contextlib.suppress(WireError):
            wire.chat_request(body)


def test_a_client_gone_before_its_answer_is_no_error_of_the_proxy(tmp_path, capfd):
    """The CLI killed at the episode's end with a model request waiting: the proxy answers into a closed socket and
    says nothing about it (socketserver would print a BrokenPipeError traceback)."""
    import socket
    import time

    proxy = ModelProxy(tmp_path / "model.sock")
    try:
        for _ in range(3):
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(str(proxy.path))
                client.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                exchange = proxy.pending.get(timeout=10)
            # the client is gone: a big answer cannot go anywhere
            exchange.answer({"error": {"message": "x" * 1_000_000, "type": "upstream_error"}}, 502)
            time.sleep(0.2)
    finally:
        proxy.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
