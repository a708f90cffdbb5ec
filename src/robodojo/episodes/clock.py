"""Time that does not wait for the model: the episode clock (``--clock``) and the one place it is applied.

In one process the world stands still while the model thinks: time passes only while the robot moves or ``robo.wait``
holds it. On the ROS graph and on a real robot it does not, and on the dynamic tasks (a rolling ball, a conveyor) that
is a different task. The clock says how much world time a model call costs:

- ``paused`` (the default): none; the world waits for the model, as it always did in process.
- ``real``: the call's measured wall time; the world's objects move on meanwhile and the arms hold their command.
- ``fixed:S``: S seconds per model call, whatever the machine or the model: the setting to compare models and
  machines with (a leaderboard's), since it does not depend on how fast a server answered.
- ``scaled:K``: K times the measured call time (a faster or slower server than the one at hand).

Under ``real`` and ``scaled:K`` the time an agent's own code computes between robot calls (a code cell's Python
between its robo calls) costs world time too, by the same factor; ``paused`` and ``fixed:S`` count model calls only.

:class:`ClockSetting` is the setting (parsed once, with errors that list the forms); :class:`EpisodeClock` applies
one episode's setting through its host: the runner hands every agent the LLM caller of :meth:`EpisodeClock.caller`,
which after each model call lets the call's latency pass in the world (:meth:`WorldHost.let_time_pass
<robodojo.episodes.hosts.WorldHost.let_time_pass>`: uncounted control steps with every arm holding its current
command, as the graph's trajectory controllers hold between trajectories; they use none of the episode's step
budget: they are time, not actions). Every agent style calls its model through that caller (a coding-agent CLI's
calls reach it through the model proxy), and reports what the caller cannot see through
:class:`~robodojo.agents.base.AgentTime` (an MCP client's time to its call, a code cell's computing).

On a host where time passes by itself (the ROS graph, a real robot) the world has already moved during the call:
``real`` adds nothing there unless the simulator ran slower than real time (it then waits for the simulated time to
catch up with the call's wall time), ``fixed:S`` and ``scaled:K`` wait for the rest of their latency once the call
took less, and a call that took longer has moved the world further than asked (recorded as it happened). ``paused``
cannot stop such a world: it adds nothing and records nothing.

Each turn's applied latency is recorded (turns.jsonl and episode.mcap's /agent/action: ``latency_applied_s``), their
sum in metrics.json, and the setting in meta.json (``clock``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from robodojo.agents.llm.types import ChatReply, LlmError, Message
from robodojo.errors import ConfigError

if TYPE_CHECKING:  # the campaign's results read the setting alone, without the agents' floor
    from robodojo.agents.base import LlmCaller, TurnRecord
    from robodojo.episodes.hosts import EpisodeHost

PAUSED, REAL, FIXED, SCALED = "paused", "real", "fixed", "scaled"
CLOCK_KINDS = (PAUSED, REAL, FIXED, SCALED)
CLOCK_FORMS = "paused, real, fixed:S (S seconds per model call) or scaled:K (K times the measured call time)"
# Bounds that keep a typo from becoming a run that never ends: a model call priced at over 10 minutes of world time
# is no benchmark condition, and each simulated minute costs seconds of CPU in every episode of a campaign.
MAX_FIXED_S = 600.0
MAX_SCALE = 100.0
# Whole control steps are reckoned with this slack, so that 1 s at 40 ms is 25 steps and not 24 by a rounding error.
STEP_ROUNDING_S = 1e-9
_NUMBER = re.compile(r"^[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class ClockSetting:
    """How much world time a model call costs (see the module docstring); ``value`` is S [s] of ``fixed`` and K of
    ``scaled``, 0 for ``paused`` and ``real``. Build one with :meth:`parse`; bad values raise ConfigError."""

    kind: str = PAUSED
    value: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in CLOCK_KINDS:
            raise ConfigError(f"unknown clock {self.kind!r}; the clock is one of {CLOCK_FORMS}")
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"clock {self.kind}: the value must be a finite number, got {value!r}")
        object.__setattr__(self, "value", float(value))
        if self.kind in (PAUSED, REAL) and value != 0:
            raise ConfigError(f"clock {self.kind} takes no value, got {value:g}")
        if self.kind == FIXED and not 0 <= value <= MAX_FIXED_S:
            raise ConfigError(f"clock fixed:S needs 0 <= S <= {MAX_FIXED_S:g} seconds per model call, got {value:g}")
        if self.kind == SCALED and not 0 < value <= MAX_SCALE:
            raise ConfigError(f"clock scaled:K needs 0 < K <= {MAX_SCALE:g} (K = 0 is the paused clock), got {value:g}")

    @classmethod
    def parse(cls, text: str) -> ClockSetting:
        """``paused``, ``real``, ``fixed:S`` or ``scaled:K`` (S, K plain decimal numbers); ConfigError otherwise,
        naming the bad part and the forms."""
        if not isinstance(text, str):
            raise ConfigError(f"a clock is text ({CLOCK_FORMS}), got {text!r}")
        kind, sep, number = text.strip().partition(":")
        kind = kind.strip().lower()
        if kind not in CLOCK_KINDS:
            raise ConfigError(f"unknown clock {text!r}; the clock is one of {CLOCK_FORMS}")
        if kind in (PAUSED, REAL):
            if sep:
                raise ConfigError(f"clock {kind} takes no value, got {text!r}")
            return cls(kind)
        number = number.strip()
        if not sep or not number:
            raise ConfigError(f"clock {kind} needs a value: {kind}:{'S' if kind == FIXED else 'K'}, got {text!r}")
        # Only plain non-negative decimals: float() would take "nan", "inf" and "-1", which are no clock.
        if not _NUMBER.match(number):
            raise ConfigError(
                f"clock {kind}: {number!r} is not a non-negative number (NaN, infinities and negatives are refused)"
            )
        return cls(kind, float(number))

    @classmethod
    def real(cls) -> ClockSetting:
        return cls(REAL)

    @property
    def text(self) -> str:
        """The canonical form, as :meth:`parse` reads it (``fixed:1``, ``scaled:0.5``, ``real``)."""
        return self.kind if self.kind in (PAUSED, REAL) else f"{self.kind}:{self.value:g}"

    @property
    def label(self) -> str:
        """A plain name for the setting (no ``.`` or ``:``): a campaign condition's (``fixed_1s``, ``scaled_0p5x``)."""
        if self.kind in (PAUSED, REAL):
            return self.kind
        unit = "s" if self.kind == FIXED else "x"
        return f"{self.kind}_{f'{self.value:g}'.replace('.', 'p').replace('+', '')}{unit}"

    @property
    def is_paused(self) -> bool:
        return self.kind == PAUSED

    def model_latency_s(self, measured_s: float) -> float:
        """World time [s] one model call costs that took ``measured_s`` of wall time."""
        if self.kind == FIXED:
            return self.value
        return self.compute_latency_s(measured_s)

    def compute_latency_s(self, measured_s: float) -> float:
        """World time [s] that ``measured_s`` of the agent's own computing costs (only the measured clocks count it)."""
        if self.kind == REAL:
            return max(0.0, measured_s)
        if self.kind == SCALED:
            return self.value * max(0.0, measured_s)
        return 0.0

    def __str__(self) -> str:
        return self.text


PAUSED_CLOCK = ClockSetting()


def parse_clock_sweep(value: str | Iterable[str]) -> tuple[ClockSetting, ...]:
    """Clock settings from a comma-separated text or a list: ``fixed:0,1,3,10`` (a bare number takes the kind before
    it), ``paused,real,scaled:2``. Settings named twice are kept once; ConfigError for an empty or bad item."""
    items = value.split(",") if isinstance(value, str) else list(value)
    settings: list[ClockSetting] = []
    kind = ""
    for item in items:
        text = str(item).strip()
        if not text:
            raise ConfigError(f"an empty clock in {value!r}; expected settings such as fixed:0,1,3,10")
        if ":" not in text and text.lower() not in CLOCK_KINDS:  # a value of the kind before it (bad ones too)
            if kind not in (FIXED, SCALED):
                raise ConfigError(f"clock value {text!r} in {value!r} follows no fixed: or scaled: to belong to")
            text = f"{kind}:{text}"
        setting = ClockSetting.parse(text)
        kind = setting.kind
        if setting not in settings:
            settings.append(setting)
    if not settings:
        raise ConfigError(f"no clock in {value!r}; the clock is one of {CLOCK_FORMS}")
    return tuple(settings)


# -- applying it ------------------------------------------------------------------------------------------------------


class EpisodeClock:
    """One episode's clock, applied through its host: an :class:`~robodojo.agents.base.AgentTime` for the agent's
    own reports, and :meth:`caller`, the LLM caller every model call of the episode goes through.

    ``host`` needs ``let_time_pass(seconds) -> float`` and ``world_time_s`` (the embedded world's
    :class:`~robodojo.episodes.hosts.WorldHost`, the graph's host) unless the clock is paused, which touches nothing;
    ``time_passes_by_itself`` says the world moves during a call on its own (the graph). World time owed but not yet
    passable (less than a control step in process) is carried to the next call, so the episode's total stays exact.
    """

    def __init__(self, setting: ClockSetting, host: EpisodeHost) -> None:
        self.setting = setting
        self._host = host
        if not setting.is_paused and not (hasattr(host, "let_time_pass") and hasattr(host, "world_time_s")):
            raise ConfigError(
                f"the clock {setting.text} needs a host that lets time pass; {type(host).__name__} does not "
                "(use --clock paused)"
            )
        self.by_itself = bool(getattr(host, "time_passes_by_itself", False))
        self.total_s = 0.0  #: world time [s] applied so far in the episode
        self._turn_s = 0.0
        self._owed_s = 0.0

    def caller(self, llm: LlmCaller) -> LlmCaller:
        """``llm`` with every call timed and its latency let pass in the world (itself when the clock is paused)."""
        return llm if self.setting.is_paused else ClockedCaller(llm, self)

    # -- AgentTime ----------------------------------------------------------------------------------------------------
    def model_called(self, wall_s: float) -> None:
        """A model decision outside the caller (an MCP client's) took ``wall_s``; on a graph that much ran already."""
        if not self.setting.is_paused:
            self._pass(self.setting.model_latency_s(wall_s), wall_s if self.by_itself else 0.0)

    def computed(self, wall_s: float) -> None:
        """The agent computed for ``wall_s``: under the measured clocks that time passes (on a graph it has)."""
        if not self.setting.is_paused and not self.by_itself:
            self._pass(self.setting.compute_latency_s(wall_s), 0.0)

    # -- the caller's --------------------------------------------------------------------------------------------------
    def world_time_s(self) -> float:
        """The host's world time now [s] (0 under the paused clock, which asks the host nothing)."""
        return float(self._host.world_time_s) if not self.setting.is_paused else 0.0

    def call_made(self, wall_s: float, world_before_s: float) -> None:
        """One model call through the caller took ``wall_s``; the world read ``world_before_s`` when it began."""
        passed = max(0.0, self.world_time_s() - world_before_s) if self.by_itself else 0.0
        self._pass(self.setting.model_latency_s(wall_s), passed)

    def _pass(self, latency_s: float, already_s: float) -> None:
        """Make ``latency_s`` of world time pass of which ``already_s`` has (the world ran during the call)."""
        due = latency_s + self._owed_s - already_s
        got = self._host.let_time_pass(due) if due > 0 else 0.0
        # What could not pass yet (under a control step) is owed; a world that ran further than asked owes nothing.
        self._owed_s = max(0.0, due - got)
        applied = already_s + got
        self._turn_s += applied
        self.total_s += applied

    # -- the record ----------------------------------------------------------------------------------------------------
    def stamp(self, record: TurnRecord) -> TurnRecord:
        """``record`` with the world time applied since the last turn (its ``latency_applied_s``)."""
        applied, self._turn_s = self._turn_s, 0.0
        return replace(record, latency_applied_s=round(applied, 6)) if applied else record


class ClockedCaller:
    """An LLM caller whose every call costs world time by the episode's clock (:meth:`EpisodeClock.call_made`);
    everything else is the wrapped caller's."""

    def __init__(self, llm: LlmCaller, clock: EpisodeClock) -> None:
        self._llm = llm
        self._clock = clock

    def chat(
        self, messages: list[Message], tools: list[dict], *, tool_choice: str | dict | None = "required", **kwargs: Any
    ) -> ChatReply:
        """The wrapped caller's reply; then the call's latency passes, before the agent acts on it."""
        world_before_s = self._clock.world_time_s()
        start = time.perf_counter()
        try:
            reply = self._llm.chat(messages, tools, tool_choice=tool_choice, **kwargs)
        except LlmError as exc:
            # a request refused before it was sent (too large for the context) took no model time; a failed call did
            if exc.attempts:
                self._clock.call_made(time.perf_counter() - start, world_before_s)
            raise
        self._clock.call_made(time.perf_counter() - start, world_before_s)
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


__all__ = [
    "CLOCK_FORMS",
    "CLOCK_KINDS",
    "PAUSED_CLOCK",
    "ClockSetting",
    "ClockedCaller",
    "EpisodeClock",
    "parse_clock_sweep",
]
