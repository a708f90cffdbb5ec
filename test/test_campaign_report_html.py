"""The campaign's HTML report over real episode records: the text of the pages, then the pages in a real headless
browser (Debian's chromium) opened from disk, with every request it makes recorded."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.agents.llm.replay_server import cells_script
from robodojo.campaigns.report.html import EPISODE_PAGES, INDEX_PAGE, write_html_report
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.factory import make_agent
from robodojo.errors import ConfigError

# One worker runs this module: its fixture runs two real episodes, which a second worker would run again.
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
MOVE_EEF_SCRIPT = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
CELLS = PACKAGE_ROOT / "examples" / "cells" / "general_pickup.py"
# A first cell that shows the head camera (so the code-cell record has an image) and a reply text a browser would
# run if it were not escaped.
SHOW_REPLY = {
    "content": "First a look: <script>alert(2)</script> & <b>bold</b>",
    "tool_calls": [{"name": "python", "arguments": {"code": "robo.show('head')\nprint('a < b & \"c\"')"}}],
}
HOSTILE_TEXT = "<script>alert(1)</script> & \"quoted\" 'single' <img src=http://example.com/x.png>"


@dataclass(frozen=True)
class Campaign:
    folder: Path
    rows: tuple[EpisodeRow, ...]

    def row(self, agent: str) -> EpisodeRow:
        return next(r for r in self.rows if r.agent == agent)


def _run(world, agent_name: str, llm_spec: str, campaign: Path, episode_id: str) -> EpisodeRow:
    """One real episode recorded as the campaign does it (episodes/<id>/try1/<record>), and its row."""
    agent = make_agent(agent_name)
    try:
        with open_llm(llm_spec) as llm:
            result = run_episode(
                WorldHost(world),
                agent,
                llm,
                EpisodeSpec("general_pickup", 0),
                campaign / "episodes" / episode_id / "try1",
            )
    finally:
        getattr(agent, "close", lambda: None)()
    return EpisodeRow(
        episode_id=episode_id,
        task="general_pickup",
        variant="standard",
        seed=0,
        agent=agent_name,
        llm="replay",
        condition=ZERO_SHOT,
        capability="pick",
        **result.outcome_fields(),
        folder=str(result.folder.relative_to(campaign)),
    )


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
    return EpisodeRow(
        episode_id="crashed <1>",
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


@pytest.fixture(scope="module")
def campaign(dual_world, tmp_path_factory) -> Campaign:
    folder = tmp_path_factory.mktemp("campaign")
    cells = folder / "cells.json"  # JSON is YAML: a replay script
    cells.write_text(json.dumps([SHOW_REPLY, *cells_script(CELLS.read_text(), CELLS.parent)]))
    move_eef = _run(dual_world, "move_eef", f"replay:{MOVE_EEF_SCRIPT}", folder, "pickup-move_eef")
    code_cell = _run(dual_world, "code_cell", f"replay:{cells}", folder, "pickup-code_cell")
    image = next((folder / move_eef.folder / "images").iterdir())
    return Campaign(folder, (move_eef, code_cell, _crashed(folder, image)))


@pytest.fixture(scope="module")
def report(campaign) -> Path:
    plot = campaign.folder / "report" / "plots" / "success.png"
    plot.parent.mkdir(parents=True)
    shutil.copy(next((campaign.folder / campaign.row("code_cell").folder / "images").iterdir()), plot)  # any image
    return write_html_report(
        campaign.folder,
        campaign.rows,
        campaign.folder / "report",
        title="Pickup <campaign> & co",
        summary_html="<table id='summary'><tr><td>success rate</td><td>2/3</td></tr></table>",
        plots=[plot],
    )


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each link, of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.links: list[tuple[str, str]] = []  # (href, text)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        tag, attrs = self.tags[-1] if self.tags else ("", {})
        if tag == "a" and attrs.get("href"):
            self.links.append((attrs["href"] or "", data))

    def attrs(self, tag: str, name: str) -> list[str]:
        return [a[name] or "" for t, a in self.tags if t == tag and name in a]


def _pages(report: Path) -> dict[str, Path]:
    """Episode id -> its page, read from the campaign table's links."""
    links = _Tags(report.read_text()).links
    return {text: report.parent / unquote(href) for href, text in links if href.startswith(f"{EPISODE_PAGES}/")}


def _record_turns(folder: Path) -> set[int]:
    turns = set()
    for name in ("requests.jsonl", "responses.jsonl", "turns.jsonl"):
        for line in (folder / name).read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # the crashed record's cut-off last line
                turns.add(json.loads(line)["turn"])
    return turns


def test_the_campaign_page_links_every_episode_and_shows_the_summary(campaign, report):
    assert report == campaign.folder / "report" / INDEX_PAGE
    text = report.read_text()
    pages = _pages(report)
    assert len(pages) == len(campaign.rows) and all(p.is_file() for p in pages.values())
    assert pages["crashed <1>"].name == "crashed_1.html"  # an id with unsafe characters gets a safe file name
    assert "<h1>Pickup &lt;campaign&gt; &amp; co</h1>" in text and "<table id='summary'>" in text
    assert '<img src="plots/success.png"' in text
    for row in campaign.rows:
        assert f">{escape(row.episode_id)}</a>" in text
    assert campaign.row("move_eef").success and campaign.row("code_cell").success
    assert "<b>3</b> episodes" in text and "<b>2</b> succeeded (67%)" in text and "<b>1</b> crashed" in text


def test_episode_pages_step_through_each_recorded_turn(campaign, report):
    pages = _pages(report)
    for row in campaign.rows:
        page = pages[row.episode_id]
        text = page.read_text()
        record = campaign.folder / row.folder
        if not (record / "meta.json").exists():
            (record,) = (p for p in record.iterdir() if p.is_dir())
        turns = _record_turns(record)
        assert text.count('<section class="step turn"') == len(turns)
        assert [int(n) for n in re.findall(r'id="turn-(\d+)"', text)] == sorted(turns)
        assert 'id="end"' in text and f'href="../{INDEX_PAGE}"' in text
        if row.end_reason == "success":
            assert len(turns) == row.llm_calls and "<b>success</b>" in text
    move_eef = pages["pickup-move_eef"].read_text()
    assert move_eef.count("<h3>Motion</h3>") == 4 and "reached" in move_eef and "mm and" in move_eef
    code_cell = pages["pickup-code_cell"].read_text()
    assert (
        '<pre class="code"><code>robo.show(&#x27;head&#x27;)\nprint(&#x27;a &lt; b &amp; &quot;c&quot;&#x27;)'
        in code_cell
    )
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
    images = _Tags(_pages(report)["pickup-move_eef"].read_text()).attrs("img", "src")
    assert len(images) == 12 and all("/images/" in src and src.startswith("../../episodes/") for src in images)
    assert len(_Tags(_pages(report)["pickup-code_cell"].read_text()).attrs("img", "src")) == 1  # robo.show('head')


def test_a_partial_record_renders_escaped_with_what_is_missing(campaign, report):
    text = _pages(report)["crashed <1>"].read_text()
    assert "<script>alert" not in text and text.count("<script") == 1  # only the page's own script
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &#x27;single&#x27;" in text
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
    assert "does not exist" in (index.parent / EPISODE_PAGES / "moved.html").read_text()
    with pytest.raises(ConfigError, match="plot file"):
        write_html_report(tmp_path, [row], tmp_path / "r", title="t", plots=[tmp_path / "nope.png"])


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (scripts/setup_env.sh installs chromium)")
def test_the_report_in_a_headless_browser_renders_offline(campaign, report, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (a dev dependency)")
    campaign_url = campaign.folder.resolve().as_uri() + "/"
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

            page.goto(report.as_uri())
            rows = page.locator("#episodes tbody tr")
            assert rows.count() == len(campaign.rows)
            assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")  # the plot
            page.fill("#filter", "code_cell")  # the inline script filters the table
            assert page.locator("#episodes tbody tr:not([hidden])").count() == 1
            page.fill("#filter", "")

            page.get_by_role("link", name="pickup-move_eef").click()
            page.wait_for_url(re.compile(r"/episodes/pickup-move_eef\.html$"))
            assert page.locator("section.turn").count() == 4
            images = page.locator("img")
            assert images.count() == 12
            for i in range(images.count()):  # lazy images load once near the window
                images.nth(i).scroll_into_view_if_needed()
            page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
            assert page.evaluate("Math.min(...[...document.images].map(i => i.naturalWidth))") == 640

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
            page.get_by_role("link", name="crashed <1>").click()
            page.wait_for_url(re.compile(r"/episodes/crashed_1\.html$"))
            assert page.get_by_text("<script>alert(1)</script>", exact=False).count() >= 1
            assert page.locator("section.turn").count() == 2
        finally:
            browser.close()
    assert not problems, problems
    assert requests and all(url.startswith(campaign_url) for url in requests), [
        url for url in requests if not url.startswith(campaign_url)
    ]
    assert any(url.endswith(".jpg") for url in requests)


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
