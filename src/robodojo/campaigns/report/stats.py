"""The figures of ``robodojo report`` over a campaign's episode rows, as frozen results; pure functions, no I/O.

- :func:`leaderboard` (seed 002's tables): per (agent, LLM, condition) group, a cell per task (Score, SR and the
  95 % Wilson interval of SR), a value per capability axis (the mean of its tasks' cells), the Average (the
  unweighted mean of the axes present) and the micro figures (every episode of the group pooled). Score is the mean
  process reward x 100; SR the percentage of episodes that met the task's full-success criterion. A task run in
  several variants is a generalization cell: its Score and SR are the means of the per-variant values, not pooled.
- :func:`efficiency` (seed 000's table): per LLM, on the zero-shot layouts every compared agent solved, each agent's
  usage per solved episode and its ratio to the first agent's (code_cell / move_eef).
- :func:`matched_pairs` (seed 002's probe and demonstration sections): each episode of a condition paired with the
  zero-shot episode of the same agent, LLM and layout; the split by tasks with and without a matched zero-shot success.
- :func:`budget_curves` (seed 000's budget figure): the share of episodes solved within an input-token budget.
- :func:`axis_leaderboards`: per capability axis, the groups ranked by SR on the layouts all of them ran, each
  neighbour difference tested paired per layout (:func:`mcnemar_exact`), Holm-corrected (:func:`holm`) across the
  axis's comparisons; an axis with too few shared layouts is not ranked.
- :func:`failure_reasons`: the failed episodes by end reason and by the last refusal in their records.

Every episode of a group counts, whatever its end reason: a crashed episode did not succeed.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import pairwise
from statistics import fmean

from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow

# The efficiency core is shared with ``robodojo compare``, a floor below.
from robodojo.episodes.efficiency import UsageMeans, jointly_solved
from robodojo.episodes.factory import AGENTS

Z_95 = 1.96  #: the standard normal quantile of a two-sided 95 % interval
PERCENT = 100.0  #: Score and SR are on seed 002's 0-100 scale (a row's score is in [0, 1])
STANDARD_VARIANT = "standard"  #: listed first among a task's variants; the others follow by name
MIN_COMPARED_AGENTS = 2  #: an LLM run by fewer agents has no efficiency comparison
# Budgets go on a log axis: an episode that reports no input tokens is solved at the smallest budget.
MIN_BUDGET_TOKENS = 1


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a success probability from ``successes`` of ``n`` trials, as fractions in [0, 1].

    With p = successes / n the centre is (p + z²/2n) / (1 + z²/n) and the half-width
    z sqrt(p (1 - p) / n + z² / 4n²) / (1 + z²/n). With no trial (n = 0) nothing is known: the interval is (0, 1).
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"expected 0 <= successes <= n, got successes={successes} and n={n}")
    if not z > 0:
        raise ValueError(f"expected a positive normal quantile z, got {z}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0 or n successes a bound is exactly 0 or 1; computed, it could miss by a rounding error.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


# -- groups ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """The episodes of one agent with one LLM under one condition: a leaderboard row, a series in the plots."""

    agent: str
    llm: str
    condition: str

    @classmethod
    def of(cls, row: EpisodeRow) -> Group:
        return cls(row.agent, row.llm, row.condition)

    @property
    def label(self) -> str:
        return f"{self.agent} / {self.llm} / {self.condition}"


def _agent_order(agent: str) -> tuple[int, str]:
    """The known agents in their usual order (move_eef, then code_cell: ratios read code_cell / move_eef), then the
    others by name."""
    return (AGENTS.index(agent) if agent in AGENTS else len(AGENTS), agent)


def _group_order(group: Group) -> tuple[tuple[int, str], str, bool, str]:
    """By agent, LLM, then zero-shot before the other conditions."""
    return (_agent_order(group.agent), group.llm, group.condition != ZERO_SHOT, group.condition)


def groups(rows: Iterable[EpisodeRow]) -> dict[Group, list[EpisodeRow]]:
    """The rows by group, the groups in report order (agent, LLM, zero-shot first)."""
    found: dict[Group, list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        found[Group.of(row)].append(row)
    return {group: found[group] for group in sorted(found, key=_group_order)}


def _by(rows: Iterable[EpisodeRow], key: Callable[[EpisodeRow], str]) -> dict[str, list[EpisodeRow]]:
    found: dict[str, list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        found[key(row)].append(row)
    return dict(found)


def _pct(part: float, whole: float) -> float:
    return PERCENT * part / whole


# -- the leaderboard ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Rate:
    """Episodes pooled: ``successes`` of ``n``, their success rate ``sr_pct`` and its 95 % Wilson interval
    [``ci_low_pct``, ``ci_high_pct``] in percent, and ``score``, their mean process reward x 100 (0-100)."""

    n: int
    successes: int
    sr_pct: float
    score: float
    ci_low_pct: float
    ci_high_pct: float


def pooled(rows: Sequence[EpisodeRow]) -> Rate:
    """The :class:`Rate` of some episodes, at least one."""
    if not rows:
        raise ValueError("no episodes to pool")
    n = len(rows)
    successes = sum(1 for r in rows if r.success)
    low, high = wilson_interval(successes, n)
    return Rate(
        n=n,
        successes=successes,
        sr_pct=_pct(successes, n),
        score=PERCENT * fmean(r.score for r in rows),
        ci_low_pct=PERCENT * low,
        ci_high_pct=PERCENT * high,
    )


@dataclass(frozen=True, kw_only=True)
class VariantCell(Rate):
    """A task's episodes in one variant (``standard``, ``cluttered``, ...), pooled."""

    variant: str


@dataclass(frozen=True, kw_only=True)
class TaskCell(Rate):
    """A group's figures on one task.

    ``sr_pct`` and ``score`` are, for a generalization cell (a task run in several variants), the means of the
    per-variant values in ``variants`` (seed 002: "Generalization cells average the standard and randomized
    conditions"), otherwise the task's own. ``n``, ``successes`` and the interval pool every episode of the task; the
    interval centres on the same SR when the variants have equal episode counts, as the protocol has them.
    """

    task: str
    capability: str
    variants: tuple[VariantCell, ...]

    @property
    def generalization(self) -> bool:
        return len(self.variants) > 1


@dataclass(frozen=True)
class AxisCell:
    """A group's value on one capability axis: the unweighted means of its tasks' cells (Score 0-100, SR in %)."""

    axis: str
    tasks: tuple[str, ...]
    sr_pct: float
    score: float


@dataclass(frozen=True)
class LeaderboardEntry:
    """One group's row of seed 002's leaderboard.

    ``average_sr_pct`` and ``average_score`` are the unweighted means over the axes present; ``micro`` pools every
    episode of the group. They differ when the axes hold different numbers of tasks (or tasks different numbers of
    episodes).
    """

    group: Group
    tasks: tuple[TaskCell, ...]  #: by axis, then task
    axes: tuple[AxisCell, ...]  #: by axis name
    average_sr_pct: float
    average_score: float
    micro: Rate


def variant_order(variant: str) -> tuple[bool, str]:
    """Sort key of variants: the standard one first, the others by name."""
    return (variant != STANDARD_VARIANT, variant)


def _capability(task: str, rows: Sequence[EpisodeRow]) -> str:
    axes = sorted({r.capability for r in rows})
    if len(axes) != 1:
        raise ValueError(f"task {task!r} has episodes on several capability axes: {', '.join(axes)}")
    return axes[0]


def task_cell(task: str, rows: Sequence[EpisodeRow]) -> TaskCell:
    """The cell of one task from its episodes (of one group), at least one."""
    by_variant = _by(rows, lambda r: r.variant)
    variants = tuple(
        VariantCell(variant=v, **asdict(pooled(by_variant[v]))) for v in sorted(by_variant, key=variant_order)
    )
    whole = pooled(rows)
    return TaskCell(
        task=task,
        capability=_capability(task, rows),
        variants=variants,
        n=whole.n,
        successes=whole.successes,
        sr_pct=fmean(v.sr_pct for v in variants),
        score=fmean(v.score for v in variants),
        ci_low_pct=whole.ci_low_pct,
        ci_high_pct=whole.ci_high_pct,
    )


def _axis_cell(axis: str, cells: Sequence[TaskCell]) -> AxisCell:
    return AxisCell(
        axis=axis,
        tasks=tuple(c.task for c in cells),
        sr_pct=fmean(c.sr_pct for c in cells),
        score=fmean(c.score for c in cells),
    )


def leaderboard_entry(group: Group, rows: Sequence[EpisodeRow]) -> LeaderboardEntry:
    """One group's leaderboard row from its episodes, at least one."""
    by_task = _by(rows, lambda r: r.task)
    cells = sorted((task_cell(t, by_task[t]) for t in by_task), key=lambda c: (c.capability, c.task))
    axes = tuple(
        _axis_cell(axis, [c for c in cells if c.capability == axis]) for axis in sorted({c.capability for c in cells})
    )
    return LeaderboardEntry(
        group=group,
        tasks=tuple(cells),
        axes=axes,
        average_sr_pct=fmean(a.sr_pct for a in axes),
        average_score=fmean(a.score for a in axes),
        micro=pooled(rows),
    )


def leaderboard(rows: Iterable[EpisodeRow]) -> tuple[LeaderboardEntry, ...]:
    """Seed 002's leaderboard: one entry per (agent, LLM, condition) group, in report order."""
    return tuple(leaderboard_entry(group, mine) for group, mine in groups(rows).items())


# -- how episodes ended, and what a success cost ----------------------------------------------------------------------


@dataclass(frozen=True)
class EarlierUsage:
    """What an episode's earlier tries spent, summed: the tries killed or crashed before the one its row holds
    (their LLM calls were made and paid for, though the row counts only its own try's)."""

    tries: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: EarlierUsage) -> EarlierUsage:
        return EarlierUsage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(EarlierUsage)))


@dataclass(frozen=True)
class GroupEndings:
    """One group's episodes by end reason, and everything they spent (failures included) per success.

    ``per_success`` holds the totals of LLM calls, input and output tokens and cost over every episode of the group,
    its episodes' earlier tries included (``earlier``: killed or crashed and retried), divided by its successes (None
    without a success): what one success costs when the failures and the lost tries are paid for too."""

    group: Group
    episodes: int
    successes: int
    ended_by: Mapping[str, int]  #: end reason -> episodes
    per_success: Mapping[str, float | None]
    earlier: EarlierUsage = EarlierUsage()


PER_SUCCESS_METRICS = ("llm_calls", "input_tokens", "output_tokens", "cost_usd")


def endings(rows: Iterable[EpisodeRow], earlier: Mapping[str, EarlierUsage] | None = None) -> tuple[GroupEndings, ...]:
    """Per group, in report order: how its episodes ended and what a success cost; ``earlier`` is, by episode id,
    what the episode's earlier tries spent (counted in the costs, not in the episodes)."""
    earlier = earlier or {}
    out = []
    for group, mine in groups(rows).items():
        successes = sum(r.success for r in mine)
        lost = sum((earlier.get(r.episode_id, EarlierUsage()) for r in mine), EarlierUsage())
        per_success = {
            m: ((sum(float(getattr(r, m)) for r in mine) + getattr(lost, m)) / successes if successes else None)
            for m in PER_SUCCESS_METRICS
        }
        ended_by = Counter(str(r.end_reason) for r in mine)
        out.append(GroupEndings(group, len(mine), successes, ended_by, per_success, lost))
    return tuple(out)


# -- efficiency -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentEfficiency:
    """One agent's usage with one LLM (zero-shot episodes only), seed 000's efficiency metric.

    ``mean`` is per solved episode on the ``joint_layouts`` layouts every compared agent solved (the same count for
    every agent of the LLM), over this agent's ``solved_episodes`` successes there; ``ratio`` is ``mean`` over
    ``base_agent``'s (the first compared agent: code_cell / move_eef). ``episodes``, ``successes`` and ``sr_pct``
    cover all of the agent's zero-shot episodes with the LLM, for context (``sr_pct`` is None without an episode).
    """

    llm: str
    agent: str
    base_agent: str
    episodes: int
    successes: int
    sr_pct: float | None
    joint_layouts: int
    solved_episodes: int
    mean: UsageMeans
    ratio: UsageMeans


def efficiency(rows: Iterable[EpisodeRow], agents: Sequence[str] | None = None) -> tuple[AgentEfficiency, ...]:
    """Per LLM (by name), the compared agents' usage per solved episode on the zero-shot layouts all of them solved.

    ``agents`` are the agents to compare, the first being the ratios' base; by default every agent with zero-shot
    episodes of that LLM (move_eef, code_cell, then others by name). An LLM with fewer than
    :data:`MIN_COMPARED_AGENTS` agents to compare is left out.
    """
    zero_shot = [r for r in rows if r.condition == ZERO_SHOT]
    found: list[AgentEfficiency] = []
    for llm, mine in sorted(_by(zero_shot, lambda r: r.llm).items()):
        by_agent = _by(mine, lambda r: r.agent)
        compared = tuple(agents) if agents is not None else tuple(sorted(by_agent, key=_agent_order))
        if len(compared) < MIN_COMPARED_AGENTS:
            continue
        joint = jointly_solved(mine, compared, layout=lambda r: r.layout)
        for agent in compared:
            episodes = by_agent.get(agent, [])
            successes = sum(1 for r in episodes if r.success)
            found.append(
                AgentEfficiency(
                    llm=llm,
                    agent=agent,
                    base_agent=compared[0],
                    episodes=len(episodes),
                    successes=successes,
                    sr_pct=_pct(successes, len(episodes)) if episodes else None,
                    joint_layouts=len(joint.layouts),
                    solved_episodes=joint.solved_episodes[agent],
                    mean=joint.mean[agent],
                    ratio=joint.ratio[agent],
                )
            )
    return tuple(found)


# -- matched pairs --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairSplit:
    """Matched pairs (an episode under a condition, the zero-shot episode on the same layout) on some tasks.

    The SRs and their delta (condition minus zero-shot, in percentage points) are None when there is no pair;
    ``net_successes`` is the condition's successes minus zero-shot's (``only_condition - only_zero_shot``).
    """

    tasks: tuple[str, ...]
    pairs: int
    condition_successes: int
    zero_shot_successes: int
    condition_sr_pct: float | None
    zero_shot_sr_pct: float | None
    delta_pp: float | None
    both: int
    only_condition: int
    only_zero_shot: int
    neither: int
    net_successes: int


@dataclass(frozen=True)
class MatchedPairs:
    """One condition of one agent and LLM against its zero-shot episodes (seed 002's probe and demonstration tables).

    ``with_zero_shot_success`` holds the tasks with at least one zero-shot success among the matched pairs,
    ``without_zero_shot_success`` the rest; ``unpaired`` counts the condition's episodes with no zero-shot episode on
    the same layout (left out of every split).
    """

    group: Group
    overall: PairSplit
    with_zero_shot_success: PairSplit
    without_zero_shot_success: PairSplit
    unpaired: int


def _split(pairs: Sequence[tuple[EpisodeRow, EpisodeRow]]) -> PairSplit:
    """(condition episode, zero-shot episode) pairs summed up."""
    n = len(pairs)
    both = sum(1 for c, z in pairs if c.success and z.success)
    only_condition = sum(1 for c, z in pairs if c.success and not z.success)
    only_zero_shot = sum(1 for c, z in pairs if z.success and not c.success)
    condition_successes, zero_shot_successes = both + only_condition, both + only_zero_shot
    condition_sr = _pct(condition_successes, n) if n else None
    zero_shot_sr = _pct(zero_shot_successes, n) if n else None
    return PairSplit(
        tasks=tuple(sorted({c.task for c, _ in pairs})),
        pairs=n,
        condition_successes=condition_successes,
        zero_shot_successes=zero_shot_successes,
        condition_sr_pct=condition_sr,
        zero_shot_sr_pct=zero_shot_sr,
        delta_pp=None if condition_sr is None or zero_shot_sr is None else condition_sr - zero_shot_sr,
        both=both,
        only_condition=only_condition,
        only_zero_shot=only_zero_shot,
        neither=n - both - only_condition - only_zero_shot,
        net_successes=condition_successes - zero_shot_successes,
    )


PairKey = tuple[str, str, str, str, int]  # (agent, llm, task, variant, seed)


def _pair_key(row: EpisodeRow) -> PairKey:
    return (row.agent, row.llm, *row.layout)


def matched_pairs(rows: Iterable[EpisodeRow]) -> tuple[MatchedPairs, ...]:
    """Each condition other than zero-shot, per agent and LLM, against the zero-shot episodes on the same layouts.

    Within a condition a zero-shot episode pairs with one episode at most (if a layout was run more than once,
    episodes pair in row order and the extra ones are unpaired); every condition pairs with the same zero-shot
    episodes, which are its control.
    """
    found: list[MatchedPairs] = []
    by_group = groups(rows)
    controls: dict[PairKey, list[EpisodeRow]] = defaultdict(list)
    for group, mine in by_group.items():
        if group.condition == ZERO_SHOT:
            for row in mine:
                controls[_pair_key(row)].append(row)
    for group, mine in by_group.items():
        if group.condition == ZERO_SHOT:
            continue
        used: dict[PairKey, int] = defaultdict(int)
        pairs: list[tuple[EpisodeRow, EpisodeRow]] = []
        for row in mine:
            key = _pair_key(row)
            if used[key] < len(controls.get(key, ())):
                pairs.append((row, controls[key][used[key]]))
                used[key] += 1
        solved_tasks = {c.task for c, z in pairs if z.success}
        found.append(
            MatchedPairs(
                group=group,
                overall=_split(pairs),
                with_zero_shot_success=_split([p for p in pairs if p[0].task in solved_tasks]),
                without_zero_shot_success=_split([p for p in pairs if p[0].task not in solved_tasks]),
                unpaired=len(mine) - len(pairs),
            )
        )
    return tuple(found)


# -- success against a token budget ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetCurve:
    """Seed 000's budget curve for one group: ``solved_pct[i]`` percent of its ``episodes`` succeeded using at most
    ``budgets_tokens[i]`` input tokens (the budgets are the successful episodes' input tokens, ascending). At
    ``max_input_tokens``, the most any of its episodes used, every episode has run to its end: the curve is at SR."""

    group: Group
    episodes: int
    budgets_tokens: tuple[int, ...]
    solved_pct: tuple[float, ...]
    max_input_tokens: int


def budget_curves(rows: Iterable[EpisodeRow]) -> tuple[BudgetCurve, ...]:
    """The budget curve of every group with at least one success, in report order."""
    found = []
    for group, mine in groups(rows).items():
        used = sorted(max(r.input_tokens, MIN_BUDGET_TOKENS) for r in mine if r.success)
        if not used:
            continue
        budgets = sorted(set(used))
        solved = [bisect_right(used, budget) for budget in budgets]  # used is sorted
        found.append(
            BudgetCurve(
                group=group,
                episodes=len(mine),
                budgets_tokens=tuple(budgets),
                solved_pct=tuple(_pct(s, len(mine)) for s in solved),
                max_input_tokens=max(max(r.input_tokens for r in mine), MIN_BUDGET_TOKENS),
            )
        )
    return tuple(found)


# -- paired tests ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    """The exact McNemar test of two success series paired per layout: ``b`` pairs where only the first succeeded,
    ``c`` where only the second (the pairs where both or neither succeeded say nothing about which is better).

    ``p_value`` is two-sided: if both succeed equally often, each discordant pair goes either way with probability
    1/2, and p is the probability of a split of the b + c discordant pairs at least as uneven (the exact binomial
    test of min(b, c) in b + c at 1/2: 2 P(X <= min(b, c)), at most 1; 1 without a discordant pair)."""

    b: int
    c: int
    p_value: float


def mcnemar_exact(b: int, c: int) -> McNemar:
    """The exact McNemar test of ``b`` pairs won only by the first series and ``c`` only by the second."""
    if b < 0 or c < 0:
        raise ValueError(f"expected discordant pair counts >= 0, got b={b} and c={c}")
    if b + c == 0:
        return McNemar(b, c, 1.0)
    from scipy.stats import binomtest  # scipy is a dependency; imported here, where a test is made, for import time

    return McNemar(b, c, min(1.0, float(binomtest(min(b, c), b + c, 0.5).pvalue)))


def holm(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjustment of ``p_values`` (one family of tests), in their order: the k-th smallest p
    (from k = 0) times (m - k), made non-decreasing along the sorted order and capped at 1. A test is significant
    at level alpha when its adjusted p is at most alpha; the family-wise error rate then stays within alpha."""
    if any(not 0 <= p <= 1 for p in p_values):
        raise ValueError(f"expected p-values in [0, 1], got {list(p_values)}")
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for k, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - k) * p_values[i]))
        adjusted[i] = running
    return tuple(adjusted)


# -- a leaderboard per capability axis ------------------------------------------------------------------------------


Layout = tuple[str, str, int]  #: (task, variant, seed)


@dataclass(frozen=True)
class AxisEntry:
    """A group on one capability axis: its ``rank`` (1 is best; groups with equal SR share one; None when the
    axis is not ranked) and its ``rate``: on the axis's shared layouts when ranked, so that every group is measured
    on the same ones, otherwise on every episode it ran on the axis."""

    group: Group
    rank: int | None
    rate: Rate


@dataclass(frozen=True)
class NeighbourTest:
    """A ranked group against the next one down: on the ``pairs`` shared layouts, ``only_upper`` succeeded only
    for the upper group, ``only_lower`` only for the lower; ``p_value`` is the exact McNemar p, ``p_holm`` the
    Holm-adjusted one over the axis's neighbour tests, ``significant`` whether ``p_holm`` is at most the level."""

    upper: Group
    lower: Group
    pairs: int
    only_upper: int
    only_lower: int
    p_value: float
    p_holm: float
    significant: bool


@dataclass(frozen=True)
class AxisLeaderboard:
    """The groups on one capability axis, best first when ranked (see :func:`axis_leaderboards`).

    ``shared_layouts`` counts the layouts (task, variant, seed) of the axis every group ran; ``pairs`` the paired
    episodes on them (a layout run twice by every group pairs twice). The axis is ``ranked`` with at least
    ``min_shared_layouts`` of them; otherwise its entries have no rank and ``neighbours`` is empty."""

    axis: str
    tasks: tuple[str, ...]
    shared_layouts: int
    pairs: int
    min_shared_layouts: int
    significance_level: float
    entries: tuple[AxisEntry, ...]
    neighbours: tuple[NeighbourTest, ...]

    @property
    def ranked(self) -> bool:
        return self.shared_layouts >= self.min_shared_layouts


def _by_layout(rows: Iterable[EpisodeRow]) -> dict[Layout, list[EpisodeRow]]:
    found: dict[Layout, list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        found[row.layout].append(row)
    return found


def _shared_runs(by_group: Mapping[Group, Sequence[EpisodeRow]]) -> tuple[int, dict[Group, list[EpisodeRow]]]:
    """The number of layouts every group ran, and per group its episodes on them, aligned: the k-th episode of
    every group is on the same layout (a layout run several times pairs its runs in row order, as many as the
    group that ran it least)."""
    layouts = {g: _by_layout(mine) for g, mine in by_group.items()}
    shared = sorted(set.intersection(*(set(found) for found in layouts.values()))) if layouts else []
    aligned: dict[Group, list[EpisodeRow]] = {g: [] for g in by_group}
    for layout in shared:
        runs = min(len(found[layout]) for found in layouts.values())
        for g, found in layouts.items():
            aligned[g] += found[layout][:runs]
    return len(shared), aligned


def axis_leaderboard(
    axis: str, rows: Sequence[EpisodeRow], *, min_shared_layouts: int, significance_level: float
) -> AxisLeaderboard:
    """The leaderboard of one capability axis from its episodes (every group's), at least one.

    Ranked (at least ``min_shared_layouts`` layouts every group ran): by SR on those layouts, best first; each
    group is tested against the next one down by the exact McNemar test on the layouts both ran (the same shared
    ones), and the p-values are Holm-adjusted over the axis's neighbour tests. Not ranked: the groups in report
    order, each with its SR over every episode it ran on the axis.
    """
    by_group = groups(rows)
    count, aligned = _shared_runs(by_group)
    tasks = tuple(sorted({r.task for r in rows}))
    pairs = len(next(iter(aligned.values()), []))
    if count < min_shared_layouts:
        entries = tuple(AxisEntry(g, None, pooled(mine)) for g, mine in by_group.items())
        return AxisLeaderboard(axis, tasks, count, pairs, min_shared_layouts, significance_level, entries, ())
    rates = {g: pooled(aligned[g]) for g in by_group}
    outcomes = {g: [r.success for r in aligned[g]] for g in by_group}
    order = sorted(by_group, key=lambda g: -rates[g].successes)  # stable: equal SRs stay in report order
    ranks: dict[Group, int] = {}
    for position, g in enumerate(order, 1):
        tied = [h for h in ranks if rates[h].successes == rates[g].successes]
        ranks[g] = ranks[tied[0]] if tied else position  # competition ranking: 1, 2, 2, 4
    tests = []
    for upper, lower in pairwise(order):
        only_upper = sum(u and not w for u, w in zip(outcomes[upper], outcomes[lower], strict=True))
        only_lower = sum(w and not u for u, w in zip(outcomes[upper], outcomes[lower], strict=True))
        tests.append((upper, lower, mcnemar_exact(only_upper, only_lower)))
    adjusted = holm([t.p_value for _, _, t in tests])
    neighbours = tuple(
        NeighbourTest(upper, lower, pairs, t.b, t.c, t.p_value, p, p <= significance_level)
        for (upper, lower, t), p in zip(tests, adjusted, strict=True)
    )
    entries = tuple(AxisEntry(g, ranks[g], rates[g]) for g in order)
    return AxisLeaderboard(axis, tasks, count, pairs, min_shared_layouts, significance_level, entries, neighbours)


def axis_leaderboards(
    rows: Iterable[EpisodeRow], *, min_shared_layouts: int, significance_level: float
) -> tuple[AxisLeaderboard, ...]:
    """:func:`axis_leaderboard` of every capability axis, by axis name."""
    by_axis = _by(rows, lambda r: r.capability)
    return tuple(
        axis_leaderboard(
            axis, by_axis[axis], min_shared_layouts=min_shared_layouts, significance_level=significance_level
        )
        for axis in sorted(by_axis)
    )


# -- why episodes failed --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureReason:
    """The failed episodes that ended the same way after the same last refusal: ``last_refusal`` is the normalised
    text of the last refused call or move in the record ("" when none was refused), ``episodes`` their ids in row
    order, ``by_group`` how many of them each group ran."""

    end_reason: str
    last_refusal: str
    episodes: tuple[str, ...]
    by_group: tuple[tuple[Group, int], ...]


def failure_reasons(rows: Iterable[EpisodeRow], last_refusals: Mapping[str, str]) -> tuple[FailureReason, ...]:
    """The failed episodes of ``rows`` grouped by (end reason, last refusal), the largest groups first;
    ``last_refusals`` holds, by episode id, the normalised text of the episode's last refusal (none: "")."""
    found: dict[tuple[str, str], list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        if not row.success:
            found[(str(row.end_reason), last_refusals.get(row.episode_id, ""))].append(row)
    keyed = sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(
        FailureReason(
            end_reason=reason,
            last_refusal=refusal,
            episodes=tuple(r.episode_id for r in mine),
            by_group=tuple((g, len(members)) for g, members in groups(mine).items()),
        )
        for (reason, refusal), mine in keyed
    )


__all__ = [
    "PERCENT",
    "Z_95",
    "AgentEfficiency",
    "AxisCell",
    "AxisEntry",
    "AxisLeaderboard",
    "BudgetCurve",
    "EarlierUsage",
    "FailureReason",
    "Group",
    "LeaderboardEntry",
    "MatchedPairs",
    "McNemar",
    "NeighbourTest",
    "PairSplit",
    "Rate",
    "TaskCell",
    "UsageMeans",
    "VariantCell",
    "axis_leaderboard",
    "axis_leaderboards",
    "budget_curves",
    "efficiency",
    "endings",
    "failure_reasons",
    "groups",
    "holm",
    "leaderboard",
    "leaderboard_entry",
    "matched_pairs",
    "mcnemar_exact",
    "pooled",
    "task_cell",
    "variant_order",
    "wilson_interval",
]
