"""The campaign's self-contained HTML report: a campaign page linking every episode, and per episode a page that steps
through its turns (:func:`write_html_report`).

Layout under ``out_dir``::

    index.html              the campaign: title and counts, the report's sections (tables), plots, every episode
    episodes/<id>.html      one episode: its image strip (first, middle and last frame of each camera), then turn
                            by turn what the model was sent in that turn (the messages new in the request, with their
                            camera images), its reply (a code cell as code), the tool result, the motion report, the
                            state after the turn; then how the episode ended
    strips/<id>/*.jpg       the strips' thumbnails (robodojo.campaigns.report.strips)

This module prepares the data; the markup lives in Jinja2 templates (``templates/*.html.j2``, with the stylesheet
and the two scripts beside them) rendered with autoescape on: every text taken from a record is HTML-escaped (model
replies hold ``<``, ``&`` and quotes), and the inline scripts carry a per-page nonce, so markup that slipped through
could not run anyway.

The pages open from disk (file://) with nothing else: CSS and scripts are inline, there are no web fonts and no URL
outside the campaign folder, and a Content-Security-Policy refuses any other fetch. The record's images are neither
copied nor embedded: each image of a turn points by a relative path into the episode record that already holds it
(``images/<hash>.jpg``), so the report stays small and works as long as it stays beside the campaign's episodes.

Records (read by robodojo.episodes.record) may be partial: a crash leaves no metrics.json, a failed LLM call a request
with no response, a kill a cut-off last line. The pages show what is there and say what is missing; writing the
report never fails on a record.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

import jinja2

from robodojo.campaigns.execute import CRASH_FILE
from robodojo.campaigns.report.paths import EPISODE_PAGES, INDEX_PAGE, STRIPS_DIR, page_names
from robodojo.campaigns.report.settings import StripSettings, shipped_report_settings
from robodojo.campaigns.report.strips import ImageStrip, write_strip
from robodojo.campaigns.report.tables import EARLIER_TRIES_ANCHOR, Section
from robodojo.campaigns.report.tries import EarlierTry
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

__all__ = [
    "EPISODE_PAGES",
    "INDEX_PAGE",
    "duration_text",
    "new_messages",
    "render_template",
    "write_html_report",
]

TEMPLATE_PACKAGE = "robodojo.campaigns.report"  #: the package whose ``templates/`` folder holds the pages' templates
TEMPLATE_FOLDER = "templates"
CODE_TOOL = "python"  # the code-cell agent's tool: its ``code`` argument is shown as code, not as JSON
MAX_ROBO_VALUE_CHARS = 600  # a robo call's arguments or result beyond this are cut (the record keeps them whole)
MAX_CAPTION_CHARS = 200  # a short text right before an image ("camera 'head' (step 24):") is its caption
SECONDS_SHOWN_UP_TO = 120.0  # the header says a campaign's episode time in seconds below this, then minutes
MINUTES_SHOWN_UP_TO_S = 7200.0  # ... and in hours from this on
MAX_URL_CHARS = 200  # an image sent by URL (a data URL is megabytes) is shown cut to this
MAX_CRASH_TEXT_CHARS = 20_000  # a crash traceback is shown up to this length, head and tail kept
STRIP_COLUMNS = 3  # first, middle, last: a camera with fewer frames leaves its row's other cells empty

# Only the campaign folder may be fetched: images and pages by relative file paths (or from the same server when a
# report is served over HTTP). Scripts run only with the page's nonce; styles are inline.
_CSP = (
    "default-src 'none'; img-src 'self' file:; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
    "base-uri 'none'; form-action 'none'"
)


@functools.cache
def _environment() -> jinja2.Environment:
    """The pages' Jinja2 environment: templates from the package (a wheel or a colcon install carries them), every
    value escaped, an undefined name an error rather than an empty string."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(TEMPLATE_PACKAGE, TEMPLATE_FOLDER),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["urlq"] = lambda href: url_quote(str(href), safe="/#")
    return env


def render_template(name: str, **values: Any) -> str:
    """Render the page template ``name`` (under ``templates/``) with ``values``, a fresh script nonce and the
    Content-Security-Policy that allows it."""
    nonce = secrets.token_urlsafe(16)
    return _environment().get_template(name).render(nonce=nonce, csp=_CSP.format(nonce=nonce), **values)


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


# -- small formatters (plain text: the templates escape) --------------------------------------------------------------


def _dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (records are read as written, not trusted)."""
    return value if isinstance(value, dict) else {}


def _href(target: Path, page_dir: Path) -> str:
    """A relative URL from a page in ``page_dir`` to ``target`` (both absolute), URL-quoted (the template escapes
    it for the attribute)."""
    relative = Path(os.path.relpath(target, page_dir)).as_posix()
    return url_quote(relative, safe="/")


def _number(value: object, fmt: str = "{:,.0f}") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    return fmt.format(value)


def _json(value: object, indent: int | None = 1) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False)


def _xyz(values: object, digits: int = 3) -> str:
    if isinstance(values, list | tuple) and all(isinstance(v, int | float) for v in values):
        return "(" + ", ".join(f"{v:.{digits}f}" for v in values) + ")"
    return str(values)


def _flag(value: object) -> bool | None:
    """A recorded yes/no as the templates' yes_no shows it: None when not recorded."""
    return None if value is None else bool(value)


# -- the episode page's view -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Figure:
    """An image of the record: ``href`` empty when the file is not in the record (``caption`` then names it)."""

    href: str
    caption: str
    alt: str = ""


@dataclass(frozen=True)
class _Part:
    """A piece of a message: ``images`` (its figures), ``url`` (an image sent by URL, as text), or text."""

    kind: str
    text: str = ""
    figures: tuple[_Figure, ...] = ()


@dataclass(frozen=True)
class _Message:
    role: str
    size: str  #: characters, formatted
    parts: tuple[_Part, ...]


@dataclass(frozen=True)
class _Attempt:
    attempt: str
    status: str
    latency: str
    error: str


@dataclass(frozen=True)
class _Request:
    messages: tuple[_Message, ...]
    no_messages: bool
    error: str
    attempts: tuple[_Attempt, ...]


@dataclass(frozen=True)
class _ToolCall:
    """A tool call of a reply: ``kind`` code (a cell: ``text`` is the code, ``extra`` its other arguments as JSON),
    json (the arguments indented) or raw (arguments that are not JSON, as sent)."""

    name: str
    kind: str
    text: str
    extra: str = ""


@dataclass(frozen=True)
class _Response:
    content: str
    tool_calls: tuple[_ToolCall, ...]
    empty: bool
    facts: str


@dataclass(frozen=True)
class _ArmMotion:
    name: str
    planned: bool | None
    reached: bool | None
    arrival: str
    final_pos: str
    steps: str
    stop: str


@dataclass(frozen=True)
class _Motion:
    accepted: bool | None
    stop_reason: str
    steps: str
    holding: bool | None
    stop_detail: str
    rejection: str
    arms: tuple[_ArmMotion, ...]


@dataclass(frozen=True)
class _ArmState:
    name: str
    pos: str
    quat: str
    gripper: str
    joints: str


@dataclass(frozen=True)
class _Entry:
    error: str
    tool_results: tuple[str, ...]
    motion: _Motion | None
    flags: str
    details: str
    has_state: bool
    steps_left: str
    arms: tuple[_ArmState, ...]


@dataclass(frozen=True)
class _RoboCall:
    index: str
    method: str
    args: str
    result: str
    error: str
    time: str


@dataclass(frozen=True)
class _TurnView:
    number: int
    id: str
    action: str
    status: str
    prev: str
    next: str
    requests: tuple[_Request, ...]
    responses: tuple[_Response, ...]
    entries: tuple[_Entry, ...]
    robo_calls: tuple[_RoboCall, ...]


@dataclass(frozen=True)
class _StripFrame:
    camera: str
    position: str
    time: str
    href: str
    alt: str
    width: int
    height: int


@dataclass(frozen=True)
class _Strip:
    rows: tuple[tuple[str, tuple[_StripFrame, ...], int], ...]  #: (camera, its frames, empty cells after them)
    note: str


@dataclass(frozen=True)
class _TryLink:
    try_index: int
    status: str
    href: str


class _EpisodePage:
    """Builds one episode page's view; paths are resolved once (the page's folder and the record's)."""

    def __init__(self, row: EpisodeRow, record: EpisodeRecord, page_dir: Path, index: Path) -> None:
        self.row = row
        self.record = record
        self.crash = _crash_text(record.folder)
        self.page_dir = page_dir
        self.index = index
        self.folder = record.folder.resolve()

    def figure(self, file: object, caption: str) -> _Figure:
        """A stored image by its relative path, or a figure without href when the file is not in the record."""
        path = (self.folder / str(file)).resolve()
        if not isinstance(file, str) or not path.is_relative_to(self.folder) or not path.is_file():
            return _Figure("", str(file))
        return _Figure(_href(path, self.page_dir), caption, caption or str(file))

    def parts(self, content: object) -> tuple[_Part, ...]:
        """A message's content: text as text, stored images as figures, a caption text before an image as its
        caption. Anything else (an image URL) is shown as text, never fetched."""
        if content is None:
            return ()
        if not isinstance(content, list):
            return (_Part("text", content if isinstance(content, str) else _json(content)),)
        out: list[_Part] = []
        figures: list[_Figure] = []
        parts = [p for p in content if isinstance(p, dict)]
        i = 0
        while i < len(parts):
            part = parts[i]
            nxt = parts[i + 1] if i + 1 < len(parts) else {}
            text = part.get("text") if part.get("type") == "text" else None
            if isinstance(text, str) and nxt.get("type") == IMAGE_PART and len(text) <= MAX_CAPTION_CHARS:
                figures.append(self.figure(nxt.get("file"), text))  # "camera 'head' (step 24):" labels its image
                i += 2
                continue
            if part.get("type") == IMAGE_PART:
                figures.append(self.figure(part.get("file"), ""))
            else:
                if figures:
                    out.append(_Part("images", figures=tuple(figures)))
                    figures = []
                out.append(self.other_part(part))
            i += 1
        if figures:
            out.append(_Part("images", figures=tuple(figures)))
        return tuple(out)

    @staticmethod
    def other_part(part: Mapping[str, Any]) -> _Part:
        """A text part as text; an image sent by URL as its (cut) URL, never loaded: the report fetches nothing
        outside the campaign folder; anything else as JSON."""
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            return _Part("text", part["text"])
        url = _dict(part.get("image_url")).get("url") if part.get("type") == "image_url" else None
        if isinstance(url, str):
            return _Part("url", trim_text(url, MAX_URL_CHARS))
        return _Part("text", _json(part))

    def request(self, request: Mapping[str, Any]) -> _Request:
        """The messages new in a request (the templates fold the system prompt and the previous turn's tool
        results: the tool results are shown with the turn that produced them), and why the call failed."""
        messages = request.get("messages")
        shown = []
        if isinstance(messages, list):
            for message in new_messages([m for m in messages if isinstance(m, dict)]):
                size = len(str(message.get("content") or ""))
                shown.append(_Message(str(message.get("role", "?")), f"{size:,}", self.parts(message.get("content"))))
        attempts = request.get("attempts")
        rows = tuple(
            _Attempt(
                _number(a.get("attempt")),
                str(a.get("status") or ""),
                _number(a.get("latency_s"), "{:.2f} s"),
                str(a.get("error") or ""),
            )
            for a in (attempts if isinstance(attempts, list) else [])
            if isinstance(a, dict)
        )
        error = request.get("error")
        return _Request(tuple(shown), not isinstance(messages, list), str(error) if error else "", rows)

    @staticmethod
    def tool_call(call: Mapping[str, Any]) -> _ToolCall:
        """One tool call: a code cell as code, other arguments as indented JSON (or as sent, if not JSON)."""
        function = _dict(call.get("function"))  # the request body's form; responses.jsonl has name and arguments
        name = str(call.get("name") or function.get("name") or "?")
        raw = call.get("arguments", function.get("arguments", ""))
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            return _ToolCall(name, "raw", str(raw))
        if name == CODE_TOOL and isinstance(args, dict) and isinstance(args.get("code"), str):
            rest = {k: v for k, v in args.items() if k != "code"}
            return _ToolCall(name, "code", args["code"], _json(rest) if rest else "")
        return _ToolCall(name, "json", _json(args))

    def response(self, response: Mapping[str, Any]) -> _Response:
        usage = _dict(response.get("usage"))
        facts = [
            f"finish: {response['finish_reason']}" if response.get("finish_reason") else "",
            f"tokens in {_number(usage.get('input_tokens'))} (cached {_number(usage.get('cached_input_tokens'))})"
            f", out {_number(usage.get('output_tokens'))}"
            if usage
            else "",
            f"cost ${_number(usage.get('cost_usd'), '{:.4f}')}" if "cost_usd" in usage else "",
            f"latency {_number(response.get('latency_s'), '{:.2f} s')}" if "latency_s" in response else "",
            f"attempts {_number(response.get('attempts'))}" if "attempts" in response else "",
        ]
        calls = tuple(self.tool_call(c) for c in response.get("tool_calls") or [] if isinstance(c, dict))
        content = response.get("content")
        return _Response(
            content=str(content) if content else "",
            tool_calls=calls,
            empty=not content and not response.get("tool_calls"),
            facts=" · ".join(f for f in facts if f),
        )

    @staticmethod
    def motion(move: Mapping[str, Any]) -> _Motion:
        """The motion report: accepted or why not, how it ended, and per arm planned, reached and how far off."""
        arms = []
        for name, arm in _dict(move.get("arms")).items():
            if not isinstance(arm, dict):
                continue
            pos, rot = arm.get("pos_error_mm"), arm.get("rot_error_deg")
            arrival = (
                f"{pos:.0f} mm and {rot:.1f} deg away"
                if isinstance(pos, int | float) and isinstance(rot, int | float)
                else ""
            )
            arms.append(
                _ArmMotion(
                    name=str(name),
                    planned=_flag(arm.get("planned")),
                    reached=_flag(arm.get("reached")),
                    arrival=arrival,
                    final_pos=_xyz(arm.get("final_pos_m")),
                    steps=f"{_number(arm.get('steps_used'))} / {_number(arm.get('waypoints'))}",
                    stop=str(arm.get("stop_reason", "")),
                )
            )
        return _Motion(
            accepted=_flag(move.get("accepted")),
            stop_reason=str(move.get("stop_reason", "")),
            steps=f"{_number(move.get('steps_used'))} of {_number(move.get('waypoints'))} waypoints",
            holding=_flag(move.get("holding")),
            stop_detail=str(move.get("stop_detail") or ""),
            rejection=_json(move["rejection"]) if move.get("rejection") else "",
            arms=tuple(arms),
        )

    def entry(self, entry: TurnLine) -> _Entry:
        arms = tuple(
            _ArmState(
                name=str(name),
                pos=_xyz(arm.get("tcp_pos_m")),
                quat=_xyz(arm.get("tcp_quat_wxyz")),
                gripper=_number(arm.get("gripper_opening"), "{:.2f}"),
                joints=_xyz(arm.get("joint_positions_rad")),
            )
            for name, arm in entry.arms.items()
            if isinstance(arm, dict)
        )
        flags = [name for name, flag in (("gave_up", entry.gave_up), ("finished", entry.finished)) if flag]
        shown = {k: v for k, v in entry.details.items() if k != "code"}  # the cell is shown with the reply
        return _Entry(
            error=entry.error,
            tool_results=tuple(entry.tool_results),
            motion=self.motion(entry.move) if entry.move is not None else None,
            flags=", ".join(flags),
            details=_json(shown) if shown else "",
            has_state=bool(entry.arms) or entry.steps_left is not None,
            steps_left=_number(entry.steps_left) if entry.steps_left is not None else "",
            arms=arms,
        )

    @staticmethod
    def robo_call(call: Mapping[str, Any]) -> _RoboCall:
        args = {"args": call.get("args", []), "kwargs": call.get("kwargs", {})}
        return _RoboCall(
            index=_number(call.get("index")),
            method=str(call.get("method")),
            args=trim_text(_json(args, None), MAX_ROBO_VALUE_CHARS),
            result=trim_text(_json(call.get("result"), None), MAX_ROBO_VALUE_CHARS),
            error=str(call.get("error") or ""),
            time=_number(call.get("duration_s"), "{:.3f} s"),
        )

    def turn(self, turn: _Turn, steps: Sequence[str], i: int) -> _TurnView:
        calls = sorted(turn.robo_calls, key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0)
        return _TurnView(
            number=turn.number,
            id=steps[i],
            action=turn.action,
            status=turn.status,
            prev=steps[i - 1] if i > 0 else "",
            next=steps[i + 1] if i + 1 < len(steps) else "",
            requests=tuple(self.request(r) for r in turn.requests),
            responses=tuple(self.response(r) for r in turn.responses),
            entries=tuple(self.entry(e) for e in turn.entries),
            robo_calls=tuple(self.robo_call(c) for c in calls),
        )

    def end(self, steps: Sequence[str]) -> dict[str, Any]:
        outcome = self.record.outcome
        view: dict[str, Any] = {"prev": steps[-2] if len(steps) > 1 else "", "next": "", "outcome": outcome}
        if outcome is not None:
            view.update(
                score=_number(outcome.score, "{:.2f}"),
                llm_calls=_number(outcome.llm_calls),
                steps=f"{_number(outcome.steps_used)} of {_number(self.record.meta.env_step_limit)}",
                wall_time=_number(outcome.wall_time_s, "{:.1f} s"),
                # metrics.json is rewritten every turn; "running" means the end never came
                running=outcome.end_reason is EndReason.RUNNING,
            )
        return view

    def strip(self, strip: ImageStrip) -> _Strip:
        rows = []
        for camera in strip.cameras:
            frames = tuple(
                _StripFrame(f.camera, f.position, f"{f.stamp_s:.1f} s", _href(f.path.resolve(), self.page_dir),
                            f.alt, f.width_px, f.height_px)
                for f in strip.frames
                if f.camera == camera
            )  # fmt: skip
            rows.append((camera, frames, STRIP_COLUMNS - len(frames)))
        return _Strip(tuple(rows), strip.note)

    def render(self, strip: ImageStrip, earlier: Sequence[EarlierTry], campaign_dir: Path) -> str:
        row, meta = self.row, self.record.meta
        turns = _turns(self.record)
        steps = [f"turn-{t.number}" for t in turns] + ["end"]
        files = []
        if self.folder.is_dir():  # the raw files (JSON lines, episode.mcap for Foxglove), opened by the browser
            found = sorted(p for p in self.folder.iterdir() if p.is_file() and not p.name.startswith("."))
            files = [(_href(p, self.page_dir), p.name) for p in found]
        started = ""
        if meta.started_unix_s is not None:
            started = datetime.fromtimestamp(meta.started_unix_s, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        tools = next((r.get("tools") for r in self.record.requests if r.get("tools")), None)
        tools_view = None
        if isinstance(tools, list):
            names = [str(_dict(t.get("function")).get("name", "?")) for t in tools if isinstance(t, dict)]
            tools_view = {"names": ", ".join(names), "json": _json(tools)}
        tries = [
            _TryLink(t.try_index, t.status, _href((campaign_dir / t.folder).resolve(), self.page_dir) + "/")
            for t in earlier
            if t.folder
        ]
        return render_template(
            "episode.html.j2",
            title=f"{row.task} seed {row.seed} {row.agent}: {row.episode_id}",
            heading=f"{row.task} · {row.variant} · seed {row.seed} · {row.agent} · {row.llm} · {row.condition}",
            row=row,
            meta=meta,
            outcome=self.record.outcome or row,
            earlier=tries,
            record_href=_href(self.folder, self.page_dir) + "/",
            record_folder=str(self.folder),
            files=files,
            started=started,
            tools=tools_view,
            meta_json=_json(jsonable(meta)) if meta != RecordMeta() else "",
            meta_file=META_FILE,
            problems=list(self.record.problems),
            strip=self.strip(strip),
            turns=[self.turn(t, steps, i) for i, t in enumerate(turns)],
            end=self.end(steps),
            metrics_file=METRICS_FILE,
            crash=trim_text(self.crash, MAX_CRASH_TEXT_CHARS) if self.crash else "",
            crash_file=CRASH_FILE,
            index_href=_href(self.index, self.page_dir),
        )


# -- the campaign page -----------------------------------------------------------------------------------------------


def duration_text(seconds: float) -> str:
    """A duration as people read it: ``12 s``, ``3.4 min``, ``1.25 h``."""
    if seconds < SECONDS_SHOWN_UP_TO:
        return f"{seconds:.0f} s"
    if seconds < MINUTES_SHOWN_UP_TO_S:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.2f} h"


def _counts(rows: Sequence[EpisodeRow], earlier: Sequence[EarlierTry]) -> dict[str, Any]:
    """The campaign's counts; LLM calls and cost include the earlier tries' (they were made and paid for)."""
    successes = sum(r.success for r in rows)
    distinct = [
        (name, len({getattr(r, attr) for r in rows}))
        for name, attr in (("tasks", "task"), ("agents", "agent"), ("LLMs", "llm"), ("conditions", "condition"))
    ]
    lost_calls = sum(t.usage.llm_calls for t in earlier)
    lost_cost = sum(t.usage.cost_usd for t in earlier)
    return {
        "episodes": len(rows),
        "successes": successes,
        "rate": f" ({successes / len(rows):.0%})" if rows else "",
        "distinct": distinct,
        "llm_calls": f"{sum(r.llm_calls for r in rows) + lost_calls:,}",
        "cost": f"${sum(r.cost_usd for r in rows) + lost_cost:,.2f}",
        "episode_time": duration_text(sum(r.wall_time_s for r in rows)),
        "crashed": sum(r.end_reason == "crashed" for r in rows),
        "earlier_tries": len(earlier),
        "earlier_text": f"{lost_calls:,} LLM calls, ${lost_cost:,.2f}",
    }


# (header, sorted as a number, what it holds): headers kept short so that the table fits 1280 px
_COLUMNS = (
    ("episode", False, "the episode id, linking its page"),
    ("task", False, "the task"),
    ("variant", False, "the task's variant"),
    ("seed", True, "the layout's seed"),
    ("agent", False, "the agent"),
    ("LLM", False, "the LLM's name in the campaign spec"),
    ("cond.", False, "the condition (zero_shot, a probe, a demonstration)"),
    ("ok", False, "whether the episode succeeded"),
    ("score", True, "the task's process score, 0 to 1"),
    ("end", False, "how the episode ended (hover for the error)"),
    ("calls", True, "LLM calls"),
    ("tokens in / out", True, "input tokens (hover for the cached ones) and output tokens"),
    ("cost", True, "cost in USD"),
    ("wall", True, "wall time"),
    ("tries", True, "the runs it took (a crashed or killed try is retried)"),
)


def _episode_view(row: EpisodeRow, page_href: str) -> dict[str, Any]:
    return {
        "page_href": page_href,
        "episode_id": row.episode_id,
        "task": row.task,
        "variant": row.variant,
        "seed": row.seed,
        "agent": row.agent,
        "llm": row.llm,
        "condition": row.condition,
        "success": row.success,
        "score": row.score,
        "score_text": f"{row.score:.2f}",
        "end_reason": str(row.end_reason),
        "error": row.error,
        "llm_calls": row.llm_calls,
        "calls_text": f"{row.llm_calls:,}",
        "tokens": row.input_tokens + row.output_tokens,
        "cached_text": f"{row.cached_input_tokens:,}",
        "input_text": f"{row.input_tokens:,}",
        "output_text": f"{row.output_tokens:,}",
        "cost": row.cost_usd,
        "cost_text": f"${row.cost_usd:.4f}",
        "wall_time": row.wall_time_s,
        "wall_text": f"{row.wall_time_s:.1f} s",
        "tries": row.tries,
    }


def _anchor(section: Section, n: int) -> str:
    return section.anchor or f"section-{n}"


def _index(
    rows: Sequence[EpisodeRow],
    pages: Sequence[Path],
    out_dir: Path,
    title: str,
    sections: Sequence[Section],
    plots: Sequence[Path],
    earlier: Sequence[EarlierTry],
) -> str:
    anchored = [(_anchor(s, n), s) for n, s in enumerate(sections, 1)]
    toc = [(a, s.title) for a, s in anchored]
    if plots:
        toc.append(("plots", "Plots"))
    toc.append(("episode-list", "Episodes"))
    plot_views = [{"href": _href(p, out_dir), "alt": p.stem.replace("_", " ")} for p in plots]
    return render_template(
        "index.html.j2",
        title=title,
        counts=_counts(rows, earlier),
        toc=toc if sections else [],
        sections=anchored,
        tries_anchor=EARLIER_TRIES_ANCHOR,
        plots=plot_views,
        columns=_COLUMNS,
        episodes=[_episode_view(r, _href(p, out_dir)) for r, p in zip(rows, pages, strict=True)],
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )


def write_html_report(
    campaign_dir: Path,
    rows: Sequence[EpisodeRow],
    out_dir: Path,
    *,
    title: str,
    sections: Iterable[Section] = (),
    plots: Sequence[Path] = (),
    earlier: Sequence[EarlierTry] = (),
    strips: StripSettings | None = None,
) -> Path:
    """Write the campaign's HTML report into ``out_dir`` and return its campaign page (``out_dir/index.html``).

    ``rows`` are the campaign's episodes, in the order the table lists them; each ``row.folder`` is its record
    folder relative to ``campaign_dir`` (see :class:`EpisodeRow`); a missing or partial record still gets a page.
    ``sections`` are the report's tables (robodojo.campaigns.report.tables.report_sections), shown in order;
    ``plots`` are image files (SVG or PNG) shown under them; ``earlier`` the tries killed or retried (counted in the
    totals, linked from their episodes' pages). Each episode page gets its image strip, written under
    ``out_dir/strips/`` with ``strips`` (default: config/report.yaml's). ``out_dir`` may be anywhere on the same
    file system (usually inside the campaign folder): every link is relative, so the report opens offline from disk
    as long as the campaign folder and the report move together.

    Raises ConfigError when a plot file does not exist.
    """
    campaign_dir, out_dir = Path(campaign_dir).resolve(), Path(out_dir).resolve()
    plots = [Path(p).resolve() for p in plots]
    missing = [str(p) for p in plots if not p.is_file()]
    if missing:
        raise ConfigError(f"plot file(s) not found: {', '.join(missing)}")
    strip_settings = strips or shipped_report_settings().image_strip
    page_dir = out_dir / EPISODE_PAGES
    page_dir.mkdir(parents=True, exist_ok=True)
    index = out_dir / INDEX_PAGE
    names = page_names([r.episode_id for r in rows])
    pages = [page_dir / name for name in names]
    by_episode: dict[str, list[EarlierTry]] = {}
    for t in earlier:
        by_episode.setdefault(t.episode_id, []).append(t)
    for row, page, name in zip(rows, pages, names, strict=True):
        if row.folder:
            record = EpisodeRecord.open(find_record(campaign_dir / row.folder))
        else:
            record = EpisodeRecord(campaign_dir, problems=("the campaign names no record folder",))
        strip_dir = out_dir / STRIPS_DIR / Path(name).stem
        strip = (
            write_strip(record.folder, record.meta, strip_dir, f"episode {row.episode_id}", strip_settings)
            if row.folder
            else ImageStrip((), "no record: no frames to show")
        )
        html = _EpisodePage(row, record, page_dir, index).render(
            strip, by_episode.get(row.episode_id, []), campaign_dir
        )
        page.write_text(html, encoding="utf-8")
    index.write_text(_index(rows, pages, out_dir, title, list(sections), plots, earlier), encoding="utf-8")
    return index
