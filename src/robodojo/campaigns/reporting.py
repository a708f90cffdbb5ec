"""``robodojo report DIR``: a campaign's report from its results store, written into ``DIR/report/``.

- ``report.md`` and the CSV tables (robodojo.campaigns.report.tables): seed 002's Score / SR tables by task and
  capability axis with the Average and micro SR, seed 000's efficiency table, the matched-pair analysis;
- the plots as PNG (robodojo.campaigns.report.plots);
- ``index.html``: the campaign page with the tables and plots and a page per episode (robodojo.campaigns.report.html),
  which opens offline from the campaign folder.

The statistics count the episodes that ended by the agent's doing or the budgets'; episodes that crashed on every
try (the harness failed, not the model) are left out of them, listed on the campaign page and counted in the
report's first lines, so that a broken worker cannot pass for a weak model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from robodojo.campaigns.report.html import sections_html, write_html_report
from robodojo.campaigns.report.plots import write_plots
from robodojo.campaigns.report.tables import REPORT_MD, report_sections, write_tables
from robodojo.campaigns.store import CRASHED, FINISHED, STORE_FILE, ResultsStore
from robodojo.errors import ConfigError

REPORT_DIR = "report"


@dataclass(frozen=True)
class ReportFiles:
    folder: Path
    index_html: Path
    markdown: Path
    tables: tuple[Path, ...]
    plots: tuple[Path, ...]
    episodes: int  #: episodes in the statistics
    crashed: int  #: episodes left out of them (crashed on every try)


def campaign_title(campaign_dir: Path) -> str:
    """The report's title: the campaign spec's ``name`` (campaign.yaml in the folder), else the folder's name."""
    from robodojo.campaigns.campaign import read_campaign_spec

    try:
        spec = read_campaign_spec(campaign_dir)
    except (ConfigError, OSError):
        spec = None
    return f"Campaign {spec.name if spec is not None and spec.name.strip() else campaign_dir.name}"


def write_report(campaign_dir: Path) -> ReportFiles:
    """Write the report of the campaign in ``campaign_dir`` (its results store) into ``campaign_dir/report``."""
    campaign_dir = Path(campaign_dir)
    store_path = campaign_dir / STORE_FILE
    if not store_path.is_file():
        raise ConfigError(f"{campaign_dir} is not a campaign folder: no {STORE_FILE} (robodojo eval writes one)")
    with ResultsStore(store_path) as store:
        finished, crashed = store.rows(status=FINISHED), store.rows(status=CRASHED)
    out = campaign_dir / REPORT_DIR
    title = campaign_title(campaign_dir)
    tables = write_tables(finished, out, title=title)
    markdown = out / REPORT_MD
    if crashed:
        lines = [f"- {r.episode_id} (try {r.tries}): {r.error}" for r in crashed]
        note = f"\n## Crashed episodes (not in the figures)\n\n{len(crashed)} crashed on every try:\n\n"
        markdown.write_text(markdown.read_text(encoding="utf-8") + note + "\n".join(lines) + "\n", encoding="utf-8")
    plots = write_plots(finished, out)
    summary = sections_html(report_sections(finished)) if finished else "<p>No finished episodes yet.</p>"
    index = write_html_report(
        campaign_dir, [*finished, *crashed], out, title=title, summary_html=summary,
        plots=plots,
    )  # fmt: skip
    return ReportFiles(out, index, markdown, tuple(tables), tuple(plots), len(finished), len(crashed))
