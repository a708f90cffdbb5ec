"""What an episode is asked to be (:class:`EpisodeSpec`), why it ended (:class:`EndReason`) and how it ended
(:class:`EpisodeOutcome`; with its record folder, :class:`EpisodeResult`): the plain values the runner, the hosts,
the CLI, the comparison, the campaigns and the ROS agent node share.

One outcome from the runner to a campaign's row: the runner writes it to metrics.json (robodojo.episodes.record) and
returns it as an :class:`EpisodeResult`; ``robodojo compare`` (robodojo.episodes.compare.Outcome) and a campaign
(robodojo.campaigns.results.EpisodeRow) derive from it, each adding only who ran the episode and where its record is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from robodojo.agents.llm.types import Usage
from robodojo.errors import ConfigError

DEFAULT_LLM_CALL_BUDGET = 100


class EndReason(StrEnum):
    RUNNING = "running"  # what metrics.json says while the episode is still going
    SUCCESS = "success"
    GIVE_UP = "give_up"
    FINISHED = "finished"  # the agent declared it was done (code cells' finish tool) without success
    LLM_CALL_BUDGET = "llm_call_budget"
    STEP_BUDGET = "step_budget"
    LLM_ERROR = "llm_error"
    BACKEND_LOST = "backend_lost"  # the robot backend stopped answering or restarted (ROS graph)
    INTERRUPTED = "interrupted"  # stopped from outside (the agent node got SIGINT or SIGTERM)
    CRASHED = "crashed"
    SKIPPED = "skipped"  # never run: `robodojo compare` found no replay script for it (the runner never says it)


@dataclass(frozen=True)
class EpisodeSpec:
    task: str
    seed: int = 0
    variant: str = "standard"
    llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET

    def __post_init__(self) -> None:
        if self.llm_call_budget < 1:
            raise ConfigError(f"llm_call_budget must be at least 1, got {self.llm_call_budget}")


@dataclass(frozen=True, kw_only=True)
class EpisodeOutcome:
    """How an episode ended and what it used (metrics.json's fields, see robodojo.episodes.record).

    ``score`` is the task's process reward in [0, 1]; ``error`` says why an episode ended early (llm_error,
    backend_lost, interrupted: the message; crashed: the exception). ``end_reason`` may be given as its value
    (``"crashed"``): it is stored as the :class:`EndReason`, and an unknown value is a ValueError.
    """

    success: bool = False
    score: float = 0.0
    end_reason: EndReason
    llm_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    reasoning_tokens: int = 0  #: of the output tokens, those the model spent reasoning (not shown)
    steps_used: int = 0
    wall_time_s: float = 0.0
    #: world time [s] the episode's clock let pass for model calls and computing (robodojo.episodes.clock)
    latency_applied_s: float = 0.0
    error: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "end_reason", EndReason(self.end_reason))

    @classmethod
    def with_usage(cls, usage: Usage, **values: Any) -> EpisodeOutcome:
        """An outcome whose token and cost fields are ``usage``'s."""
        return cls(**dataclasses.asdict(usage), **values)

    @property
    def usage(self) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Usage)})

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cached_input_tokens

    def outcome_fields(self) -> dict[str, Any]:
        """The outcome's own fields by name, of this outcome or of anything derived from it (to build another
        derivation: ``EpisodeRow(**result.outcome_fields(), episode_id=...)``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(EpisodeOutcome)}


@dataclass(frozen=True, kw_only=True)
class EpisodeResult(EpisodeOutcome):
    """What :func:`robodojo.episodes.runner.run_episode` returns: the outcome and the episode's record folder."""

    folder: Path
