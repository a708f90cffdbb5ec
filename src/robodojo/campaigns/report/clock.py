"""Success against latency: the report's part for a campaign that sweeps the clock (robodojo.episodes.clock, e.g.
``robodojo eval --clock fixed:0,1,3,10``), as frozen results, a table and a figure; no I/O.

Per group (agent, LLM and the condition apart from its clock) and capability axis, each clock's episodes pooled: the
success rate with its 95 % Wilson interval and the world time a model call cost on average (the clock's S under
``fixed:S``; the measured mean under ``real`` and ``scaled:K``). The static axes should not move with the clock; a
dynamic axis shows where a slower model stops keeping up with a world that does not wait. Nothing is shown for a
campaign whose episodes all ran paused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from robodojo.campaigns.report.stats import PERCENT, wilson_interval
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.episodes.clock import FIXED, PAUSED, ClockSetting
from robodojo.episodes.factory import AGENTS
from robodojo.errors import ConfigError

CLOCK_TITLE = "Success against latency (clock)"
CLOCK_NOTE = (
    "Per capability axis, each clock's episodes pooled: SR% with its 95 % Wilson interval, the episodes (n) and the "
    "mean world time a model call cost (latency s/call). Static axes should not move with the clock; a dynamic one "
    "shows where the model's latency breaks the task."
)
CLOCK_CSV = "clock.csv"
CLOCK_PNG = "success_vs_latency.png"
CI_DIGITS = 1
LATENCY_DIGITS = 2
# The figure: latencies of 0 and of several seconds on one axis, linear below LINEAR_BELOW_S and logarithmic above.
LINEAR_BELOW_S = 1.0
DPI = 100
FIGURE_SIZE_IN = (7.0, 5.0)
CAPSIZE_PT = 3.0
SR_AXIS_TOP_PCT = PERCENT * 1.05


@dataclass(frozen=True, kw_only=True)
class ClockCell:
    """One group's episodes on one axis under one clock: ``successes`` of ``n``, SR with its Wilson interval [%], and
    the mean world time per model call ``latency_per_call_s`` (0 when no call was made)."""

    agent: str
    llm: str
    condition: str  #: the condition apart from its clock (zero_shot when the clock was all there was)
    axis: str
    clock: str
    latency_per_call_s: float
    n: int
    successes: int
    sr_pct: float
    ci_low_pct: float
    ci_high_pct: float

    @property
    def group(self) -> str:
        return f"{self.agent} / {self.llm} / {self.condition}"


def _base_condition(row: EpisodeRow) -> str:
    """The row's condition without its clock's part (robodojo.campaigns.spec names crossed conditions so)."""
    try:
        label = ClockSetting.parse(row.clock).label
    except ConfigError:
        return row.condition
    if row.condition == label:
        return ZERO_SHOT
    return row.condition.removesuffix(f"_{label}")


def _clock_order(clock: str) -> tuple[int, float, str]:
    """paused first, then fixed by S, then the measured clocks."""
    try:
        setting = ClockSetting.parse(clock)
    except ConfigError:
        return (3, 0.0, clock)
    rank = {PAUSED: 0, FIXED: 1}.get(setting.kind, 2)
    return (rank, setting.value, clock)


def clock_cells(rows: Iterable[EpisodeRow]) -> tuple[ClockCell, ...]:
    """The cells of the rows (see the module docstring), by group, axis and clock; () when every row ran paused."""
    rows = list(rows)
    if all(r.clock == PAUSED for r in rows):
        return ()
    found: dict[tuple[str, str, str, str, str], list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        found[(row.agent, row.llm, _base_condition(row), row.capability, row.clock)].append(row)

    def order(key: tuple[str, str, str, str, str]) -> tuple:
        """As the leaderboard's groups (the known agents first, zero-shot first), then axis by name, then clock."""
        agent, llm, condition, axis, clock = key
        agent_rank = AGENTS.index(agent) if agent in AGENTS else len(AGENTS)
        return (agent_rank, agent, llm, condition != ZERO_SHOT, condition, axis, _clock_order(clock))

    cells = []
    for key in sorted(found, key=order):
        agent, llm, condition, axis, clock = key
        group = found[key]
        wins = sum(r.success for r in group)
        low, high = wilson_interval(wins, len(group))
        calls = sum(r.llm_calls for r in group)
        cells.append(
            ClockCell(
                agent=agent, llm=llm, condition=condition, axis=axis, clock=clock,
                latency_per_call_s=sum(r.latency_applied_s for r in group) / calls if calls else 0.0,
                n=len(group), successes=wins, sr_pct=PERCENT * wins / len(group),
                ci_low_pct=PERCENT * low, ci_high_pct=PERCENT * high,
            )
        )  # fmt: skip
    return tuple(cells)


def _clocks(cells: Sequence[ClockCell]) -> list[str]:
    return sorted({c.clock for c in cells}, key=_clock_order)


def clock_table(cells: Sequence[ClockCell]) -> tuple[list[str], list[list[str]], int]:
    """(header, rows, name columns) of the markdown table: a row per group and axis, a column per clock, each cell
    ``SR% [low, high] n=N, L s/call``."""
    clocks = _clocks(cells)
    by_row: dict[tuple[str, str], dict[str, ClockCell]] = defaultdict(dict)
    for cell in cells:
        by_row[(cell.group, cell.axis)][cell.clock] = cell
    rows = []
    for (group, axis), per_clock in by_row.items():
        texts = []
        for clock in clocks:
            c = per_clock.get(clock)
            texts.append(
                "-" if c is None else
                f"{c.sr_pct:.{CI_DIGITS}f} [{c.ci_low_pct:.{CI_DIGITS}f}, {c.ci_high_pct:.{CI_DIGITS}f}] n={c.n}, "
                f"{c.latency_per_call_s:.{LATENCY_DIGITS}f} s/call"
            )  # fmt: skip
        rows.append([group, axis, *texts])
    return ["agent / LLM / condition", "axis", *clocks], rows, 2


def clock_csv(cells: Sequence[ClockCell]) -> tuple[list[str], list[list[str | int | float | bool | None]]]:
    """(header, rows) of clock.csv: one row per cell, every number in full."""
    header = ["agent", "llm", "condition", "axis", "clock", "latency_per_call_s", "n", "successes", "sr_pct",
              "ci_low_pct", "ci_high_pct"]  # fmt: skip
    rows: list[list[str | int | float | bool | None]] = [
        [c.agent, c.llm, c.condition, c.axis, c.clock, c.latency_per_call_s, c.n, c.successes, c.sr_pct,
         c.ci_low_pct, c.ci_high_pct]
        for c in cells
    ]  # fmt: skip
    return header, rows


def clock_figure(cells: Sequence[ClockCell]) -> Figure | None:
    """SR against the world time per model call, a line with Wilson error bars per group and axis; None without a
    cell."""
    if not cells:
        return None
    fig = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # drawn with Agg whatever matplotlib's global backend (as robodojo.campaigns.report.plots)
    ax = fig.add_subplot()
    series: dict[str, list[ClockCell]] = defaultdict(list)
    for cell in cells:
        series[f"{cell.group} / {cell.axis}"].append(cell)
    for label, line in series.items():
        line = sorted(line, key=lambda c: c.latency_per_call_s)
        x = np.array([c.latency_per_call_s for c in line])
        y = np.array([c.sr_pct for c in line])
        below = y - np.array([c.ci_low_pct for c in line])
        above = np.array([c.ci_high_pct for c in line]) - y
        ax.errorbar(x, y, yerr=[below, above], marker="o", capsize=CAPSIZE_PT, label=label)
    ax.set_xscale("symlog", linthresh=LINEAR_BELOW_S)
    ax.set_xlabel("world time per model call [s]")
    ax.set_ylabel("SR [%] (95 % Wilson interval)")
    ax.set_ylim(0, SR_AXIS_TOP_PCT)
    ax.set_title("Success against latency")
    fig.legend(loc="outside lower center", fontsize="small", ncols=2)
    return fig


__all__ = [
    "CLOCK_CSV",
    "CLOCK_NOTE",
    "CLOCK_PNG",
    "CLOCK_TITLE",
    "ClockCell",
    "clock_cells",
    "clock_csv",
    "clock_figure",
    "clock_table",
]
