"""`robodojo doctor`: probe an OpenAI-compatible endpoint once and say which profile and options work with it.

Local servers differ in ways that only show mid-episode (a 500 on tool_choice "required", tools ignored without
tool_choice, images pasted into the prompt as base64 text, tool results dropped by the chat template). The doctor
sends one short request per feature, with short timeouts and no retries, and reports what it measured
(:func:`diagnose` returns a frozen :class:`DoctorReport`; :func:`format_report` renders it), then picks the profile of
config/llm.yaml whose quirk flags match and one fix line per failure. The reasoning effort in use (--reasoning-effort,
else config/llm.yaml's) is sent once as the named profile sends it, and the report says whether the server took it
and how many reasoning tokens it reported.

Probing uses the openai package directly (not LlmClient) so that no profile rewrite hides what the server does, plus
urllib for the endpoints outside the OpenAI API (llama.cpp's /props).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import openai

from robodojo.agents.llm.server_errors import context_length_in_error, is_context_error
from robodojo.agents.llm.settings import LlmSettings, ServerProfile, check_reasoning_effort, load_llm_settings
from robodojo.errors import ConfigError

OK, WARN, FAIL, SKIP = "ok", "WARN", "FAIL", "-"
DEFAULT_TIMEOUT_S = 15.0
OPENAI_URL = "https://api.openai.com/v1"
CODE_WORD = "PELICAN"
ECHO_TEXT = '<ok> & "done"'  # HTML-escaping servers turn this into &lt;ok&gt; &amp; &quot;done&quot;
TOOL_NAME = "report_status"
TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Report your status.",
        "parameters": {
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["ok"]}},
            "required": ["status"],
        },
    },
}
TOOL_PROMPT = f'Call the {TOOL_NAME} tool with status "ok". Do not answer in text.'
TOOL_CHOICES = ("required", "auto", None)  # None: the field is not sent
#: the answer length of every probe on local servers: llama.cpp and llama-cpp-python generate up to their whole
#: context when max_tokens is not sent (a 135M model that ignores the tools talked until the 15 s timeout)
PROBE_MAX_TOKENS = 96
#: the escaping probe: these characters, and the same text already escaped. Unescaped by the server, the escaped text
#: costs several times the characters (entities are 4-5 characters of several tokens); escaped by the server, both
#: are escaped once more and the second costs only a little more than the first.
ESCAPE_PROBE = '<"' * 50
ESCAPE_PROBE_ESCAPED = "&lt;&#34;" * 50
ESCAPE_RATIO = 2.5  #: the token ratio of the two below which the server escapes
OVERFLOW_PROMPT_CHARS = 400_000  # ~100k tokens: beyond the context of local servers that do not state theirs
SPEED_PROMPT_WORDS = 400  #: the reading-speed probe: 400 words (400-800 tokens, seconds on a CPU), one token answered
SPEED_MIN_S = 0.5  #: below this a probe is too quick to time: the server is fast, no timeout advice is needed
SPEED_ANSWER_PROMPT = "Write the numbers from 1 to 200 in words, separated by commas."
SPEED_ANSWER_TOKENS = 64  #: the writing-speed probe's answer length
#: an agent call at its worst: a full context read and a full answer written; the default answer length when neither
#: the settings nor the profile set one
WORST_ANSWER_TOKENS = 1024
TIMEOUT_MARGIN = 2.0  #: the --timeout advised: this times the worst call, in whole 10 s; advised when it exceeds it


@dataclass(frozen=True)
class Check:
    """One row of the report: what was probed, the verdict (ok, WARN, FAIL, - for not run) and what was seen."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class Facts:
    """What the probes measured, in the terms the profile choice needs (None: not measured)."""

    reachable: bool = False
    needs_v1: bool = False
    timed_out: bool = False
    chat_ok: bool = False
    escaped: bool | None = None
    tool_calls: Mapping[str, bool | None] = field(default_factory=dict)  # "required"/"auto"/"omitted" -> calls?
    tool_errors: Mapping[str, str] = field(default_factory=dict)
    images: str | None = None  # ok, rejected, as_text, context
    tool_role: str | None = None  # ok, rejected, dropped
    null_content_ok: bool | None = None
    context_tokens: int | None = None
    truncates_prompts: bool = False  #: prompts beyond the context are cut without an error (Ollama)
    timed_out_probes: bool = False  #: some probes got no answer within the timeout: their rows say "not measured"
    read_tokens_per_s: float | None = None  #: prompt tokens the server reads a second (None: too fast to time)
    write_tokens_per_s: float | None = None  #: answer tokens it writes a second (None: too fast to time)
    reasoning_effort: str | None = None  #: the effort in use (None: none asked for)
    reasoning_ok: bool | None = None  #: the server took the effort as the profile sends it (None: not probed)


@dataclass(frozen=True)
class DoctorReport:
    """The measured checks, the profile to use and one fix per failure; ``working`` is the exit status's answer."""

    spec: str
    kind: str
    model: str
    base_url: str
    timeout_s: float
    checks: tuple[Check, ...]
    facts: Facts
    models: tuple[str, ...]
    profile: str | None
    fixes: tuple[str, ...]
    working: bool

    def check(self, name: str) -> Check:
        """The row called ``name``; KeyError if there is none."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)


# -- talking to the server -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """One chat request's outcome: the JSON body, or an error (status None: no HTTP answer)."""

    body: Mapping[str, Any] | None = None
    status: int | None = None
    error: str = ""
    error_body: Any = None
    timed_out: bool = False
    elapsed_s: float = 0.0

    @property
    def message(self) -> Mapping[str, Any]:
        choices = (self.body or {}).get("choices") or [{}]
        return choices[0].get("message") or {}

    @property
    def content(self) -> str:
        return str(self.message.get("content") or "")

    @property
    def called(self) -> bool:
        calls = self.message.get("tool_calls") or []
        return any(isinstance(c, Mapping) and (c.get("function") or {}).get("name") == TOOL_NAME for c in calls)

    @property
    def completion_tokens(self) -> int | None:
        usage = (self.body or {}).get("usage") or {}
        value = usage.get("completion_tokens")
        return value if isinstance(value, int) else None

    @property
    def reasoning_tokens(self) -> int | None:
        usage = (self.body or {}).get("usage") or {}
        details = usage.get("completion_tokens_details") or {}
        value = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
        return value if isinstance(value, int) else None

    @property
    def prompt_tokens(self) -> int | None:
        usage = (self.body or {}).get("usage") or {}
        value = usage.get("prompt_tokens")
        return value if isinstance(value, int) else None

    def failure(self) -> str:
        """One line saying how the request failed."""
        if self.timed_out:
            return "no answer within the timeout"
        if self.status is None:
            return f"no HTTP answer ({self.error})"
        return f"HTTP {self.status}: {_short(self.error)}"


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chat(client: openai.OpenAI, model: str, messages: list[dict[str, Any]], **kwargs: Any) -> _Answer:
    if not str(client.base_url).startswith(OPENAI_URL):  # OpenAI's reasoning models refuse max_tokens
        kwargs.setdefault("max_tokens", PROBE_MAX_TOKENS)
    started = time.monotonic()
    try:
        reply = client.chat.completions.create(model=model, messages=messages, **kwargs)  # type: ignore[arg-type]
    except openai.APITimeoutError:
        return _Answer(timed_out=True, error="timed out", elapsed_s=time.monotonic() - started)
    except openai.APIStatusError as exc:
        body = exc.body
        message = body.get("message") if isinstance(body, Mapping) else None
        return _Answer(status=exc.status_code, error=str(message or exc.message), error_body=body)
    except openai.APIConnectionError as exc:
        return _Answer(error=str(exc.__cause__ or exc))
    return _Answer(body=reply.model_dump(), elapsed_s=time.monotonic() - started)


def _get_json(url: str, api_key: str, timeout_s: float) -> tuple[int | None, Any, str]:
    """(HTTP status or None, parsed JSON or None, error text) of a GET."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            raw = answer.read()
            try:
                return answer.status, json.loads(raw), ""
            except json.JSONDecodeError:
                return answer.status, None, "not JSON"
    except urllib.error.HTTPError as exc:
        return exc.code, None, f"HTTP {exc.code}"
    except TimeoutError:
        return None, None, "timeout"
    except urllib.error.URLError as exc:
        reason = exc.reason
        return None, None, "timeout" if isinstance(reason, TimeoutError) else str(reason)
    except OSError as exc:
        return None, None, str(exc)


def _context_from_error(answer: _Answer) -> int | None:
    return context_length_in_error(answer.error_body, answer.error)


def _is_context_error(answer: _Answer) -> bool:
    return is_context_error(answer.status, answer.error)


def _probe_image_part() -> tuple[dict[str, Any], int]:
    """A 32x32 noise JPEG as an image part (~2 KB of base64: 500 tokens and more as text, under 300 as a picture;
    a 64x64 one cost a CPU server 28 s as escaped text)."""
    from robodojo.agents.llm.client import image_part  # cv2; only needed here

    rgb = np.random.default_rng(13).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    part = image_part(rgb, 85)
    return part, len(part["image_url"]["url"])


# -- probing -----------------------------------------------------------------------------------------------------------


def _root_of(base_url: str) -> str:
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def probe(
    base_url: str, model: str, api_key: str, timeout_s: float
) -> tuple[tuple[Check, ...], Facts, tuple[str, ...]]:
    """Run every probe against ``base_url`` once; the rows, the facts and the model ids the server lists."""
    checks: list[Check] = []
    base = base_url.rstrip("/")
    status, body, error = _get_json(base + "/models", api_key, timeout_s)
    needs_v1 = False
    if status != 200 and not base.endswith("/v1"):
        status_v1, body_v1, _ = _get_json(base + "/v1/models", api_key, timeout_s)
        if status_v1 == 200:
            needs_v1, status, body, base = True, status_v1, body_v1, base + "/v1"
    if status is None:
        timed_out = error == "timeout"
        why = (
            f"connected, but no answer within {timeout_s:g} s (busy, hung, or still loading the model)"
            if timed_out
            else f"nothing answers at {base}: {error}"
        )
        checks.append(Check("reachable", FAIL, why))
        return tuple(checks), Facts(timed_out=timed_out), ()
    if needs_v1:
        checks.append(Check("reachable", WARN, f"GET {base_url.rstrip('/')}/models fails, {base}/models works"))
    else:
        checks.append(Check("reachable", OK, f"GET {base}/models: HTTP {status}"))
    data = body.get("data") if isinstance(body, Mapping) else None
    entries: list[Any] = data if isinstance(data, list) else []
    models = tuple(str(e.get("id")) for e in entries if isinstance(e, Mapping) and e.get("id"))
    if not models:
        checks.append(Check("models", WARN, "the server lists no models" if status == 200 else f"GET /models: {error}"))
    elif model in models:
        checks.append(Check("models", OK, f"{', '.join(models[:4])}{' ...' if len(models) > 4 else ''}"))
    else:
        listed = ", ".join(models[:4]) + (" ..." if len(models) > 4 else "")
        checks.append(Check("models", WARN, f"{model!r} is not listed ({listed}); llama.cpp ignores the name"))

    context, context_source = None, ""
    for e in entries:
        if isinstance(e, Mapping) and isinstance(e.get("max_model_len"), int):
            context, context_source = int(e["max_model_len"]), "max_model_len in /v1/models (vLLM)"
    if context is None:
        props_status, props, _ = _get_json(_root_of(base) + "/props", api_key, timeout_s)
        if props_status == 200 and isinstance(props, Mapping):
            settings = props.get("default_generation_settings")
            n_ctx = (settings or {}).get("n_ctx") if isinstance(settings, Mapping) else props.get("n_ctx")
            if isinstance(n_ctx, int):
                context, context_source = n_ctx, "n_ctx in /props (llama.cpp)"

    client = openai.OpenAI(base_url=base, api_key=api_key, timeout=timeout_s, max_retries=0)
    try:
        return _probe_chat(client, model, base, timeout_s, checks, models, needs_v1, context, context_source)
    finally:
        client.close()


def _probe_chat(
    client: openai.OpenAI,
    model: str,
    base: str,
    timeout_s: float,
    checks: list[Check],
    models: tuple[str, ...],
    needs_v1: bool,
    context: int | None,
    context_source: str,
) -> tuple[tuple[Check, ...], Facts, tuple[str, ...]]:
    user = {"role": "user", "content": f"Reply with exactly this text and nothing else: {ECHO_TEXT}"}
    chat = _chat(client, model, [user])
    context = context or _context_from_error(chat)
    if chat.body is None:
        checks.append(Check("plain chat", FAIL, chat.failure()))
        skipped = "not run: plain chat fails"
        for name in ("html escaping", *(_tool_row(c) for c in TOOL_CHOICES), "images", "tool role", "null content"):
            checks.append(Check(name, SKIP, skipped))
        checks.insert(2, _context_check(context, context_source))
        facts = Facts(reachable=True, needs_v1=needs_v1, timed_out=chat.timed_out, context_tokens=context)
        return tuple(checks), facts, models
    checks.append(Check("plain chat", OK, f"answered {_short(chat.content, 50)!r}"))
    truncates = False
    if context is None and not base.startswith(OPENAI_URL):
        context, context_source, truncates = _probe_overflow(client, model)
    escape_check = _probe_escaping(client, model, chat)
    escaped = escape_check.status == FAIL
    checks.append(escape_check)
    speed_check, read_rate, write_rate = _probe_speed(client, model, [chat])
    checks.append(speed_check)

    calls: dict[str, bool | None] = {}
    errors: dict[str, str] = {}
    for choice in TOOL_CHOICES:
        key = choice or "omitted"
        kwargs: dict[str, Any] = {"tools": [TOOL]}
        if choice is not None:
            kwargs["tool_choice"] = choice
        answer = _chat(client, model, [{"role": "user", "content": TOOL_PROMPT}], **kwargs)
        if answer.timed_out:
            calls[key], errors[key] = None, answer.failure()
            checks.append(_not_measured(_tool_row(choice)))
        elif answer.body is None:
            calls[key], errors[key] = None, answer.failure()
            checks.append(Check(_tool_row(choice), FAIL, answer.failure()))
        elif answer.called:
            calls[key] = True
            checks.append(Check(_tool_row(choice), OK, "the model calls the tool"))
        else:
            calls[key] = False
            checks.append(Check(_tool_row(choice), WARN, f"no tool call; text {_short(answer.content, 45)!r}"))

    images, image_check = _probe_images(client, model)
    context = context or image_check[1]
    checks.append(image_check[0])

    call = {"id": "call_doctor_1", "type": "function", "function": {"name": TOOL_NAME, "arguments": '{"status": "ok"}'}}
    result = {"role": "tool", "tool_call_id": "call_doctor_1", "content": f"Recorded. The code word is {CODE_WORD}."}
    question = {"role": "user", "content": "What is the code word in the tool result? Answer with the word only."}
    ask: dict[str, Any] = {"role": "user", "content": TOOL_PROMPT}
    answer = _chat(client, model, [ask, {"role": "assistant", "content": "", "tool_calls": [call]}, result, question])
    tool_role: str | None
    if answer.timed_out:
        tool_role = None
        checks.append(_not_measured("tool role"))
    elif answer.body is None:
        tool_role = "rejected"
        checks.append(Check("tool role", FAIL, f"role 'tool' rejected: {answer.failure()}"))
    elif CODE_WORD in answer.content.upper():
        tool_role = "ok"
        checks.append(Check("tool role", OK, "the model sees tool results"))
    else:
        tool_role = "dropped"
        checks.append(Check("tool role", FAIL, f"tool result not seen (dropped?); said {_short(answer.content, 40)!r}"))

    # content null next to tool_calls; the tool result folded into a user message if role "tool" is the problem
    folded = {"role": "user", "content": f"Result of tool call call_doctor_1: {result['content']}"}
    history = [ask, {"role": "assistant", "content": None, "tool_calls": [call]}]
    history += [result, question] if tool_role != "rejected" else [folded, question]
    answer = _chat(client, model, history)
    null_ok: bool | None = answer.body is not None
    if answer.timed_out:
        null_ok = None
        checks.append(_not_measured("null content"))
    elif null_ok:
        checks.append(Check("null content", OK, "assistant content null accepted"))
    else:
        checks.append(Check("null content", FAIL, f"assistant content null next to tool_calls: {answer.failure()}"))
    checks.insert(2, _context_check(context, context_source or "the server's context-length error", truncates))
    facts = Facts(
        reachable=True,
        needs_v1=needs_v1,
        chat_ok=True,
        escaped=escaped,
        tool_calls=MappingProxyType(calls),
        tool_errors=MappingProxyType(errors),
        images=images or None,
        tool_role=tool_role,
        null_content_ok=null_ok,
        context_tokens=context,
        truncates_prompts=truncates,
        timed_out_probes=any(c.detail.startswith("not measured") for c in checks),
        read_tokens_per_s=read_rate,
        write_tokens_per_s=write_rate,
    )
    return tuple(checks), facts, models


def _probe_escaping(client: openai.OpenAI, model: str, echo: _Answer) -> Check:
    """Whether message text reaches the model HTML-escaped (a chat template rendered with autoescape, as
    llama-cpp-python's chatml-function-calling): from the echo when the model repeated the text, else from what
    the server counts for a prompt of characters that escaping lengthens."""
    if re.search(r"&lt;|&amp;|&quot;|&#x27;|&#34;", echo.content) and "<ok>" not in echo.content:
        return Check("html escaping", FAIL, 'the model echoes &lt; &amp; &quot; for < & " (autoescaping template)')
    if ECHO_TEXT in echo.content:
        return Check("html escaping", OK, "text arrives as sent (echoed)")
    sizes = []
    for text in ("", ESCAPE_PROBE, ESCAPE_PROBE_ESCAPED):
        sizes.append(_chat(client, model, [{"role": "user", "content": f"Say ok. {text}"}], max_tokens=1).prompt_tokens)
    base, plain, escaped = sizes
    if base is None or plain is None or escaped is None or plain <= base:
        return Check("html escaping", WARN, "could not tell: the model did not echo and the server reports no usage")
    ratio = (escaped - base) / (plain - base)
    seen = f"{ESCAPE_PROBE[:4]}... costs +{plain - base} tokens, {ESCAPE_PROBE_ESCAPED[:9]}... +{escaped - base}"
    if ratio < ESCAPE_RATIO:
        return Check("html escaping", FAIL, f"escaped (autoescaping template): {seen}")
    return Check("html escaping", OK, f"text arrives as sent: {seen}")


def _probe_overflow(client: openai.OpenAI, model: str) -> tuple[int | None, str, bool]:
    """The context length from what a too-long prompt gets: the error that states it (llama-cpp-python states it only
    there), or the prompt size a server that cuts prompts silently reports (Ollama beyond its num_ctx)."""
    words = "robot " * (OVERFLOW_PROMPT_CHARS // 6)
    answer = _chat(client, model, [{"role": "user", "content": words}], max_tokens=1)
    if answer.body is None and _is_context_error(answer):
        n_ctx = _context_from_error(answer)
        if n_ctx is not None:
            return n_ctx, f"the error a {OVERFLOW_PROMPT_CHARS // 1000}k-character prompt gets", False
    sent = OVERFLOW_PROMPT_CHARS // 6  # at least a token a word
    if answer.body is not None and answer.prompt_tokens is not None and answer.prompt_tokens < sent // 2:
        size = f"a {OVERFLOW_PROMPT_CHARS // 1000}k-character prompt"
        return answer.prompt_tokens, f"{size} was cut to this without an error: what does not fit is dropped", True
    return None, "", False


def _probe_speed(
    client: openai.OpenAI, model: str, answers: Sequence[_Answer] = ()
) -> tuple[Check, float | None, float | None]:
    """How fast the server reads a prompt and writes an answer (a CPU server reads a few hundred tokens a second and
    writes tens): a long prompt answered with one token, then the longest of a request for a long answer and
    ``answers`` (earlier probes), its reading time taken out."""
    long = _chat(client, model, [{"role": "user", "content": "Say ok. " + "robot " * SPEED_PROMPT_WORDS}], max_tokens=1)
    if long.timed_out:
        return _not_measured("speed"), None, None
    read = long.prompt_tokens / long.elapsed_s if long.prompt_tokens and long.elapsed_s > SPEED_MIN_S else None
    count = _chat(client, model, [{"role": "user", "content": SPEED_ANSWER_PROMPT}], max_tokens=SPEED_ANSWER_TOKENS)
    # small models often answer in a few tokens whatever they are asked: time the longest answer seen
    longest = max((count, *answers), key=lambda a: a.completion_tokens or 0)
    written, prompt = longest.completion_tokens, longest.prompt_tokens or 0
    writing_s = longest.elapsed_s - (prompt / read if read else 0.0)
    write = written / writing_s if written and written > 8 and writing_s > SPEED_MIN_S else None
    if read is None and write is None:
        return Check("speed", OK, "too fast to time (a GPU server)"), None, None
    parts = [f"reads ~{read:.0f} tokens/s" if read else "reads too fast to time"]
    parts.append(f"writes ~{write:.0f} tokens/s" if write else "writes too fast to time")
    return Check("speed", OK, ", ".join(parts)), read, write


def _not_measured(name: str) -> Check:
    return Check(name, WARN, "not measured: no answer within the timeout")


def _tool_row(choice: str | None) -> str:
    return f"tools, tool_choice={choice}" if choice else "tools, no tool_choice"


def _context_check(context: int | None, source: str, truncates: bool = False) -> Check:
    if context is None:
        return Check("context length", SKIP, "the server does not say")
    return Check("context length", WARN if truncates else OK, f"{context} tokens ({source})")


def _probe_images(client: openai.OpenAI, model: str) -> tuple[str, tuple[Check, int | None]]:
    """Send the same question without and with a small image; the prompt-token difference tells picture from text."""
    part, chars = _probe_image_part()
    text = {"type": "text", "text": "How many images do you see? Answer with a number."}
    plain = _chat(client, model, [{"role": "user", "content": [text]}])
    answer = _chat(client, model, [{"role": "user", "content": [text, part]}])
    if answer.timed_out:
        return "", (_not_measured("images"), None)
    if answer.body is None:
        if _is_context_error(answer):
            n_ctx = _context_from_error(answer)
            return "context", (
                Check("images", FAIL, f"a {chars}-character image part overflows the context: pasted as text?"),
                n_ctx,
            )
        return "rejected", (Check("images", FAIL, f"image part rejected: {answer.failure()}"), None)
    before, after = plain.prompt_tokens, answer.prompt_tokens
    if before is None or after is None:
        return "ok", (Check("images", WARN, "accepted; no usage to tell a picture from pasted text"), None)
    delta = after - before
    # base64 tokenises at 2-4 characters a token; a vision encoder spends well under 300 tokens on 32x32 pixels
    if delta > max(300, chars // 8):
        detail = f"pasted into the prompt as text: +{delta} tokens for a {chars}-character 32x32 image"
        return "as_text", (Check("images", FAIL, detail), None)
    return "ok", (Check("images", OK, f"accepted as a picture (+{delta} prompt tokens)"), None)


def probe_reasoning(
    base_url: str, model: str, api_key: str, timeout_s: float, profile: ServerProfile, effort: str | None
) -> tuple[Check, bool | None]:
    """Send ``effort`` once as ``profile`` sends it; the report row and whether the server took it (None: no effort
    in use, or no answer in time)."""
    if effort is None:
        return Check(
            "reasoning effort", SKIP, "none asked for: not sent (the server's default; --reasoning-effort)"
        ), None
    if profile.reasoning_effort_param is None:
        detail = f"{effort}: profile {profile.name!r} has no reasoning-effort control (reasoning_effort_param: null)"
        return Check("reasoning effort", FAIL, detail), False
    fields = profile.reasoning_fields(effort)
    sent = json.dumps(fields)
    kwargs: dict[str, Any] = {"extra_body": fields}
    if profile.thinking_budget(effort):  # Anthropic: the budget counts inside max_tokens
        kwargs["max_tokens"] = PROBE_MAX_TOKENS + profile.thinking_budget(effort)
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
    try:
        answer = _chat(
            client, model, [{"role": "user", "content": "What is 17 * 23? Answer with the number."}], **kwargs
        )
    finally:
        client.close()
    if answer.timed_out:
        return _not_measured("reasoning effort"), None
    if answer.body is None:
        return Check("reasoning effort", FAIL, f"{effort} sent as {sent}: {answer.failure()}"), False
    tokens = answer.reasoning_tokens
    said = f"{tokens} reasoning tokens reported" if tokens is not None else "no reasoning tokens reported"
    return Check("reasoning effort", OK, f"{effort} sent as {sent}: accepted, {said}"), True


# -- verdict -----------------------------------------------------------------------------------------------------------


def _candidates(kind: str, settings: LlmSettings) -> list[ServerProfile]:
    """Profiles that could drive this endpoint: the same kind of key handling (an OpenAI key is never proposed for a
    local server), the replay profile only for the replay server (which stands in for any local server)."""
    own = settings.profile(kind)
    return [
        p
        for p in settings.profiles.values()
        if (p.name != "replay" or kind == "replay") and p.api_key_required == own.api_key_required
    ]


def tool_choice_sent(p: ServerProfile) -> str:
    """What the client sends when an agent asks for "required": required, auto, or omitted (no field)."""
    if not p.supports_tool_choice:
        return "omitted"
    return "required" if p.tool_choice_required_ok else "auto"


def _walks_into(p: ServerProfile, f: Facts) -> int:
    """How many measured failures the profile does not work around (null content, tool role)."""
    return int(f.null_content_ok is False and p.assistant_content_null_ok) + int(
        f.tool_role in ("rejected", "dropped") and p.tool_role_supported
    )


def _rank(p: ServerProfile, f: Facts, kind: str) -> tuple[int, bool, bool, int]:
    """Sort key, best last: (fewest measured failures the profile walks into, its tool_choice gets tool calls,
    it is the kind the user named, quirk flags equal to the measurements)."""
    matches = 0
    if f.null_content_ok is not None:
        matches += p.assistant_content_null_ok == f.null_content_ok
    if f.tool_role is not None:
        matches += p.tool_role_supported == (f.tool_role == "ok")
    return -_walks_into(p, f), bool(f.tool_calls.get(tool_choice_sent(p))), p.name == kind, matches


def recommend(f: Facts, kind: str, base_url: str, settings: LlmSettings) -> tuple[str | None, tuple[str, ...], bool]:
    """The profile to use, one fix line per failure, and whether a working setup was found."""
    fixes: list[str] = []
    if f.needs_v1:
        fixes.append(f"add /v1 to --base-url: --base-url {base_url.rstrip('/')}/v1")
    if not f.reachable:
        if f.timed_out:
            fixes.append("the server accepts connections but does not answer: wait for the model to load or restart it")
        else:
            fixes.append("start the server, or give its address with --base-url URL (ending in /v1)")
        return None, tuple(fixes), False
    if not f.chat_ok:
        if f.timed_out:
            fixes.append("the model did not answer in time: a smaller model, a GPU, or a longer --timeout")
        else:
            fixes.append("plain chat fails: check the model name (--llm KIND:MODEL, see the models row)")
        return None, tuple(fixes), False

    candidates = _candidates(kind, settings)
    profile = max(candidates, key=lambda p: _rank(p, f, kind))
    usable = _walks_into(profile, f) == 0
    calls = f.tool_calls
    modes = [m for m in ("required", "auto", "omitted") if calls.get(m)]
    working = usable and bool(modes)
    if not modes:
        fixes.append(
            "the model never calls tools: llama.cpp needs --jinja and a chat template that describes tools (the "
            "model's own, or --chat-template-file), llama-cpp-python a function-calling chat_format, Ollama and vLLM a "
            "model with tool support (vLLM also --enable-auto-tool-choice --tool-call-parser); small models may not "
            "call tools at all"
        )
    elif not calls.get(tool_choice_sent(profile)):
        fixes.append(
            f"use --tool-choice {modes[0]}"
            if modes[0] != "omitted"
            else "tool_choice must not be sent: a profile with supports_tool_choice: false (e.g. ollama)"
        )
    if f.timed_out_probes:
        fixes.append(
            "some probes got no answer in time (a server on a CPU reads a few hundred tokens a second, and one that "
            "serves a request at a time makes the next probes wait): run doctor again with --timeout 60"
        )
    if f.images in ("rejected", "as_text", "context"):
        reason = {"rejected": "the server rejects images", "as_text": "images reach the model as base64 text",
                  "context": "an image overflows the context"}[f.images]  # fmt: skip
        fixes.append(f"use --images none ({reason}; or serve a vision model, llama.cpp: --mmproj)")
    if f.escaped:
        fixes.append(
            "the chat template HTML-escapes prompts: the model reads &lt; for < in code, tool results and JSON; "
            "robodojo runs a cell that only parses unescaped, but a template without autoescape is better "
            "(llama.cpp's llama-server --jinja)"
        )
    advice = _timeout_advice(f, settings, profile)
    if advice:
        fixes.append(advice)
    if f.reasoning_ok is False:
        takes = ", ".join(n for n, p in settings.profiles.items() if p.reasoning_effort_param and n != "replay")
        fixes.append(
            f"the server did not take reasoning effort {f.reasoning_effort!r} as profile {kind!r} sends it: drop "
            f"--reasoning-effort (the model's default), or use a profile whose server takes one ({takes})"
        )
    if f.truncates_prompts:
        fixes.append(
            f"the server cuts prompts beyond {f.context_tokens} tokens without an error (Ollama drops the older "
            "messages, the model never knows): give it a larger context (Ollama: OLLAMA_CONTEXT_LENGTH=32768 "
            "ollama serve, or num_ctx in a Modelfile) and pass that as --context-tokens"
        )
    elif f.context_tokens is not None:
        fixes.append(f"use --context-tokens {f.context_tokens} (long episodes then leave their oldest turns out)")
    if f.tool_role in ("rejected", "dropped") and profile.tool_role_supported:
        fixes.append(
            f"tool results are {f.tool_role}: add a profile with tool_role_supported: false to config/llm.yaml "
            "(the client then folds them into user messages)"
        )
    if f.null_content_ok is False and profile.assistant_content_null_ok:
        names = ", ".join(p.name for p in candidates if not p.assistant_content_null_ok) or "none configured"
        fixes.append(f"null assistant content fails: a profile with assistant_content_null_ok: false ({names})")
    return profile.name, tuple(fixes), working


def _timeout_advice(f: Facts, settings: LlmSettings, profile: ServerProfile) -> str:
    """``use --timeout N`` when the worst agent call (a full known context read, a full answer written) at the
    measured speeds would outlast the configured per-request timeout; "" otherwise."""
    if f.read_tokens_per_s is None and f.write_tokens_per_s is None:
        return ""
    answer = settings.max_output_tokens or profile.max_output_tokens or WORST_ANSWER_TOKENS
    worst = answer / f.write_tokens_per_s if f.write_tokens_per_s else 0.0
    if f.context_tokens and f.read_tokens_per_s:
        worst += f.context_tokens / f.read_tokens_per_s
    # the margin counts for the comparison too: a CPU server writes slower as its context fills (measured: 55 tokens/s
    # on the probe, ~15 late in a code-cell episode, where 120 s timed out although this estimate said 96 s)
    if worst * TIMEOUT_MARGIN <= settings.timeout_s:
        return ""
    timeout = int(-(-worst * TIMEOUT_MARGIN // 10) * 10)
    reading = f"reading {f.context_tokens} tokens and " if f.context_tokens and f.read_tokens_per_s else ""
    return (
        f"use --timeout {timeout} (at the measured speeds, {reading}writing {answer} take ~{worst:.0f} s, over the "
        f"{settings.timeout_s:g} s per request configured)"
    )


def resolve_endpoint(kind: str, base_url: str | None, api_key: str | None, settings: LlmSettings) -> tuple[str, str]:
    """(base URL, API key) as LlmClient would pick them: argument, then the profile's variable, then its default."""
    p = settings.profile(kind)
    if base_url is None and p.base_url_env:
        base_url = os.environ.get(p.base_url_env) or None
    base_url = base_url or p.default_base_url or (OPENAI_URL if p.api_key_required else None)
    if base_url is None:
        raise ConfigError(f"profile {kind!r} has no default address: pass --base-url URL")
    if api_key is None and p.api_key_env:
        api_key = os.environ.get(p.api_key_env) or None
    if api_key is None:
        if p.api_key_required:
            raise ConfigError(f"profile {kind!r} needs an API key: set {p.api_key_env}")
        api_key = p.placeholder_api_key
    return base_url, api_key


@contextlib.contextmanager
def _endpoint(spec: str, base_url: str | None, api_key: str | None, settings: LlmSettings) -> Iterator[tuple[str, ...]]:
    """(kind, model, base URL, key); replay:FILE starts that script's server for the duration."""
    from robodojo.agents.llm.client import parse_llm_spec
    from robodojo.agents.llm.replay_server import ReplayScript, ReplayServer

    kind, rest = parse_llm_spec(spec, settings)
    if kind == "replay":
        script = ReplayScript.load(Path(rest))
        with ReplayServer(script) as server:
            yield kind, script.model or "replay", base_url or server.url, api_key or "replay"
        return
    yield (kind, rest, *resolve_endpoint(kind, base_url, api_key, settings))


def diagnose(
    spec: str,
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    settings: LlmSettings | None = None,
    reasoning_effort: str | None = None,
) -> DoctorReport:
    """Probe the endpoint of an LLM spec (as for ``robodojo run --llm``) once and judge it; ``reasoning_effort``
    (else the settings', else the profile's) is probed as the named profile sends it."""
    if not timeout_s > 0:
        raise ConfigError(f"--timeout must be > 0 seconds, got {timeout_s}")
    settings = settings or load_llm_settings()
    with _endpoint(spec, base_url, api_key, settings) as (kind, model, url, key):
        checks, facts, models = probe(url, model, key, timeout_s)
        named = settings.profile(kind)
        effort = check_reasoning_effort(reasoning_effort, "--reasoning-effort") or settings.reasoning_effort
        effort = effort or named.reasoning_effort
        if facts.chat_ok:
            row, took = probe_reasoning(url, model, key, timeout_s, named, effort)
        else:
            row, took = Check("reasoning effort", SKIP, "not run: plain chat fails"), None
        checks = (*checks, row)
        facts = dataclasses.replace(facts, reasoning_effort=effort, reasoning_ok=took)
    profile, fixes, working = recommend(facts, kind, url, settings)
    return DoctorReport(spec, kind, model, url, timeout_s, checks, facts, models, profile, fixes, working)


def format_report(r: DoctorReport) -> str:
    """The report as a table, the profile and the fixes, for a terminal."""
    lines = [f"robodojo doctor: {r.spec} at {r.base_url} (timeout {r.timeout_s:g} s per request)", ""]
    width = max(len(c.name) for c in r.checks)
    lines.append(f"  {'check':{width}s}  {'result':6s}  detail")
    lines += [f"  {c.name:{width}s}  {c.status:6s}  {c.detail}" for c in r.checks]
    lines.append("")
    if r.profile is not None:
        changed = "" if r.profile == r.kind else f" (instead of {r.kind}: its quirk flags match what was measured)"
        lines.append(f"profile: {r.profile}{changed}")
    if r.fixes:
        lines.append("fixes:")
        lines += [f"  - {fix}" for fix in r.fixes]
    # the replay server stands in for a local server: its spec is a script file, so it is kept as given
    llm = r.spec if r.kind == "replay" else f"{r.profile or r.kind}:{r.model}"
    flags = [fix[4:].split(" (")[0] for fix in r.fixes if fix.startswith("use --")]
    if r.facts.reasoning_ok:
        flags.append(f"--reasoning-effort {r.facts.reasoning_effort}")
    suggestion = " ".join([f"--llm {llm}", f"--base-url {_fixed_url(r)}", *flags])
    lines.append(f"verdict: {'working setup: ' + suggestion if r.working else 'no working setup found'}")
    return "\n".join(lines)


def _fixed_url(r: DoctorReport) -> str:
    return r.base_url.rstrip("/") + ("/v1" if r.facts.needs_v1 else "")
