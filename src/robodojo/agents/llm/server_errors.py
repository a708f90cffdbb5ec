"""What servers say when a prompt does not fit their context, read the same way by the client and ``doctor``.

Every pattern lives here. What each server answers (HTTP 400 unless said otherwise):

- llama.cpp's llama-server: ``exceed_context_size_error`` "the request exceeds the available context size", with
  ``n_prompt_tokens`` and ``n_ctx`` in the error object; or (measured on the llama-server vendored in
  llama-cpp-python 0.3.36, when its slots share the cache) HTTP 500 "Context size has been exceeded.";
- llama-cpp-python's own server: "Requested tokens (N) exceed context window of M" (N: the prompt);
- OpenAI and vLLM (before 0.10): "This model's maximum context length is M tokens. However, you requested R tokens
  (P in the messages, C in the completion). ..." or "... However, your messages resulted in P tokens. ...";
- vLLM (0.10 on): "This model's maximum context length is M tokens. However, your request has P input tokens. ..."
  and, when the answer length is what does not fit, "'max_tokens' or 'max_completion_tokens' is too large: C. This
  model's maximum context length is M tokens and your request has P input tokens (C > M - P)."
- Anthropic: "prompt is too long: P tokens > M maximum"; Gemini: "The input token count (P) exceeds the maximum
  number of tokens allowed (M)."

:func:`context_overflow` turns any of these into a :class:`ContextOverflow` with the numbers the text states.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_CONTEXT_ERROR = re.compile(
    r"context (size|length|window)|exceed_context|context_length_exceeded|prompt is too long"
    r"|maximum number of tokens allowed",
    re.I,
)
_MAXIMUM_CONTEXT = re.compile(r"maximum context length is (\d+)", re.I)
_REQUESTED = re.compile(r"you requested (\d+) tokens \((\d+) in the messages, (\d+) in the completion\)", re.I)
_MESSAGES_RESULTED = re.compile(r"your messages resulted in (\d+) tokens", re.I)
_INPUT_TOKENS = re.compile(r"your request has (\d+) input tokens", re.I)
_ANSWER_TOO_LARGE = re.compile(r"'max_(?:completion_)?tokens'.*?too large: (\d+)", re.I)
_LLAMA_CPP_PYTHON = re.compile(r"requested tokens \((\d+)\) exceed context window of (\d+)", re.I)
_ANTHROPIC = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum", re.I)
_GEMINI = re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)", re.I)


@dataclass(frozen=True)
class ContextOverflow:
    """What a "does not fit" answer states; None where it says nothing.

    ``prompt_tokens`` is the server's own count of the prompt (the true size the client's estimate can learn from);
    ``completion_tokens`` the answer length it counted against the context: a server that states it reserves the
    answer inside the context (OpenAI, vLLM), so a shorter one can make the request fit.
    """

    context_tokens: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def is_context_error(status: int | None, text: str) -> bool:
    """Whether an HTTP error answer (4xx or 5xx) says the prompt does not fit the model's context."""
    return status is not None and 400 <= status <= 599 and bool(_CONTEXT_ERROR.search(text))


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_overflow(body: Any, text: str) -> ContextOverflow:
    """The numbers of a context-length error: llama.cpp's ``n_ctx`` and ``n_prompt_tokens`` in the error object
    (``body``, the parsed JSON, with or without its ``error`` wrapper), else those the message ``text`` states."""
    context = prompt = completion = None
    if isinstance(body, Mapping):
        inner = body.get("error")
        inner = inner if isinstance(inner, Mapping) else body
        context, prompt = _positive(inner.get("n_ctx")), _positive(inner.get("n_prompt_tokens"))
    if found := _MAXIMUM_CONTEXT.search(text):
        context = context or int(found.group(1))
    if found := _REQUESTED.search(text):
        prompt, completion = prompt or int(found.group(2)), int(found.group(3))
    for pattern in (_MESSAGES_RESULTED, _INPUT_TOKENS):
        if found := pattern.search(text):
            prompt = prompt or int(found.group(1))
    if found := _ANSWER_TOO_LARGE.search(text):
        completion = int(found.group(1))
    for pattern in (_LLAMA_CPP_PYTHON, _ANTHROPIC, _GEMINI):
        if found := pattern.search(text):
            prompt, context = prompt or int(found.group(1)), context or int(found.group(2))
    return ContextOverflow(context, prompt, completion)


def context_length_in_error(body: Any, text: str) -> int | None:
    """The context length an error states (see :func:`context_overflow`); None if it states none."""
    return context_overflow(body, text).context_tokens
