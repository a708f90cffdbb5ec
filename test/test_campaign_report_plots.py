"""The report's figures: written when there is something to show, as SVG and PNG files, nothing otherwise."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np
from campaign_report_rows import MOVE_EEF, ROWS
from matplotlib.backends.backend_agg import FigureCanvasAgg

from robodojo.campaigns.report.plots import probe_deltas_figure, sr_per_task_figure, write_plots
from robodojo.campaigns.report.stats import leaderboard, matched_pairs

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG_SIGNATURE) and len(data) > len(PNG_SIGNATURE)


def _is_svg(path) -> bool:
    """An SVG that scales: its root has a viewBox (the HTML report sizes it to the page's width)."""
    root = ElementTree.parse(path).getroot()
    return root.tag == "{http://www.w3.org/2000/svg}svg" and len(root.get("viewBox", "").split()) == 4


def test_every_figure_is_an_svg_and_a_png(tmp_path):
    paths = write_plots(ROWS, tmp_path / "plots")
    names = ["sr_per_task", "success_vs_input_tokens", "probe_deltas"]
    assert [p.name for p in paths] == [f"{n}.{fmt}" for n in names for fmt in ("svg", "png")]
    assert all(_is_svg(p) for p in paths if p.suffix == ".svg") and all(_is_png(p) for p in paths if p.suffix == ".png")
    assert [p.name for p in write_plots(ROWS, tmp_path / "png", formats=("png",))] == [f"{n}.png" for n in names]


def test_figures_with_nothing_to_show_are_not_written(tmp_path):
    assert write_plots([], tmp_path / "none") == [] and not (tmp_path / "none").exists()
    failures = [r for r in MOVE_EEF if not r.success]  # tasks to show, but no success and no condition
    paths = write_plots(failures, tmp_path / "failures", formats=("png",))
    assert [p.name for p in paths] == ["sr_per_task.png"] and _is_png(paths[0])
    assert sorted(p.name for p in (tmp_path / "failures").iterdir()) == ["sr_per_task.png"]


def test_figures_draw_on_their_own_agg_canvas():
    fig = sr_per_task_figure(leaderboard(ROWS))
    assert fig is not None and isinstance(fig.canvas, FigureCanvasAgg)
    (ax,) = fig.axes
    assert len(ax.patches) == 3 + 3 + 2  # a bar per task each group ran: move_eef 3, the probe 3, code_cell 2
    deltas = probe_deltas_figure(matched_pairs(ROWS))
    assert deltas is not None and len(deltas.axes[0].patches) == 3  # all, with and without a zero-shot success
    assert sr_per_task_figure(()) is None and probe_deltas_figure(()) is None


def _overlaps(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def test_the_budget_figures_token_labels_never_overlap():
    """Input tokens spanning a decade and a half (20k to 600k) made the log axis label its minor ticks on top of
    each other; every drawn x label now stands apart, and there are at least two of them, whatever the range."""
    from robodojo.campaigns.report.plots import budget_figure
    from robodojo.campaigns.report.stats import BudgetCurve, Group

    for low, high in ((20_000, 600_000), (12_000, 40_000), (900, 1_200_000), (50_000, 60_000), (2_000, 9_000)):
        budgets = tuple(np.geomspace(low, high, 6).astype(int))
        curve = BudgetCurve(Group("move_eef", "gpt", "zero_shot"), 8, budgets, tuple(range(10, 70, 10)), high)
        fig = budget_figure([curve])
        fig.canvas.draw()
        (ax,) = fig.axes
        renderer = fig.canvas.get_renderer()
        labels = [t for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True) if t.get_text()]
        x_min, x_max = ax.get_xlim()
        shown = [t for t in labels if x_min <= t.get_position()[0] <= x_max]
        assert len(shown) >= 2, (low, high, [t.get_text() for t in shown])
        boxes = [t.get_window_extent(renderer) for t in shown]
        assert not _overlaps(boxes), (low, high, [t.get_text() for t in shown])
