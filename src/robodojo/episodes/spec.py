"""What an episode is asked to be (:class:`EpisodeSpec`), why it ended (:class:`EndReason`) and what it gave
(:class:`EpisodeResult`): the plain values the runner, the hosts, the CLI and the ROS agent node share."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from robodojo.agents.llm.types import Usage
from robodojo.errors import ConfigError

DEFAULT_LLM_CALL_BUDGET = 100


class EndReason(str, Enum):
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


@dataclass(frozen=True)
class EpisodeSpec:
    task: str
    seed: int = 0
    variant: str = "standard"
    llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET

    def __post_init__(self) -> None:
        if self.llm_call_budget < 1:
            raise ConfigError(f"llm_call_budget must be at least 1, got {self.llm_call_budget}")


@dataclass(frozen=True)
class EpisodeResult:
    success: bool
    score: float
    end_reason: EndReason
    llm_calls: int
    usage: Usage
    steps_used: int
    wall_time_s: float
    folder: Path
    error: str = field(default="", repr=False)
