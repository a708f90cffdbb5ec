"""The episode record: one folder per episode, its file names and the shape of every file, written by
:class:`~robodojo.episodes.recorder.EpisodeRecorder` as the episode runs and read back by :meth:`EpisodeRecord.open`.
No other module spells out a file name of the record or the keys of its lines.

Folder layout (one per episode)::

    meta.json         :class:`RecordMeta`: task, seed, variant, robot, instruction, agent, model, start time, the
                      LLM budget and env step limit, ``llm`` (the client's model, profile, base URL, timeout,
                      retries, call deadline and tool_choice override), ``agent_settings`` (what the agent sends the
                      model) and ``cameras``: every camera whose frame the agent took, in the order first taken
                      (rewritten when a camera is first seen; the move_eef agent's observation messages show their
                      pictures in this order); ``clock``: how much world time a model call cost
                      (robodojo.episodes.clock)
    requests.jsonl    one line per LLM call, failed calls included: the request body as sent (after the profile's
                      rewrites: model, messages, tools, tool_choice, ...; images replaced by :data:`IMAGE_PART`
                      parts), then ``attempts`` (per HTTP attempt: attempt, latency_s, error, status) and ``error``
                      (null, or why the call failed)
    responses.jsonl   one line per answered LLM call: the reply (content, tool calls, usage, latency with retries,
                      attempts, attempt_log, raw body)
    turns.jsonl       :class:`TurnLine`: one line per turn (action, tool results, motion report, the agent-side
                      state after acting, the world time the clock let pass for it), or per error (turn, action
                      "error", error)
    robo_calls.jsonl  code cells: one line per robo call (turn, index in the turn, method, arguments, result summary,
                      error, duration), written once a call is made
    images/           every image sent, once, named by content hash (JPEG as sent)
    metrics.json      :class:`~robodojo.episodes.spec.EpisodeOutcome` and the env step limit, rewritten each turn
                      (end reason ``running`` until the episode ends)
    episode.mcap      the episode as ROS 2 messages (robodojo.episodes.mcap_record, which owns that format)

Every line is flushed when written and metrics.json is rewritten after every turn, so a crash anywhere leaves a
complete record up to that point. Reading never fails on a record: what is missing or unreadable is listed in
:attr:`EpisodeRecord.problems`, and a value of the wrong type is left at its default and listed there too.
Records written before meta.json named its cameras read with ``cameras`` None.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

import numpy as np

from robodojo.agents.base import TurnRecord
from robodojo.agents.llm.types import AttemptRecord, ChatReply
from robodojo.episodes.clock import PAUSED
from robodojo.episodes.spec import EpisodeOutcome
from robodojo.observation import ArmState, Observation
from robodojo.text import quote

META_FILE = "meta.json"
REQUESTS_FILE = "requests.jsonl"
RESPONSES_FILE = "responses.jsonl"
TURNS_FILE = "turns.jsonl"
ROBO_CALLS_FILE = "robo_calls.jsonl"
METRICS_FILE = "metrics.json"
IMAGES_DIR = "images"
IMAGE_PART = "image_file"  #: a stored image in a recorded message: {"type": "image_file", "file": "images/<hash>.jpg"}
ERROR_ACTION = "error"  #: the action of a turns.jsonl line that records an error
ENV_STEP_LIMIT = "env_step_limit"  #: metrics.json's one key beyond the outcome's fields


# -- values as JSON --------------------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Dataclasses (their repr fields), enums, numpy values and tuples as plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def write_json(folder: Path, name: str, data: Any) -> None:
    """``folder/name`` as indented JSON, replaced atomically: a crash never leaves half a file."""
    tmp = folder / f".{name}.tmp"
    tmp.write_text(json.dumps(jsonable(data), indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / name)


def append_line(stream: TextIO, data: Any) -> None:
    """One JSON line, flushed."""
    stream.write(json.dumps(jsonable(data)) + "\n")
    stream.flush()


_T = TypeVar("_T")


def _from_json(cls: type[_T], data: Mapping[str, Any], where: str, problems: list[str]) -> _T | None:
    """``cls`` from a JSON object: keys it does not know are ignored, a value of the wrong type is left at its default
    (and listed in ``problems``); None when a required field is missing."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            ok, value = _coerce(hints[f.name], data[f.name])
            if ok:
                values[f.name] = value
            else:
                expected = getattr(hints[f.name], "__name__", hints[f.name])
                problems.append(f"{where}: {f.name} should be {expected}, got {quote(data[f.name])}")
    try:
        return cls(**values)
    except TypeError as exc:
        problems.append(f"{where}: {exc}")
        return None


_HINTS: dict[type, dict[str, Any]] = {}  # a dataclass's field types, resolved once


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _coerce(hint: Any, value: Any) -> tuple[bool, Any]:
    """(True, the value as ``hint`` holds it) for JSON of that type, else (False, None)."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        for arm in typing.get_args(hint):
            ok, converted = (value is None, None) if arm is type(None) else _coerce(arm, value)
            if ok:
                return True, converted
        return False, None
    if origin is tuple:
        if not isinstance(value, list):
            return False, None
        items = [_coerce(typing.get_args(hint)[0], v) for v in value]
        return all(ok for ok, _ in items), tuple(v for _, v in items)
    if origin is Mapping or hint is Mapping:
        return isinstance(value, dict), value
    if hint is Any:
        return True, value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return True, hint(value)
        except ValueError:
            return False, None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    return isinstance(value, hint), value


# -- the files -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecordMeta:
    """meta.json: what the episode was and who ran it (see the module docstring)."""

    task: str = ""
    seed: int = 0
    variant: str = ""
    robot: str = ""
    instruction: str = ""
    agent: str = ""
    model: str = ""
    llm: Mapping[str, Any] = field(default_factory=dict)
    agent_settings: Mapping[str, Any] = field(default_factory=dict)
    llm_call_budget: int | None = None
    env_step_limit: int | None = None
    started_unix_s: float | None = None
    cameras: tuple[str, ...] | None = None  #: None: a record from before meta.json named its cameras
    clock: str = PAUSED  #: how much world time a model call cost (robodojo.episodes.clock)


@dataclass(frozen=True, kw_only=True)
class TurnLine:
    """One turns.jsonl line: a turn (``state`` fields after acting: ``steps_left`` and each arm's state as recorded;
    an agent's turn that acted on nothing has action :data:`ERROR_ACTION` and the texts it was answered), or a turn
    that failed (action :data:`ERROR_ACTION` and ``error``; nothing else is written for it)."""

    turn: int
    action: str = ""
    tool_results: tuple[str, ...] = ()
    move: Mapping[str, Any] | None = None  #: the MoveReport as JSON
    gave_up: bool = False
    finished: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    steps_left: int | None = None
    arms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    latency_applied_s: float = 0.0  #: world time the episode's clock let pass for this turn (robodojo.episodes.clock)
    error: str = ""

    @classmethod
    def of(cls, record: TurnRecord, state: Observation) -> TurnLine:
        return cls(
            turn=record.turn,
            action=record.action,
            tool_results=tuple(record.tool_results),
            move=jsonable(record.move),
            gave_up=record.gave_up,
            finished=record.finished,
            details=jsonable(record.details),
            steps_left=state.steps_left,
            arms=jsonable(state.arms),
            latency_applied_s=record.latency_applied_s,
        )

    @classmethod
    def failed(cls, turn: int, error: str) -> TurnLine:
        return cls(turn=turn, action=ERROR_ACTION, error=error)

    def arm_states(self) -> dict[str, ArmState]:
        """The arms' states after the turn as the agent saw them (a TypeError if a line's arm is not one)."""
        states = {}
        for name, arm in self.arms.items():
            values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in arm.items()}
            states[name] = ArmState(**values)
        return states

    def to_json(self) -> dict[str, Any]:
        if self.error:  # the recorder's own line for a turn that failed (failed())
            return {"turn": self.turn, "action": self.action, "error": self.error}
        # A turn, an agent's that acted on nothing included (action "error": the texts it was answered are the only
        # record of why)
        return {k: v for k, v in jsonable(self).items() if k != "error"}


def request_line(turn: int, body: Mapping[str, Any], attempts: Sequence[AttemptRecord], error: str | None) -> dict:
    """A requests.jsonl line: the body as sent (its images already stored, see :func:`image_part`)."""
    return {"turn": turn, **body, "attempts": attempts, "error": error}


def response_line(turn: int, reply: ChatReply) -> dict:
    return {
        "turn": turn,
        "model": reply.model,
        "content": reply.content,
        "tool_calls": reply.tool_calls,
        "finish_reason": reply.finish_reason,
        "usage": reply.usage,
        "latency_s": reply.latency_s,
        "attempts": reply.attempts,
        "attempt_log": reply.attempt_log,
        "raw": reply.raw,
    }


def robo_call_line(turn: int, index: int, call: Any) -> dict:
    return {"turn": turn, "index": index, **jsonable(call)}


def metrics(outcome: EpisodeOutcome, env_step_limit: int) -> dict[str, Any]:
    """metrics.json: the outcome's fields and the env step limit."""
    return {**jsonable(outcome), ENV_STEP_LIMIT: env_step_limit}


def image_name(jpeg: bytes) -> str:
    """Where a sent image is stored, relative to the record folder: named by its content."""
    return f"{IMAGES_DIR}/{hashlib.sha1(jpeg).hexdigest()[:16]}.jpg"


def image_part(name: str) -> dict[str, str]:
    """The message part that stands for a stored image."""
    return {"type": IMAGE_PART, "file": name}


# -- reading ---------------------------------------------------------------------------------------------------------


def _read_object(path: Path, problems: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(f"no {path.name}")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path.name} could not be read: {exc}")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path.name} is not a JSON object")
        return None
    return data


def _read_lines(path: Path, problems: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) of every line of a JSON-lines file; none when the file is missing."""
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        problems.append(f"{path.name} could not be read: {exc}")
        return []
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:  # a kill mid-write leaves the last line cut off
            problems.append(f"{path.name} line {number} is not JSON (cut off?)")
            continue
        if isinstance(data, dict):
            out.append((f"{path.name} line {number}", data))
        else:
            problems.append(f"{path.name} line {number} is not a JSON object")
    return out


def is_record(folder: Path) -> bool:
    """Whether ``folder`` holds an episode record (its meta.json)."""
    return (Path(folder) / META_FILE).is_file()


def find_record(folder: Path) -> Path:
    """The record folder at or under ``folder``: ``folder`` itself if it holds a record, else its one subfolder that
    does (a campaign try's folder holds the folder the runner named), else ``folder``."""
    if is_record(folder) or not folder.is_dir():
        return folder
    inner = [p for p in sorted(folder.iterdir()) if p.is_dir() and is_record(p)]
    return inner[0] if len(inner) == 1 else folder


def read_meta(folder: Path, problems: list[str] | None = None) -> RecordMeta:
    """meta.json (defaults for what is missing; what could not be read is added to ``problems``)."""
    problems = [] if problems is None else problems
    data = _read_object(Path(folder) / META_FILE, problems) or {}
    return _from_json(RecordMeta, data, META_FILE, problems) or RecordMeta()


def read_turns(folder: Path, problems: list[str] | None = None) -> tuple[TurnLine, ...]:
    """turns.jsonl, line by line (a line without its turn number is left out and listed in ``problems``)."""
    problems = [] if problems is None else problems
    lines = (_from_json(TurnLine, data, where, problems) for where, data in _read_lines(folder / TURNS_FILE, problems))
    return tuple(line for line in lines if line is not None)


@dataclass(frozen=True)
class EpisodeRecord:
    """An episode record as read: each file's content, or nothing (see the module docstring).

    ``outcome`` is None when metrics.json is missing or unreadable; ``requests``, ``responses`` and ``robo_calls``
    are their files' lines as written (JSON objects, each with its ``turn``); ``problems`` says what could not be
    read (a missing file, a line that is not JSON, a value of the wrong type).
    """

    folder: Path
    meta: RecordMeta = field(default_factory=RecordMeta)
    outcome: EpisodeOutcome | None = None
    turns: tuple[TurnLine, ...] = ()
    requests: tuple[Mapping[str, Any], ...] = ()
    responses: tuple[Mapping[str, Any], ...] = ()
    robo_calls: tuple[Mapping[str, Any], ...] = ()
    problems: tuple[str, ...] = ()

    @classmethod
    def open(cls, folder: Path) -> EpisodeRecord:
        """Read the record in ``folder``, tolerating anything missing (a folder that does not exist reads empty)."""
        folder = Path(folder)
        if not folder.is_dir():
            return cls(folder, problems=(f"the record folder {folder} does not exist",))
        problems: list[str] = []
        meta = read_meta(folder, problems)
        data = _read_object(folder / METRICS_FILE, problems)
        outcome = _from_json(EpisodeOutcome, data, METRICS_FILE, problems) if data is not None else None
        turns = read_turns(folder, problems)
        requests, responses, robo_calls = (
            tuple(line for _, line in _read_lines(folder / name, problems))
            for name in (REQUESTS_FILE, RESPONSES_FILE, ROBO_CALLS_FILE)
        )
        return cls(folder, meta, outcome, turns, requests, responses, robo_calls, tuple(problems))

    def observation_images(self, turn: int, cameras: Sequence[str]) -> dict[str, Path]:
        """The pictures of the observation the agent sent in ``turn`` (the last user message of that turn's last
        request), by camera: its stored images in order, named by ``cameras`` (``meta.cameras``, the order the
        move_eef agent shows them in). Empty when the turn has no request or its image count is not ``cameras``'."""
        requests = [r for r in self.requests if r.get("turn") == turn and isinstance(r.get("messages"), list)]
        messages = requests[-1]["messages"] if requests else []
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        parts = content if isinstance(content, list) else []
        files = [p.get("file") for p in parts if isinstance(p, dict) and p.get("type") == IMAGE_PART]
        if len(files) != len(cameras) or not all(isinstance(f, str) for f in files):
            return {}
        return {camera: self.folder / str(file) for camera, file in zip(cameras, files, strict=True)}


__all__ = [
    "ENV_STEP_LIMIT",
    "ERROR_ACTION",
    "IMAGES_DIR",
    "IMAGE_PART",
    "META_FILE",
    "METRICS_FILE",
    "REQUESTS_FILE",
    "RESPONSES_FILE",
    "ROBO_CALLS_FILE",
    "TURNS_FILE",
    "EpisodeRecord",
    "RecordMeta",
    "TurnLine",
    "append_line",
    "find_record",
    "image_name",
    "image_part",
    "is_record",
    "jsonable",
    "metrics",
    "read_meta",
    "read_turns",
    "request_line",
    "response_line",
    "robo_call_line",
    "write_json",
]
