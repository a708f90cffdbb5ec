"""A context overflow never ends an episode while something can still give (robodojo.agents.context_fit): the real
openai client against the replay server enforcing a context window, counting more tokens than the client estimates,
and answering as llama.cpp or as OpenAI/vLLM do when a request does not fit."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from robodojo.agents.context_budget import ContextBudget
from robodojo.agents.context_fit import chat_within_context
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.client import LlmClient
from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer
from robodojo.agents.llm.server_errors import ContextOverflow, context_overflow, is_context_error
from robodojo.agents.llm.settings import load_llm_settings
from robodojo.agents.llm.types import LlmError

SYSTEM = {"role": "system", "content": "You operate a robot. " * 10}
OBSERVATION_CHARS = 1200  # ~300 estimated tokens a turn


@contextmanager
def serve(turns: int, **behaviour: Any) -> Iterator[ReplayServer]:
    replies = [{"content": f"step {i}"} for i in range(turns)]
    with ReplayServer(ReplayScript.parse({"replies": replies, "behaviour": behaviour})) as server:
        yield server


def client(server: ReplayServer, answer_tokens: int) -> LlmClient:
    settings = dataclasses.replace(load_llm_settings(), max_output_tokens=answer_tokens, max_retries=0)
    return LlmClient("replay", server.url, "test-key", "replay", settings)


def observation(turn: int, chars: int = OBSERVATION_CHARS) -> dict[str, Any]:
    return {"role": "user", "content": f"observation {turn}: " + "x" * chars}


def run_turns(conversation: Conversation, llm: LlmClient, turns: int) -> list[dict[str, Any]]:
    """Turns of an episode: an observation, one call, the reply kept; each turn's record details."""
    details = []
    for turn in range(turns):
        conversation.add_observation(observation(turn))
        _, reply = chat_within_context(conversation, llm, [], tool_choice=None)
        conversation.add_reply(reply)
        details.append(conversation.turn_details({}))
    return details


def test_an_openai_style_overflow_is_learnt_from_and_the_later_calls_fit_the_first_time():
    turns = 8
    # the server counts 1.5 tokens per estimated token (a chat template, a small model's tokenizer) and reserves the
    # answer inside its 2000 tokens, as OpenAI and vLLM do; it reports no usage, so only its error tells the true size
    behaviour = {"context_tokens": 2000, "token_ratio": 1.5, "context_error_style": "openai", "omit_usage": True}
    with serve(turns, **behaviour) as server:
        llm = client(server, answer_tokens=300)
        conversation = Conversation(None, context=ContextBudget(context_tokens=2000, reply_reserve_tokens=300))
        conversation.add(SYSTEM)
        details = run_turns(conversation, llm, turns)
        assert server.replies_left == 0  # every turn got its reply: nothing ended the episode
        assert len(server.requests) == turns + 1  # one request refused in all: after it, every call fit at once
        overflowed = [d for d in details if "context_overflows" in d]
        assert len(overflowed) == 1 and "did not fit a context of 2000 tokens" in overflowed[0]["context_overflows"][0]
        assert conversation.token_scale == pytest.approx(1.5, abs=0.1)  # the server's ratio, learnt from its numbers
        assert details[-1]["omitted_turns"] > 0
        last = server.requests[-1]
        assert last["max_completion_tokens"] == 300  # the history gave way; the answer kept its length


def test_a_llamacpp_style_overflow_teaches_the_context_length_when_none_was_given():
    turns = 7
    with serve(turns, context_tokens=1500, token_ratio=1.3) as server:  # llama.cpp: n_ctx and n_prompt_tokens
        llm = client(server, answer_tokens=256)
        conversation = Conversation(None, context=ContextBudget(reply_reserve_tokens=256))  # no --context-tokens
        conversation.add(SYSTEM)
        run_turns(conversation, llm, turns)
        assert server.replies_left == 0
        assert len(server.requests) == turns + 1
        assert conversation.context.context_tokens == 1500  # n_ctx, from the error body


def test_the_answer_length_gives_way_when_the_history_cannot():
    # one long observation: nothing older to leave out; 560 server tokens of prompt and 600 asked for the answer do
    # not fit 1000, a shorter answer does
    with serve(1, context_tokens=1000, token_ratio=1.4, context_error_style="openai") as server:
        llm = client(server, answer_tokens=600)
        conversation = Conversation(None)
        conversation.add_observation(observation(0, chars=1560))
        _, reply = chat_within_context(conversation, llm, [], tool_choice=None)
        assert reply.content == "step 0"
        refused, sent = server.requests
        assert refused["max_completion_tokens"] == 600
        assert llm.min_output_tokens <= sent["max_completion_tokens"] < 600
        assert conversation.overflows


def test_a_request_that_can_never_fit_fails_with_the_reason():
    with serve(1, context_tokens=300, context_error_style="openai") as server:
        llm = client(server, answer_tokens=256)
        conversation = Conversation(None)
        conversation.add_observation(observation(0, chars=2000))  # ~500 tokens of prompt alone
        with pytest.raises(LlmError, match="cannot be made to fit the model's context") as info:
            chat_within_context(conversation, llm, [], tool_choice=None)
        assert "maximum context length is 300 tokens" in str(info.value)  # what the server said is kept
        assert len(server.requests) == 1  # learnt once; the shorter request was refused before sending


def test_when_the_answer_would_fall_below_its_floor_nothing_is_sent_and_the_floor_is_named():
    with serve(1, context_tokens=700, context_error_style="openai") as server:
        llm = client(server, answer_tokens=600)
        conversation = Conversation(None)
        conversation.add_observation(observation(0, chars=2000))  # ~500 tokens: 200 left, floor 256
        with pytest.raises(LlmError, match=r"below the floor of 256 \(min_output_tokens"):
            chat_within_context(conversation, llm, [], tool_choice=None)
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "text", "expected"),
    [
        (
            None,
            "This model's maximum context length is 8192 tokens. However, you requested 10240 tokens (8192 in the "
            "messages, 2048 in the completion). Please reduce the length of the messages or completion.",
            ContextOverflow(8192, 8192, 2048),
        ),
        (
            None,
            "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.",
            ContextOverflow(4096, 5000, None),
        ),
        (
            None,
            "'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum context length is 8192 "
            "tokens and your request has 7000 input tokens (2048 > 8192 - 7000).",
            ContextOverflow(8192, 7000, 2048),
        ),
        (
            {"error": {"type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}},
            "the request exceeds the available context size, try increasing it",
            ContextOverflow(8192, 9000, None),
        ),
        (None, "Requested tokens (9000) exceed context window of 8192", ContextOverflow(8192, 9000, None)),
        (None, "prompt is too long: 210000 tokens > 200000 maximum", ContextOverflow(200000, 210000, None)),
        (
            None,
            "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
            ContextOverflow(1048576, 1048577, None),
        ),
    ],
)
def test_the_servers_context_errors_are_recognised_with_their_numbers(body, text, expected):
    assert is_context_error(400, text)
    assert context_overflow(body, text) == expected


def test_other_errors_are_not_context_errors():
    assert not is_context_error(400, "Invalid value for 'reasoning_effort'")
    assert not is_context_error(None, "context length")  # no HTTP answer at all
