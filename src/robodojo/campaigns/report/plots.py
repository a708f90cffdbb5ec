"""The report's figures as SVG and PNG files, drawn with matplotlib's Agg canvas on
:class:`matplotlib.figure.Figure` objects (no pyplot: nothing global is touched, and no display is needed).

The HTML report shows the SVG: a vector image with a viewBox, sharp at any width the page gives it (text drawn as
paths, so no font is needed to read it); the PNG is for slides and markdown viewers.

- ``sr_per_task.png``: SR per task with the 95 % Wilson interval as error bars, one series per group.
- ``success_vs_input_tokens.png``: per group, the share of episodes solved using at most B input tokens, over B on
  a log axis (seed 000's budget figure).
- ``probe_deltas.png``: per condition, the matched-pair SR delta against zero-shot, overall and split by tasks with
  and without a zero-shot success.

A figure with nothing to show (no episode, no success, no condition) is not written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from robodojo.campaigns.report.clock import CLOCK_PNG, clock_cells, clock_figure
from robodojo.campaigns.report.stats import (
    PERCENT,
    BudgetCurve,
    LeaderboardEntry,
    MatchedPairs,
    budget_curves,
    leaderboard,
    matched_pairs,
)
from robodojo.campaigns.results import EpisodeRow

SR_PER_TASK_PNG = "sr_per_task.png"
BUDGET_PNG = "success_vs_input_tokens.png"
PROBE_DELTAS_PNG = "probe_deltas.png"
PLOT_FORMATS = ("svg", "png")  #: every figure is written in each, in this order

DPI = 100
HEIGHT_IN = 5.0  #: figure height [in]
MIN_WIDTH_IN = 6.0  #: figure width [in] however few bars
WIDTH_PER_BAR_GROUP_IN = 0.9  #: width per task (or condition) [in], so that labels stay readable
BAR_GROUP_SPAN = 0.8  #: share of a category's slot taken by its bars
CAPSIZE_PT = 3.0  #: error-bar cap [pt]
LEGEND_FONT_SIZE = "small"
LEGEND_COLUMNS = 2
TICK_ROTATION_DEG = 30.0
SR_AXIS_TOP_PCT = PERCENT * 1.05  #: a little headroom above 100 % for the caps
STEP_MARKER = "."  #: marks each budget at which an episode was solved
SUBSET_LABELS = ("all pairs", "tasks with a zero-shot success", "tasks without")
TICK_MANTISSAS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))  #: token-axis ticks
MIN_TOKEN_TICKS = 3  #: the token axis gets at least this many labels when a finer series has them
MAX_TOKEN_TICKS = 9  #: ... and no more: beyond, labels of a 6 in wide figure run into each other


def _figure(categories: int = 0) -> Figure:
    """An empty figure wide enough for ``categories`` groups of bars along x."""
    width = max(MIN_WIDTH_IN, WIDTH_PER_BAR_GROUP_IN * categories)
    fig = Figure(figsize=(width, HEIGHT_IN), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # this figure draws with Agg, whatever matplotlib's global backend
    return fig


def _legend(fig: Figure) -> None:
    """The legend below the axes (constrained layout makes room), where it cannot hide a bar or a curve."""
    fig.legend(loc="outside lower center", fontsize=LEGEND_FONT_SIZE, ncols=LEGEND_COLUMNS)


def _bar_offsets(series: int) -> tuple[np.ndarray, float]:
    """The x offsets of ``series`` bars side by side within a category's slot, and each bar's width."""
    width = BAR_GROUP_SPAN / series
    return (np.arange(series) - (series - 1) / 2) * width, width


def sr_per_task_figure(board: Sequence[LeaderboardEntry]) -> Figure | None:
    """SR per task with Wilson error bars, one series per group; None without a task."""
    tasks = sorted({(c.capability, c.task) for entry in board for c in entry.tasks})
    if not tasks:
        return None
    fig = _figure(len(tasks))
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    offsets, width = _bar_offsets(len(board))
    for entry, offset in zip(board, offsets, strict=True):
        cells = {(c.capability, c.task): c for c in entry.tasks}
        shown = [i for i, t in enumerate(tasks) if t in cells]
        sr = np.array([cells[tasks[i]].sr_pct for i in shown])
        low = np.array([cells[tasks[i]].ci_low_pct for i in shown])
        high = np.array([cells[tasks[i]].ci_high_pct for i in shown])
        # A generalization cell's SR is the variants' mean, its interval the pooled one: they can disagree slightly.
        errors = np.vstack([np.clip(sr - low, 0, None), np.clip(high - sr, 0, None)])
        ax.bar(x[shown] + offset, sr, width, yerr=errors, capsize=CAPSIZE_PT, label=entry.group.label)
    ax.set_xticks(x, [task for _, task in tasks], rotation=TICK_ROTATION_DEG, ha="right")
    ax.set_ylim(0, SR_AXIS_TOP_PCT)
    ax.set_ylabel("SR [%] (95 % Wilson interval)")
    ax.set_title("Success rate per task")
    _legend(fig)
    return fig


def token_ticks(low: float, high: float) -> list[float]:
    """Ticks for a log axis of token counts from ``low`` to ``high``: the first of the mantissa series (1; 1-2-5;
    1-1.5-2-3-...-9) that puts enough ticks in the range, and no more than fit (:data:`MAX_TOKEN_TICKS`)."""
    decades = range(math.floor(math.log10(max(low, 1))), math.ceil(math.log10(max(high, 1))) + 1)
    chosen: list[float] = []
    for mantissas in TICK_MANTISSAS:
        ticks = [m * 10.0**d for d in decades for m in mantissas if low <= m * 10.0**d <= high]
        if len(ticks) > MAX_TOKEN_TICKS:
            break
        chosen = ticks
        if len(ticks) >= MIN_TOKEN_TICKS:
            break
    return chosen or [float(low), float(high)]


def tokens_text(tokens: float) -> str:
    """A token count as a tick label: ``900``, ``20k``, ``1.5M``."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if tokens >= size:
            return f"{tokens / size:.{0 if (tokens / size).is_integer() else 1}f}{suffix}"
    return f"{tokens:.0f}"


def budget_figure(curves: Sequence[BudgetCurve]) -> Figure | None:
    """Share of episodes solved within each input-token budget, one step curve per group; None without a curve."""
    if not curves:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for curve in curves:
        # From 0 at the first budget, through each success, on to the largest budget any episode used (where the
        # curve reaches the group's SR), so that even a single success draws a visible step.
        budgets = [curve.budgets_tokens[0], *curve.budgets_tokens, curve.max_input_tokens]
        solved = [0.0, *curve.solved_pct, curve.solved_pct[-1]]
        ax.step(budgets, solved, where="post", marker=STEP_MARKER, label=f"{curve.group.label} (n={curve.episodes})")
    ax.set_xscale("log")
    low = min(c.budgets_tokens[0] for c in curves)
    high = max(c.max_input_tokens for c in curves)
    ticks = token_ticks(low, high)
    ax.set_xticks(ticks, [tokens_text(t) for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())  # matplotlib labels a log axis's minor ticks too: they collide
    ax.set_ylim(0, SR_AXIS_TOP_PCT)
    ax.set_xlabel("input-token budget per episode")
    ax.set_ylabel("episodes solved within the budget [%]")
    ax.set_title("Success against input-token budget")
    _legend(fig)
    return fig


def probe_deltas_figure(table: Sequence[MatchedPairs]) -> Figure | None:
    """Matched-pair SR delta per condition (percentage points), overall and per subset; None without a pair."""
    table = [p for p in table if p.overall.pairs]
    if not table:
        return None
    fig = _figure(len(table))
    ax = fig.add_subplot()
    x = np.arange(len(table))
    offsets, width = _bar_offsets(len(SUBSET_LABELS))
    for s, (label, offset) in enumerate(zip(SUBSET_LABELS, offsets, strict=True)):
        splits = [(p.overall, p.with_zero_shot_success, p.without_zero_shot_success)[s] for p in table]
        deltas = {i: split.delta_pp for i, split in enumerate(splits) if split.delta_pp is not None}  # empty: none
        ax.bar(x[list(deltas)] + offset, list(deltas.values()), width, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, [p.group.label for p in table], rotation=TICK_ROTATION_DEG, ha="right")
    ax.set_ylabel("SR delta against zero-shot [pp]")
    ax.set_title("Matched pairs: condition minus zero-shot")
    _legend(fig)
    return fig


def write_plots(rows: Iterable[EpisodeRow], out_dir: Path, formats: Sequence[str] = PLOT_FORMATS) -> list[Path]:
    """Write the figures that have something to show into ``out_dir`` (created if needed), each in every one of
    ``formats`` (file suffixes matplotlib knows: svg, png, pdf); the paths written, figure by figure."""
    rows = list(rows)
    figures = {
        SR_PER_TASK_PNG: sr_per_task_figure(leaderboard(rows)),
        BUDGET_PNG: budget_figure(budget_curves(rows)),
        PROBE_DELTAS_PNG: probe_deltas_figure(matched_pairs(rows)),
        CLOCK_PNG: clock_figure(clock_cells(rows)),  # a campaign that swept the clock
    }
    written = []
    for name, fig in figures.items():
        if fig is None:
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            path = (out_dir / name).with_suffix(f".{fmt}")
            fig.savefig(path, format=fmt)
            written.append(path)
    return written


__all__ = [
    "BUDGET_PNG",
    "PLOT_FORMATS",
    "PROBE_DELTAS_PNG",
    "SR_PER_TASK_PNG",
    "budget_figure",
    "probe_deltas_figure",
    "sr_per_task_figure",
    "write_plots",
]
