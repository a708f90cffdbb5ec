"""The replay server's behaviour flags that reproduce servers as users run them, through the real openai client."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest

from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer, ServerBehaviour
from robodojo.errors import ConfigError

TOOL = {
    "type": "function",
    "function": {"name": "report", "description": "report", "parameters": {"type": "object", "properties": {}}},
}
TOOL_REPLY = {"content": None, "tool_calls": [{"name": "report", "arguments": {"status": "ok"}}]}
USER = [{"role": "user", "content": "call report"}]
# ~4 KB of base64: 1000 tokens when pasted as text, 85 when seen as a picture
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(bytes(3000)).decode()}}


@contextmanager
def serve(replies: list[dict[str, Any]], **behaviour: Any) -> Iterator[tuple[ReplayServer, openai.OpenAI]]:
    script = ReplayScript.parse({"replies": replies, "behaviour": behaviour})
    with ReplayServer(script) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x", timeout=2.0, max_retries=0)
        try:
            yield server, client
        finally:
            client.close()


def chat(client: openai.OpenAI, messages: list[dict[str, Any]], **kw: Any) -> Any:
    return client.chat.completions.create(model="m", messages=messages, **kw)  # type: ignore[call-overload]


def test_tool_choice_required_is_a_500_but_auto_works():
    with serve([TOOL_REPLY], reject_tool_choice_required=True) as (_server, client):
        with pytest.raises(openai.InternalServerError, match="AssertionError"):
            chat(client, USER, tools=[TOOL], tool_choice="required")
        reply = chat(client, USER, tools=[TOOL], tool_choice="auto")
        assert reply.choices[0].message.tool_calls[0].function.name == "report"


def test_tools_without_tool_choice_are_ignored():
    with serve([TOOL_REPLY, TOOL_REPLY], tools_need_tool_choice=True) as (_server, client):
        reply = chat(client, USER, tools=[TOOL])
        message = reply.choices[0].message
        assert not message.tool_calls and "I will call report" in message.content
        assert reply.choices[0].finish_reason == "stop"
        assert chat(client, USER, tools=[TOOL], tool_choice="auto").choices[0].message.tool_calls


def test_tool_role_rejected_or_dropped():
    history = [*USER, {"role": "assistant", "content": ""}, {"role": "tool", "tool_call_id": "c", "content": "SECRET"}]
    with (
        serve([], reject_tool_role=True, echo_model=True) as (_server, client),
        pytest.raises(openai.BadRequestError, match="roles must alternate"),
    ):
        chat(client, history)
    with serve([], drop_tool_role=True, echo_model=True) as (_server, client):
        assert "SECRET" not in chat(client, history).choices[0].message.content
    with serve([], echo_model=True) as (_server, client):
        assert "SECRET" in chat(client, history).choices[0].message.content


def test_null_assistant_content_is_a_500():
    call = {"id": "c", "type": "function", "function": {"name": "report", "arguments": "{}"}}
    history = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    with (
        serve([], reject_null_assistant_content=True, echo_model=True) as (_server, client),
        pytest.raises(openai.InternalServerError, match="NoneType"),
    ):
        chat(client, history)


def test_images_rejected_or_pasted_as_text_against_the_context():
    message = [{"role": "user", "content": [{"type": "text", "text": "what is this"}, IMAGE]}]
    with (
        serve([], reject_images=True, echo_model=True) as (server, client),
        pytest.raises(openai.BadRequestError, match="image input is not supported"),
    ):
        chat(client, message)
    with serve([], echo_model=True) as (server, client):
        seen = chat(client, message)
        assert seen.usage.prompt_tokens < 120 and "<image>" in seen.choices[0].message.content
    with serve([], images_as_text=True, echo_model=True) as (server, client):
        pasted = chat(client, message)
        assert pasted.usage.prompt_tokens > 1000 and "data:image/jpeg;base64," in server.prompts[0]
    with serve([], images_as_text=True, context_tokens=512, echo_model=True) as (server, client):
        with pytest.raises(openai.BadRequestError, match="exceeds the available context size") as info:
            chat(client, message)
        error = info.value.body
        assert error["n_ctx"] == 512 and error["n_prompt_tokens"] > 512 and server.prompts == []
        chat(client, USER)  # a short prompt still fits


def test_context_size_reported_by_props_or_models():
    with serve([], context_tokens=8192, context_report="props", echo_model=True) as (server, client):
        root = server.url.removesuffix("/v1")
        with urllib.request.urlopen(root + "/props", timeout=2) as answer:
            assert json.load(answer)["default_generation_settings"]["n_ctx"] == 8192
    with serve([], context_tokens=4096, context_report="models", echo_model=True) as (server, client):
        assert client.models.list().data[0].model_extra["max_model_len"] == 4096


def test_html_escaped_prompt_is_what_the_model_sees():
    with serve([], html_escape=True, echo_model=True) as (_server, client):
        said = chat(client, [{"role": "user", "content": 'say <ok> & "done"'}]).choices[0].message.content
        assert "&lt;ok&gt; &amp; &quot;done&quot;" in said and "<ok>" not in said


def test_delay_holds_every_request_until_the_client_gives_up():
    with serve([], delay_s=30, echo_model=True) as (_server, client):
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client.with_options(timeout=0.3).models.list()
        with pytest.raises(openai.APITimeoutError):
            chat(client.with_options(timeout=0.3), USER)
        assert time.monotonic() - started < 5
    with serve([], delay_s=0.3, echo_model=True) as (_server, client):
        assert chat(client, USER).choices[0].message.content  # a slow server still answers


def test_echo_model_calls_the_named_or_first_tool():
    other = {**TOOL, "function": {**TOOL["function"], "name": "other"}}
    with serve([], echo_model=True) as (_server, client):
        first = chat(client, USER, tools=[TOOL, other])
        assert first.choices[0].message.tool_calls[0].function.name == "report"
        named = chat(client, USER, tools=[TOOL, other], tool_choice={"type": "function", "function": {"name": "other"}})
        assert named.choices[0].message.tool_calls[0].function.name == "other"
        assert not chat(client, USER, tools=[TOOL], tool_choice="none").choices[0].message.tool_calls


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        ({"context_tokens": -1}, "integer >= 0"),
        ({"context_tokens": True}, "integer >= 0"),
        ({"context_report": "header"}, "none, props, models"),
        ({"context_report": "props"}, "needs context_tokens"),
        ({"delay_s": "long"}, "number >= 0"),
        ({"images_as_text": "yes"}, "true or false"),
    ],
)
def test_bad_new_flags(behaviour, error):
    with pytest.raises(ConfigError, match=error):
        ServerBehaviour.parse(behaviour, "behaviour")


def test_flags_parse_from_a_script_and_empty_replies_need_the_echo_model():
    script = ReplayScript.parse({"replies": [], "behaviour": {"echo_model": True, "context_tokens": 100}})
    assert script.behaviour.echo_model and script.behaviour.context_tokens == 100
    with pytest.raises(ConfigError, match="no replies"):
        ReplayScript.parse({"replies": [], "behaviour": {"html_escape": True}})


def test_v1_only_serves_the_openai_routes_under_v1_only():
    with serve([], v1_only=True, echo_model=True) as (server, client):
        root = server.url.removesuffix("/v1")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(root + "/models", timeout=2)
        assert client.models.list().data[0].id == "replay"
        bare = openai.OpenAI(base_url=root, api_key="x", timeout=2.0, max_retries=0)
        with pytest.raises(openai.NotFoundError):
            chat(bare, USER)
        bare.close()
