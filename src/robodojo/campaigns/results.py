"""One finished episode of a campaign as the results store keeps it (:class:`EpisodeRow`): the plain values the
campaign runner writes, the report reads, and the progress display sums."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

ZERO_SHOT = "zero_shot"  #: the condition name of an episode with no probe and no demonstration


@dataclass(frozen=True)
class EpisodeRow:
    """A campaign episode's identity (task, variant, seed, agent, llm, condition) and how it ended.

    ``llm`` is the LLM's name in the campaign spec (not its spec text, which may hold per-episode placeholders);
    ``condition`` is :data:`ZERO_SHOT` or the name of a probe or demonstration condition; ``capability`` is the
    task's capability axis (seed 002's leaderboard groups tasks by it). ``score`` is the task's process reward in
    [0, 1]. ``folder`` is the episode record's path relative to the campaign folder. ``tries`` counts the runs it
    took (a crashed run is retried up to the campaign's bound; each try's record is kept).
    """

    episode_id: str
    task: str
    variant: str
    seed: int
    agent: str
    llm: str
    condition: str
    capability: str
    success: bool
    score: float
    end_reason: str
    llm_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    steps_used: int = 0
    wall_time_s: float = 0.0
    tries: int = 1
    folder: str = ""
    error: str = ""

    @property
    def layout(self) -> tuple[str, str, int]:
        """The task layout the episode ran on: episodes of other agents, LLMs or conditions with the same layout
        are matched pairs."""
        return (self.task, self.variant, self.seed)

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cached_input_tokens

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EpisodeRow:
        """A row from a mapping with at least the row's fields (extra keys, such as a store's bookkeeping, are
        ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})
