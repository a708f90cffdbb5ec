"""LLM client settings from config/llm.yaml: retry and timeout defaults, the price table and the server profiles.

See the comments in config/llm.yaml for what each key and quirk flag means and why it exists. Users add or override
profiles (and defaults and prices) without editing the installed file: :func:`load_llm_settings_layers` merges
$XDG_CONFIG_HOME/robodojo/llm.yaml (else ~/.config/robodojo/llm.yaml) and a file given with ``--llm-config`` over
the package's config/llm.yaml, each layer validated with its own file name in the errors.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError, UnknownNameError

MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens")
#: what --tool-choice accepts: a value sent as it is, or "profile" (the profile decides, the default)
TOOL_CHOICES = ("auto", "required", "none", "profile")
#: HTTP statuses retried whatever the profile: rate limited, and the server's own request timeout
ALWAYS_RETRIED_STATUSES = (408, 429)
#: what --reasoning-effort accepts (OpenAI's chat-completions values; each profile maps them to what its server takes)
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
#: how a profile sends an effort: OpenAI's ``reasoning_effort`` field (the value, or the profile's mapped value), or
#: Anthropic's extended ``thinking`` object with a token budget per effort (0: thinking disabled)
REASONING_PARAMS = ("reasoning_effort", "thinking")


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens: uncached input, cached input, output."""

    input: float
    cached_input: float
    output: float

    def cost(self, input_tokens: int, cached_input_tokens: int, output_tokens: int) -> float:
        """Cost in USD of one call; ``input_tokens`` includes the cached ones (as OpenAI's prompt_tokens does)."""
        cached = min(cached_input_tokens, input_tokens)
        return (
            (input_tokens - cached) * self.input + cached * self.cached_input + output_tokens * self.output
        ) / 1_000_000


@dataclass(frozen=True)
class ServerProfile:
    """How to reach one kind of OpenAI-compatible server and which of its differences to work around."""

    name: str
    default_base_url: str | None
    base_url_env: str | None
    api_key_env: str | None
    api_key_required: bool
    placeholder_api_key: str
    default_price: str | None
    assistant_content_null_ok: bool
    tool_role_supported: bool
    supports_tool_choice: bool
    tool_choice_required_ok: bool
    supports_parallel_tool_calls_param: bool
    max_tokens_param: str
    #: 5xx statuses that mean "busy or restarting, try again" on this server (e.g. 502/503/504 from a proxy or a
    #: loading model); every other 5xx is deterministic (a template error, an unsupported option) and not retried
    transient_statuses: tuple[int, ...] = (502, 503, 504)
    #: answer length sent when defaults.max_output_tokens (or --max-output-tokens) is null: servers that otherwise
    #: generate until their context is full (llama.cpp, llama-cpp-python) need one; None: not sent
    max_output_tokens: int | None = None
    #: the effort sent when defaults.reasoning_effort (--reasoning-effort) is null; None: nothing is sent
    reasoning_effort: str | None = None
    #: how an effort reaches this server (one of REASONING_PARAMS); None: it has no such control, and asking for an
    #: effort is a ConfigError
    reasoning_effort_param: str | None = None
    #: effort -> what is sent for it: a value of the reasoning_effort field where the server takes other values than
    #: OpenAI's (unlisted efforts are sent as they are), or the thinking budget in tokens (every effort listed)
    reasoning_effort_values: Mapping[str, str | int] = dataclasses.field(default_factory=dict)

    def tool_choice_for(self, wanted: str | None) -> str | None:
        """What to send when an agent asks for ``wanted`` ("required" semantics: call one of the tools), given this
        server's support: None (omit the field) when it has none, "auto" when it rejects "required"."""
        if wanted is None or not self.supports_tool_choice:
            return None
        if wanted == "required" and not self.tool_choice_required_ok:
            return "auto"
        return wanted

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        """The request fields that ask this server for ``effort`` ({} for None); ConfigError when it has no such
        control."""
        if effort is None:
            return {}
        if self.reasoning_effort_param is None:
            raise ConfigError(
                f"LLM profile {self.name!r} has no reasoning-effort control (reasoning_effort_param is null): "
                "drop --reasoning-effort, or use a profile whose server takes one"
            )
        value = self.reasoning_effort_values.get(effort, effort)
        if self.reasoning_effort_param == "thinking":
            # Anthropic's extended thinking: a token budget, or off (budget 0)
            budget = int(value)
            return {"thinking": {"type": "enabled", "budget_tokens": budget} if budget else {"type": "disabled"}}
        return {"reasoning_effort": value}

    def thinking_budget(self, effort: str | None) -> int:
        """Tokens of the answer length that thinking may use for ``effort`` (0 unless the profile sends a thinking
        budget: Anthropic counts it inside max_tokens, so the client adds it to the answer length)."""
        if effort is None or self.reasoning_effort_param != "thinking":
            return 0
        return int(self.reasoning_effort_values.get(effort, 0))


@dataclass(frozen=True)
class LlmSettings:
    """The loaded config/llm.yaml."""

    timeout_s: float
    max_retries: int
    backoff_base_s: float
    backoff_max_s: float
    jpeg_quality: int
    max_output_tokens: int | None
    temperature: float | None
    #: total time one chat() call may take, retries and backoff included [s]
    call_deadline_s: float
    #: a warning is logged when a request has had no answer for this long [s] (the server may be loading a model)
    silence_warning_s: float
    prices: Mapping[str, Price]
    profiles: Mapping[str, ServerProfile]
    #: the effort asked of every call (--reasoning-effort); None: each profile's own (usually none)
    reasoning_effort: str | None = None
    #: the lowest answer length (max_tokens) a context overflow may lower a call's to before it gives up
    min_output_tokens: int = 256

    def profile(self, name: str) -> ServerProfile:
        """The named server profile; UnknownNameError lists the configured ones."""
        if name not in self.profiles:
            raise UnknownNameError("LLM server profile", name, self.profiles)
        return self.profiles[name]

    def price_for(self, model: str, profile: ServerProfile | None = None) -> Price | None:
        """Exact entry, else the longest entry prefixing the model name, else the profile's default; None if none."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [key for key in self.prices if model.startswith(key)]
        if prefixes:
            return self.prices[max(prefixes, key=len)]
        if profile is not None and profile.default_price is not None:
            return self.prices[profile.default_price]
        return None


def _optional_str(section: Section, key: str) -> str | None:
    if key not in section.data:
        raise ConfigError(f"{section.where}: missing key {key!r}")
    return None if section.data[key] is None else section.str(key)


def _statuses(s: Section, key: str) -> tuple[int, ...]:
    value = s.data.get(key, [502, 503, 504])
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not all(isinstance(v, int) and not isinstance(v, bool) and 500 <= v <= 599 for v in value)
    ):
        raise ConfigError(f"{s.where}.{key}: expected a list of HTTP statuses 500..599, got {value!r}")
    return tuple(value)


def check_reasoning_effort(value: object, where: str) -> str | None:
    """``value`` if it is None or one of :data:`REASONING_EFFORTS`, else a ConfigError naming ``where``."""
    if value is None or (isinstance(value, str) and value in REASONING_EFFORTS):
        return value
    raise ConfigError(f"{where} must be one of {', '.join(REASONING_EFFORTS)} (or null), got {value!r}")


def _reasoning_values(s: Section, param: str | None) -> dict[str, str | int]:
    key = "reasoning_effort_values"
    value = s.data.get(key) or {}
    at = f"{s.where}.{key}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{at}: expected a mapping effort -> value, got {value!r}")
    unknown = sorted(str(k) for k in value if k not in REASONING_EFFORTS)
    if unknown:
        raise ConfigError(f"{at}: unknown effort(s) {', '.join(unknown)}; valid: {', '.join(REASONING_EFFORTS)}")
    if value and param is None:
        raise ConfigError(f"{at}: needs reasoning_effort_param ({', '.join(REASONING_PARAMS)})")
    if param == "thinking":
        missing = [e for e in REASONING_EFFORTS if e not in value]
        if missing:
            raise ConfigError(f"{at}: a thinking profile needs a budget for every effort; missing {', '.join(missing)}")
        for effort, budget in value.items():
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
                raise ConfigError(f"{at}.{effort}: expected a thinking budget in tokens (>= 0, 0: off), got {budget!r}")
    else:
        for effort, sent in value.items():
            if not isinstance(sent, str) or not sent:
                raise ConfigError(f"{at}.{effort}: expected the value the server takes, got {sent!r}")
    return dict(value)


def _parse_profile(name: str, s: Section, prices: Mapping[str, Price]) -> ServerProfile:
    placeholder = s.data.get("placeholder_api_key", "")
    if not isinstance(placeholder, str):
        raise ConfigError(f"{s.where}.placeholder_api_key: expected a string, got {placeholder!r}")
    param = s.data.get("reasoning_effort_param")
    if param is not None and param not in REASONING_PARAMS:
        raise ConfigError(
            f"{s.where}.reasoning_effort_param: expected one of {', '.join(REASONING_PARAMS)} (or null), got {param!r}"
        )
    effort = check_reasoning_effort(s.data.get("reasoning_effort"), f"{s.where}.reasoning_effort")
    if effort is not None and param is None:
        raise ConfigError(f"{s.where}.reasoning_effort: needs reasoning_effort_param ({', '.join(REASONING_PARAMS)})")
    profile = ServerProfile(
        name=name,
        default_base_url=_optional_str(s, "default_base_url"),
        base_url_env=_optional_str(s, "base_url_env"),
        api_key_env=_optional_str(s, "api_key_env"),
        api_key_required=s.boolean("api_key_required"),
        placeholder_api_key=placeholder,
        default_price=_optional_str(s, "default_price"),
        assistant_content_null_ok=s.boolean("assistant_content_null_ok"),
        tool_role_supported=s.boolean("tool_role_supported"),
        supports_tool_choice=s.boolean("supports_tool_choice"),
        tool_choice_required_ok=s.boolean("tool_choice_required_ok"),
        supports_parallel_tool_calls_param=s.boolean("supports_parallel_tool_calls_param"),
        max_tokens_param=s.str("max_tokens_param"),
        transient_statuses=_statuses(s, "transient_statuses"),
        max_output_tokens=(
            None if s.data.get("max_output_tokens") is None else s.integer("max_output_tokens", positive=True)
        ),
        reasoning_effort=effort,
        reasoning_effort_param=param,
        reasoning_effort_values=MappingProxyType(_reasoning_values(s, param)),
    )
    if profile.max_tokens_param not in MAX_TOKENS_PARAMS:
        raise ConfigError(
            f"{s.where}.max_tokens_param: expected one of {', '.join(MAX_TOKENS_PARAMS)}, "
            f"got {profile.max_tokens_param!r}"
        )
    if profile.default_price is not None and profile.default_price not in prices:
        raise ConfigError(f"{s.where}.default_price: {profile.default_price!r} is not in prices ({', '.join(prices)})")
    if not profile.api_key_required and not profile.placeholder_api_key:
        raise ConfigError(f"{s.where}.placeholder_api_key: needed (non-empty) when api_key_required is false")
    known = {f for f in ServerProfile.__dataclass_fields__ if f != "name"}
    unknown = sorted(set(s.data) - known)
    if unknown:
        raise ConfigError(f"{s.where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    return profile


def parse_llm_settings(data: dict[str, Any], where: str) -> LlmSettings:
    """Validate a config/llm.yaml document; errors name the file and key path."""
    root = Section(data, where)
    d = root.section("defaults")
    prices_section = root.section("prices")
    prices: dict[str, Price] = {}
    for model in prices_section.names():
        p = prices_section.section(model)
        prices[str(model)] = Price(
            input=p.number("input", default=0.0),
            cached_input=p.number("cached_input", default=p.data.get("input", 0.0)),
            output=p.number("output", default=0.0),
        )
        if min(prices[str(model)].__dict__.values()) < 0:
            raise ConfigError(f"{p.where}: prices must be >= 0")
    profiles_section = root.section("profiles")
    profiles = {
        str(name): _parse_profile(str(name), profiles_section.section(name), prices)
        for name in profiles_section.names()
    }
    if not profiles:
        raise ConfigError(f"{profiles_section.where}: no profiles")
    max_tokens = d.data.get("max_output_tokens")
    temperature = d.data.get("temperature")
    settings = LlmSettings(
        timeout_s=d.number("timeout_s", positive=True),
        max_retries=d.integer("max_retries"),
        backoff_base_s=d.number("backoff_base_s", positive=True),
        backoff_max_s=d.number("backoff_max_s", positive=True),
        jpeg_quality=d.integer("jpeg_quality", positive=True),
        max_output_tokens=None if max_tokens is None else d.integer("max_output_tokens", positive=True),
        temperature=None if temperature is None else d.number("temperature"),
        call_deadline_s=d.number("call_deadline_s", positive=True),
        silence_warning_s=d.number("silence_warning_s", positive=True),
        prices=MappingProxyType(prices),
        profiles=MappingProxyType(profiles),
        reasoning_effort=check_reasoning_effort(d.data.get("reasoning_effort"), f"{d.where}.reasoning_effort"),
        min_output_tokens=d.integer("min_output_tokens", positive=True),
    )
    if settings.max_retries < 0:
        raise ConfigError(f"{d.where}.max_retries: must be >= 0, got {settings.max_retries}")
    if settings.jpeg_quality > 100:
        raise ConfigError(f"{d.where}.jpeg_quality: must be in 1..100, got {settings.jpeg_quality}")
    return settings


@cache
def load_llm_settings(path: str | Path | None = None) -> LlmSettings:
    """config/llm.yaml (or another file of the same form), loaded and validated once."""
    path = Path(path) if path is not None else CONFIG_DIR / "llm.yaml"
    return parse_llm_settings(load_yaml(path), str(path))


def user_llm_config_path() -> Path:
    """The per-user file merged over config/llm.yaml: $XDG_CONFIG_HOME/robodojo/llm.yaml, else
    ~/.config/robodojo/llm.yaml (it need not exist)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "robodojo" / "llm.yaml"


_LAYER_KEYS = ("defaults", "prices", "profiles")


def merge_llm_config(base: dict[str, Any], layer: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``layer`` (a user file's document) merged over ``base``: defaults and prices key by key; a profile of a known
    name has its keys overridden one by one, a new name adds a profile (which then needs every key). ``where`` names
    the layer's file in errors."""
    root = Section(layer, where)
    unknown = sorted(str(k) for k in layer if k not in _LAYER_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(_LAYER_KEYS)}")
    merged = copy.deepcopy(base)
    for key in _LAYER_KEYS:
        section = root.optional_section(key)
        if section is None:
            continue
        target = merged.setdefault(key, {})
        for name, value in section.data.items():
            if key == "profiles":
                Section(value, f"{section.where}.{name}")  # a mapping, or an error naming the user file
                target[name] = {**target.get(name, {}), **value}
            else:
                target[name] = value
    return merged


def load_llm_settings_layers(extra: str | Path | None = None, *, user_file: bool = True) -> LlmSettings:
    """config/llm.yaml with the per-user file (if present and ``user_file``) and then ``extra`` (--llm-config, which
    must exist) merged over it. Each layer is validated on its own merge result, so an error names the layer's file
    and the key path."""
    package = CONFIG_DIR / "llm.yaml"
    data = load_yaml(package)
    settings = parse_llm_settings(data, str(package))
    layers = []
    if user_file and user_llm_config_path().is_file():
        layers.append(user_llm_config_path())
    if extra is not None:
        layers.append(Path(extra).expanduser())
    for path in layers:
        data = merge_llm_config(data, load_yaml(path), str(path))
        settings = parse_llm_settings(data, str(path))
    return settings


def run_llm_settings(
    llm_config: str | Path | None = None,
    *,
    timeout_s: float | None = None,
    retries: int | None = None,
    max_output_tokens: int | None = None,
    reasoning_effort: str | None = None,
) -> LlmSettings:
    """The LLM settings of one run: config/llm.yaml, the per-user file, ``llm_config`` (--llm-config), then the
    ``timeout_s`` (--timeout), ``retries`` (--retries), ``max_output_tokens`` (--max-output-tokens) and
    ``reasoning_effort`` (--reasoning-effort) overrides; None keeps the configured value."""
    settings = load_llm_settings_layers(llm_config)
    if timeout_s is not None:
        if not timeout_s > 0:
            raise ConfigError(f"--timeout must be > 0 seconds, got {timeout_s}")
        # a longer per-request timeout than the call deadline would be cut short by it: the flag wins
        settings = dataclasses.replace(
            settings, timeout_s=timeout_s, call_deadline_s=max(settings.call_deadline_s, timeout_s)
        )
    if retries is not None:
        if retries < 0:
            raise ConfigError(f"--retries must be >= 0, got {retries}")
        settings = dataclasses.replace(settings, max_retries=retries)
    if max_output_tokens is not None:
        if isinstance(max_output_tokens, bool) or max_output_tokens < 1:
            raise ConfigError(f"--max-output-tokens must be >= 1, got {max_output_tokens}")
        settings = dataclasses.replace(settings, max_output_tokens=max_output_tokens)
    if reasoning_effort is not None:
        effort = check_reasoning_effort(reasoning_effort, "--reasoning-effort")
        settings = dataclasses.replace(settings, reasoning_effort=effort)
    return settings


@cache
def user_llm_settings() -> LlmSettings:
    """config/llm.yaml with the per-user file merged over it, loaded once: what open_llm uses when given no settings,
    so user profiles work wherever a spec is opened (robodojo graph's agent node included)."""
    return load_llm_settings_layers(None)
