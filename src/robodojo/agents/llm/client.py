"""The LLM client: chat completions with tools on any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, the
offline replay server), with bounded retries, usage and cost accounting, and the servers' known differences handled
through profiles in config/llm.yaml.

    with open_llm("replay:test/data/replies.yaml") as llm:
        reply = llm.chat([{"role": "user", "content": [text_part("hi"), image_part(rgb)]}], tools)
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import json
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from robodojo.agents.llm.server_errors import ContextOverflow, context_overflow, is_context_error
from robodojo.agents.llm.settings import (
    ALWAYS_RETRIED_STATUSES,
    TOOL_CHOICES,
    LlmSettings,
    Price,
    ServerProfile,
    load_llm_settings,
    user_llm_settings,
)
from robodojo.agents.llm.types import (
    AttemptRecord,
    ChatReply,
    ContextOverflowError,
    LlmError,
    Message,
    ToolCall,
    ToolSchema,
    Usage,
)
from robodojo.errors import ConfigError

if TYPE_CHECKING:
    from robodojo.agents.llm.replay_server import ReplayServer

log = logging.getLogger(__name__)

_unpriced_models: set[str] = set()
_unpriced_lock = threading.Lock()


def text_part(text: str) -> dict[str, Any]:
    """A text content part."""
    return {"type": "text", "text": text}


def image_part(rgb: np.ndarray, quality: int | None = None, *, settings: LlmSettings | None = None) -> dict[str, Any]:
    """An HxWx3 uint8 RGB image as an image_url content part holding a base64 JPEG data URL.

    ``quality`` defaults to ``jpeg_quality`` in config/llm.yaml.
    """
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"image_part expects an HxWx3 uint8 RGB image, got shape {rgb.shape} dtype {rgb.dtype}")
    if quality is None:
        quality = (settings or load_llm_settings()).jpeg_quality
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    bgr = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)
    ok, jpeg = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("cv2.imencode could not encode the image as JPEG")
    data = base64.b64encode(jpeg.tobytes()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}}


# -- request rewrites for the servers' differences ------------------------------------------------------------------


def _as_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)] if content else []
    return list(content)


def _merge_contents(a: Any, b: Any) -> Any:
    if (a is None or isinstance(a, str)) and (b is None or isinstance(b, str)):
        return "\n\n".join(x for x in (a, b) if x)
    return _as_parts(a) + _as_parts(b)


def _tool_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")


def adapt_messages(messages: Sequence[Message], profile: ServerProfile) -> list[Message]:
    """A deep copy of ``messages`` rewritten for the profile's quirks (the caller's history is never changed)."""
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_call_id -> function name, to label folded results
    for original in messages:
        m = copy.deepcopy(dict(original))
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                names[str(call.get("id"))] = str(call.get("function", {}).get("name", "?"))
            if m.get("content") is None and not profile.assistant_content_null_ok:
                m["content"] = ""
        if role == "tool" and not profile.tool_role_supported:
            call_id = str(m.get("tool_call_id"))
            text = f"Result of tool call {call_id} ({names.get(call_id, '?')}): {_tool_text(m.get('content'))}"
            m = {"role": "user", "content": text}
            role = "user"
        if not profile.tool_role_supported and role == "user" and out and out[-1].get("role") == "user":
            # templates that cannot show the tool role usually demand strict user/assistant alternation too
            out[-1]["content"] = _merge_contents(out[-1].get("content"), m.get("content"))
            continue
        out.append(m)
    return out


# -- response parsing -------------------------------------------------------------------------------------------------


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse_usage(body: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(input, cached input, output, reasoning) tokens; a missing usage block or details count as zero.

    Output includes the reasoning tokens (usage.completion_tokens_details.reasoning_tokens), as OpenAI counts and
    bills them; a server whose reasoning tokens exceed its completion tokens cannot have counted them inside, so they
    are added.
    """
    usage = body.get("usage") or {}
    if not isinstance(usage, Mapping):
        return 0, 0, 0, 0
    details = usage.get("prompt_tokens_details") or {}
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    out_details = usage.get("completion_tokens_details") or {}
    reasoning = _int(out_details.get("reasoning_tokens")) if isinstance(out_details, Mapping) else 0
    output = _int(usage.get("completion_tokens"))
    if reasoning > output:
        output += reasoning
    return _int(usage.get("prompt_tokens")), cached, output, reasoning


def parse_tool_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """Tool calls with arguments as JSON text (objects are serialised) and ids generated where missing."""
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, Mapping):
            continue
        fn = raw.get("function") or {}
        arguments = fn.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        call_id = raw.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        calls.append(ToolCall(id=str(call_id), name=str(fn.get("name", "")), arguments=arguments))
    return tuple(calls)


class _InvalidResponse(Exception):
    """A 2xx answer that is not a chat completion (treated like a transient server error: retried)."""


class _Attempt:
    """Why one attempt failed and whether it is worth retrying."""

    def __init__(
        self,
        description: str,
        retry: bool,
        retry_after_s: float | None = None,
        status: int | None = None,
        overflow: ContextOverflow | None = None,
    ) -> None:
        self.description, self.retry, self.retry_after_s, self.status = description, retry, retry_after_s, status
        self.overflow = overflow  # what a "does not fit" answer states; None: not such an answer

    @property
    def context_tokens(self) -> int | None:
        """The context length a "does not fit" answer states."""
        return self.overflow.context_tokens if self.overflow is not None else None


def _retry_after(headers: Any) -> float | None:
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(header) if headers is not None else None
        if value is not None:
            with contextlib.suppress(ValueError):
                return max(0.0, float(value) * scale)
    return None


def _classify(exc: Exception, profile: ServerProfile) -> _Attempt:
    """Timeouts, dropped connections, 429, 408 and the profile's transient 5xx are retried; any other status is
    deterministic (the same request gets the same answer), so retrying it only makes the user wait."""
    import openai  # loaded by the client that raised it

    if isinstance(exc, openai.APITimeoutError):
        return _Attempt("timed out", True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return _Attempt(f"connection error: {type(cause).__name__}: {cause}", True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        body = exc.body
        detail = body.get("message") if isinstance(body, Mapping) else None
        detail = detail or (exc.message if isinstance(exc.message, str) else str(body))
        retry = status in ALWAYS_RETRIED_STATUSES or status in profile.transient_statuses
        overflow = context_overflow(body, str(detail)) if is_context_error(status, str(detail)) else None
        return _Attempt(
            f"HTTP {status}: {detail}",
            retry and overflow is None,  # a request that does not fit never will: the caller must shorten it
            _retry_after(exc.response.headers) if retry else None,
            status,
            overflow,
        )
    if isinstance(exc, _InvalidResponse):
        return _Attempt(f"invalid response: {exc}", True)
    return _Attempt(f"{type(exc).__name__}: {exc}", False)


def _hint(attempt: _Attempt, request: Mapping[str, Any], base_url: str | None, settings: LlmSettings) -> str:
    """A likely cause and fix for a failure users meet often, or ""."""
    if attempt.status == 404:
        if base_url and not base_url.rstrip("/").endswith("/v1"):
            return f" (is the base URL missing /v1? it is {base_url}; most servers serve {base_url.rstrip('/')}/v1)"
        return " (check the base URL and the model name: the server has no such route or model)"
    if attempt.overflow is not None or is_context_error(attempt.status, attempt.description):
        n = attempt.context_tokens
        size = f"its context of {n} tokens" if n else "its context"
        flag = f"--context-tokens {n}" if n else "--context-tokens N (robodojo doctor measures N)"
        return (
            f" (the request does not fit {size}: pass {flag} so the oldest turns are left out to fit; "
            "pictures are the largest part: --images none or head)"
        )
    if attempt.status is not None and attempt.status >= 500 and request.get("tool_choice") == "required":
        auto = [n for n, p in settings.profiles.items() if p.supports_tool_choice and not p.tool_choice_required_ok]
        others = f", or a profile that sends auto ({', '.join(auto)})" if auto else ""
        return f' (the server may not support tool_choice "required": try --tool-choice auto{others})'
    return ""


class LlmClient:
    """Chat completions with tools against one model on one OpenAI-compatible server.

    ``profile`` names a server profile in config/llm.yaml (openai, vllm, ollama, llamacpp, replay) or is a
    ServerProfile. The base URL comes from the argument, else the profile's environment variable, else its default;
    the API key from the argument, else the profile's environment variable (OPENAI_API_KEY for openai), else the
    profile's placeholder; the openai profile without a key is a ConfigError. The openai package's own retries are
    off: this client retries 429, 408, the profile's transient 5xx (502/503/504 by default), timeouts and connection
    errors up to ``settings.max_retries`` times with exponential backoff and jitter, within ``call_deadline_s`` per
    call, logging each retry; any other status fails at once with LlmError (with a hint for the common causes).

    ``tool_choice`` overrides what is sent for every call ("auto", "required", "none"); None or "profile" lets the
    profile decide (ServerProfile.tool_choice_for). Thread-safe for concurrent chat() calls.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        profile: str | ServerProfile = "openai",
        settings: LlmSettings | None = None,
        tool_choice: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"LLM model name must be a non-empty string, got {model!r}")
        if tool_choice is not None and tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, got {tool_choice!r}")
        #: the run's override of what tool_choice is sent (None: the profile decides)
        self.tool_choice_override = None if tool_choice == "profile" else tool_choice
        self.settings = settings or load_llm_settings()
        self.profile = profile if isinstance(profile, ServerProfile) else self.settings.profile(profile)
        p = self.profile
        self.model = model
        if base_url is None and p.base_url_env:
            base_url = os.environ.get(p.base_url_env) or None
        self.base_url = base_url or p.default_base_url
        if self.base_url is None and not p.api_key_required:
            raise ConfigError(f"LLM profile {p.name!r} is for a local server: pass base_url (it has no default)")
        if api_key is None and p.api_key_env:
            api_key = os.environ.get(p.api_key_env) or None
        if api_key is None:
            if p.api_key_required:
                where = f"environment variable {p.api_key_env}" if p.api_key_env else "the api_key argument"
                local = [f"{n}:" for n, q in self.settings.profiles.items() if not q.api_key_required and n != "replay"]
                raise ConfigError(
                    f"LLM profile {p.name!r} needs an API key: set {where} (or pass api_key); "
                    f"for a local server use a local profile ({', '.join(local)})"
                )
            api_key = p.placeholder_api_key
        import openai  # here, not at import: a node or a replay that never calls a server skips its second of loading

        self._client = openai.OpenAI(
            api_key=api_key, base_url=self.base_url, timeout=self.settings.timeout_s, max_retries=0
        )
        p.reasoning_fields(self.reasoning_effort)  # an effort this server cannot take: said before any call
        self.price: Price | None = self.settings.price_for(model, p)
        self._lock = threading.Lock()
        self._usage_total = Usage()
        self._calls = 0
        self._attempts_total = 0
        #: the replay server this client talks to, when open_llm("replay:FILE") started one
        self.replay_server: ReplayServer | None = None

    @property
    def max_output_tokens(self) -> int | None:
        """The answer length sent with every call: the settings' (--max-output-tokens), else the profile's; None: the
        server's default. Agents keep this much of a known context free for the reply."""
        s = self.settings.max_output_tokens
        return s if s is not None else self.profile.max_output_tokens

    @property
    def reasoning_effort(self) -> str | None:
        """The effort asked of every call: the settings' (--reasoning-effort), else the profile's; None: not sent."""
        s = self.settings.reasoning_effort
        return s if s is not None else self.profile.reasoning_effort

    @property
    def min_output_tokens(self) -> int:
        """The lowest answer length a context overflow may lower a call's to (config/llm.yaml)."""
        return self.settings.min_output_tokens

    def describe(self) -> dict[str, Any]:
        """Where and how this client calls, for the episode's meta.json."""
        return {
            "model": self.model,
            "profile": self.profile.name,
            "base_url": self.base_url or "https://api.openai.com/v1",
            "timeout_s": self.settings.timeout_s,
            "max_retries": self.settings.max_retries,
            "call_deadline_s": self.settings.call_deadline_s,
            "tool_choice": self.tool_choice_override or "profile",
            "max_output_tokens": self.max_output_tokens,
            "reasoning_effort": self.reasoning_effort,
            "reasoning_sent_as": self.profile.reasoning_fields(self.reasoning_effort),
        }

    # -- accounting ----------------------------------------------------------------------------------------------
    @property
    def usage_total(self) -> Usage:
        """Sum of the usage (tokens and cost) of every successful call."""
        return self._usage_total

    @property
    def calls(self) -> int:
        """Number of successful chat() calls."""
        return self._calls

    @property
    def attempts_total(self) -> int:
        """HTTP requests sent, failed attempts included."""
        return self._attempts_total

    def _cost(self, model: str, input_tokens: int, cached: int, output: int) -> float:
        price = self.price
        if price is None and model != self.model:
            price = self.settings.price_for(model, self.profile)
        if price is None:
            with _unpriced_lock:
                if self.model not in _unpriced_models:
                    _unpriced_models.add(self.model)
                    log.warning("no price for LLM model %r in config/llm.yaml: its calls are counted as 0 USD", model)
            return 0.0
        return price.cost(input_tokens, cached, output)

    # -- the call ------------------------------------------------------------------------------------------------
    def build_request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        *,
        tool_choice: str | Mapping[str, Any] | None = "required",
        parallel_tool_calls: bool | None = None,
        max_output_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of chat.completions.create for these messages, rewritten for the profile.

        ``max_output_tokens`` replaces :attr:`max_output_tokens` for this call (a shorter answer to fit a context).
        """
        p, s = self.profile, self.settings
        effort = self.reasoning_effort
        thinking = p.thinking_budget(effort)
        request: dict[str, Any] = {"model": self.model, "messages": adapt_messages(messages, p)}
        if tools:
            request["tools"] = list(tools)
            sent: str | Mapping[str, Any] | None
            if self.tool_choice_override is not None:
                sent = self.tool_choice_override  # the user's explicit choice for this run, sent as it is
            elif isinstance(tool_choice, str):
                sent = p.tool_choice_for(tool_choice)
            else:
                sent = tool_choice if p.supports_tool_choice else None
            if thinking and sent == "required":
                sent = "auto"  # Anthropic: tool use with extended thinking allows tool_choice auto or none only
            if sent is not None:
                request["tool_choice"] = sent
            if parallel_tool_calls is not None and p.supports_parallel_tool_calls_param:
                request["parallel_tool_calls"] = parallel_tool_calls
        answer = max_output_tokens if max_output_tokens is not None else self.max_output_tokens
        if answer is not None:
            # Anthropic counts the thinking budget inside max_tokens: add it, so the visible answer keeps its length
            request[p.max_tokens_param] = answer + thinking
        if s.temperature is not None:
            request["temperature"] = s.temperature
        request.update(p.reasoning_fields(effort))
        return request

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        tool_choice: str | Mapping[str, Any] | None = "required",
        parallel_tool_calls: bool | None = None,
        max_output_tokens: int | None = None,
    ) -> ChatReply:
        """Send one chat completion request and parse the answer; LlmError once the retries are used up, and its
        subclass ContextOverflowError (never retried) when the server says the request does not fit its context.

        ``tool_choice`` is "required", "auto", "none", a named-function dict, or None (not sent); it is only sent with
        tools and when the profile supports it. ``max_output_tokens`` replaces the answer length for this call.
        """
        import openai  # loaded with the client (__init__)

        request = self.build_request(
            messages,
            tools,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            max_output_tokens=max_output_tokens,
        )
        s = self.settings
        bound = 1 + s.max_retries
        where = f"{self.model} at {self.base_url or 'api.openai.com'} (profile {self.profile.name})"
        started = time.monotonic()
        deadline = started + s.call_deadline_s
        log_: list[AttemptRecord] = []
        last: _Attempt | None = None

        def fail(message: str) -> LlmError:
            if last is not None and last.overflow is not None:
                answer = max_output_tokens if max_output_tokens is not None else self.max_output_tokens
                return ContextOverflowError(
                    message,
                    len(log_),
                    overflow=last.overflow,
                    max_output_tokens=answer,
                    min_output_tokens=self.min_output_tokens,
                    request=request,
                    attempt_log=tuple(log_),
                )
            return LlmError(message, len(log_), request=request, attempt_log=tuple(log_))

        for attempt in range(1, bound + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            with self._lock:
                self._attempts_total += 1
            # A silent wait of a whole timeout (120 s by default) looked like a hang: say early that nothing came yet.
            silence = threading.Timer(
                s.silence_warning_s,
                log.warning,
                (
                    "LLM call to %s: no answer after %.1f s (attempt %d/%d, timeout %.0f s, call deadline %.0f s); "
                    "still waiting (a slow model answers late; a hung server never does)",
                    where,
                    s.silence_warning_s,
                    attempt,
                    bound,
                    min(s.timeout_s, remaining),
                    s.call_deadline_s,
                ),
            )
            silence.daemon = True
            silence.start()
            sent_at = time.monotonic()
            try:
                # Everything but the model goes in extra_body, which the SDK merges into the JSON as it is: its
                # typed path walks every message against its TypedDicts, which cost ~1.3 ms more per turn of
                # history (40 ms at turn 30, benchmarks/agent_overhead.py) for dicts that need no change.
                raw = self._client.chat.completions.with_raw_response.create(
                    model=request["model"],
                    messages=[],
                    extra_body={k: v for k, v in request.items() if k != "model"},
                    timeout=min(s.timeout_s, remaining),
                )
                try:
                    body = json.loads(raw.text)
                except json.JSONDecodeError as exc:
                    raise _InvalidResponse(f"body is not JSON ({exc}): {raw.text[:200]!r}") from None
                log_.append(AttemptRecord(attempt, time.monotonic() - sent_at))
                reply = self._parse(body, started, attempt, request, tuple(log_))
            except (openai.APIError, _InvalidResponse) as exc:
                last = _classify(exc, self.profile)
                if len(log_) < attempt:
                    log_.append(AttemptRecord(attempt, time.monotonic() - sent_at, last.description, last.status))
                else:  # the HTTP call answered but the body was not a chat completion
                    log_[-1] = dataclasses.replace(log_[-1], error=last.description)
                if not last.retry:
                    raise fail(
                        f"LLM request to {where} was rejected: {last.description}"
                        f"{_hint(last, request, self.base_url, self.settings)}"
                    ) from exc
                if attempt == bound:
                    break
                delay = min(s.backoff_max_s, s.backoff_base_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                if last.retry_after_s is not None:
                    delay = min(s.backoff_max_s, max(delay, last.retry_after_s))
                delay = min(delay, max(0.0, deadline - time.monotonic()))
                log.warning(
                    "LLM call to %s: attempt %d/%d failed after %.1f s (%s); retrying in %.2f s",
                    where,
                    attempt,
                    bound,
                    log_[-1].latency_s,
                    last.description,
                    delay,
                )
                time.sleep(delay)
                continue
            finally:
                silence.cancel()
            with self._lock:
                self._usage_total = self._usage_total + reply.usage
                self._calls += 1
            return reply
        elapsed = time.monotonic() - started
        if last is None:  # the deadline passed before the first attempt (a deadline of ~0)
            raise fail(f"LLM call to {where}: call_deadline_s={s.call_deadline_s:g} passed before any attempt")
        why = (
            f"gave up at the call deadline ({s.call_deadline_s:g} s) after {len(log_)} attempt(s)"
            if len(log_) < bound
            else f"failed after {bound} attempts (max_retries={s.max_retries})"
        )
        raise fail(
            f"LLM call to {where} {why}, {elapsed:.1f} s in all; last error: {last.description}"
            f"{_hint(last, request, self.base_url, self.settings)}"
        )

    def _parse(
        self,
        body: Any,
        started: float,
        attempts: int,
        request: dict[str, Any],
        attempt_log: tuple[AttemptRecord, ...],
    ) -> ChatReply:
        if not isinstance(body, Mapping):
            raise _InvalidResponse(f"expected a JSON object, got {type(body).__name__}")
        if "error" in body and "choices" not in body:
            raise _InvalidResponse(f"error in a 2xx answer: {body['error']}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise _InvalidResponse(f"no choices in the answer: {json.dumps(body)[:200]}")
        message = choices[0].get("message") or {}
        tool_calls = parse_tool_calls(message)
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = _tool_text(content)
        if content is not None and not isinstance(content, str):
            content = str(content)
        if tool_calls and content == "":
            content = None
        finish = str(choices[0].get("finish_reason") or ("tool_calls" if tool_calls else "stop"))
        if tool_calls and finish == "stop":
            finish = "tool_calls"
        model = str(body.get("model") or self.model)
        input_tokens, cached, output, reasoning = parse_usage(body)
        usage = Usage(input_tokens, cached, output, self._cost(model, input_tokens, cached, output), reasoning)
        return ChatReply(
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            model=model,
            finish_reason=finish,
            latency_s=time.monotonic() - started,
            attempts=attempts,
            raw=dict(body),
            request=request,
            attempt_log=attempt_log,
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __enter__(self) -> LlmClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LlmClient(model={self.model!r}, profile={self.profile.name!r}, base_url={self.base_url!r})"


def parse_llm_spec(spec: object, settings: LlmSettings | None = None) -> tuple[str, str]:
    """(profile, model or file) of a command-line spec such as ``openai:gpt-4.1`` or ``replay:FILE``; a
    ConfigError listing the forms otherwise. Without ``settings``: config/llm.yaml and the per-user file."""
    settings = settings or user_llm_settings()
    kind, sep, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or not rest or kind not in settings.profiles:
        forms = ", ".join(["replay:FILE"] + [f"{name}:MODEL" for name in settings.profiles if name != "replay"])
        raise ConfigError(f"bad LLM spec {spec!r}; expected one of: {forms}")
    return kind, rest


@contextlib.contextmanager
def open_llm(
    spec: str,
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    settings: LlmSettings | None = None,
    tool_choice: str | None = None,
) -> Iterator[LlmClient]:
    """An LlmClient for a command-line spec, closed (and its replay server stopped) on exit.

    ``replay:FILE`` starts a ReplayServer for the script on 127.0.0.1 and points the client at it (profile replay);
    ``openai:MODEL`` (base URL from the argument or OPENAI_BASE_URL), ``vllm:MODEL``, ``ollama:MODEL``,
    ``llamacpp:MODEL`` (or any other profile in config/llm.yaml) use that profile and its default base URL unless
    overridden. Anything else is a ConfigError listing the forms. ``tool_choice`` is LlmClient's override. Without
    ``settings``, config/llm.yaml with the per-user file merged over it (:func:`user_llm_settings`).
    """
    from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer

    settings = settings or user_llm_settings()  # the user's own profiles too ($XDG_CONFIG_HOME/robodojo/llm.yaml)
    kind, rest = parse_llm_spec(spec, settings)
    if kind == "replay":
        script = ReplayScript.load(Path(rest))
        with ReplayServer(script) as server:
            client = LlmClient(script.model or "replay", server.url, api_key, "replay", settings, tool_choice)
            client.replay_server = server
            try:
                yield client
            finally:
                client.close()
        return
    client = LlmClient(rest, base_url, api_key, kind, settings, tool_choice)
    try:
        yield client
    finally:
        client.close()
