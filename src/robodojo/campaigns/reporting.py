"""``robodojo report DIR``: a campaign's report from its results store, written into ``DIR/report/``.

- ``report.md`` and the CSV tables (robodojo.campaigns.report.tables): seed 002's Score / SR tables by task and
  capability axis with the Average and micro SR, a ranking per capability axis with paired significance tests, seed
  000's efficiency table, the matched-pair analysis, why episodes failed, the tries killed or retried;
- the plots as SVG and PNG (robodojo.campaigns.report.plots);
- ``index.html``: the campaign page with the tables and plots and a page per episode with its image strip
  (robodojo.campaigns.report.html), which opens offline from the campaign folder.

The statistics count the episodes that ended by the agent's doing or the budgets'; episodes that crashed on every
try (the harness failed, not the model) are left out of them, listed on the campaign page and counted in the
report's first lines, so that a broken worker cannot pass for a weak model. The tries that were killed or crashed
and retried are read from their records: what they spent counts in the totals and the cost per success.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from robodojo.campaigns.report.failures import last_refusal, normalise_reason
from robodojo.campaigns.report.html import write_html_report
from robodojo.campaigns.report.paths import page_hrefs
from robodojo.campaigns.report.plots import write_plots
from robodojo.campaigns.report.settings import ReportSettings, shipped_report_settings
from robodojo.campaigns.report.tables import REPORT_MD, RecordFindings, Section, report_sections, write_tables
from robodojo.campaigns.report.tries import earlier_tries
from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.store import CRASHED, FINISHED, STORE_FILE, ResultsStore
from robodojo.episodes.record import EpisodeRecord, find_record
from robodojo.episodes.spec import EndReason
from robodojo.errors import ConfigError

REPORT_DIR = "report"
NOTHING_FINISHED = Section("Summary", "", None, "No finished episodes yet.")
SHOWN_PLOT_FORMAT = ".svg"  #: the campaign page shows the vector figures (sharp at any width)
MARKDOWN_PLOTS = ".png"  #: report.md shows the raster ones (markdown viewers do not all draw SVG)


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report` wrote."""

    folder: Path
    index_html: Path
    markdown: Path
    tables: tuple[Path, ...]
    plots: tuple[Path, ...]
    episodes: int  #: episodes in the statistics
    crashed: int  #: episodes left out of them (crashed on every try)
    earlier_tries: int = 0  #: tries killed or crashed and retried, counted in the totals


def campaign_title(campaign_dir: Path) -> str:
    """The report's title: the campaign spec's ``name`` (campaign.yaml in the folder), else the folder's name."""
    from robodojo.campaigns.campaign import read_campaign_spec

    try:
        spec = read_campaign_spec(campaign_dir)
    except (ConfigError, OSError):
        spec = None
    return f"Campaign {spec.name if spec is not None and spec.name.strip() else campaign_dir.name}"


def read_findings(
    campaign_dir: Path, rows: Sequence[EpisodeRow], tries: Sequence[dict], out_dir: Path, settings: ReportSettings
) -> RecordFindings:
    """What the records say beyond the store's rows: each failed episode's last refusal (normalised) and the tries
    no row holds, with what they spent; links relative to ``out_dir``."""
    refusals = {}
    for row in rows:
        if row.success or not row.folder or row.end_reason == EndReason.CRASHED:  # crashed: not in the failure figures
            continue
        refusal = last_refusal(EpisodeRecord.open(find_record(campaign_dir / row.folder)))
        refusals[row.episode_id] = (
            normalise_reason(refusal.text, settings.failures.reason_chars) if refusal is not None else ""
        )
    return RecordFindings(
        last_refusals=refusals,
        earlier=earlier_tries(campaign_dir, tries, rows),
        episode_pages=page_hrefs([r.episode_id for r in rows]),
        campaign_href=Path(os.path.relpath(campaign_dir, out_dir)).as_posix(),
    )


def write_report(campaign_dir: Path, settings: ReportSettings | None = None) -> ReportFiles:
    """Write the report of the campaign in ``campaign_dir`` (its results store) into ``campaign_dir/report``;
    ``settings`` default to config/report.yaml's."""
    campaign_dir = Path(campaign_dir)
    settings = settings or shipped_report_settings()
    store_path = campaign_dir / STORE_FILE
    if not store_path.is_file():
        raise ConfigError(f"{campaign_dir} is not a campaign folder: no {STORE_FILE} (robodojo eval writes one)")
    with ResultsStore(store_path) as store:
        finished, crashed, tries = store.rows(status=FINISHED), store.rows(status=CRASHED), store.tries()
    out = campaign_dir / REPORT_DIR
    title = campaign_title(campaign_dir)
    listed = [*finished, *crashed]  # the campaign page's table: the crashed ones too, after the others
    findings = read_findings(campaign_dir, listed, tries, out, settings)
    # the statistics leave the crashed episodes out; the failure reasons are the finished episodes' (read above
    # for every listed row, so that the page links agree with the table's)
    tables = write_tables(finished, out, title=title, findings=findings, settings=settings)
    markdown = out / REPORT_MD
    if crashed:
        lines = [f"- {r.episode_id} (try {r.tries}): {r.error}" for r in crashed]
        note = f"\n## Crashed episodes (not in the figures)\n\n{len(crashed)} crashed on every try:\n\n"
        markdown.write_text(markdown.read_text(encoding="utf-8") + note + "\n".join(lines) + "\n", encoding="utf-8")
    plots = write_plots(finished, out)
    if plots:  # the same figures as the campaign page's, as images a markdown viewer shows
        figures = "".join(f"![{p.stem.replace('_', ' ')}]({p.name})\n" for p in plots if p.suffix == MARKDOWN_PLOTS)
        markdown.write_text(markdown.read_text(encoding="utf-8") + f"\n## Plots\n\n{figures}", encoding="utf-8")
    sections = report_sections(finished, findings, settings) if finished else [NOTHING_FINISHED]
    index = write_html_report(
        campaign_dir, listed, out, title=title, sections=sections,
        plots=[p for p in plots if p.suffix == SHOWN_PLOT_FORMAT], earlier=findings.earlier,
        strips=settings.image_strip,
    )  # fmt: skip
    return ReportFiles(
        out, index, markdown, tuple(tables), tuple(plots), len(finished), len(crashed), len(findings.earlier)
    )
