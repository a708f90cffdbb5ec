"""The campaign's self-contained HTML report: a campaign page linking every episode, and per episode a page that steps
through its turns (:func:`write_html_report`).

Layout under ``out_dir``::

    index.html              the campaign: title and counts, the summary passed in (tables, plots), every episode
    episodes/<id>.html      one episode, turn by turn: what the model was sent in that turn (the messages new in the
                            request, with their camera images), its reply (a code cell as code), the tool result,
                            the motion report, the state after the turn; then how the episode ended

The pages open from disk (file://) with nothing else: CSS and scripts are inline, there are no web fonts and no URL
outside the campaign folder, and a Content-Security-Policy refuses any other fetch. Images are neither copied nor
embedded: each <img> points by a relative path into the episode record that already holds it (``images/<hash>.jpg``),
so the report stays small and works as long as it stays beside the campaign's episodes. Every text taken from a record
is HTML-escaped (model replies hold ``<``, ``&`` and quotes), and the inline scripts carry a per-page nonce, so markup
that slipped through could not run anyway.

Records (read by robodojo.episodes.record) may be partial: a crash leaves no metrics.json, a failed LLM call a request
with no response, a kill a cut-off last line. The pages show what is there and say what is missing; writing the
report never fails on a record.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

from robodojo.campaigns.execute import CRASH_FILE
from robodojo.campaigns.report.tables import Section
from robodojo.campaigns.results import EpisodeRow
from robodojo.episodes.record import (
    ERROR_ACTION,
    IMAGE_PART,
    META_FILE,
    METRICS_FILE,
    EpisodeRecord,
    RecordMeta,
    TurnLine,
    find_record,
    jsonable,
)
from robodojo.episodes.spec import EndReason
from robodojo.errors import ConfigError
from robodojo.text import trim_text

INDEX_PAGE = "index.html"
EPISODE_PAGES = "episodes"  #: the folder under out_dir holding one page per episode
CODE_TOOL = "python"  # the code-cell agent's tool: its ``code`` argument is shown as code, not as JSON
MAX_ROBO_VALUE_CHARS = 600  # a robo call's arguments or result beyond this are cut (the record keeps them whole)
MAX_CAPTION_CHARS = 200  # a short text right before an image ("camera 'head' (step 24):") is its caption
SECONDS_SHOWN_UP_TO = 120.0  # the header says a campaign's episode time in seconds below this, then minutes
MINUTES_SHOWN_UP_TO_S = 7200.0  # ... and in hours from this on
MAX_URL_CHARS = 200  # an image sent by URL (a data URL is megabytes) is shown cut to this
MAX_CRASH_TEXT_CHARS = 20_000  # a crash traceback is shown up to this length, head and tail kept
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

# Only the campaign folder may be fetched: images and pages by relative file paths (or from the same server when a
# report is served over HTTP). Scripts run only with the page's nonce; styles are inline.
_CSP = (
    "default-src 'none'; img-src 'self' file:; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
    "base-uri 'none'; form-action 'none'"
)

_CSS = """
:root { --fg: #1d2125; --muted: #5f6b76; --bg: #fff; --panel: #f4f6f8; --line: #d5dbe1; --ok: #1a7f37;
  --bad: #c62828; --warn: #a15c00; --accent: #0b5cad; --target: #fff6d6; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e3e6e9; --muted: #9aa5b0; --bg: #15181b; --panel: #1f2428; --line: #363d44; --ok: #57c46f;
    --bad: #ff6b6b; --warn: #e3a33b; --accent: #6cb0ff; --target: #3a3420; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 1rem 1.5rem 4rem; max-width: 1500px; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--accent); }
h1 { font-size: 1.5rem; margin: .5rem 0; } h2 { font-size: 1.15rem; margin: 0; }
h3 { font-size: 1rem; margin: .8rem 0 .3rem; }
pre, code { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; padding: .45rem .6rem; background: var(--panel);
  border: 1px solid var(--line); border-radius: 4px; max-height: 40rem; overflow: auto; }
pre.code { border-left: 3px solid var(--accent); }
.muted { color: var(--muted); } .ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
.error { border: 1px solid var(--bad); border-left-width: 4px; padding: .3rem .6rem; border-radius: 4px;
  margin: .4rem 0; }
.counts { display: flex; flex-wrap: wrap; gap: .4rem 1.4rem; margin: .4rem 0 1rem; }
.counts b { font-size: 1.1rem; }
table { border-collapse: collapse; margin: .3rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .55rem; text-align: left; vertical-align: top; }
td.n, th.num { text-align: right; font-variant-numeric: tabular-nums; }
#episodes th { cursor: pointer; user-select: none; position: sticky; top: 0; background: var(--bg); }
#episodes th[aria-sort=ascending]::after { content: " \\25B2"; }
#episodes th[aria-sort=descending]::after { content: " \\25BC"; }
#episodes tbody tr:hover { background: var(--panel); }
.kv th { font-weight: 600; color: var(--muted); white-space: nowrap; }
.plots img { max-width: 100%; border: 1px solid var(--line); margin: .3rem 0; }
.nav { display: flex; flex-wrap: wrap; gap: .3rem; align-items: center; margin: .5rem 0; }
.chip { display: inline-block; min-width: 2rem; text-align: center; padding: 0 .35rem; border: 1px solid var(--line);
  border-radius: 3px; text-decoration: none; }
.chip.error { border-color: var(--bad); color: var(--bad); }
.chip.rejected { border-color: var(--warn); color: var(--warn); }
section.step { border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem; margin: 1rem 0;
  scroll-margin-top: .5rem; }
section.step:target { background: var(--target); outline: 2px solid var(--accent); }
.step-head { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .5rem; align-items: baseline; }
.step-head nav a { margin-left: .7rem; }
.cols { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.2rem; }
@media (max-width: 1000px) { .cols { grid-template-columns: minmax(0, 1fr); } }
.images { display: flex; flex-wrap: wrap; gap: .5rem; }
figure { margin: 0; flex: 1 1 0; min-width: 160px; max-width: 480px; }
figcaption { font-size: 12px; color: var(--muted); }
figure img { display: block; width: 100%; height: auto; border: 1px solid var(--line); }
.role { font-size: 12px; font-weight: 600; color: var(--muted); text-transform: uppercase; margin-top: .5rem; }
details > summary { cursor: pointer; color: var(--muted); }
.filter { margin: .5rem 0; } .filter input { font: inherit; padding: .2rem .4rem; min-width: 22rem; }
"""

# Campaign page: click a column header to sort (numbers by their data-v value), type words to filter the rows.
_INDEX_JS = """
(function () {
  var table = document.getElementById("episodes");
  if (!table) { return; }
  var body = table.tBodies[0], filter = document.getElementById("filter"), shown = document.getElementById("shown");
  function key(row, col) {
    var cell = row.cells[col], v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var numeric = th.classList.contains("num");
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        if (numeric) { x = parseFloat(x); y = parseFloat(y); return dir * ((x > y) - (x < y)); }
        return dir * x.localeCompare(y, undefined, {numeric: true});
      });
      rows.forEach(function (row) { body.appendChild(row); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    });
  });
  filter.addEventListener("input", function () {
    var terms = filter.value.toLowerCase().split(/\\s+/).filter(Boolean), n = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      var keep = terms.every(function (t) { return text.indexOf(t) >= 0; });
      row.hidden = !keep;
      n += keep ? 1 : 0;
    });
    shown.textContent = n + " of " + body.rows.length + " shown";
  });
})();
"""

# Episode page: the right and left arrow keys (or j and k) step to the next and previous turn. The current step is
# the one the address names while it is on screen, otherwise the last one scrolled past the top third of the window.
_EPISODE_JS = """
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll("section.step"));
  function onScreen(el) { var r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }
  function current() {
    var named = document.getElementById(location.hash.slice(1));  // our ids need no decoding
    var i = steps.indexOf(named);
    if (i >= 0 && onScreen(named)) { return i; }
    i = -1;
    steps.forEach(function (s, k) { if (s.getBoundingClientRect().top <= window.innerHeight / 3) { i = k; } });
    return i;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) { return; }
    var i = current(), j;
    if (ev.key === "ArrowRight" || ev.key === "j") { j = Math.min(i + 1, steps.length - 1); }
    else if (ev.key === "ArrowLeft" || ev.key === "k") { j = Math.max(i - 1, 0); }
    else { return; }
    ev.preventDefault();
    if (j >= 0) { location.hash = steps[j].id; steps[j].scrollIntoView(); }
  });
})();
"""


# -- reading a record ------------------------------------------------------------------------------------------------


def _crash_text(record: Path) -> str:
    """The campaign worker's crash.txt of a try, beside the record or in the try's folder above it ("" if none)."""
    for place in (record, record.parent):
        if (place / CRASH_FILE).is_file():
            return (place / CRASH_FILE).read_text(encoding="utf-8", errors="replace")
    return ""


@dataclass
class _Turn:
    """Everything the record holds about one turn number."""

    number: int
    requests: list[Mapping[str, Any]] = field(default_factory=list)
    responses: list[Mapping[str, Any]] = field(default_factory=list)
    entries: list[TurnLine] = field(default_factory=list)  # turns.jsonl lines (a crash adds an error one)
    robo_calls: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """error (a failed call, a malformed reply, a crash), rejected (a move refused), or ok."""
        if any(r.get("error") for r in self.requests) or any(e.action == ERROR_ACTION or e.error for e in self.entries):
            return "error"
        moves = [_dict(e.move) for e in self.entries]
        if any(m.get("accepted") is False for m in moves):
            return "rejected"
        return "ok"

    @property
    def action(self) -> str:
        actions = [e.action for e in self.entries if e.action]
        if actions:
            return ", ".join(actions)
        return "failed call" if any(r.get("error") for r in self.requests) else "no action recorded"


def _turns(record: EpisodeRecord) -> list[_Turn]:
    by_number: dict[int, _Turn] = {}
    sources: tuple[tuple[Sequence[Mapping[str, Any]], str], ...] = (
        (record.requests, "requests"),
        (record.responses, "responses"),
        (record.robo_calls, "robo_calls"),
    )
    for lines, kind in sources:
        for line in lines:
            number = line.get("turn")
            if isinstance(number, int) and not isinstance(number, bool):
                getattr(by_number.setdefault(number, _Turn(number)), kind).append(line)
    for entry in record.turns:
        by_number.setdefault(entry.turn, _Turn(entry.turn)).entries.append(entry)
    return [by_number[n] for n in sorted(by_number)]


def new_messages(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages a request added to the conversation: those after the model's last reply (the previous turn's
    tool results, then the new observation or the images a cell showed). The first request has no reply yet: all
    of it is new. Older messages are the history, shown with their own turns."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return list(messages[last + 1 :])


# -- small renderers -------------------------------------------------------------------------------------------------


def _dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (records are read as written, not trusted)."""
    return value if isinstance(value, dict) else {}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _href(target: Path, page_dir: Path) -> str:
    """A relative URL from a page in ``page_dir`` to ``target`` (both absolute), escaped for an attribute."""
    relative = Path(os.path.relpath(target, page_dir)).as_posix()
    return _e(url_quote(relative, safe="/"))


def _pre(text: object, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<pre{cls}>{_e(text)}</pre>"


def _number(value: object, fmt: str = "{:,.0f}") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else _e(value)
    return _e(fmt.format(value))


def _yes_no(value: object) -> str:
    if value is None:
        return '<span class="muted">?</span>'
    return '<span class="ok">yes</span>' if value else '<span class="bad">no</span>'


def _kv(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table; values are HTML already (escape them first)."""
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f'<table class="kv">{rows}</table>'


def _json(value: object, indent: int | None = 1) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False)


def _xyz(values: object, digits: int = 3) -> str:
    if isinstance(values, list | tuple) and all(isinstance(v, int | float) for v in values):
        return _e("(" + ", ".join(f"{v:.{digits}f}" for v in values) + ")")
    return _e(values)


def _page(title: str, body: str, script: str) -> str:
    nonce = secrets.token_urlsafe(16)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP.format(nonce=nonce))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n"
        f'<script nonce="{_e(nonce)}">{script}</script>\n</body></html>\n'
    )


# -- the episode page ------------------------------------------------------------------------------------------------


class _EpisodePage:
    """Renders one episode's page; paths are resolved once (the page's folder and the record's)."""

    def __init__(self, row: EpisodeRow, record: EpisodeRecord, page_dir: Path, index: Path) -> None:
        self.row = row
        self.record = record
        self.crash = _crash_text(record.folder)
        self.page_dir = page_dir
        self.index = index
        self.folder = record.folder.resolve()

    def image(self, file: object, caption: str) -> str:
        """An <img> of a stored image by its relative path, or a note when the file is not in the record."""
        path = (self.folder / str(file)).resolve()
        if not isinstance(file, str) or not path.is_relative_to(self.folder) or not path.is_file():
            return f'<p class="warn">[image {_e(file)} is not in the record]</p>'
        href = _href(path, self.page_dir)
        alt = caption or str(file)
        return (
            f'<figure><a href="{href}" target="_blank"><img src="{href}" alt="{_e(alt)}" '
            'loading="lazy" decoding="async"></a>'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )

    def content(self, content: object) -> str:
        """A message's content: text as text, stored images as <img>, a caption text before an image as its
        caption. Anything else (an image URL) is shown as text, never fetched."""
        if content is None:
            return ""
        if not isinstance(content, list):
            return _pre(content if isinstance(content, str) else _json(content))
        out: list[str] = []
        figures: list[str] = []
        parts = [p for p in content if isinstance(p, dict)]
        i = 0
        while i < len(parts):
            part = parts[i]
            nxt = parts[i + 1] if i + 1 < len(parts) else {}
            text = part.get("text") if part.get("type") == "text" else None
            if isinstance(text, str) and nxt.get("type") == IMAGE_PART and len(text) <= MAX_CAPTION_CHARS:
                figures.append(self.image(nxt.get("file"), text))  # "camera 'head' (step 24):" labels its image
                i += 2
                continue
            if part.get("type") == IMAGE_PART:
                figures.append(self.image(part.get("file"), ""))
            else:
                if figures:
                    out.append(f'<div class="images">{"".join(figures)}</div>')
                    figures = []
                out.append(self.other_part(part))
            i += 1
        if figures:
            out.append(f'<div class="images">{"".join(figures)}</div>')
        return "".join(out)

    @staticmethod
    def other_part(part: Mapping[str, Any]) -> str:
        """A text part as text; an image sent by URL as its (cut) URL, never loaded: the report fetches nothing
        outside the campaign folder; anything else as JSON."""
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            return _pre(part["text"])
        url = _dict(part.get("image_url")).get("url") if part.get("type") == "image_url" else None
        if isinstance(url, str):
            return f'<p class="muted">[an image sent by URL, not loaded here: {_e(trim_text(url, MAX_URL_CHARS))}]</p>'
        return _pre(_json(part))

    def sent(self, turn: _Turn) -> str:
        """The messages new in this turn's request: the system prompt and the previous turn's tool results folded
        (the tool results are shown with the turn that produced them), the rest with their images."""
        if not turn.requests:
            return '<p class="muted">[no request recorded for this turn]</p>'
        out = []
        for request in turn.requests:
            messages = request.get("messages")
            if not isinstance(messages, list):
                out.append('<p class="muted">[the request holds no messages]</p>')
                continue
            for message in new_messages([m for m in messages if isinstance(m, dict)]):
                role = str(message.get("role", "?"))
                body = self.content(message.get("content"))
                size = len(str(message.get("content") or ""))
                if role == "system":
                    out.append(f"<details><summary>system prompt ({size:,} characters)</summary>{body}</details>")
                elif role == "tool":
                    out.append(
                        f"<details><summary>the previous turn's tool result ({size:,} characters)</summary>"
                        f"{body}</details>"
                    )
                else:
                    out.append(f'<div class="role">{_e(role)}</div>{body}')
            if request.get("error"):
                out.append(f'<div class="error"><b>The LLM call failed</b>{_pre(request["error"])}</div>')
                out.append(self.attempts(request.get("attempts")))
        return "".join(out)

    @staticmethod
    def attempts(attempts: object) -> str:
        if not isinstance(attempts, list) or not attempts:
            return ""
        rows = "".join(
            f"<tr><td class='n'>{_number(a.get('attempt'))}</td><td>{_e(a.get('status') or '')}</td>"
            f"<td class='n'>{_number(a.get('latency_s'), '{:.2f} s')}</td><td>{_e(a.get('error') or '')}</td></tr>"
            for a in attempts
            if isinstance(a, dict)
        )
        return f"<table><tr><th>attempt</th><th>status</th><th>latency</th><th>error</th></tr>{rows}</table>"

    @staticmethod
    def tool_call(call: Mapping[str, Any]) -> str:
        """One tool call: a code cell as code, other arguments as indented JSON (or as sent, if not JSON)."""
        function = _dict(call.get("function"))  # the request body's form; responses.jsonl has name and arguments
        name = str(call.get("name") or function.get("name") or "?")
        raw = call.get("arguments", function.get("arguments", ""))
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            return f"<div><code>{_e(name)}</code> (arguments are not JSON){_pre(raw)}</div>"
        if name == CODE_TOOL and isinstance(args, dict) and isinstance(args.get("code"), str):
            rest = {k: v for k, v in args.items() if k != "code"}
            extra = _pre(_json(rest)) if rest else ""
            code = f'<pre class="code"><code>{_e(args["code"])}</code></pre>'
            return f"<div><code>{_e(name)}</code> cell:{code}{extra}</div>"
        return f"<div><code>{_e(name)}</code>{_pre(_json(args))}</div>"

    def reply(self, turn: _Turn) -> str:
        out = []
        for response in turn.responses:
            if response.get("content"):
                out.append(_pre(response["content"], "reply"))
            for call in response.get("tool_calls") or []:
                if isinstance(call, dict):
                    out.append(self.tool_call(call))
            if not response.get("content") and not response.get("tool_calls"):
                out.append('<p class="muted">[an empty reply]</p>')
            usage = _dict(response.get("usage"))
            facts = [
                f"finish: {_e(response['finish_reason'])}" if response.get("finish_reason") else "",
                f"tokens in {_number(usage.get('input_tokens'))} (cached {_number(usage.get('cached_input_tokens'))})"
                f", out {_number(usage.get('output_tokens'))}"
                if usage
                else "",
                f"cost ${_number(usage.get('cost_usd'), '{:.4f}')}" if "cost_usd" in usage else "",
                f"latency {_number(response.get('latency_s'), '{:.2f} s')}" if "latency_s" in response else "",
                f"attempts {_number(response.get('attempts'))}" if "attempts" in response else "",
            ]
            out.append(f'<p class="muted">{" · ".join(f for f in facts if f)}</p>')
        if not out:
            return '<p class="muted">[no reply: the call failed or the episode stopped first]</p>'
        return "".join(out)

    @staticmethod
    def motion(move: Mapping[str, Any]) -> str:
        """The motion report: accepted or why not, how it ended, and per arm planned, reached and how far off."""
        facts = [
            ("accepted", _yes_no(move.get("accepted"))),
            ("stop reason", _e(move.get("stop_reason", ""))),
            ("steps used", f"{_number(move.get('steps_used'))} of {_number(move.get('waypoints'))} waypoints"),
            ("holding still after", _yes_no(move.get("holding"))),
        ]
        if move.get("stop_detail"):
            facts.append(("stop detail", _e(move["stop_detail"])))
        if move.get("rejection"):
            facts.append(("rejection", _pre(_json(move["rejection"]))))
        arms = _dict(move.get("arms"))
        rows = []
        for name, arm in arms.items():
            if not isinstance(arm, dict):
                continue
            pos, rot = arm.get("pos_error_mm"), arm.get("rot_error_deg")
            arrival = (
                f"{pos:.0f} mm and {rot:.1f} deg away"
                if isinstance(pos, int | float) and isinstance(rot, int | float)
                else ""
            )
            rows.append(
                f"<tr><td>{_e(name)}</td><td>{_yes_no(arm.get('planned'))}</td><td>{_yes_no(arm.get('reached'))}</td>"
                f"<td>{_e(arrival)}</td><td>{_xyz(arm.get('final_pos_m'))}</td>"
                f"<td class='n'>{_number(arm.get('steps_used'))} / {_number(arm.get('waypoints'))}</td>"
                f"<td>{_e(arm.get('stop_reason', ''))}</td></tr>"
            )
        table = (
            "<table><tr><th>arm</th><th>planned</th><th>reached</th><th>arrival</th><th>final grasp point (m)</th>"
            f"<th>steps / waypoints</th><th>stop</th></tr>{''.join(rows)}</table>"
            if rows
            else ""
        )
        return _kv(facts) + table

    @staticmethod
    def state(entry: TurnLine) -> str:
        rows = []
        for name, arm in entry.arms.items():
            if not isinstance(arm, dict):
                continue
            rows.append(
                f"<tr><td>{_e(name)}</td><td>{_xyz(arm.get('tcp_pos_m'))}</td>"
                f"<td>{_xyz(arm.get('tcp_quat_wxyz'))}</td>"
                f"<td class='n'>{_number(arm.get('gripper_opening'), '{:.2f}')}</td>"
                f"<td>{_xyz(arm.get('joint_positions_rad'))}</td></tr>"
            )
        left = entry.steps_left
        steps = f"<p>env steps left: <b>{_number(left)}</b></p>" if left is not None else ""
        if not rows:
            return steps
        return (
            steps + "<table><tr><th>arm</th><th>grasp point (m, world)</th><th>orientation (wxyz)</th>"
            f"<th>gripper</th><th>joints (rad)</th></tr>{''.join(rows)}</table>"
        )

    @staticmethod
    def robo_calls(calls: Sequence[Mapping[str, Any]]) -> str:
        if not calls:
            return ""
        rows = []
        for call in sorted(calls, key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0):
            args = {"args": call.get("args", []), "kwargs": call.get("kwargs", {})}
            rows.append(
                f"<tr><td class='n'>{_number(call.get('index'))}</td><td><code>{_e(call.get('method'))}</code></td>"
                f"<td>{_pre(trim_text(_json(args, None), MAX_ROBO_VALUE_CHARS))}</td>"
                f"<td>{_pre(trim_text(_json(call.get('result'), None), MAX_ROBO_VALUE_CHARS))}</td>"
                f"<td class='bad'>{_e(call.get('error') or '')}</td>"
                f"<td class='n'>{_number(call.get('duration_s'), '{:.3f} s')}</td></tr>"
            )
        return (
            f"<details><summary>{len(calls)} robo call(s)</summary><table><tr><th>#</th><th>method</th>"
            f"<th>arguments</th><th>result</th><th>error</th><th>time</th></tr>{''.join(rows)}</table></details>"
        )

    def acted(self, turn: _Turn) -> str:
        out = ["<h3>Reply</h3>", self.reply(turn)]
        for entry in turn.entries:
            if entry.error:
                out.append(f'<div class="error"><b>Error</b>{_pre(entry.error)}</div>')
            if entry.tool_results:
                out.append("<h3>Tool result</h3>")
                out.extend(_pre(text) for text in entry.tool_results)
            if entry.move is not None:
                out.append("<h3>Motion</h3>" + self.motion(entry.move))
            flags = [name for name, flag in (("gave_up", entry.gave_up), ("finished", entry.finished)) if flag]
            if flags:
                out.append(f"<p><b>{_e(', '.join(flags))}</b></p>")
            shown = {k: v for k, v in entry.details.items() if k != "code"}  # the cell is shown with the reply
            if shown:
                out.append(f"<details><summary>details</summary>{_pre(_json(shown))}</details>")
            if entry.arms or entry.steps_left is not None:
                out.append("<h3>State after the turn</h3>" + self.state(entry))
        out.append(self.robo_calls(turn.robo_calls))
        if not turn.entries:
            out.append('<p class="muted">[nothing recorded after the reply]</p>')
        return "".join(out)

    def nav(self, steps: Sequence[str], i: int) -> str:
        prev = f'<a href="#{steps[i - 1]}" rel="prev">&larr; previous</a>' if i > 0 else ""
        nxt = f'<a href="#{steps[i + 1]}" rel="next">next &rarr;</a>' if i + 1 < len(steps) else ""
        return f'<nav>{prev}{nxt}<a href="#top">top</a><a href="{_href(self.index, self.page_dir)}">campaign</a></nav>'

    def turn_section(self, turn: _Turn, steps: Sequence[str], i: int) -> str:
        return (
            f'<section class="step turn" id="{steps[i]}" data-turn="{turn.number}">'
            f'<div class="step-head"><h2>Turn {turn.number} · {_e(turn.action)}</h2>{self.nav(steps, i)}</div>'
            f'<div class="cols"><div class="sent"><h3>Sent to the model</h3>{self.sent(turn)}</div>'
            f'<div class="acted">{self.acted(turn)}</div></div></section>'
        )

    def end_section(self, steps: Sequence[str]) -> str:
        outcome = self.record.outcome
        if outcome is None:
            body = (
                f'<p class="bad">No {METRICS_FILE}: the episode ended before writing it (crashed or killed). '
                f"The campaign row says: {_e(self.row.end_reason)}"
                f"{': ' + _e(self.row.error) if self.row.error else ''}.</p>"
            )
        else:
            body = _kv(
                [
                    ("end reason", f"<b>{_e(outcome.end_reason)}</b>"),
                    ("success", _yes_no(outcome.success)),
                    ("score", _number(outcome.score, "{:.2f}")),
                    ("LLM calls", _number(outcome.llm_calls)),
                    ("env steps", f"{_number(outcome.steps_used)} of {_number(self.record.meta.env_step_limit)}"),
                    ("wall time", _number(outcome.wall_time_s, "{:.1f} s")),
                ]
            )
            if outcome.end_reason is EndReason.RUNNING:  # metrics.json is rewritten every turn; the end never came
                body += '<p class="bad">The episode stopped without ending (killed?): this is its last turn.</p>'
            if outcome.error:
                body += f'<div class="error"><b>Error</b>{_pre(outcome.error)}</div>'
        if self.crash:
            crash = _pre(trim_text(self.crash, MAX_CRASH_TEXT_CHARS))
            body += f'<div class="error"><b>{CRASH_FILE}</b>{crash}</div>'
        return (
            f'<section class="step end" id="{steps[-1]}"><div class="step-head"><h2>End of the episode</h2>'
            f"{self.nav(steps, len(steps) - 1)}</div>{body}</section>"
        )

    def header(self, turns: Sequence[_Turn], steps: Sequence[str]) -> str:
        row, meta = self.row, self.record.meta
        outcome = self.record.outcome or row
        title = f"{row.task} · {row.variant} · seed {row.seed} · {row.agent} · {row.llm} · {row.condition}"
        facts = [
            ("episode", _e(row.episode_id)),
            ("instruction", _e(meta.instruction)),
            ("robot", _e(meta.robot)),
            ("model", _e(meta.model)),
            ("capability", _e(row.capability)),
            ("outcome", f"{_e(outcome.end_reason)}, success {_yes_no(outcome.success)}"),
            (
                "tries",
                _number(row.tries)
                + (" (the earlier tries' records are kept beside this one)" if row.tries > 1 else ""),
            ),
            ("record", f'<a href="{_href(self.folder, self.page_dir)}/">{_e(row.folder or self.folder)}</a>'),
        ]
        if self.folder.is_dir():  # the raw files (JSON lines, episode.mcap for Foxglove), opened by the browser
            files = sorted(p for p in self.folder.iterdir() if p.is_file() and not p.name.startswith("."))
            links = " ".join(f'<a href="{_href(p, self.page_dir)}">{_e(p.name)}</a>' for p in files)
            facts.append(("files", links))
        if meta.started_unix_s is not None:
            started = datetime.fromtimestamp(meta.started_unix_s, timezone.utc)
            facts.append(("started", _e(started.strftime("%Y-%m-%d %H:%M:%S UTC"))))
        tools = next((r.get("tools") for r in self.record.requests if r.get("tools")), None)
        extra = ""
        if isinstance(tools, list):
            names = [str(_dict(t.get("function")).get("name", "?")) for t in tools if isinstance(t, dict)]
            extra += f"<details><summary>tools offered: {_e(', '.join(names))}</summary>{_pre(_json(tools))}</details>"
        if meta != RecordMeta():
            extra += f"<details><summary>{META_FILE}</summary>{_pre(_json(jsonable(meta)))}</details>"
        if self.record.problems:
            items = "".join(f"<li>{_e(p)}</li>" for p in self.record.problems)
            extra += f'<div class="warn"><b>This record is incomplete:</b><ul>{items}</ul></div>'
        chips = "".join(
            f'<a class="chip {t.status}" href="#{steps[i]}" title="{_e(t.action)}">{t.number}</a>'
            for i, t in enumerate(turns)
        )
        chips += f'<a class="chip" href="#{steps[-1]}">end</a>'
        return (
            f'<p id="top"><a href="{_href(self.index, self.page_dir)}">&larr; campaign</a></p>'
            f"<h1>{_e(title)}</h1>{_kv(facts)}{extra}"
            f'<div class="nav"><span class="muted">{len(turns)} turn(s); keys &larr; &rarr; step through:</span>'
            f"{chips}</div>"
        )

    def render(self) -> str:
        turns = _turns(self.record)
        steps = [f"turn-{t.number}" for t in turns] + ["end"]
        sections = [self.turn_section(t, steps, i) for i, t in enumerate(turns)]
        body = self.header(turns, steps) + "".join(sections) + self.end_section(steps)
        return _page(f"{self.row.task} seed {self.row.seed} {self.row.agent}: {self.row.episode_id}", body, _EPISODE_JS)


# -- the campaign page -----------------------------------------------------------------------------------------------


def duration_text(seconds: float) -> str:
    """A duration as people read it: ``12 s``, ``3.4 min``, ``1.25 h``."""
    if seconds < SECONDS_SHOWN_UP_TO:
        return f"{seconds:.0f} s"
    if seconds < MINUTES_SHOWN_UP_TO_S:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.2f} h"


def _counts(rows: Sequence[EpisodeRow]) -> str:
    successes = sum(r.success for r in rows)
    rate = f" ({successes / len(rows):.0%})" if rows else ""
    crashed = sum(r.end_reason == "crashed" for r in rows)
    distinct = {
        name: len({getattr(r, attr) for r in rows})
        for name, attr in (("tasks", "task"), ("agents", "agent"), ("LLMs", "llm"), ("conditions", "condition"))
    }
    items = [
        f"<span><b>{len(rows)}</b> episodes</span>",
        f"<span><b>{successes}</b> succeeded{rate}</span>",
        *(f"<span><b>{n}</b> {name}</span>" for name, n in distinct.items()),
        f"<span><b>{sum(r.llm_calls for r in rows):,}</b> LLM calls</span>",
        f"<span><b>${sum(r.cost_usd for r in rows):,.2f}</b> cost</span>",
        f"<span><b>{duration_text(sum(r.wall_time_s for r in rows))}</b> episode time</span>",
    ]
    if crashed:
        items.append(f'<span class="bad"><b>{crashed}</b> crashed</span>')
    return f'<div class="counts">{"".join(items)}</div>'


_COLUMNS = (
    ("episode", False),
    ("task", False),
    ("variant", False),
    ("seed", True),
    ("agent", False),
    ("LLM", False),
    ("condition", False),
    ("success", False),
    ("score", True),
    ("end reason", False),
    ("calls", True),
    ("tokens in / out", True),
    ("cost", True),
    ("wall time", True),
    ("tries", True),
)  # (header, sorted as a number)


def _episode_row(row: EpisodeRow, page_href: str) -> str:
    def num(value: float, text: str) -> str:
        return f'<td class="n" data-v="{value!r}">{text}</td>'

    error = f' title="{_e(row.error)}"' if row.error else ""
    cells = [
        f'<td><a href="{page_href}">{_e(row.episode_id)}</a></td>',
        f"<td>{_e(row.task)}</td><td>{_e(row.variant)}</td>",
        num(row.seed, _e(row.seed)),
        f"<td>{_e(row.agent)}</td><td>{_e(row.llm)}</td><td>{_e(row.condition)}</td>",
        f"<td>{_yes_no(row.success)}</td>",
        num(row.score, f"{row.score:.2f}"),
        f"<td{error}>{_e(row.end_reason)}</td>",
        num(row.llm_calls, f"{row.llm_calls:,}"),
        num(
            row.input_tokens + row.output_tokens,
            f'<span title="{row.cached_input_tokens:,} input tokens cached">{row.input_tokens:,}</span>'
            f" / {row.output_tokens:,}",
        ),
        num(row.cost_usd, f"${row.cost_usd:.4f}"),
        num(row.wall_time_s, f"{row.wall_time_s:.1f} s"),
        num(row.tries, f"{row.tries}"),
    ]
    return f"<tr>{''.join(cells)}</tr>"


def _index(
    rows: Sequence[EpisodeRow],
    pages: Sequence[Path],
    out_dir: Path,
    title: str,
    summary_html: str,
    plots: Sequence[Path],
) -> str:
    head = "".join(
        f'<th{" class=num" if numeric else ""} title="click to sort">{_e(name)}</th>' for name, numeric in _COLUMNS
    )
    body = "".join(_episode_row(row, _href(page, out_dir)) for row, page in zip(rows, pages, strict=True))
    summary = ""
    if summary_html or plots:
        figures = "".join(f'<img src="{_href(p, out_dir)}" alt="{_e(p.stem)}">' for p in plots)
        summary = f'<section class="summary"><h2>Summary</h2>{summary_html}<div class="plots">{figures}</div></section>'
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body_html = (
        f"<h1>{_e(title)}</h1>{_counts(rows)}{summary}<h2>Episodes</h2>"
        '<div class="filter"><input id="filter" type="search" aria-label="filter episodes"'
        ' placeholder="filter: words that must all appear in a row"> '
        f'<span id="shown" class="muted">{len(rows)} of {len(rows)} shown</span></div>'
        f'<table id="episodes"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f'<p class="muted">Generated {generated}. Episode pages step through each turn; the images are read from the '
        "episode records, so keep this report beside the campaign's episodes.</p>"
    )
    return _page(title, body_html, _INDEX_JS)


def _page_names(episode_ids: Sequence[str]) -> list[str]:
    """A file name per episode: its id with unsafe characters replaced, made unique."""
    names: list[str] = []
    taken: set[str] = set()
    for episode_id in episode_ids:
        stem = _UNSAFE_NAME.sub("_", episode_id).strip("._") or "episode"
        name, k = f"{stem}.html", 2
        while name.lower() in taken:  # case-insensitive: the report may be read on macOS or Windows
            name, k = f"{stem}-{k}.html", k + 1
        taken.add(name.lower())
        names.append(name)
    return names


def _cells(row: Sequence[str], tag: str, text_columns: int) -> str:
    """A table row's cells; numbers (the columns after the names) right-aligned."""
    return "".join(f"<{tag}{'' if i < text_columns else ' class=num'}>{_e(c)}</{tag}>" for i, c in enumerate(row))


def sections_html(sections: Iterable[Section]) -> str:
    """The report's tables (:func:`robodojo.campaigns.report.tables.report_sections`) as an HTML fragment for the
    campaign page's summary; every cell escaped."""
    parts = []
    for section in sections:
        parts.append(f"<h3>{_e(section.title)}</h3>")
        if section.note:
            parts.append(f'<p class="muted">{_e(section.note)}</p>')
        table = section.table
        if table is None:
            parts.append(f"<p>{_e(section.empty_text)}</p>")
            continue

        body = "".join(f"<tr>{_cells(row, 'td', table.text_columns)}</tr>" for row in table.rows)
        head = _cells(table.header, "th", table.text_columns)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts)


def write_html_report(
    campaign_dir: Path,
    rows: Sequence[EpisodeRow],
    out_dir: Path,
    *,
    title: str,
    summary_html: str = "",
    plots: Sequence[Path] = (),
) -> Path:
    """Write the campaign's HTML report into ``out_dir`` and return its campaign page (``out_dir/index.html``).

    ``rows`` are the campaign's episodes, in the order the table lists them; each ``row.folder`` is its record
    folder relative to ``campaign_dir`` (see :class:`EpisodeRow`); a missing or partial record still gets a page.
    ``summary_html`` is an HTML fragment inserted as it is (the statistics tables: the caller escapes what it puts
    there); ``plots`` are image files (PNG) shown under it. ``out_dir`` may be anywhere on the same file system
    (usually inside the campaign folder): every link is relative, so the report opens offline from disk as long as
    the campaign folder and the report move together.

    Raises ConfigError when a plot file does not exist.
    """
    campaign_dir, out_dir = Path(campaign_dir).resolve(), Path(out_dir).resolve()
    plots = [Path(p).resolve() for p in plots]
    missing = [str(p) for p in plots if not p.is_file()]
    if missing:
        raise ConfigError(f"plot file(s) not found: {', '.join(missing)}")
    page_dir = out_dir / EPISODE_PAGES
    page_dir.mkdir(parents=True, exist_ok=True)
    index = out_dir / INDEX_PAGE
    pages = [page_dir / name for name in _page_names([r.episode_id for r in rows])]
    for row, page in zip(rows, pages, strict=True):
        if row.folder:
            record = EpisodeRecord.open(find_record(campaign_dir / row.folder))
        else:
            record = EpisodeRecord(campaign_dir, problems=("the campaign names no record folder",))
        page.write_text(_EpisodePage(row, record, page_dir, index).render(), encoding="utf-8")
    index.write_text(_index(rows, pages, out_dir, title, summary_html, plots), encoding="utf-8")
    return index
