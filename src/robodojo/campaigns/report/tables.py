"""The report's tables from :mod:`robodojo.campaigns.report.stats`: markdown for reading, CSV for tools.

Markdown (:func:`report_markdown`) and the HTML campaign page show the same :class:`Section` list
(:func:`report_sections`): the leaderboard by capability axis with the Average and the micro figures, a ranking per
axis with its neighbour tests, the per-task table in seed 002's "Score / SR%" cell format (a generalization task gets
a row per variant under its cell), the endings with the cost per success, the efficiency table with its ratios, the
matched-pair table and, with what the records say (:class:`RecordFindings`), why episodes failed and the tries
killed or retried. CSV (:func:`write_tables`), one file per table plus every episode:

- ``leaderboard.csv``: a row per group; ``<axis>_score`` and ``<axis>_sr_pct`` per axis (empty where the group has
  no task on the axis), the Average, the micro figures with their Wilson interval.
- ``axis_ranks.csv``: a row per axis and group: whether the axis is ranked, its shared layouts, the rank, the SR
  with its interval, and against the next group down the discordant layouts, the McNemar p and the Holm-adjusted p.
- ``tasks.csv``: a row per group and task (``variant`` empty: the task's cell, the mean over its variants for a
  generalization cell), then one per variant of a generalization task.
- ``efficiency.csv``: a row per LLM and agent: ``mean_<metric>`` per solved episode and ``ratio_<metric>`` over the
  base agent's.
- ``matched_pairs.csv``: a row per condition and subset (``all``, ``with_zero_shot_success``,
  ``without_zero_shot_success``); ``unpaired`` is given on the ``all`` row.
- ``endings.csv``: a row per group: episodes by end reason, what a success cost, what earlier tries spent.
- ``failure_reasons.csv``: a row per (end reason, normalised last refusal) with its episodes.
- ``earlier_tries.csv``: a row per try killed or crashed and retried, with what it spent.
- ``episodes.csv``: every row, its values in :meth:`EpisodeRow.columns` order.

CSV numbers are written in full (Python's shortest round-trip text), an undefined value as an empty cell.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote as url_quote

from robodojo.campaigns.report.clock import CLOCK_CSV, CLOCK_NOTE, CLOCK_TITLE, clock_cells, clock_csv, clock_table
from robodojo.campaigns.report.settings import ReportSettings, shipped_report_settings
from robodojo.campaigns.report.stats import (
    PER_SUCCESS_METRICS,
    PERCENT,
    AgentEfficiency,
    AxisLeaderboard,
    EarlierUsage,
    FailureReason,
    GroupEndings,
    LeaderboardEntry,
    MatchedPairs,
    PairSplit,
    Rate,
    TaskCell,
    axis_leaderboards,
    efficiency,
    endings,
    failure_reasons,
    leaderboard,
    matched_pairs,
    variant_order,
    wilson_interval,
)
from robodojo.campaigns.report.tries import EarlierTry, earlier_usage
from robodojo.campaigns.results import EpisodeRow
from robodojo.episodes.efficiency import METRICS
from robodojo.episodes.spec import EndReason

LEADERBOARD_CSV = "leaderboard.csv"
AXIS_RANKS_CSV = "axis_ranks.csv"
TASKS_CSV = "tasks.csv"
EFFICIENCY_CSV = "efficiency.csv"
ENDINGS_CSV = "endings.csv"
MATCHED_PAIRS_CSV = "matched_pairs.csv"
FAILURES_CSV = "failure_reasons.csv"
EARLIER_TRIES_CSV = "earlier_tries.csv"
EPISODES_CSV = "episodes.csv"
REPORT_MD = "report.md"

PCT_DIGITS = 2  #: Score and SR in markdown, as seed 002 prints them (28.97 / 22.48%)
RATIO_DIGITS = 2
CI_DIGITS = 1  #: a Wilson interval's bounds [%]
P_DIGITS = 3  #: a p-value in markdown
SIGNIFICANT_MARK = "*"  #: beside a neighbour difference significant at the report's level
MIN_RATIO_LAYOUTS = 10  #: an efficiency ratio over fewer jointly solved layouts is marked as not worth citing
DEFAULT_TITLE = "Campaign report"  #: report.md's heading when the campaign's name is not known
NO_VALUE = "-"  #: a markdown cell with nothing to show
TASK_SEPARATOR = ";"  #: between task names in a CSV cell

GROUP_COLUMNS = ("agent", "llm", "condition")
METRIC_LABELS = {
    "llm_calls": "LLM calls",
    "input_tokens": "input tokens",
    "cached_input_tokens": "cached input",
    "uncached_input_tokens": "uncached input",
    "output_tokens": "output tokens",
    "cost_usd": "cost USD",
    "wall_time_s": "wall s",
}
METRIC_FORMATS = {  # per solved episode: calls to two decimals, tokens whole, dollars to four
    "llm_calls": "{:.2f}",
    "input_tokens": "{:.0f}",
    "cached_input_tokens": "{:.0f}",
    "uncached_input_tokens": "{:.0f}",
    "output_tokens": "{:.0f}",
    "cost_usd": "{:.4f}",
    "wall_time_s": "{:.1f}",
}
SUBSETS = {  # the matched-pair splits: CSV name -> markdown label
    "all": "all",
    "with_zero_shot_success": "tasks with a zero-shot success",
    "without_zero_shot_success": "tasks without",
}

Value = str | int | float | bool | None


# -- formatting -----------------------------------------------------------------------------------------------------


def score_sr_cell(score: float, sr_pct: float) -> str:
    """Seed 002's leaderboard cell: ``"28.97 / 22.48%"``."""
    return f"{score:.{PCT_DIGITS}f} / {sr_pct:.{PCT_DIGITS}f}%"


def _pct(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:.{PCT_DIGITS}f}%"


def _interval(low_pct: float, high_pct: float) -> str:
    """A 95 % Wilson interval as a cell shows it after its rate: ``[19.3-68.0]`` (percent)."""
    return f"[{low_pct:.{CI_DIGITS}f}-{high_pct:.{CI_DIGITS}f}]"


def _rate_cell(rate: Rate) -> str:
    """A pooled rate's cell: seed 002's ``score / SR%`` and the SR's 95 % Wilson interval."""
    return f"{score_sr_cell(rate.score, rate.sr_pct)} {_interval(rate.ci_low_pct, rate.ci_high_pct)}"


def _sr_with_interval(successes: int, n: int, sr_pct: float | None) -> str:
    if sr_pct is None or n == 0:
        return NO_VALUE
    low, high = wilson_interval(successes, n)
    return f"{_pct(sr_pct)} {_interval(PERCENT * low, PERCENT * high)}"


def _signed_pp(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:+.{PCT_DIGITS}f} pp"


def _metric(metric: str, value: float | None) -> str:
    return NO_VALUE if value is None else METRIC_FORMATS[metric].format(value)


def _ratio(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:.{RATIO_DIGITS}f}x"


Link = tuple[str, str]  #: (text, href relative to the report's folder, not URL-quoted)


def _md_text(text: str) -> str:
    return text.replace("|", "\\|")


def _md_link(text: str, href: str) -> str:
    label = _md_text(text).replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({url_quote(href, safe='/#')})"


@dataclasses.dataclass(frozen=True)
class TextTable:
    """A table of formatted cells: the first ``text_columns`` columns are names (left-aligned), the rest numbers.

    ``links`` gives some cells links instead of their text, by (row, column): each a list of (text, href), the href
    relative to the report's folder (report.md and index.html are both there), shown separated by commas; the
    cell's text is then those texts joined the same way."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    text_columns: int
    links: Mapping[tuple[int, int], Sequence[Link]] = dataclasses.field(default_factory=dict)

    def markdown(self) -> str:
        """A pipe table, names left-aligned and numbers right-aligned, links as markdown links."""
        body = [
            [
                ", ".join(_md_link(*link) for link in self.links[i, j]) if (i, j) in self.links else _md_text(c)
                for j, c in enumerate(row)
            ]
            for i, row in enumerate(self.rows)
        ]
        head = [_md_text(c) for c in self.header]
        rule = [":---" if i < self.text_columns else "---:" for i in range(len(self.header))]
        return "\n".join("| " + " | ".join(row) + " |" for row in [head, rule, *body])


def _linked(texts: Sequence[Link]) -> str:
    """The text of a cell of links."""
    return ", ".join(text for text, _ in texts)


@dataclasses.dataclass(frozen=True)
class Section:
    """A part of the report: a title, a note on how to read it, and its table (or a sentence when it has none);
    ``anchor`` is its id on the campaign page ("" lets the page number it)."""

    title: str
    note: str
    table: TextTable | None
    empty_text: str = ""
    anchor: str = ""


def _csv_value(value: Value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


# -- the tables as rows ---------------------------------------------------------------------------------------------


def _axes(board: Sequence[LeaderboardEntry]) -> list[str]:
    return sorted({a.axis for entry in board for a in entry.axes})


def _task_order(board: Sequence[LeaderboardEntry]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(axis, task, variants of a generalization task) over every group, by axis then task."""
    capability: dict[str, str] = {}
    variants: dict[str, set[str]] = {}
    for entry in board:
        for cell in entry.tasks:
            capability.setdefault(cell.task, cell.capability)
            variants.setdefault(cell.task, set()).update(v.variant for v in cell.variants)
    order = sorted(capability, key=lambda t: (capability[t], t))
    # A task's variants in the order its cells list them (standard first), whatever group ran which.
    ordered = {t: sorted(variants[t], key=variant_order) for t in order}
    return [(capability[t], t, tuple(ordered[t]) if len(ordered[t]) > 1 else ()) for t in order]


def _cell(entry: LeaderboardEntry, task: str) -> TaskCell | None:
    return next((c for c in entry.tasks if c.task == task), None)


def leaderboard_table(board: Sequence[LeaderboardEntry]) -> TextTable:
    """Per group: each axis, the Average over the axes, and the micro figures (every episode pooled)."""
    axes = _axes(board)
    header = [*GROUP_COLUMNS, *axes, "Average", "micro [95% CI]", "micro successes"]
    rows = []
    for entry in board:
        by_axis = {a.axis: a for a in entry.axes}
        rows.append(
            [
                entry.group.agent,
                entry.group.llm,
                entry.group.condition,
                *(score_sr_cell(by_axis[a].score, by_axis[a].sr_pct) if a in by_axis else NO_VALUE for a in axes),
                score_sr_cell(entry.average_score, entry.average_sr_pct),
                _rate_cell(entry.micro),
                f"{entry.micro.successes}/{entry.micro.n}",
            ]
        )
    return TextTable(header, rows, len(GROUP_COLUMNS))


def leaderboard_markdown(board: Sequence[LeaderboardEntry]) -> str:
    return leaderboard_table(board).markdown()


def _leaderboard_csv(board: Sequence[LeaderboardEntry]) -> tuple[list[str], list[list[Value]]]:
    axes = _axes(board)
    micro = ("n", "successes", "score", "sr_pct", "ci_low_pct", "ci_high_pct")
    header = [
        *GROUP_COLUMNS,
        *(f"{a}_{figure}" for a in axes for figure in ("score", "sr_pct")),
        "average_score",
        "average_sr_pct",
        *(f"micro_{figure}" for figure in micro),
    ]
    rows: list[list[Value]] = []
    for entry in board:
        by_axis = {a.axis: a for a in entry.axes}
        axis_values: list[Value] = []
        for a in axes:
            axis_values += [by_axis[a].score, by_axis[a].sr_pct] if a in by_axis else [None, None]
        rows.append(
            [
                *dataclasses.astuple(entry.group),
                *axis_values,
                entry.average_score,
                entry.average_sr_pct,
                *(getattr(entry.micro, figure) for figure in micro),
            ]
        )
    return header, rows


def tasks_table(board: Sequence[LeaderboardEntry]) -> TextTable:
    """A row per task (and per variant under a generalization task), a "Score / SR%" column per group."""
    header = ["axis", "task", *(entry.group.label for entry in board)]
    rows = []
    for axis, task, variants in _task_order(board):
        cells = [_cell(entry, task) for entry in board]
        rows.append([axis, task, *(NO_VALUE if c is None else _rate_cell(c) for c in cells)])
        for variant in variants:
            values = []
            for c in cells:
                v = None if c is None else next((v for v in c.variants if v.variant == variant), None)
                values.append(NO_VALUE if v is None else _rate_cell(v))
            rows.append([axis, f"{task} [{variant}]", *values])
    return TextTable(header, rows, 2)


def tasks_markdown(board: Sequence[LeaderboardEntry]) -> str:
    return tasks_table(board).markdown()


def _tasks_csv(board: Sequence[LeaderboardEntry]) -> tuple[list[str], list[list[Value]]]:
    figures = ("n", "successes", "score", "sr_pct", "ci_low_pct", "ci_high_pct")
    header = [*GROUP_COLUMNS, "capability", "task", "variant", "generalization", *figures]
    rows: list[list[Value]] = []
    for entry in board:
        group = dataclasses.astuple(entry.group)
        for cell in entry.tasks:
            head = [*group, cell.capability, cell.task]
            rows.append([*head, "", cell.generalization, *(getattr(cell, f) for f in figures)])
            if cell.generalization:
                rows += [[*head, v.variant, True, *(getattr(v, f) for f in figures)] for v in cell.variants]
    return header, rows


def efficiency_table(table: Sequence[AgentEfficiency]) -> TextTable:
    """Per LLM and agent: the means per solved episode on the jointly solved layouts; per other agent, its ratios."""
    header = ["llm", "agent", "episodes", "SR [95% CI]", "joint layouts", "solved episodes", *METRIC_LABELS.values()]
    rows = []
    for e in table:
        rows.append(
            [
                e.llm,
                e.agent,
                str(e.episodes),
                _sr_with_interval(e.successes, e.episodes, e.sr_pct),
                str(e.joint_layouts),
                str(e.solved_episodes),
                *(_metric(m, e.mean.value(m)) for m in METRICS),
            ]
        )
        if e.agent != e.base_agent:
            ratio_label = f"{e.agent} / {e.base_agent}"
            if e.joint_layouts < MIN_RATIO_LAYOUTS:  # a ratio of a few layouts' means swings with any one of them
                ratio_label += f" (only {e.joint_layouts} layouts: not to cite)"
            rows.append([e.llm, ratio_label, "", "", "", "", *(_ratio(e.ratio.value(m)) for m in METRICS)])
    return TextTable(header, rows, 2)


def efficiency_markdown(table: Sequence[AgentEfficiency]) -> str:
    return efficiency_table(table).markdown()


def _efficiency_csv(table: Sequence[AgentEfficiency]) -> tuple[list[str], list[list[Value]]]:
    counts = ("llm", "agent", "base_agent", "episodes", "successes", "sr_pct", "joint_layouts", "solved_episodes")
    header = [*counts, *(f"mean_{m}" for m in METRICS), *(f"ratio_{m}" for m in METRICS)]
    rows: list[list[Value]] = [
        [
            *(getattr(e, c) for c in counts),
            *(e.mean.value(m) for m in METRICS),
            *(e.ratio.value(m) for m in METRICS),
        ]
        for e in table
    ]
    return header, rows


def _splits(pairs: MatchedPairs) -> dict[str, PairSplit]:
    return {
        "all": pairs.overall,
        "with_zero_shot_success": pairs.with_zero_shot_success,
        "without_zero_shot_success": pairs.without_zero_shot_success,
    }


def matched_pairs_table(table: Sequence[MatchedPairs]) -> TextTable:
    """Per condition and subset: pairs, SR under the condition and zero-shot, the delta, the four outcomes."""
    header = [
        *GROUP_COLUMNS,
        "subset",
        "tasks",
        "pairs",
        "condition SR [95% CI]",
        "zero-shot SR [95% CI]",
        "delta",
        "both",
        "only condition",
        "only zero-shot",
        "neither",
        "net successes",
        "unpaired",
    ]
    rows = []
    for pairs in table:
        for name, split in _splits(pairs).items():
            rows.append(
                [
                    *dataclasses.astuple(pairs.group),
                    SUBSETS[name],
                    str(len(split.tasks)),
                    str(split.pairs),
                    _sr_with_interval(split.condition_successes, split.pairs, split.condition_sr_pct),
                    _sr_with_interval(split.zero_shot_successes, split.pairs, split.zero_shot_sr_pct),
                    _signed_pp(split.delta_pp),
                    str(split.both),
                    str(split.only_condition),
                    str(split.only_zero_shot),
                    str(split.neither),
                    f"{split.net_successes:+d}",
                    str(pairs.unpaired) if name == "all" else "",
                ]
            )
    return TextTable(header, rows, len(GROUP_COLUMNS) + 1)


def matched_pairs_markdown(table: Sequence[MatchedPairs]) -> str:
    return matched_pairs_table(table).markdown()


def _matched_pairs_csv(table: Sequence[MatchedPairs]) -> tuple[list[str], list[list[Value]]]:
    figures = [f.name for f in dataclasses.fields(PairSplit) if f.name != "tasks"]
    header = [*GROUP_COLUMNS, "subset", "task_count", "tasks", *figures, "unpaired"]
    rows: list[list[Value]] = []
    for pairs in table:
        for name, split in _splits(pairs).items():
            rows.append(
                [
                    *dataclasses.astuple(pairs.group),
                    name,
                    len(split.tasks),
                    TASK_SEPARATOR.join(split.tasks),
                    *(getattr(split, f) for f in figures),
                    pairs.unpaired if name == "all" else None,
                ]
            )
    return header, rows


def _episodes_csv(rows: Sequence[EpisodeRow]) -> tuple[list[str], list[list[Value]]]:
    names = list(EpisodeRow.columns())
    return names, [list(r.as_dict().values()) for r in rows]


# -- the report -----------------------------------------------------------------------------------------------------


DEFINITIONS = (
    "Score is the mean process reward x 100; SR the percentage of episodes that met the task's full-success "
    "criterion. The Average is the unweighted mean of the axis values, each the mean of its tasks' cells; the micro "
    "figures pool every episode of the group, and differ from the Average when the axes hold different numbers of "
    "tasks. A generalization task's cell is the mean of its variants' values (listed under it)."
)
ENDINGS_NOTE = (
    "Episodes by how they ended (crashed ones are listed at the end of the report, not here), and per success the "
    "LLM calls, tokens and cost of every episode of the group, failures included: what one success costs."
)
EFFICIENCY_NOTE = (
    "Zero-shot episodes. Means per solved episode, taken only on the layouts (task, variant, seed) every compared "
    "agent solved, so that no agent is averaged over easier episodes than another; ratios are over the first agent."
)
PAIRS_NOTE = (
    "Each episode of a condition paired with the zero-shot episode of the same agent, LLM, task, variant and seed; "
    "split by tasks with and without a zero-shot success among the matched pairs. Unpaired episodes are left out of "
    "the figures and counted."
)


def endings_table(table: Sequence[GroupEndings]) -> TextTable:
    """Per group: its episodes by end reason (a column per reason that occurs), then every episode's LLM calls,
    tokens and cost, its earlier tries' included (a column counts those tries when there are any), divided by the
    group's successes."""
    reasons = [r for r in (e.value for e in EndReason) if any(r in g.ended_by for g in table)]
    retried = any(g.earlier.tries for g in table)
    header = [*GROUP_COLUMNS, "episodes", *reasons, *(["earlier tries"] if retried else []),
              *(f"{METRIC_LABELS[m]} per success" for m in PER_SUCCESS_METRICS)]  # fmt: skip
    rows = [
        [
            *dataclasses.astuple(g.group),
            str(g.episodes),
            *(str(g.ended_by.get(r, 0)) for r in reasons),
            *([str(g.earlier.tries)] if retried else []),
            *(_metric(m, g.per_success[m]) for m in PER_SUCCESS_METRICS),
        ]
        for g in table
    ]
    return TextTable(header, rows, len(GROUP_COLUMNS))


EARLIER_FIELDS = ("tries", "llm_calls", "input_tokens", "output_tokens", "cost_usd")


def _endings_csv(table: Sequence[GroupEndings]) -> tuple[list[str], list[list[Value]]]:
    reasons = [e.value for e in EndReason]
    header = [*GROUP_COLUMNS, "episodes", "successes", *(f"ended_{r}" for r in reasons),
              *(f"{m}_per_success" for m in PER_SUCCESS_METRICS),
              *(f"earlier_{f}" for f in EARLIER_FIELDS)]  # fmt: skip
    rows: list[list[Value]] = [
        [
            *dataclasses.astuple(g.group),
            g.episodes,
            g.successes,
            *(g.ended_by.get(r, 0) for r in reasons),
            *(g.per_success[m] for m in PER_SUCCESS_METRICS),
            *(getattr(g.earlier, f) for f in EARLIER_FIELDS),
        ]
        for g in table
    ]
    return header, rows


# -- a leaderboard per capability axis -------------------------------------------------------------------------------


def _p(value: float) -> str:
    return f"{value:.{P_DIGITS}f}"


def axis_table(board: AxisLeaderboard) -> TextTable:
    """One axis: rank (NO_VALUE when not ranked), the group, its episodes and SR with the Wilson interval, and
    against the next group down the layouts only either won, the McNemar p, the Holm-adjusted p and the verdict."""
    header = ["rank", *GROUP_COLUMNS, "episodes", "SR [95% CI]", "vs next: only this / only next", "p", "p (Holm)",
              f"significant at {board.significance_level:g}"]  # fmt: skip
    rows = []
    for i, entry in enumerate(board.entries):
        test = board.neighbours[i] if i < len(board.neighbours) else None
        versus = (
            [f"{test.only_upper} / {test.only_lower}", _p(test.p_value), _p(test.p_holm),
             f"yes {SIGNIFICANT_MARK}" if test.significant else "no"]
            if test is not None
            else [NO_VALUE] * 4
        )  # fmt: skip
        rows.append(
            [
                NO_VALUE if entry.rank is None else str(entry.rank),
                *dataclasses.astuple(entry.group),
                str(entry.rate.n),
                _sr_with_interval(entry.rate.successes, entry.rate.n, entry.rate.sr_pct),
                *versus,
            ]
        )
    return TextTable(header, rows, 1 + len(GROUP_COLUMNS))


def axis_note(board: AxisLeaderboard) -> str:
    """How to read one axis's table: ranked on what, tested how, or why it is not ranked."""
    tasks = ", ".join(board.tasks)
    if not board.ranked:
        return (
            f"Too few shared layouts to rank: {board.shared_layouts} layout(s) (task, variant, seed) of this axis "
            f"({tasks}) were run by every group, {board.min_shared_layouts} are needed. The SRs are over each "
            "group's own episodes on the axis, with their 95 % Wilson intervals; they are not a ranking."
        )
    tests = len(board.neighbours)
    return (
        f"Ranked by SR on the {board.shared_layouts} layouts (task, variant, seed) of this axis ({tasks}) that every "
        f"group ran ({board.pairs} paired episodes each), best first; equal SRs share a rank. Each group is compared "
        "with the next one down by the exact McNemar test on the layouts where only one of the two succeeded; the p "
        f"values are Holm-adjusted over the axis's {tests} neighbour comparison(s), and {SIGNIFICANT_MARK} marks a "
        f"difference significant at {board.significance_level:g}. A difference not marked may still be real: these "
        "layouts do not show it."
    )


def _axis_ranks_csv(boards: Sequence[AxisLeaderboard]) -> tuple[list[str], list[list[Value]]]:
    figures = ("n", "successes", "sr_pct", "ci_low_pct", "ci_high_pct")
    header = ["axis", "ranked", "shared_layouts", "rank", *GROUP_COLUMNS, *figures,
              *(f"next_{c}" for c in GROUP_COLUMNS), "only_this", "only_next", "p_value", "p_holm",
              "significant"]  # fmt: skip
    rows: list[list[Value]] = []
    for board in boards:
        for i, entry in enumerate(board.entries):
            test = board.neighbours[i] if i < len(board.neighbours) else None
            versus: list[Value] = (
                [*dataclasses.astuple(test.lower), test.only_upper, test.only_lower, test.p_value, test.p_holm,
                 test.significant]
                if test is not None
                else [None] * (len(GROUP_COLUMNS) + 5)
            )  # fmt: skip
            rows.append(
                [
                    board.axis,
                    board.ranked,
                    board.shared_layouts,
                    entry.rank,
                    *dataclasses.astuple(entry.group),
                    *(getattr(entry.rate, f) for f in figures),
                    *versus,
                ]
            )
    return header, rows


# -- what the records say: failure reasons and earlier tries ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RecordFindings:
    """What the report read from the episode records beside the store's rows (robodojo.campaigns.reporting).

    ``last_refusals``: by episode id, the normalised text of its last refusal ("" when none);
    ``earlier``: the tries killed or crashed and retried, with what they spent; ``episode_pages``: by episode id,
    its page relative to the report's folder; ``campaign_href``: the campaign folder relative to the report's."""

    last_refusals: Mapping[str, str]
    earlier: tuple[EarlierTry, ...]
    episode_pages: Mapping[str, str]
    campaign_href: str


NO_REFUSAL = "(nothing refused)"
RECORD_LINK = "record folder"  #: the text of a link to an earlier try's folder
EARLIER_TRIES_ANCHOR = "tries"  #: the earlier tries' section on the campaign page (its counts link there)
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")  # what an axis name may not keep in its section's anchor

FAILURES_NOTE = (
    "The episodes that did not succeed, grouped by how they ended and by the last thing the harness refused in them "
    "(a move, a tool call, a robo call or command, a reply it could not act on), its text with numbers replaced by "
    "#, so that the same refusal groups across layouts; the largest groups first."
)
EARLIER_NOTE = (
    "Tries that were killed (the process ended mid-episode) or crashed and were retried: no episode row holds them, "
    "but their LLM calls were made and paid for. They are counted in the totals at the top and in the cost per "
    "success above; each links its record."
)


def failures_table(reasons: Sequence[FailureReason], findings: RecordFindings, examples: int) -> TextTable:
    """Per (end reason, last refusal): how many episodes each group ran, the first ``examples`` linked, and the
    count."""
    header = ["end reason", "last refusal", "by group", "examples", "episodes"]
    rows: list[list[str]] = []
    links: dict[tuple[int, int], list[Link]] = {}
    for i, reason in enumerate(reasons):
        shown = [(e, findings.episode_pages[e]) for e in reason.episodes[:examples] if e in findings.episode_pages]
        rows.append(
            [
                reason.end_reason,
                reason.last_refusal or NO_REFUSAL,
                "; ".join(f"{g.label}: {n}" for g, n in reason.by_group),
                _linked(shown),
                str(len(reason.episodes)),
            ]
        )
        if shown:
            links[i, 3] = shown
    return TextTable(header, rows, 4, links)


def _failures_csv(reasons: Sequence[FailureReason]) -> tuple[list[str], list[list[Value]]]:
    header = ["end_reason", "last_refusal", "episodes", "episode_ids"]
    rows: list[list[Value]] = [
        [r.end_reason, r.last_refusal, len(r.episodes), TASK_SEPARATOR.join(r.episodes)] for r in reasons
    ]
    return header, rows


def _folder_href(findings: RecordFindings, folder: str) -> str:
    return f"{findings.campaign_href}/{folder}/" if folder else ""


def earlier_table(findings: RecordFindings) -> TextTable:
    """A row per earlier try: its episode (linked), try, status and why, its record (linked), what it spent."""
    header = ["episode", "try", "status", "end reason / error", "record", "LLM calls", "input tokens", "output tokens",
              "cost"]  # fmt: skip
    rows: list[list[str]] = []
    links: dict[tuple[int, int], list[Link]] = {}
    for i, t in enumerate(findings.earlier):
        why = t.end_reason + (f": {t.error}" if t.error else "")
        record = _folder_href(findings, t.folder)
        rows.append(
            [
                t.episode_id,
                str(t.try_index),
                t.status,
                why,
                RECORD_LINK if record else "no record",
                str(t.usage.llm_calls),
                str(t.usage.input_tokens),
                str(t.usage.output_tokens),
                _metric("cost_usd", t.usage.cost_usd),
            ]
        )
        if t.episode_id in findings.episode_pages:
            links[i, 0] = [(t.episode_id, findings.episode_pages[t.episode_id])]
        if record:  # its path is in the CSV; the link's text stays short, so that the table stays narrow
            links[i, 4] = [(RECORD_LINK, record)]
    return TextTable(header, rows, 5, links)


def _earlier_csv(found: Sequence[EarlierTry]) -> tuple[list[str], list[list[Value]]]:
    header = ["episode_id", "try", "status", "end_reason", "error", "folder", "usage_from",
              *(f.name for f in dataclasses.fields(EarlierUsage) if f.name != "tries")]  # fmt: skip
    rows: list[list[Value]] = [
        [t.episode_id, t.try_index, t.status, t.end_reason, t.error, t.folder, t.usage_from,
         *(getattr(t.usage, f.name) for f in dataclasses.fields(EarlierUsage) if f.name != "tries")]
        for t in found
    ]  # fmt: skip
    return header, rows


def _axis_boards(rows: Sequence[EpisodeRow], settings: ReportSettings) -> tuple[AxisLeaderboard, ...]:
    ranking = settings.ranking
    return axis_leaderboards(
        rows, min_shared_layouts=ranking.min_shared_layouts, significance_level=ranking.significance_level
    )


def report_sections(
    rows: Sequence[EpisodeRow], findings: RecordFindings | None = None, settings: ReportSettings | None = None
) -> list[Section]:
    """The report's parts, in order: the leaderboard, a ranking per capability axis, the per-task table, the
    endings, efficiency and matched pairs; with ``findings`` (read from the records) the failure reasons and the
    earlier tries too. ``settings`` default to config/report.yaml's."""
    settings = settings or shipped_report_settings()
    board = leaderboard(rows)
    table = efficiency(rows)
    pairs = matched_pairs(rows)
    spent = earlier_usage(findings.earlier) if findings is not None else {}
    no_efficiency = "No LLM was run zero-shot by two agents: nothing to compare."
    no_pairs = "No condition other than zero-shot: no matched pairs."
    sections = [Section("Leaderboard (Score / SR%)", DEFINITIONS, leaderboard_table(board), anchor="leaderboard")]
    sections += [
        Section(
            f"Ranking on the {b.axis} axis", axis_note(b), axis_table(b), anchor=f"ranking-{_SLUG.sub('-', b.axis)}"
        )
        for b in _axis_boards(rows, settings)
    ]
    sections += [
        Section("Per task (Score / SR%)", "", tasks_table(board), anchor="tasks"),
        Section("How episodes ended, and what a success cost", ENDINGS_NOTE, endings_table(endings(rows, spent)),
                anchor="endings"),
        Section("Efficiency on jointly solved layouts", EFFICIENCY_NOTE, efficiency_table(table) if table else None,
                no_efficiency, anchor="efficiency"),
        Section("Matched pairs against zero-shot", PAIRS_NOTE, matched_pairs_table(pairs) if pairs else None, no_pairs,
                anchor="matched-pairs"),
    ]  # fmt: skip
    if cells := clock_cells(rows):  # a campaign that swept the clock (robodojo.campaigns.report.clock)
        sections.append(Section(CLOCK_TITLE, CLOCK_NOTE, TextTable(*clock_table(cells))))
    if findings is not None:
        reasons = failure_reasons(rows, findings.last_refusals)
        sections.append(
            Section(
                "Why episodes failed", FAILURES_NOTE,
                failures_table(reasons, findings, settings.failures.examples) if reasons else None,
                "Every episode succeeded: no failure to explain.", anchor="failures",
            )
        )  # fmt: skip
        sections.append(
            Section(
                "Killed and retried tries", EARLIER_NOTE, earlier_table(findings) if findings.earlier else None,
                "No try was killed or retried: every episode ran once.", anchor=EARLIER_TRIES_ANCHOR,
            )
        )  # fmt: skip
    return sections


def totals_text(rows: Sequence[EpisodeRow], earlier: Sequence[EarlierTry] = ()) -> str:
    """The LLM calls and cost of every episode, earlier tries included, in one sentence."""
    lost = sum((t.usage for t in earlier), EarlierUsage())
    calls = sum(r.llm_calls for r in rows) + lost.llm_calls
    cost = sum(r.cost_usd for r in rows) + lost.cost_usd
    text = f"{calls:,} LLM calls, ${cost:,.2f}"
    if lost.tries:
        text += f" (of which {lost.llm_calls:,} calls and ${lost.cost_usd:,.2f} in {lost.tries} earlier tries)"
    return text


def report_markdown(
    rows: Iterable[EpisodeRow],
    title: str = DEFAULT_TITLE,
    findings: RecordFindings | None = None,
    settings: ReportSettings | None = None,
) -> str:
    """The whole report as markdown: the sections of :func:`report_sections`, each a heading, its note and table."""
    rows = list(rows)
    if not rows:
        return f"# {title}\n\nNo episodes.\n"
    intro = f"{len(rows)} episodes in {len(leaderboard(rows))} groups (agent / LLM / condition)"
    if findings is not None:
        intro += f"; {totals_text(rows, findings.earlier)}"
    parts = [f"# {title}", intro + "."]
    for section in report_sections(rows, findings, settings):
        parts.append(f"## {section.title}")
        if section.note:
            parts.append(section.note)
        parts.append(section.table.markdown() if section.table is not None else section.empty_text)
    return "\n\n".join(parts) + "\n"


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Value]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows([_csv_value(v) for v in row] for row in rows)
    return path


def write_tables(
    rows: Iterable[EpisodeRow],
    out_dir: Path,
    *,
    title: str = DEFAULT_TITLE,
    findings: RecordFindings | None = None,
    settings: ReportSettings | None = None,
) -> list[Path]:
    """Write the CSV tables and ``report.md`` into ``out_dir`` (created if needed); the paths written.

    Every file is written even when it has no row (a CSV then holds its header), so tools find the same files;
    without ``findings`` the failure reasons and earlier tries hold only their headers."""
    rows = list(rows)
    settings = settings or shipped_report_settings()
    out_dir.mkdir(parents=True, exist_ok=True)
    board = leaderboard(rows)
    earlier = findings.earlier if findings is not None else ()
    refusals = findings.last_refusals if findings is not None else None
    tables = {
        LEADERBOARD_CSV: _leaderboard_csv(board),
        AXIS_RANKS_CSV: _axis_ranks_csv(_axis_boards(rows, settings)),
        TASKS_CSV: _tasks_csv(board),
        EFFICIENCY_CSV: _efficiency_csv(efficiency(rows)),
        ENDINGS_CSV: _endings_csv(endings(rows, earlier_usage(earlier))),
        MATCHED_PAIRS_CSV: _matched_pairs_csv(matched_pairs(rows)),
        FAILURES_CSV: _failures_csv(failure_reasons(rows, refusals) if refusals is not None else ()),
        EARLIER_TRIES_CSV: _earlier_csv(earlier),
        EPISODES_CSV: _episodes_csv(rows),
        # only a campaign that swept the clock has this one (robodojo.campaigns.report.clock)
        **({CLOCK_CSV: clock_csv(cells)} if (cells := clock_cells(rows)) else {}),
    }
    written = [_write_csv(out_dir / name, header, body) for name, (header, body) in tables.items()]
    report = out_dir / REPORT_MD
    report.write_text(report_markdown(rows, title, findings, settings), encoding="utf-8")
    return [*written, report]


__all__ = [
    "AXIS_RANKS_CSV",
    "EARLIER_TRIES_ANCHOR",
    "EARLIER_TRIES_CSV",
    "EFFICIENCY_CSV",
    "ENDINGS_CSV",
    "EPISODES_CSV",
    "FAILURES_CSV",
    "LEADERBOARD_CSV",
    "MATCHED_PAIRS_CSV",
    "REPORT_MD",
    "TASKS_CSV",
    "RecordFindings",
    "Section",
    "TextTable",
    "axis_note",
    "axis_table",
    "earlier_table",
    "efficiency_markdown",
    "failures_table",
    "leaderboard_markdown",
    "matched_pairs_markdown",
    "report_markdown",
    "report_sections",
    "score_sr_cell",
    "tasks_markdown",
    "totals_text",
    "write_tables",
]
