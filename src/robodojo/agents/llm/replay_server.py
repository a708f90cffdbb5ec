"""An offline OpenAI-compatible chat-completions server that replays scripted replies; it also serves them as the
Responses API and the Anthropic Messages API (robodojo.agents.llm.wire), so coding-agent CLIs run against it.

The real client (robodojo.agents.llm.client) talks to it over HTTP exactly as it talks to OpenAI, vLLM, Ollama or
llama.cpp, so tests and ``make demo`` run the real code path without a network or a model. It can also emulate those
servers' differences and failures (see ServerBehaviour).

Script file format (YAML or JSON)::

    # either a bare list of replies, or a mapping with `replies:` and optional `model:` and `behaviour:`
    model: replay                      # model name the server reports (default: the one the request names)
    behaviour:                         # optional, any of the ServerBehaviour fields below
      fail_with: [429, 500, timeout]   # the first three requests fail this way, then the replies start
    replies:
      - content: "I will move the left arm."          # str or null
        tool_calls:                                    # optional list
          - name: move_eef
            arguments: {targets: {left_z: 0.9}, note: "lift"}   # object -> serialised to a JSON string
          - name: give_up
            arguments: '{"reason": "broken'            # a string is sent verbatim (to script malformed JSON)
            id: call_1                                 # optional; generated otherwise
        usage: {prompt_tokens: 1200, completion_tokens: 40, cached_tokens: 1024, reasoning_tokens: 30}  # optional
        finish_reason: stop                            # optional; default "tool_calls" if tool calls, else "stop"
      - content: "Done."

Each reply needs content or tool_calls. Without scripted usage, prompt_tokens is estimated from the request (4
characters a token, 85 a picture), completion_tokens from the reply, and cached_tokens emulates OpenAI's prompt cache:
the prefix shared with the previous request, in 128-token steps once it reaches 1024 tokens. Reasoning tokens
(usage.completion_tokens_details.reasoning_tokens, counted inside completion_tokens as OpenAI does) are the scripted
ones, else ``reasoning_tokens`` below when the request asks for reasoning.

Reasoning effort: a request's ``reasoning_effort`` must be one of ``reasoning_efforts`` (HTTP 400 otherwise, as
OpenAI and vLLM answer an unknown value), and a ``thinking`` object must be Anthropic's form (type enabled with
budget_tokens >= 1024 and below the answer length, or type disabled); ReplayServer.requests shows what was sent.

ServerBehaviour flags:
    fail_with                     list of failures for the first requests: an HTTP status (429 is sent with
                                  Retry-After: retry_after_s; 500, 502, 503, ...), "timeout" (hold the request for
                                  hang_s, longer than the client's timeout, then drop it), "disconnect" (close the
                                  connection without an answer)
    reject_null_assistant_content HTTP 500 when an assistant message with tool_calls has content null (vLLM/llama.cpp
                                  chat templates that trim or concatenate content)
    reject_tool_role              HTTP 400 on a message with role "tool" (templates that raise on unknown roles)
    drop_tool_role                silently drop role "tool" messages before "rendering" the prompt (templates that skip
                                  unknown roles); ReplayServer.prompts shows what the model saw
    arguments_as_object           tool-call arguments as a JSON object instead of a string (Ollama native, some
                                  llama.cpp builds)
    omit_usage                    no usage block in the response
    omit_cached_tokens            usage without prompt_tokens_details (Ollama, llama.cpp, vLLM by default)
    omit_tool_call_ids            tool calls without an id
    finish_reason_stop            finish_reason "stop" even next to tool calls (Ollama)
    reject_params                 HTTP 400 if the request has any of these fields (servers that reject tool_choice,
                                  parallel_tool_calls, max_tokens for reasoning models, ...)
    reject_tool_choice_required   HTTP 500 when tool_choice is "required" (llama-cpp-python 0.3.x hits an assertion)
    tools_need_tool_choice        tools are ignored when the request has no tool_choice: the "model" answers in text
                                  (a scripted tool call becomes a sentence describing it; llama-cpp-python with
                                  chat_format chatml-function-calling)
    reject_images                 HTTP 400 on an image part (a text-only model; llama.cpp without --mmproj)
    images_as_text                image parts are pasted into the prompt as their base64 data-URL text and counted at
                                  4 characters a token instead of 85 tokens a picture (servers whose chat template
                                  stringifies unknown content parts)
    context_tokens                0: no limit; else the context size: a prompt estimated longer (4 characters a
                                  token) gets llama.cpp's HTTP 400 "the request exceeds the available context size",
                                  with n_prompt_tokens and n_ctx in the error body
    context_error_style           with context_tokens: "llamacpp" (above; the prompt alone must fit) or "openai": the
                                  prompt plus the answer length asked for (max_tokens or max_completion_tokens) must
                                  fit, else HTTP 400 context_length_exceeded "This model's maximum context length is N
                                  tokens. However, you requested R tokens (P in the messages, C in the completion)."
                                  as OpenAI and vLLM answer
    reasoning_efforts             the reasoning_effort values accepted (default OpenAI's: minimal, low, medium, high;
                                  vLLM takes low, medium, high)
    reasoning_tokens              reasoning tokens reported in usage when a request asks for reasoning (an effort
                                  other than minimal, or thinking enabled) and the reply scripts none (default 0)
    truncate_prompt               with context_tokens: a longer prompt is cut to context_tokens silently (usage says
                                  so) instead of HTTP 400, as Ollama does beyond its num_ctx
    token_ratio                   tokens the "tokenizer" counts per 4 characters (default 1.0); above 1 the server
                                  counts more than the client's characters / 4 estimate, as small models' tokenizers
                                  do (SmolLM2 on llama-cpp-python: 1.2-1.33); applies to usage and to context_tokens
    context_report                where the server states its context size: "none", "props" (llama.cpp's GET /props
                                  default_generation_settings.n_ctx) or "models" (vLLM's max_model_len in GET
                                  /v1/models); needs context_tokens
    html_escape                   message text is HTML-escaped before the "model" sees it (templates rendered with
                                  autoescape): ReplayServer.prompts and echo_model show &lt; instead of <
    delay_s                       every request (GET too) is answered only after this many seconds: a busy or hung
                                  server whose socket accepts and then says nothing (stop() releases held requests)
    read_tokens_per_s             0: answer at once; else a prompt that fits is answered only after prompt_tokens /
                                  this many seconds, as a server on a CPU (llama-cpp-python with SmolLM2-135M on 2
                                  cores: ~140 tokens/s)
    write_tokens_per_s            0: answer at once; else an answer is sent only after completion_tokens / this many
                                  seconds (llama-server with SmolLM2-135M on 2 cores, busy: ~13 tokens/s)
    image_delay_s                 a chat request with an image part is answered only after this many seconds, as a CPU
                                  server reading pasted base64 (28 s for 4 KB on llama-cpp-python with SmolLM2-135M)
    v1_only                       serve the OpenAI routes only under /v1 (vLLM, Ollama): a base URL without /v1 gets
                                  404 (by default /models and /chat/completions answer at the root too, as llama.cpp's)
    echo_model                    ignore the script and act as a cooperative model: call the first offered tool (or
                                  the one tool_choice names) with arguments {} when tools are sent and honoured, else
                                  answer with the whole prompt the model saw (so a test can see what reached it);
                                  replies may then be empty
    echo_text                     with echo_model: answer this text instead of the prompt (a model that does not
                                  repeat what it is asked to, as small models do); "" (default): the prompt
"""

from __future__ import annotations

import ast
import contextlib
import html
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.wire import WIRES, WireError, chat
from robodojo.errors import ConfigError

FAILURE_WORDS = ("timeout", "disconnect")
_SECONDS_OR_RATES = ("retry_after_s", "hang_s", "delay_s", "image_delay_s", "read_tokens_per_s", "write_tokens_per_s")
CONTEXT_REPORTS = ("none", "props", "models")
CONTEXT_ERROR_STYLES = ("llamacpp", "openai")
OPENAI_EFFORTS = ("minimal", "low", "medium", "high")
#: Anthropic's smallest extended-thinking budget (build-with-claude/extended-thinking)
MIN_THINKING_BUDGET = 1024


@dataclass(frozen=True)
class ServerBehaviour:
    """How the replay server deviates from OpenAI's behaviour (module docstring lists each flag's meaning)."""

    fail_with: tuple[int | str, ...] = ()
    retry_after_s: float = 0.0
    hang_s: float = 5.0
    reject_null_assistant_content: bool = False
    reject_tool_role: bool = False
    drop_tool_role: bool = False
    arguments_as_object: bool = False
    omit_usage: bool = False
    omit_cached_tokens: bool = False
    omit_tool_call_ids: bool = False
    finish_reason_stop: bool = False
    reject_params: tuple[str, ...] = ()
    reject_tool_choice_required: bool = False
    tools_need_tool_choice: bool = False
    reject_images: bool = False
    images_as_text: bool = False
    context_tokens: int = 0
    context_error_style: str = "llamacpp"
    reasoning_efforts: tuple[str, ...] = OPENAI_EFFORTS
    reasoning_tokens: int = 0
    token_ratio: float = 1.0
    truncate_prompt: bool = False
    context_report: str = "none"
    html_escape: bool = False
    delay_s: float = 0.0
    image_delay_s: float = 0.0
    read_tokens_per_s: float = 0.0
    write_tokens_per_s: float = 0.0
    v1_only: bool = False
    echo_model: bool = False
    echo_text: str = ""

    @staticmethod
    def parse(data: Any, where: str) -> ServerBehaviour:
        """Validate a ``behaviour:`` mapping; unknown flags and bad values raise ConfigError naming them."""
        if data is None:
            return ServerBehaviour()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of behaviour flags, got {type(data).__name__}")
        valid = {f.name: f for f in fields(ServerBehaviour)}
        unknown = sorted(str(k) for k in data if k not in valid)
        if unknown:
            raise ConfigError(f"{where}: unknown behaviour flag(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            at = f"{where}.{key}"
            if key == "fail_with":
                if not isinstance(value, Sequence) or isinstance(value, str):
                    raise ConfigError(f"{at}: expected a list of failures, got {value!r}")
                for item in value:
                    ok = item in FAILURE_WORDS or (
                        isinstance(item, int) and not isinstance(item, bool) and 400 <= item <= 599
                    )
                    if not ok:
                        raise ConfigError(
                            f"{at}: {item!r} is not a failure; use an HTTP status 400..599, 'timeout' or 'disconnect'"
                        )
                kwargs[key] = tuple(value)
            elif key == "reasoning_efforts":
                if (
                    not isinstance(value, Sequence)
                    or isinstance(value, str)
                    or not all(isinstance(v, str) and v for v in value)
                ):
                    raise ConfigError(f"{at}: expected a list of effort values, got {value!r}")
                kwargs[key] = tuple(value)
            elif key == "context_error_style":
                if value not in CONTEXT_ERROR_STYLES:
                    raise ConfigError(f"{at}: expected one of {', '.join(CONTEXT_ERROR_STYLES)}, got {value!r}")
                kwargs[key] = value
            elif key == "reject_params":
                if (
                    not isinstance(value, Sequence)
                    or isinstance(value, str)
                    or not all(isinstance(v, str) for v in value)
                ):
                    raise ConfigError(f"{at}: expected a list of request field names, got {value!r}")
                kwargs[key] = tuple(value)
            elif key in ("context_tokens", "reasoning_tokens"):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(f"{at}: expected an integer >= 0 (0: none), got {value!r}")
                kwargs[key] = value
            elif key == "context_report":
                if value not in CONTEXT_REPORTS:
                    raise ConfigError(f"{at}: expected one of {', '.join(CONTEXT_REPORTS)}, got {value!r}")
                kwargs[key] = value
            elif key == "echo_text":
                if not isinstance(value, str):
                    raise ConfigError(f"{at}: expected text, got {value!r}")
                kwargs[key] = value
            elif key == "token_ratio":
                if isinstance(value, bool) or not isinstance(value, int | float) or not 0.1 <= value <= 10:
                    raise ConfigError(f"{at}: expected a number in [0.1, 10], got {value!r}")
                kwargs[key] = float(value)
            elif key in _SECONDS_OR_RATES:
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise ConfigError(f"{at}: expected a number >= 0, got {value!r}")
                kwargs[key] = float(value)
            else:
                if not isinstance(value, bool):
                    raise ConfigError(f"{at}: expected true or false, got {value!r}")
                kwargs[key] = value
        behaviour = ServerBehaviour(**kwargs)
        if behaviour.truncate_prompt and not behaviour.context_tokens:
            raise ConfigError(f"{where}.truncate_prompt needs context_tokens > 0")
        if behaviour.context_report != "none" and not behaviour.context_tokens:
            raise ConfigError(f"{where}.context_report: {behaviour.context_report!r} needs context_tokens > 0")
        return behaviour


@dataclass(frozen=True)
class ScriptedToolCall:
    """One scripted tool call; ``arguments`` is the exact text sent (objects are serialised when loading)."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted assistant reply."""

    content: str | None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: Mapping[str, int] | None = None  # prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens
    finish_reason: str | None = None


_REPLY_KEYS = ("content", "tool_calls", "usage", "finish_reason")
_CALL_KEYS = ("name", "arguments", "id")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
_TOP_KEYS = ("replies", "behaviour", "model")


def _unknown(data: Mapping[str, Any], valid: Sequence[str], where: str) -> None:
    unknown = sorted(str(k) for k in data if k not in valid)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(valid)}")


def _parse_reply(data: Any, where: str) -> ScriptedReply:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with content and/or tool_calls, got {data!r}")
    _unknown(data, _REPLY_KEYS, where)
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise ConfigError(f"{where}.content: expected a string or null, got {content!r}")
    raw_calls = data.get("tool_calls") or []
    if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, str):
        raise ConfigError(f"{where}.tool_calls: expected a list, got {raw_calls!r}")
    calls = []
    for i, call in enumerate(raw_calls):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(call, Mapping):
            raise ConfigError(f"{at}: expected a mapping with name and arguments, got {call!r}")
        _unknown(call, _CALL_KEYS, at)
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{at}.name: expected a non-empty string, got {name!r}")
        arguments = call.get("arguments", {})
        if isinstance(arguments, Mapping):
            arguments = json.dumps(arguments)
        elif not isinstance(arguments, str):
            raise ConfigError(f"{at}.arguments: expected an object or a string, got {arguments!r}")
        call_id = call.get("id")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise ConfigError(f"{at}.id: expected a non-empty string, got {call_id!r}")
        calls.append(ScriptedToolCall(name, arguments, call_id))
    if content is None and not calls:
        raise ConfigError(f"{where}: a reply needs content or tool_calls")
    usage = data.get("usage")
    if usage is not None:
        if not isinstance(usage, Mapping):
            raise ConfigError(f"{where}.usage: expected a mapping, got {usage!r}")
        _unknown(usage, _USAGE_KEYS, f"{where}.usage")
        for key, value in usage.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{where}.usage.{key}: expected an integer >= 0, got {value!r}")
        usage = dict(usage)
    finish = data.get("finish_reason")
    if finish is not None and (not isinstance(finish, str) or not finish):
        raise ConfigError(f"{where}.finish_reason: expected a string, got {finish!r}")
    return ScriptedReply(content, tuple(calls), usage, finish)


@dataclass(frozen=True)
class ReplayScript:
    """The replies to replay, in order, and how the server should behave."""

    replies: tuple[ScriptedReply, ...]
    behaviour: ServerBehaviour = field(default_factory=ServerBehaviour)
    model: str | None = None

    @staticmethod
    def parse(data: Any, where: str = "replay script") -> ReplayScript:
        """Validate a script document (a list of replies, or a mapping with replies/behaviour/model)."""
        behaviour, model = ServerBehaviour(), None
        if isinstance(data, Mapping):
            if "replies" not in data:
                raise ConfigError(
                    f"{where}: missing key 'replies' (a script is a list of replies or a mapping with one)"
                )
            _unknown(data, _TOP_KEYS, where)
            behaviour = ServerBehaviour.parse(data.get("behaviour"), f"{where}.behaviour")
            model = data.get("model")
            if model is not None and (not isinstance(model, str) or not model):
                raise ConfigError(f"{where}.model: expected a non-empty string, got {model!r}")
            replies, where_replies = data["replies"], f"{where}.replies"
        else:
            replies, where_replies = data, where
        if not isinstance(replies, Sequence) or isinstance(replies, str):
            raise ConfigError(f"{where_replies}: expected a list of replies, got {type(replies).__name__}")
        if not replies and not behaviour.echo_model:  # the echo model makes its replies up
            raise ConfigError(f"{where_replies}: no replies")
        parsed = tuple(_parse_reply(r, f"{where_replies}[{i}]") for i, r in enumerate(replies))
        return ReplayScript(parsed, behaviour, model)

    @staticmethod
    def load(path: str | Path) -> ReplayScript:
        """Read a YAML or JSON script file (JSON is YAML), or a Python file of code cells (see
        :func:`cells_script`); errors name the file and the entry."""
        path = Path(path)
        if not path.is_file() and not path.is_absolute() and (PACKAGE_ROOT / path).is_file():
            path = PACKAGE_ROOT / path  # the shipped examples/, from any working directory (ros2 launch)
        if not path.is_file():
            raise ConfigError(f"replay script not found: {path}")
        if path.suffix == ".py":
            return ReplayScript.parse(cells_script(path.read_text(), path.parent), str(path))
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML or JSON: {exc}") from None
        return ReplayScript.parse(data, str(path))


CELL_MARKER = "# %%"
INCLUDE_PREFIX = "# include: "


def _included_code(name: str, folder: Path | None) -> list[str]:
    """The lines of an included helper file, minus its module docstring (documentation for readers, not code)."""
    if folder is None:
        raise ConfigError(f"'{INCLUDE_PREFIX}{name}' needs the script's folder to resolve the path")
    path = folder / name
    if not path.is_file():
        raise ConfigError(f"included file not found: {path}")
    text = path.read_text()
    if CELL_MARKER in text:
        raise ConfigError(f"{path}: an included file is code for one cell and may not contain '{CELL_MARKER}'")
    body = ast.parse(text, str(path)).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        text = "\n".join(text.splitlines()[body[0].end_lineno :])
    return text.strip("\n").splitlines()


def cells_script(source: str, folder: Path | None = None) -> list[dict[str, Any]]:
    """Replies that run a Python file's cells one per turn with the code-cell agent's python tool, then finish.

    Cells are separated by lines starting with ``# %%`` (the convention of Jupytext and editors); text before the
    first marker is a header and is not sent. The finish summary is the first marker's text, if any. A line
    ``# include: PATH`` inside a cell stands for that file's code (relative to ``folder``, without its module
    docstring), so scripts can share helpers while the model still sends every line it runs.
    """
    cells: list[list[str]] = []
    for line in source.splitlines():
        if line.startswith(CELL_MARKER):
            cells.append([])
        elif cells and line.startswith(INCLUDE_PREFIX):
            cells[-1].extend(_included_code(line[len(INCLUDE_PREFIX) :].strip(), folder))
        elif cells:
            cells[-1].append(line)
    codes = ["\n".join(c).strip("\n") for c in cells if "\n".join(c).strip()]
    replies: list[dict[str, Any]] = [
        {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": code}}]} for code in codes
    ]
    replies.append(
        {"content": None, "tool_calls": [{"name": "finish", "arguments": {"status": "success", "summary": "done"}}]}
    )
    return replies


def _text_of(content: Any, images_as_text: bool = False) -> tuple[str, int]:
    """The text of a message content (string or parts) and its number of images (each "<image>", or its data URL
    pasted as text with ``images_as_text``)."""
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    texts, images = [], 0
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping) and part.get("type") == "image_url":
                url = part.get("image_url", {})
                texts.append(str(url.get("url", "")) if images_as_text and isinstance(url, Mapping) else "<image>")
                images += 1
    return "\n".join(texts), images


def render_prompt(
    messages: Sequence[Mapping[str, Any]], *, images_as_text: bool = False, escape: bool = False
) -> tuple[str, int]:
    """A plain-text rendering of the messages, as a chat template would show them to the model, and the image count.

    ``images_as_text`` pastes each image's data URL into the text; ``escape`` HTML-escapes the message text (not the
    template's own markup), as an autoescaping template would."""
    lines, images = [], 0
    for m in messages:
        text, n = _text_of(m.get("content"), images_as_text)
        if escape:
            text = html.escape(text)
        images += n
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {}) if isinstance(call, Mapping) else {}
            text += f"\n<tool_call {call.get('id')}> {fn.get('name')}({fn.get('arguments')})"
        lines.append(f"<|{m.get('role')}|>\n{text}")
    return "\n".join(lines), images


def _echo_reply(prompt: str, tools: Sequence[Any], tool_choice: Any, text: str = "") -> ScriptedReply:
    """The echo model's reply: call the named or first offered tool with {}, else say ``text`` or the prompt back."""
    names = [t.get("function", {}).get("name") for t in tools if isinstance(t, Mapping)]
    names = [n for n in names if isinstance(n, str) and n]
    if isinstance(tool_choice, Mapping):
        wanted = tool_choice.get("function", {}).get("name")
        names = [wanted] if isinstance(wanted, str) and wanted else names
    if names:
        return ScriptedReply(None, (ScriptedToolCall(names[0], "{}"),))
    return ScriptedReply(text or prompt)


def _answer_length(body: Mapping[str, Any]) -> int:
    """The answer length a request asks for (0: none asked)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _asks_reasoning(body: Mapping[str, Any]) -> bool:
    """Whether a request asks for hidden reasoning: an effort above minimal, or Anthropic's thinking enabled."""
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping):
        return thinking.get("type") == "enabled"
    effort = body.get("reasoning_effort")
    return isinstance(effort, str) and effort != "minimal"


def _check_reasoning(body: Mapping[str, Any], b: ServerBehaviour) -> None:
    """HTTP 400 for a reasoning_effort the server does not take, or a thinking object Anthropic would refuse."""
    if "reasoning_effort" in body and body["reasoning_effort"] not in b.reasoning_efforts:
        raise _HttpError(
            400,
            f"Invalid value for 'reasoning_effort': {body['reasoning_effort']!r}; supported values are "
            f"{', '.join(repr(e) for e in b.reasoning_efforts)}",
            "invalid_value",
            error_type="invalid_request_error",
        )
    if "thinking" not in body:
        return
    thinking = body["thinking"]
    if isinstance(thinking, Mapping) and thinking.get("type") == "disabled":
        return
    budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
    ok_budget = isinstance(budget, int) and not isinstance(budget, bool) and budget >= MIN_THINKING_BUDGET
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled" or not ok_budget:
        raise _HttpError(
            400,
            f"thinking: expected {{type: enabled, budget_tokens >= {MIN_THINKING_BUDGET}}} or {{type: disabled}}, "
            f"got {thinking!r}",
            "invalid_thinking",
            error_type="invalid_request_error",
        )
    if budget is None or not budget < _answer_length(body):
        raise _HttpError(
            400,
            "`max_tokens` must be greater than `thinking.budget_tokens`",
            "invalid_thinking",
            error_type="invalid_request_error",
        )
    if body.get("tool_choice") not in (None, "auto", "none"):
        raise _HttpError(
            400,
            "Thinking may not be enabled when tool_choice forces tool use.",
            "invalid_thinking",
            error_type="invalid_request_error",
        )


class _HttpError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
        error_type: str = "replay_error",
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})  # more fields of the error object (llama.cpp's n_ctx, n_prompt_tokens)
        self.error_type = error_type


class ReplayServer:
    """A local OpenAI-compatible server on 127.0.0.1 (OS-chosen port) that answers with the script's replies in order.

    ``requests`` holds every request body received (failed ones included) and ``prompts`` the rendered prompt of each
    request that reached the "model" (after drop_tool_role). Use as a context manager or call start()/stop().
    """

    def __init__(self, script: ReplayScript, behaviour: ServerBehaviour | None = None) -> None:
        self.script = script
        self.behaviour = behaviour if behaviour is not None else script.behaviour
        self.requests: list[dict[str, Any]] = []
        self.prompts: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._next_reply = 0
        self._calls = 0
        self._previous_prompt = ""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> ReplayServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            replay = server

        self._stopping.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="replay-llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (held "timeout" requests are released)."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd, self._thread = None, None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL for the OpenAI client, e.g. http://127.0.0.1:40123/v1."""
        if self._httpd is None:
            raise RuntimeError("replay server is not running; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def replies_left(self) -> int:
        """Scripted replies not yet sent."""
        return len(self.script.replies) - self._next_reply

    # -- request handling -----------------------------------------------------------------------------------------
    def _failure_for_this_call(self) -> int | str | None:
        with self._lock:
            index = self._calls
            self._calls += 1
        fails = self.behaviour.fail_with
        return fails[index] if index < len(fails) else None

    def _check(self, body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        b = self.behaviour
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _HttpError(400, "'messages' must be a non-empty list", "invalid_messages")
        for name in b.reject_params:
            if name in body:
                raise _HttpError(400, f"Unsupported parameter: '{name}' is not supported by this server", "bad_param")
        _check_reasoning(body, b)
        if b.reject_tool_choice_required and body.get("tool_choice") == "required" and body.get("tools"):
            # llama-cpp-python 0.3.x: `assert tool_choice in ("auto", "none") or isinstance(tool_choice, dict)`
            raise _HttpError(500, "AssertionError: tool_choice 'required' is not supported", "internal_error")
        for i, m in enumerate(messages):
            null_content = m.get("role") == "assistant" and m.get("tool_calls") and m.get("content") is None
            if b.reject_null_assistant_content and null_content:
                raise _HttpError(
                    500,
                    f'chat template error: messages[{i}]: can only concatenate str (not "NoneType") to str',
                    "template_error",
                )
            if b.reject_tool_role and m.get("role") == "tool":
                raise _HttpError(
                    400, f"messages[{i}]: Conversation roles must alternate user/assistant/user/assistant", "bad_role"
                )
            content = m.get("content")
            has_image = isinstance(content, list) and any(
                isinstance(p, Mapping) and p.get("type") == "image_url" for p in content
            )
            if b.reject_images and has_image:
                raise _HttpError(400, f"messages[{i}]: image input is not supported by this model", "no_images")
        if b.drop_tool_role:
            messages = [m for m in messages if m.get("role") != "tool"]
        return messages

    def _answer(self, body: Mapping[str, Any], messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        b = self.behaviour
        prompt, images = render_prompt(messages, images_as_text=b.images_as_text, escape=b.html_escape)
        tool_choice = body.get("tool_choice")
        tools_ignored = b.tools_need_tool_choice and tool_choice is None and bool(body.get("tools"))
        prompt_all = prompt + json.dumps(body.get("tools") or [])
        estimated = max(1, round(len(prompt_all) / 4 * b.token_ratio) + (0 if b.images_as_text else 85 * images))
        if b.context_tokens and estimated > b.context_tokens and b.truncate_prompt:
            estimated = b.context_tokens  # as Ollama: what does not fit is dropped, nothing is said
        elif b.context_tokens and b.context_error_style == "openai":
            answer = _answer_length(body)
            if estimated + answer > b.context_tokens:
                raise _HttpError(
                    400,
                    f"This model's maximum context length is {b.context_tokens} tokens. However, you requested "
                    f"{estimated + answer} tokens ({estimated} in the messages, {answer} in the completion). Please "
                    "reduce the length of the messages or completion.",
                    "context_length_exceeded",
                    error_type="invalid_request_error",
                )
        elif b.context_tokens and estimated > b.context_tokens:
            raise _HttpError(
                400,
                "the request exceeds the available context size, try increasing it",
                "exceed_context_size",
                extra={"n_prompt_tokens": estimated, "n_ctx": b.context_tokens},
                error_type="exceed_context_size_error",
            )
        if b.read_tokens_per_s > 0:  # reading the prompt takes its time; one that does not fit is refused first
            self._stopping.wait(estimated / b.read_tokens_per_s)
        if b.echo_model:
            with self._lock:
                self.prompts.append(prompt)
                index = len(self.prompts) - 1
            honoured = [] if tools_ignored or tool_choice == "none" else list(body.get("tools") or [])
            reply = _echo_reply(prompt, honoured, tool_choice, b.echo_text)
            return self._completion(body, index, reply, estimated, 0)
        with self._lock:
            if self._next_reply >= len(self.script.replies):
                raise _HttpError(
                    400,
                    f"replay script exhausted: all {len(self.script.replies)} scripted replies were used "
                    f"(this is request {len(self.requests)})",
                    "replay_exhausted",
                )
            index = self._next_reply
            self._next_reply += 1
            self.prompts.append(prompt)
            shared = 0
            for a, c in zip(self._previous_prompt, prompt_all, strict=False):
                if a != c:
                    break
                shared += 1
            self._previous_prompt = prompt_all
        reply = self.script.replies[index]
        if tools_ignored and reply.tool_calls:  # the model never saw the tools: it describes the call in words instead
            said = "; ".join(f"I will call {c.name} with {c.arguments}" for c in reply.tool_calls)
            reply = ScriptedReply(reply.content or said, (), reply.usage, None)
        return self._completion(body, index, reply, estimated, shared)

    def _completion(
        self, body: Mapping[str, Any], index: int, reply: ScriptedReply, estimated: int, shared: int
    ) -> dict[str, Any]:
        """The chat.completion body for one reply (``shared``: prompt characters in common with the previous one)."""
        b = self.behaviour
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            calls = []
            for call in reply.tool_calls:
                arguments: Any = call.arguments
                if b.arguments_as_object:
                    with contextlib.suppress(json.JSONDecodeError):  # malformed scripted JSON stays a string
                        arguments = json.loads(call.arguments)
                entry: dict[str, Any] = {"type": "function", "function": {"name": call.name, "arguments": arguments}}
                if not b.omit_tool_call_ids:
                    entry["id"] = call.id or f"call_{uuid.uuid4().hex[:24]}"
                calls.append(entry)
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls and not b.finish_reason_stop else "stop")
        answer: dict[str, Any] = {
            "id": f"chatcmpl-replay-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.script.model or body.get("model") or "replay",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if not b.omit_usage:
            scripted = reply.usage or {}
            prompt_tokens = scripted.get("prompt_tokens", estimated)
            cached = shared // 4
            cached = cached // 128 * 128 if cached >= 1024 else 0
            cached = min(scripted.get("cached_tokens", cached), prompt_tokens)
            out_text = (reply.content or "") + "".join(c.name + c.arguments for c in reply.tool_calls)
            reasoning = scripted.get("reasoning_tokens", b.reasoning_tokens if _asks_reasoning(body) else 0)
            # OpenAI counts the reasoning inside completion_tokens
            completion = scripted.get("completion_tokens", max(1, len(out_text) // 4) + reasoning)
            usage: dict[str, Any] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
            }
            if not b.omit_cached_tokens:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            if reasoning:
                usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
            answer["usage"] = usage
            if b.write_tokens_per_s > 0:  # writing the answer takes its time
                self._stopping.wait(completion / b.write_tokens_per_s)
        return answer


class _Handler(BaseHTTPRequestHandler):
    # Headers and body go out in separate writes; with Nagle's algorithm on, a small body then waits ~40 ms for the
    # client's delayed ACK.
    disable_nagle_algorithm = True
    replay: ReplayServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests instead
        pass

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterable[bytes]) -> None:
        data = b"".join(events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: _HttpError, wire: ModuleType = chat) -> None:
        payload = {
            "error": {
                "message": error.message,
                "type": error.error_type,
                "param": None,
                "code": error.code,
                **error.extra,
            }
        }
        self._send_json(error.status, wire.error(payload), error.headers)

    def _delayed(self) -> bool:
        """Hold the request for delay_s, like a busy or hung server; True if stop() released it (then drop it)."""
        if self.replay.behaviour.delay_s > 0 and self.replay._stopping.wait(self.replay.behaviour.delay_s):
            self.close_connection = True
            return True
        return False

    def _image_delayed(self, body: Mapping[str, Any]) -> bool:
        """Hold a request with an image part for image_delay_s; True if stop() released it (then drop it)."""
        delay = self.replay.behaviour.image_delay_s
        if delay <= 0 or '"image_url"' not in json.dumps(body.get("messages")):
            return False
        if self.replay._stopping.wait(delay):
            self.close_connection = True
            return True
        return False

    def do_GET(self) -> None:
        if self._delayed():
            return
        b = self.replay.behaviour
        path = self.path.rstrip("/")
        if path == "/v1/models" or (path == "/models" and not b.v1_only):
            entry: dict[str, Any] = {
                "id": self.replay.script.model or "replay",
                "object": "model",
                "owned_by": "replay",
            }
            if b.context_report == "models":
                entry["max_model_len"] = b.context_tokens  # as vLLM reports it
            self._send_json(200, {"object": "list", "data": [entry]})
        elif path == "/props" and b.context_report == "props":  # llama.cpp's server properties, at the root
            self._send_json(200, {"default_generation_settings": {"n_ctx": b.context_tokens}, "total_slots": 1})
        else:
            self._send_error(_HttpError(404, f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        prefixes = ("/v1",) if self.replay.behaviour.v1_only else ("/v1", "")
        wire = next((w for w in WIRES for prefix in prefixes if path == prefix + w.SUFFIX), None)
        if wire is None:
            self._send_error(_HttpError(404, f"no route POST {self.path}", "not_found"))
            return
        try:
            request = json.loads(raw or b"null")
        except json.JSONDecodeError as exc:
            self._send_error(_HttpError(400, f"request body is not JSON: {exc}", "invalid_json"), wire)
            return
        if not isinstance(request, dict):
            self._send_error(_HttpError(400, "request body must be a JSON object", "invalid_json"), wire)
            return
        try:
            body = wire.chat_request(request)  # a Responses or Messages request as chat completions; chat's as it is
        except WireError as exc:
            self._send_error(_HttpError(400, str(exc), "invalid_request"), wire)
            return
        server = self.replay
        with server._lock:
            server.requests.append(body)
        if self._delayed() or self._image_delayed(body):
            return
        failure = server._failure_for_this_call()
        if failure == "timeout":
            server._stopping.wait(server.behaviour.hang_s)
            self.close_connection = True
            return
        if failure == "disconnect":
            self.close_connection = True
            return
        if failure is not None:
            status = int(failure)
            headers = {"Retry-After": f"{server.behaviour.retry_after_s:g}"} if status == 429 else None
            message = "Rate limit reached (injected)" if status == 429 else f"injected server error {status}"
            self._send_error(_HttpError(status, message, f"injected_{status}", headers), wire)
            return
        try:
            messages = server._check(body)
            completion = server._answer(body, messages)
        except _HttpError as error:
            self._send_error(error, wire)
            return
        answer = wire.answer(completion, request)
        if isinstance(answer, dict):
            self._send_json(200, answer)
        else:
            self._send_events(answer)
