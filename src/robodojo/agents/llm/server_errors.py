"""What servers say when a prompt does not fit their context, read the same way by the client and ``doctor``.

llama.cpp's server answers HTTP 400 ``exceed_context_size_error`` with ``n_ctx`` in the error object, or (measured on
the llama-server vendored in llama-cpp-python 0.3.36, when its slots share the cache) HTTP 500 "Context size has been
exceeded."; vLLM, OpenAI and llama-cpp-python answer HTTP 400 "This model's maximum context length is N tokens. ...".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_CONTEXT_ERROR = re.compile(r"context (size|length)|exceed_context", re.I)
_MAXIMUM_CONTEXT = re.compile(r"maximum context length is (\d+)")


def is_context_error(status: int | None, text: str) -> bool:
    """Whether an HTTP error answer (4xx or 5xx) says the prompt does not fit the model's context."""
    return status is not None and 400 <= status <= 599 and bool(_CONTEXT_ERROR.search(text))


def context_length_in_error(body: Any, text: str) -> int | None:
    """The context length an error states: ``n_ctx`` in llama.cpp's error object (``body``, the parsed JSON, with or
    without its ``error`` wrapper), else the N of "maximum context length is N" in ``text``; None if neither."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        inner = inner if isinstance(inner, Mapping) else body
        n_ctx = inner.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            return n_ctx
    found = _MAXIMUM_CONTEXT.search(text)
    return int(found.group(1)) if found else None
