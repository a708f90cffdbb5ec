"""One finished episode of a campaign as the results store keeps it (:class:`EpisodeRow`): the episode's outcome
(robodojo.episodes.spec.EpisodeOutcome) with who ran it, the plain values the campaign runner writes, the report
reads, and the progress display sums."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from robodojo.episodes.clock import PAUSED
from robodojo.episodes.spec import EpisodeOutcome

ZERO_SHOT = "zero_shot"  #: the condition name of an episode with no probe and no demonstration


@dataclass(frozen=True, kw_only=True)
class EpisodeRow(EpisodeOutcome):
    """A campaign episode's identity (task, variant, seed, agent, llm, condition) and its outcome.

    ``llm`` is the LLM's name in the campaign spec (not its spec text, which may hold per-episode placeholders);
    ``condition`` is :data:`ZERO_SHOT` or the name of a probe or demonstration condition; ``capability`` is the
    task's capability axis (seed 002's leaderboard groups tasks by it); ``clock`` the condition's clock (the report's
    success against latency groups by it). ``folder`` is the episode record's path
    relative to the campaign folder. ``tries`` counts the runs it took (a crashed run is retried up to the campaign's
    bound; each try's record is kept). ``error`` is the last line of the cause.
    """

    episode_id: str
    task: str
    variant: str
    seed: int
    agent: str
    llm: str
    condition: str
    capability: str
    tries: int = 1
    folder: str = ""
    clock: str = PAUSED  #: the condition's clock (robodojo.episodes.clock): the world time a model call cost

    @property
    def layout(self) -> tuple[str, str, int]:
        """The task layout the episode ran on: episodes of other agents, LLMs or conditions with the same layout
        are matched pairs."""
        return (self.task, self.variant, self.seed)

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The row's values in table order (the store's columns, episodes.csv's header): who ran the episode, then
        its outcome."""
        outcome = [f.name for f in dataclasses.fields(EpisodeOutcome)]
        return (*(f.name for f in dataclasses.fields(cls) if f.name not in outcome), *outcome)

    def as_dict(self) -> dict[str, Any]:
        """The row's values by column, in :meth:`columns` order."""
        return {name: getattr(self, name) for name in self.columns()}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EpisodeRow:
        """A row from a mapping with at least the row's fields (extra keys, such as a store's bookkeeping, are
        ignored)."""
        names = set(cls.columns())
        return cls(**{k: v for k, v in values.items() if k in names})
