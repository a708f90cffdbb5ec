"""One LLM call of an episode that a context overflow does not end while something can still give.

The conversation's size estimate (characters / 4, scaled by what the server reported so far) can run low: chat
templates add tokens, escaping lengthens code, small models' tokenizers count more. When the server then answers that
the request does not fit its context (a :class:`~robodojo.agents.llm.types.ContextOverflowError`; the patterns of
OpenAI, vLLM, llama.cpp, llama-cpp-python, Anthropic and Gemini are in
:mod:`robodojo.agents.llm.server_errors`), :func:`chat_within_context`:

1. teaches the conversation the true size (:meth:`~robodojo.agents.conversation.Conversation.learn_overflow`): the
   ratio of the server's prompt count to the estimate scales every later estimate, and the context length it states
   (or, when it states none, the size that failed) becomes the budget, so later calls fit the first time;
2. sends the request again: older exchanges are left out to fit the learnt size, and once nothing more can be left
   out, the answer length (max_tokens) is lowered to the room that is left, never below the floor
   (``min_output_tokens`` in config/llm.yaml);
3. fails with the reason only when nothing can give: the history at its minimum and the answer length at its floor,
   or a server that refuses a request identical to one it refused already.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robodojo.agents.base import LlmCaller
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.types import ChatReply, ContextOverflowError, LlmError, Message

#: retries after context overflows in one call; each must send a shorter request, so a few suffice (the first learns
#: the size, a second covers an estimate still low after scaling)
MAX_OVERFLOW_RETRIES = 4


def chat_within_context(
    conversation: Conversation,
    llm: LlmCaller,
    tools: Sequence[dict[str, Any]],
    *,
    tool_choice: str | dict | None = "required",
) -> tuple[list[Message], ChatReply]:
    """The request sent and the model's reply; see the module docstring for what happens when it does not fit.
    LlmError (the episode ends as llm_error) when it cannot be made to fit, or for any other failure of the call."""
    conversation.overflows = []
    refused: list[tuple[list[Message], int | None]] = []
    last: ContextOverflowError | None = None
    for _ in range(1 + MAX_OVERFLOW_RETRIES):
        try:
            request = conversation.request(list(tools))
        except LlmError as exc:
            if last is None:
                raise
            raise _cannot_fit(f"{exc}", last) from last
        answer, room = conversation.answer_tokens()
        floor = conversation.answer_floor
        if answer is not None and floor is not None and room < floor and conversation.at_minimum:
            raise _cannot_fit(
                f"the history at its minimum leaves ~{max(room, 0)} tokens for the answer, below the floor of {floor} "
                "(min_output_tokens in config/llm.yaml)",
                last,
            )
        if (request, answer) in refused:
            raise _cannot_fit("the server refused the same request again: nothing more can be left out", last)
        kwargs: dict[str, Any] = {} if answer is None else {"max_output_tokens": answer}
        try:
            return request, llm.chat(request, list(tools), tool_choice=tool_choice, **kwargs)
        except ContextOverflowError as exc:
            last = exc
            refused.append((request, answer))
            conversation.learn_overflow(exc, request, tools)
    raise _cannot_fit(f"still too long after {MAX_OVERFLOW_RETRIES} shorter requests", last)


def _cannot_fit(why: str, overflow: ContextOverflowError | None) -> LlmError:
    said = f"; the server said: {overflow}" if overflow is not None else ""
    return LlmError(
        f"the request cannot be made to fit the model's context: {why}{said}",
        overflow.attempts if overflow is not None else 0,
        request=overflow.request if overflow is not None else None,
        attempt_log=overflow.attempt_log if overflow is not None else (),
    )
