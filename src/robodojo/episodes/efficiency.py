"""Usage per solved episode on the layouts every compared agent solved (seed 000's efficiency metric): one
implementation for ``robodojo compare`` and the campaign report, over any episode record that names its agent, its
success and its usage.

Means are taken only over episodes on layouts that every compared agent solved, so that no agent's mean is taken
over easier episodes than another's. A layout is whatever the caller says identifies a task instance (compare's
(task, seed, variant); a campaign row's (task, variant, seed)). Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Generic, Protocol, TypeVar

#: the usage metrics, in the order tables show them; ``uncached_input_tokens`` is input minus cached input;
#: ``wall_time_s`` the episode's wall time (the model's, the harness's and the world's together)
METRICS = (
    "llm_calls", "input_tokens", "cached_input_tokens", "uncached_input_tokens", "output_tokens", "cost_usd",
    "wall_time_s",
)  # fmt: skip


class UsageRecord(Protocol):
    """What the metric needs of an episode: its agent, whether it succeeded, and what it used."""

    @property
    def agent(self) -> str: ...
    @property
    def success(self) -> bool: ...
    @property
    def llm_calls(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def cached_input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def wall_time_s(self) -> float: ...


@dataclass(frozen=True)
class UsageMeans:
    """The usage metrics per episode (means, or ratios of means); None where there is nothing to average, or the
    ratio's base is 0 or missing. Tokens are counts, cost is in US dollars, wall time in seconds."""

    llm_calls: float | None = None
    input_tokens: float | None = None
    cached_input_tokens: float | None = None
    uncached_input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None
    wall_time_s: float | None = None

    @classmethod
    def of(cls, episodes: Sequence[UsageRecord]) -> UsageMeans:
        """The means over ``episodes`` (all None when there are none)."""
        if not episodes:
            return cls()
        count = len(episodes)

        def mean(value: Callable[[UsageRecord], float]) -> float:
            return sum(value(e) for e in episodes) / count

        return cls(
            llm_calls=mean(lambda e: e.llm_calls),
            input_tokens=mean(lambda e: e.input_tokens),
            cached_input_tokens=mean(lambda e: e.cached_input_tokens),
            uncached_input_tokens=mean(lambda e: e.input_tokens - e.cached_input_tokens),
            output_tokens=mean(lambda e: e.output_tokens),
            cost_usd=mean(lambda e: e.cost_usd),
            wall_time_s=mean(lambda e: e.wall_time_s),
        )

    def value(self, metric: str) -> float | None:
        """One metric by its name in :data:`METRICS`."""
        if metric not in METRICS:
            raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
        value: float | None = getattr(self, metric)
        return value

    def over(self, base: UsageMeans) -> UsageMeans:
        """Each metric divided by ``base``'s (None where either is None or the base is 0)."""

        def ratio(metric: str) -> float | None:
            a, b = self.value(metric), base.value(metric)
            return a / b if a is not None and b else None

        return UsageMeans(**{f.name: ratio(f.name) for f in fields(self)})


EpisodeT = TypeVar("EpisodeT", bound=UsageRecord)
LayoutT = TypeVar("LayoutT", bound=tuple[Any, ...])  # a tuple, so that layouts sort


@dataclass(frozen=True)
class JointlySolved(Generic[LayoutT]):
    """The usage of each agent on the layouts every agent solved.

    ``solved_episodes`` counts, per agent, its successful episodes on those layouts (the denominator of its means;
    one per layout unless a layout was run more than once); ``ratio`` is each agent's means over the first agent's.
    """

    agents: tuple[str, ...]
    layouts: tuple[LayoutT, ...]  #: sorted
    solved_episodes: dict[str, int]
    mean: dict[str, UsageMeans]
    ratio: dict[str, UsageMeans]


def jointly_solved(
    episodes: Iterable[EpisodeT], agents: Sequence[str], layout: Callable[[EpisodeT], LayoutT]
) -> JointlySolved[LayoutT]:
    """The agents' mean usage per solved episode on the layouts (``layout(episode)``) that every agent in ``agents``
    solved; episodes of other agents are ignored."""
    wins: dict[str, list[EpisodeT]] = {agent: [] for agent in agents}
    for episode in episodes:
        if episode.success and episode.agent in wins:
            wins[episode.agent].append(episode)
    solved = [{layout(e) for e in wins[agent]} for agent in agents]
    common = set.intersection(*solved) if solved else set()
    mine = {agent: [e for e in wins[agent] if layout(e) in common] for agent in agents}
    means = {agent: UsageMeans.of(mine[agent]) for agent in agents}
    base = means[agents[0]] if agents else UsageMeans()
    return JointlySolved(
        agents=tuple(agents),
        layouts=tuple(sorted(common)),
        solved_episodes={agent: len(mine[agent]) for agent in agents},
        mean=means,
        ratio={agent: means[agent].over(base) for agent in agents},
    )


__all__ = ["METRICS", "JointlySolved", "UsageMeans", "UsageRecord", "jointly_solved"]
