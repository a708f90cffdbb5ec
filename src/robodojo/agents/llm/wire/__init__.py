"""The model APIs coding agents speak, each translated to and from chat completions: chat completions themselves
(also streamed), the OpenAI Responses API (Codex CLI) and the Anthropic Messages API (Claude Code). The shell
harness's model proxy (robodojo.agents.shell.model_proxy) and the replay server (robodojo.agents.llm.replay_server)
serve all three. Each module has its path ``SUFFIX``, ``chat_request(body)`` (WireError on what is not one of its
requests), ``answer(completion, request)`` (a JSON body, or its server-sent events when the request streams) and
``error(chat_error)`` (an error body in its shape)."""

from __future__ import annotations

from types import ModuleType

from robodojo.agents.llm.wire import anthropic, chat, responses
from robodojo.agents.llm.wire.chat import WireError

WIRES: tuple[ModuleType, ...] = (chat, responses, anthropic)
SERVED = "chat completions, responses and messages (POST), the model list (GET)"

__all__ = ["SERVED", "WIRES", "WireError", "wire_for"]


def wire_for(path: str) -> ModuleType | None:
    """The wire a request path (query string and all) is one of, None for none."""
    path = path.split("?", 1)[0].rstrip("/")
    return next((w for w in WIRES if path.endswith(w.SUFFIX)), None)
