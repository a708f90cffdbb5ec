"""The campaign's report over a small real campaign: real episodes of every agent style (move_eef, code cells, the
shell harness, a coding-agent CLI over MCP) on the embedded world with replayed answers, run as the campaign's workers
run them (robodojo.campaigns.execute.run_job) into a real results store, with a try killed mid-episode and retried, a
failure after a refused move, and a hand-made crashed record; then ``robodojo report``'s write_report over it. The
text of the pages first, then the pages in a real headless browser (Debian's chromium) opened from disk, with every
request it makes recorded, at 1280 and 1920 px."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import markupsafe
import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.replay_server import cells_script
from robodojo.campaigns.campaign import open_campaign_folder
from robodojo.campaigns.execute import close_worlds, run_job, try_dir
from robodojo.campaigns.report.html import EPISODE_PAGES, INDEX_PAGE, write_html_report
from robodojo.campaigns.reporting import ReportFiles, write_report
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.campaigns.spec import campaign_spec_from_dict
from robodojo.campaigns.store import STORE_FILE, ResultsStore
from robodojo.episodes.mcap_record import MCAP_FILE
from robodojo.episodes.record_settings import CONFIG_ENV, shipped_record_settings
from robodojo.errors import ConfigError

# One worker runs this module: its fixture runs the campaign's episodes, which a second worker would run again.
pytestmark = pytest.mark.xdist_group("campaign_report_html")

CHROMIUM = Path("/usr/bin/chromium")  # Debian's, installed by scripts/setup_env.sh (playwright install is not used)
CHROMIUM_ARGS = [
    "--no-sandbox",  # the tests run as root here and in CI
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BROWSER_TIMEOUT_MS = 60_000  # a loaded 2-core machine takes ~10 s to start chromium
WIDTHS_PX = (1280, 1920)  # the report must read on a laptop and on a desktop screen
VIEWPORT_HEIGHT_PX = 900
MOVE_EEF_SCRIPT = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
CELLS = PACKAGE_ROOT / "examples" / "cells" / "general_pickup.py"
SHELL_SCRIPT = PACKAGE_ROOT / "examples" / "shell" / "general_pickup.yaml"
MCP_SCRIPT = PACKAGE_ROOT / "examples" / "mcp" / "general_pickup.yaml"
MCP_CLI = "codex"  # the coding-agent CLI that plays the MCP client (make agents installs it)
# A first cell that shows the head camera (so the code-cell record has an image) and a reply text a browser would
# run if it were not escaped.
SHOW_REPLY = {
    "content": "First a look: <script>alert(2)</script> & <b>bold</b>",
    "tool_calls": [{"name": "python", "arguments": {"code": "robo.show('head')\nprint('a < b & \"c\"')"}}],
}
# move_eef on seed 1: a target below the table's bounds (refused: nothing moves), then it gives up.
REFUSING_SCRIPT = [
    {"content": "Reaching down to the block.",
     "tool_calls": [{"name": "move_eef", "arguments": {"targets": {"right_z": 0.5}, "note": "too low"}}]},
    {"content": None,
     "tool_calls": [{"name": "give_up", "arguments": {"reason": "the block is out of reach",
                                                       "hindsight": "aim within the bounds"}}]},
]  # fmt: skip
# Replayed answers are free; a price for the replay server's models makes their tokens cost something, so that a
# total that left out the killed try's calls would show it in dollars too.
PRICED = {"prices": {"local": {"input": 2.0, "cached_input": 0.2, "output": 8.0}}}
FRAMES_HZ = 1.0  # the record renders every camera at this simulated rate: each agent style's strip has frames
HOSTILE_TEXT = "<script>alert(1)</script> & \"quoted\" 'single' <img src=http://example.com/x.png>"
CRASHED_ID = "crashed <1>"
CAMPAIGN_NAME = "Pickup <campaign> & co"
KILLED_TRY = 1
MAX_THUMBNAIL_BYTES = 30_000  # a strip's frame is a small JPEG, not the record's 640x480 picture


@dataclass(frozen=True)
class Campaign:
    folder: Path
    rows: tuple[EpisodeRow, ...]
    killed_usage: dict  #: what the killed try spent, read from its record's lines: llm_calls, tokens, cost

    def row(self, agent: str, seed: int = 0) -> EpisodeRow:
        return next(r for r in self.rows if r.agent == agent and r.seed == seed)


def _agents() -> list[str]:
    """Every agent style this machine can run: the shell harness needs bubblewrap, MCP a coding-agent CLI."""
    from robodojo.agents.shell.settings import load_shell_settings

    agents = ["move_eef", "code_cell"]
    if shutil.which("bwrap"):
        agents.append("shell")
    if load_shell_settings().coding_agents.get(MCP_CLI).installed:
        agents.append(f"mcp:{MCP_CLI}")
    return agents


def _jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _crashed(campaign: Path, image: Path) -> EpisodeRow:
    """A hand-made partial record as a crash leaves it: no metrics.json, a malformed reply (turn 1), a failed LLM
    call with no response (turn 2), a last line cut off mid-write, and the worker's crash.txt in the try folder."""
    try_folder = campaign / "episodes" / "crashed <1>" / "try2"
    record = try_folder / "general_pickup_standard_seed3_move_eef_20260101-000000-000000"
    (record / "images").mkdir(parents=True)
    shutil.copy(image, record / "images" / image.name)
    (record / "meta.json").write_text(json.dumps({"task": "general_pickup", "instruction": HOSTILE_TEXT}))
    observation = {
        "role": "user",
        "content": [
            {"type": "text", "text": "camera 'head' (step 0):"},
            {"type": "image_file", "file": f"images/{image.name}"},
            {"type": "image_url", "image_url": {"url": "https://example.com/never-fetched.jpg"}},
            {"type": "image_file", "file": "images/not-there.jpg"},
        ],
    }
    first = [{"role": "system", "content": "sys"}, observation]
    reply = {"role": "assistant", "content": HOSTILE_TEXT}
    error_text = {"role": "tool", "tool_call_id": "c1", "content": "no valid tool call"}
    _jsonl(
        record / "requests.jsonl",
        [
            {"turn": 1, "messages": first, "attempts": [], "error": None},
            {
                "turn": 2,
                "messages": [*first, reply, error_text, observation],
                "attempts": [{"attempt": 1, "latency_s": 0.5, "error": "HTTP 503 <html>", "status": 503}],
                "error": "the server kept answering 503 <html> & co",
            },
        ],
    )
    _jsonl(
        record / "responses.jsonl",
        [
            {
                "turn": 1,
                "content": HOSTILE_TEXT,
                "tool_calls": [{"id": "c1", "name": "move_eef", "arguments": "{not json </pre>"}],
                "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "cost_usd": 0.0},
            }
        ],
    )
    _jsonl(
        record / "turns.jsonl",
        [
            {"turn": 1, "action": "error", "tool_results": ["no valid tool call: </pre><b>x</b>"], "move": None},
            {"turn": 2, "action": "error", "error": "LlmError: the server kept answering 503"},
        ],
    )
    with (record / "turns.jsonl").open("a") as f:
        f.write('{"turn": 3, "act')  # killed mid-write
    (try_folder / "crash.txt").write_text("Traceback (most recent call last):\n  ...\nRuntimeError: agent bug <&>\n")
    first_try = try_folder.parent / "try1"  # the first try crashed before its episode began: a traceback, no record
    first_try.mkdir()
    (first_try / "crash.txt").write_text("Traceback (most recent call last):\n  ...\nOSError: no display\n")
    return EpisodeRow(
        episode_id=CRASHED_ID,
        task="general_pickup",
        variant="standard",
        seed=3,
        agent="move_eef",
        llm="replay",
        condition=ZERO_SHOT,
        capability="pick",
        success=False,
        score=0.0,
        end_reason="crashed",
        llm_calls=2,
        tries=2,
        folder=str(try_folder.relative_to(campaign)),
        error="RuntimeError: agent bug <&>",
    )


def _cut_off(record: Path) -> None:
    """Leave a finished record as a kill mid-episode leaves it: metrics.json still says running, episode.mcap
    without its summary and footer (cut inside a chunk), the last turn line cut mid-write. The request and response
    lines stay: they are flushed per call, and the calls were made."""
    metrics = json.loads((record / "metrics.json").read_text())
    (record / "metrics.json").write_text(json.dumps({**metrics, "end_reason": "running", "success": False}))
    mcap = (record / MCAP_FILE).read_bytes()
    (record / MCAP_FILE).write_bytes(mcap[: len(mcap) * 2 // 3])
    turns = (record / "turns.jsonl").read_text().splitlines()
    (record / "turns.jsonl").write_text("\n".join(turns[:-1]) + "\n" + turns[-1][: len(turns[-1]) // 2])


def _line_usage(record: Path) -> dict:
    responses = [json.loads(line) for line in (record / "responses.jsonl").read_text().splitlines()]
    calls = len((record / "requests.jsonl").read_text().splitlines())
    return {
        "llm_calls": calls,
        "input_tokens": sum(r["usage"]["input_tokens"] for r in responses),
        "output_tokens": sum(r["usage"]["output_tokens"] for r in responses),
        "cost_usd": sum(r["usage"]["cost_usd"] for r in responses),
    }


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Campaign:
    folder = tmp_path_factory.mktemp("campaign")
    scripts = folder.parent / f"{folder.name}-scripts"  # outside the campaign folder, as a user's scripts are
    scripts.mkdir()
    shutil.copy(MOVE_EEF_SCRIPT, scripts / "move_eef_seed0.yaml")
    (scripts / "move_eef_seed1.yaml").write_text(yaml.safe_dump(REFUSING_SCRIPT))
    # JSON is YAML: a replay script
    (scripts / "code_cell_seed0.json").write_text(
        json.dumps([SHOW_REPLY, *cells_script(CELLS.read_text(), CELLS.parent)])
    )
    shutil.copy(SHELL_SCRIPT, scripts / "shell_seed0.yaml")
    shutil.copy(MCP_SCRIPT, scripts / "mcp_seed0.yaml")
    (scripts / "priced.yaml").write_text(yaml.safe_dump(PRICED))
    (scripts / "record.yaml").write_text(f"camera_rate_hz: {FRAMES_HZ}\n")
    agents = _agents()
    spec = campaign_spec_from_dict(
        {
            "name": CAMPAIGN_NAME, "tasks": ["general_pickup"], "seeds": [0, 1], "agents": agents,
            "llms": {"replay": {a: f"replay:{scripts}/{a.split(':')[0]}_seed{{seed}}.yaml" for a in agents}
                     | {"code_cell": f"replay:{scripts}/code_cell_seed{{seed}}.json"}},
            "llm_call_budget": 20, "retries": 1, "llm_options": {"llm_config": str(scripts / "priced.yaml")},
        },
        "the report test's campaign",
    )  # fmt: skip
    open_campaign_folder(spec, folder)
    grid = spec.grid()  # seed 1 only for move_eef: the other agents have no script for it (skipped)
    assert len(grid.jobs) == len(agents) + 1, grid.skipped
    with pytest.MonkeyPatch.context() as patch, ResultsStore(folder / STORE_FILE) as store:
        patch.setenv(CONFIG_ENV, str(scripts / "record.yaml"))
        shipped_record_settings.cache_clear()
        try:
            killed_usage: dict = {}
            for job in grid.jobs:
                tries = 1
                if job.agent == "move_eef" and job.seed == 0:  # killed mid-episode, then run again
                    killed = run_job(job, folder, KILLED_TRY)
                    _cut_off(folder / killed.folder)
                    killed_usage = _line_usage(folder / killed.folder)
                    store.record_killed(
                        job.episode_id, KILLED_TRY, str(try_dir(folder, job.episode_id, 1).relative_to(folder))
                    )
                    tries = KILLED_TRY + 1
                row = run_job(job, folder, tries)
                assert row.end_reason != "crashed", (job.episode_id, row.error)
                store.record_try(row, final=True)
        finally:
            close_worlds()
            shipped_record_settings.cache_clear()  # the suite's own settings again, for the tests after these
        image = next((folder / store.rows()[0].folder / "images").iterdir())
        crashed = _crashed(folder, image)
        first = EpisodeRow.from_dict({**crashed.as_dict(), "tries": 1, "folder": f"episodes/{CRASHED_ID}/try1",
                                      "error": "OSError: no display"})  # fmt: skip
        store.record_try(first, final=False)
        store.record_try(crashed, final=True)
        rows = tuple(store.rows())
    return Campaign(folder, rows, killed_usage)


@pytest.fixture(scope="module")
def built(campaign) -> tuple[ReportFiles, float]:
    """``robodojo report``'s work over the campaign, and how long it took [s]."""
    start = time.perf_counter()
    files = write_report(campaign.folder)
    return files, time.perf_counter() - start


@pytest.fixture(scope="module")
def report(built) -> Path:
    return built[0].index_html


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each link, of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._open_link: str | None = None  # the href of the <a> the parser is inside
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "a":
            self._open_link = dict(attrs).get("href") or None

    def handle_endtag(self, tag):
        if tag == "a":
            self._open_link = None

    def handle_data(self, data):
        if self._open_link is not None and self.tags[-1][0] == "a":
            self.links.append((self._open_link, data))

    def attrs(self, tag: str, name: str) -> list[str]:
        return [a[name] or "" for t, a in self.tags if t == tag and name in a]


def _pages(report: Path) -> dict[str, Path]:
    """Episode id -> its page, read from the campaign page's links."""
    links = _Tags(report.read_text()).links
    return {text: report.parent / unquote(href) for href, text in links if href.startswith(f"{EPISODE_PAGES}/")}


def _record(campaign: Campaign, row: EpisodeRow) -> Path:
    record = campaign.folder / row.folder
    if not (record / "meta.json").exists():
        (record,) = (p for p in record.iterdir() if p.is_dir())
    return record


def _record_turns(folder: Path) -> set[int]:
    turns = set()
    for name in ("requests.jsonl", "responses.jsonl", "turns.jsonl"):
        for line in (folder / name).read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # the crashed record's cut-off last line
                turns.add(json.loads(line)["turn"])
    return turns


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _turn_images(page_text: str) -> list[str]:
    """The img sources of a page's turn sections (the strip's thumbnails are before them)."""
    return [
        src
        for section in page_text.split('<section class="step turn"')[1:]
        for src in _Tags(section).attrs("img", "src")
    ]


def test_the_campaign_page_links_every_episode_and_shows_the_summary(campaign, report):
    assert report == campaign.folder / "report" / INDEX_PAGE
    text = report.read_text()
    pages = _pages(report)
    assert len(pages) == len(campaign.rows) and all(p.is_file() for p in pages.values())
    assert pages[CRASHED_ID].name == "crashed_1.html"  # an id with unsafe characters gets a safe file name
    assert "<h1>Campaign Pickup &lt;campaign&gt; &amp; co</h1>" in text  # the spec's name, escaped
    assert '<img src="sr_per_task.svg"' in text  # the vector plots
    for row in campaign.rows:
        assert f">{escape(row.episode_id)}</a>" in text
    # every agent style solved seed 0; move_eef gave up on seed 1 after its move was refused
    assert {r.agent for r in campaign.rows if r.success} == set(_agents())
    assert campaign.row("move_eef", seed=1).end_reason == "give_up"
    n, successes = len(campaign.rows), sum(r.success for r in campaign.rows)
    assert f"<b>{n}</b> episodes" in text and f"<b>{successes}</b> succeeded ({successes / n:.0%})" in text
    assert "<b>1</b> crashed" in text
    for title in ("Leaderboard (Score / SR%)", "Why episodes failed", "Killed and retried tries", "Plots", "Episodes"):
        assert f"<h2>{escape(title)}</h2>" in text, title
    assert re.search(r"<h2>Ranking on the \w+ axis</h2>", text)


def test_episode_pages_step_through_each_recorded_turn(campaign, report):
    pages = _pages(report)
    for row in campaign.rows:
        text = pages[row.episode_id].read_text()
        turns = _record_turns(_record(campaign, row))
        assert text.count('<section class="step turn"') == len(turns)
        assert [int(n) for n in re.findall(r'id="turn-(\d+)"', text)] == sorted(turns)
        assert 'id="end"' in text and f'href="../{INDEX_PAGE}"' in text
        if row.end_reason == "success" and row.agent in ("move_eef", "code_cell"):  # one call a turn
            assert len(turns) == row.llm_calls and "<b>success</b>" in text
    move_eef = pages[campaign.row("move_eef").episode_id].read_text()
    assert move_eef.count("<h3>Motion</h3>") == 4 and "reached" in move_eef and "mm and" in move_eef
    code_cell = pages[campaign.row("code_cell").episode_id].read_text()
    # autoescaped by the template: quotes as &#39; and &#34;
    assert '<pre class="code"><code>robo.show(&#39;head&#39;)\nprint(&#39;a &lt; b &amp; &#34;c&#34;&#39;)' in code_cell
    assert "robo call(s)</summary>" in code_cell  # robo_calls.jsonl, per turn


def test_each_turn_shows_only_the_images_new_in_its_request(campaign, report):
    """Each move_eef request re-sends earlier observations (image horizon 2): a turn shows only its own, the three
    camera images of the observation that ends the request."""
    row = campaign.row("move_eef")
    record = campaign.folder / row.folder
    requests = [json.loads(line) for line in (record / "requests.jsonl").read_text().splitlines()]
    page = _pages(report)[row.episode_id].read_text()
    resent = 0
    for request in requests:
        section = page.split(f'id="turn-{request["turn"]}"')[1].split("<section")[0]
        parts = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"]]
        observation = [m for m in request["messages"] if m["role"] == "user"][-1]
        expected = [p["file"] for p in observation["content"] if p["type"] == "image_file"]
        shown = [unquote(src) for src in _Tags(section).attrs("img", "src")]
        assert len(expected) == 3 and [s.rsplit("/", 2)[-2:] for s in shown] == [f.split("/") for f in expected]
        resent += len([p for p in parts if p["type"] == "image_file"]) - len(expected)
    assert resent > 0  # the history's images were in the requests, and are not shown again


def test_images_are_relative_paths_into_the_records_and_nothing_points_outside(campaign, report):
    for page in [report, *_pages(report).values()]:
        tags = _Tags(page.read_text())
        sources = tags.attrs("img", "src")
        for url in sources + tags.attrs("a", "href"):
            assert not re.match(r"^[a-z][a-z0-9+.-]*:|^/", url), f"{page.name}: not a relative URL: {url}"
            if not url.startswith("#"):
                target = (page.parent / unquote(url.split("#")[0])).resolve()
                assert target.exists() and target.is_relative_to(campaign.folder.resolve()), url
        for source in sources:
            assert (page.parent / unquote(source)).resolve().is_file()
        assert not tags.attrs("link", "href") and not tags.attrs("script", "src")  # CSS and scripts are inline
    images = _turn_images(_pages(report)[campaign.row("move_eef").episode_id].read_text())
    assert len(images) == 12 and all("/images/" in src and src.startswith("../../episodes/") for src in images)
    assert len(_turn_images(_pages(report)[campaign.row("code_cell").episode_id].read_text())) == 1  # robo.show


def test_every_agent_style_gets_an_image_strip_of_small_jpegs(campaign, report):
    """First, middle and last frame of each camera from episode.mcap, as small JPEG files beside the report, each
    with an alt text naming its camera; a record without frames says so."""
    pages = _pages(report)
    for row in campaign.rows:
        text = pages[row.episode_id].read_text()
        glance = text.split('id="glance"')[1].split("</section>")[0]
        strip = [(attrs["src"] or "", attrs.get("alt") or "") for tag, attrs in _Tags(glance).tags if tag == "img"]
        if row.episode_id == CRASHED_ID:
            assert not strip and "no episode.mcap in the record: no frames to show" in glance
            continue
        positions: dict[str, list[str]] = {}
        for _, alt in strip:
            camera, position = re.match(r"(\w+) camera, (\w+) frame", alt).groups()
            positions.setdefault(camera, []).append(position)
        assert set(positions) == {"head", "left_wrist", "right_wrist"}, (row.agent, positions)
        for camera, found in positions.items():  # first, middle and last; one picture twice is shown once
            assert found in (["first"], ["first", "last"], ["first", "middle", "last"]), (row.agent, camera, found)
        for src, alt in strip:
            file = (pages[row.episode_id].parent / unquote(src)).resolve()
            assert file.is_relative_to((report.parent / "strips").resolve()), src
            data = file.read_bytes()
            assert data[:3] == b"\xff\xd8\xff" and len(data) < MAX_THUMBNAIL_BYTES, (src, len(data))
            assert re.match(r"\w+ camera, (first|middle|last) frame of episode .+, at [\d.]+ s of simulated", alt)


def test_a_strip_of_a_file_cut_short_says_so(campaign, tmp_path):
    """A try killed mid-episode leaves episode.mcap without its footer: the strip says why it has no frames rather
    than failing the report."""
    from robodojo.campaigns.report.settings import shipped_report_settings
    from robodojo.campaigns.report.strips import write_strip
    from robodojo.episodes.record import EpisodeRecord, find_record

    killed = find_record(try_dir(campaign.folder, campaign.row("move_eef").episode_id, KILLED_TRY))
    strip = write_strip(
        killed, EpisodeRecord.open(killed).meta, tmp_path, "a killed try", shipped_report_settings().image_strip
    )
    assert "episode.mcap could not be read to its end" in strip.note
    assert all(f.path.is_file() for f in strip.frames)


def test_a_killed_try_counts_in_the_totals_and_is_linked(campaign, built, report):
    files, _ = built
    row = campaign.row("move_eef")
    killed = campaign.killed_usage
    assert row.tries == KILLED_TRY + 1 and killed["llm_calls"] > 0 and killed["cost_usd"] > 0
    earlier = {(t["episode_id"], t["try"]): t for t in _csv(files.folder / "earlier_tries.csv")}
    assert set(earlier) == {(row.episode_id, str(KILLED_TRY)), (CRASHED_ID, "1")} and files.earlier_tries == 2
    entry = earlier[row.episode_id, str(KILLED_TRY)]
    assert entry["status"] == "killed" and entry["usage_from"] == "requests.jsonl"
    assert int(entry["llm_calls"]) == killed["llm_calls"] and int(entry["input_tokens"]) == killed["input_tokens"]
    assert float(entry["cost_usd"]) == pytest.approx(killed["cost_usd"])
    assert earlier[CRASHED_ID, "1"]["llm_calls"] == "0"  # it crashed before its episode began: nothing spent
    # the cost per success of move_eef's group pays for the killed try too
    (endings,) = [e for e in _csv(files.folder / "endings.csv") if e["agent"] == "move_eef"]
    mine = [r for r in campaign.rows if r.agent == "move_eef" and r.end_reason != "crashed"]
    spent = sum(r.cost_usd for r in mine) + killed["cost_usd"]
    assert float(endings["cost_usd_per_success"]) == pytest.approx(spent / sum(r.success for r in mine))
    assert int(endings["earlier_tries"]) == 1
    # the totals at the top: every row's calls and the killed try's
    text = report.read_text()
    calls = sum(r.llm_calls for r in campaign.rows) + killed["llm_calls"]
    assert f"<b>{calls:,}</b> LLM calls" in text and "<b>2</b> earlier tries</a>" in text
    # linked: the try's folder from the campaign page, and from its episode's page
    folder = f"../episodes/{row.episode_id}/try{KILLED_TRY}/"
    assert folder in _Tags(text).attrs("a", "href")
    page = _pages(report)[row.episode_id].read_text()
    assert f'<a href="../{folder}">try {KILLED_TRY}</a> killed' in page
    line = f"| 1 | killed | killed: the try's process ended before the episode | [record folder]({folder}) "
    assert f"{line}| {killed['llm_calls']} | {killed['input_tokens']} |" in files.markdown.read_text()


def test_failures_are_grouped_by_end_reason_and_last_refusal(campaign, built, report):
    files, _ = built
    failed = campaign.row("move_eef", seed=1)
    (reason,) = _csv(files.folder / "failure_reasons.csv")  # the crashed episode is not in the figures
    assert (reason["end_reason"], reason["episode_ids"]) == ("give_up", failed.episode_id)
    assert "'right_z'" in reason["last_refusal"] and not re.search(r"\d", reason["last_refusal"])  # numbers: #
    text = report.read_text()
    section = text.split("<h2>Why episodes failed</h2>")[1].split("</section>")[0]
    assert str(markupsafe.escape(reason["last_refusal"])) in section  # as the template escapes it
    assert _Tags(section).links == [(f"{EPISODE_PAGES}/{_pages(report)[failed.episode_id].name}", failed.episode_id)]


def test_an_axis_with_too_few_shared_layouts_is_not_ranked(campaign, built, report):
    files, _ = built
    for text in (report.read_text(), files.markdown.read_text()):
        assert "Too few shared layouts to rank: 1 layout(s)" in text  # one seed run by every agent; 10 needed
    ranks = _csv(files.folder / "axis_ranks.csv")
    assert ranks and all(r["rank"] == "" and r["ranked"] == "False" for r in ranks)


def test_the_report_is_built_in_seconds(built):
    files, seconds = built
    print(f"\nthe report of {files.episodes + files.crashed} episodes took {seconds:.2f} s")
    assert files.index_html.is_file() and seconds > 0


def test_the_markup_lives_in_packaged_templates():
    """html.py prepares data; its pages are Jinja2 templates, which the wheel's package data carries (a colcon
    install copies the whole package folder)."""
    import fnmatch

    import tomllib

    report_dir = PACKAGE_ROOT / "src" / "robodojo" / "campaigns" / "report"
    source = (report_dir / "html.py").read_text()
    assert not re.search(r"<(table|section|div|pre|tr|td|img|script|style)\b", source)
    templates = sorted(p for p in (report_dir / "templates").iterdir() if p.is_file())
    assert {p.name for p in templates} >= {"_page.html.j2", "index.html.j2", "episode.html.j2", "report.css"}
    patterns = tomllib.loads((PACKAGE_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    root = PACKAGE_ROOT / "src" / "robodojo"
    for template in templates:
        assert any(fnmatch.fnmatch(template.relative_to(root).as_posix(), p) for p in patterns["robodojo"]), template


def test_a_partial_record_renders_escaped_with_what_is_missing(campaign, report):
    text = _pages(report)[CRASHED_ID].read_text()
    assert "<script>alert" not in text and text.count("<script") == 1  # only the page's own script
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;quoted&#34; &#39;single&#39;" in text
    assert "example.com" not in "".join(a for _, attrs in _Tags(text).tags for a in attrs.values() if a)
    assert "not loaded here: https://example.com/never-fetched.jpg" in text  # an image URL is text, never fetched
    assert "No metrics.json" in text and "turns.jsonl line 3 is not JSON" in text
    assert "The LLM call failed" in text and "503 &lt;html&gt; &amp; co" in text
    assert "no reply: the call failed" in text and "LlmError: the server kept answering 503" in text
    assert "(arguments are not JSON)" in text and "{not json &lt;/pre&gt;" in text
    assert "images/not-there.jpg is not in the record" in text
    assert "RuntimeError: agent bug &lt;&amp;&gt;" in text  # crash.txt of the try
    assert text.count('class="chip error"') == 2


def test_a_row_without_a_record_and_a_missing_plot(tmp_path):
    row = EpisodeRow(
        episode_id="lost", task="general_pickup", variant="standard", seed=0, agent="move_eef", llm="x",
        condition=ZERO_SHOT, capability="pick", end_reason="crashed",
    )  # fmt: skip
    moved = dict(row.as_dict(), episode_id="moved", folder="episodes/moved/try1")
    index = write_html_report(tmp_path, [row, EpisodeRow.from_dict(moved)], tmp_path / "r", title="t")
    assert "the campaign names no record folder" in (index.parent / EPISODE_PAGES / "lost.html").read_text()
    moved_page = (index.parent / EPISODE_PAGES / "moved.html").read_text()
    assert "does not exist" in moved_page and "no episode.mcap in the record" in moved_page
    with pytest.raises(ConfigError, match="plot file"):
        write_html_report(tmp_path, [row], tmp_path / "r", title="t", plots=[tmp_path / "nope.png"])


# What the browser checks on every page, in the page: images that did not load; elements that stick out of the
# window sideways other than inside a box that scrolls (a wide table scrolls in its own box, never the page); h2
# sections with nothing under their heading; links to anchors that are not on the page. Local file links are
# returned and checked from Python (the page's policy forbids it to fetch anything).
PAGE_CHECKS = """() => {
  const problems = [], width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1) {
    problems.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + width);
  }
  for (const img of document.images) {
    if (!(img.complete && img.naturalWidth > 0)) { problems.push("broken image " + img.getAttribute("src")); }
  }
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if ((r.width === 0 && r.height === 0) || (r.left >= -1 && r.right <= width + 1)) { continue; }
    let box = el.parentElement, contained = false;
    while (box && box !== document.body) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(box).overflowX)) {
        const b = box.getBoundingClientRect();
        contained = b.left >= -1 && b.right <= width + 1;
        break;
      }
      box = box.parentElement;
    }
    if (!contained) {
      problems.push("overflows the window: " + el.tagName + "." + el.className + " " + r.left + ".." + r.right);
    }
  }
  for (const h2 of document.querySelectorAll("h2")) {
    const section = h2.closest("section");
    const heading = h2.closest(".step-head") || h2;
    const rest = section ? section.textContent.length - heading.textContent.length : 0;
    if (!section || (rest <= 0 && !section.querySelector("img, table"))) {
      problems.push("empty section " + h2.textContent);
    }
  }
  const anchors = [], files = [];
  for (const a of document.querySelectorAll("a[href]")) {
    const href = a.getAttribute("href");
    if (href.startsWith("#")) { if (href !== "#" && !document.getElementById(href.slice(1))) { anchors.push(href); } }
    else { files.push(a.href); }
  }
  return {problems: problems.concat(anchors.map(h => "no anchor " + h)), files: files};
}"""


def _check_page(page, shots: Path, name: str) -> list[str]:
    """Load every image of the page (lazy ones too), take a full-page screenshot, run PAGE_CHECKS; the problems,
    local links that do not resolve among them."""
    images = page.locator("img")
    for i in range(images.count()):  # lazy images load once near the window
        images.nth(i).scroll_into_view_if_needed()
    page.wait_for_function("[...document.images].every(i => i.complete)")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    found = page.evaluate(PAGE_CHECKS)
    problems = [f"{name}: {p}" for p in found["problems"]]
    for url in found["files"]:
        parsed = urlparse(url)
        if parsed.scheme == "file" and not Path(unquote(parsed.path)).exists():
            problems.append(f"{name}: link to a missing file {url}")
    return problems


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (scripts/setup_env.sh installs chromium)")
def test_the_report_in_a_headless_browser_renders_offline(campaign, report, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (a dev dependency)")
    campaign_url = campaign.folder.resolve().as_uri() + "/"
    shots = Path(os.environ.get("REPORT_SCREENSHOTS", tmp_path))  # keep them somewhere to look at: set this
    shots.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            tmp_path / "profile",  # a fresh user data dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            timeout=BROWSER_TIMEOUT_MS,
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)

            # every page at a laptop's width and a desktop's
            for width in WIDTHS_PX:
                page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT_PX})
                for name, target in [("index", report), *((p.stem, p) for p in _pages(report).values())]:
                    page.goto(target.as_uri())
                    problems += _check_page(page, shots, f"{name}-{width}")
            assert (shots / f"index-{WIDTHS_PX[0]}.png").is_file()

            page.set_viewport_size({"width": WIDTHS_PX[0], "height": VIEWPORT_HEIGHT_PX})
            page.goto(report.as_uri())
            rows = page.locator("#episodes tbody tr")
            assert rows.count() == len(campaign.rows)
            # the table's last column is reachable at 1280 px: inside its scrolling box, the episode id stays put
            box = page.locator("#episode-list .scroll")
            box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
            last = page.locator("#episodes thead th").last.bounding_box()
            first = page.locator("#episodes tbody tr td").first.bounding_box()
            assert last is not None and first is not None
            assert last["x"] + last["width"] <= WIDTHS_PX[0] and first["x"] >= 0
            page.fill("#filter", "code_cell")  # the inline script filters the table
            assert page.locator("#episodes tbody tr:not([hidden])").count() == 1
            page.fill("#filter", "")

            row = campaign.row("move_eef")
            page.get_by_role("link", name=row.episode_id, exact=True).first.click()
            page.wait_for_url(re.compile(re.escape(_pages(report)[row.episode_id].name) + "$"))
            assert page.locator("section.turn").count() == 4
            images = page.locator("section.turn img")
            assert images.count() == 12
            for i in range(images.count()):
                images.nth(i).scroll_into_view_if_needed()
            page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
            assert (
                page.evaluate(
                    "Math.min(...[...document.querySelectorAll('section.turn img')].map(i => i.naturalWidth))"
                )
                == 640
            )

            page.evaluate("window.scrollTo(0, 0)")
            page.keyboard.press("ArrowRight")
            assert page.evaluate("location.hash") == "#turn-1"
            page.keyboard.press("ArrowRight")
            assert page.evaluate("location.hash") == "#turn-2"
            assert page.evaluate("document.querySelector(':target').id") == "turn-2"
            assert page.locator("#turn-2").is_visible()
            page.keyboard.press("ArrowLeft")
            assert page.evaluate("location.hash") == "#turn-1"

            page.locator("#turn-1 nav").get_by_role("link", name="campaign").click()
            page.wait_for_url(re.compile(r"/report/index\.html$"))
            page.get_by_role("link", name=CRASHED_ID).first.click()
            page.wait_for_url(re.compile(r"/episodes/crashed_1\.html$"))
            assert page.get_by_text("<script>alert(1)</script>", exact=False).count() >= 1
            assert page.locator("section.turn").count() == 2
        finally:
            browser.close()
    assert not problems, problems
    assert requests and all(url.startswith(campaign_url) for url in requests), [
        url for url in requests if not url.startswith(campaign_url)
    ]
    assert any(url.endswith(".jpg") for url in requests) and any(url.endswith(".svg") for url in requests)


@pytest.mark.parametrize(
    "seconds, text", [(12.4, "12 s"), (119.0, "119 s"), (200.0, "3.3 min"), (7199.0, "120.0 min"), (9000.0, "2.50 h")]
)
def test_the_episode_time_is_said_in_the_unit_people_read(seconds, text):
    from robodojo.campaigns.report.html import duration_text

    assert duration_text(seconds) == text


def test_the_report_is_titled_with_the_campaigns_name(tmp_path):
    from robodojo.campaigns.reporting import campaign_title

    (tmp_path / "campaign.yaml").write_text("name: grasping sweep\ntasks: [general_pickup]\nllms: {r: 'replay:x'}\n")
    assert campaign_title(tmp_path) == "Campaign grasping sweep"
    (tmp_path / "campaign.yaml").write_text("name: [not, a, name]\n")
    assert campaign_title(tmp_path) == f"Campaign {tmp_path.name}"
    (tmp_path / "campaign.yaml").write_text(": : :\n")
    assert campaign_title(tmp_path) == f"Campaign {tmp_path.name}"
    (tmp_path / "campaign.yaml").unlink()
    assert campaign_title(tmp_path) == f"Campaign {tmp_path.name}"
