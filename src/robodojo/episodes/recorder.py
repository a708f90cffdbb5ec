"""The episode record: everything sent and received, every action and result, and the metrics, written as it happens.

Folder layout (one per episode)::

    meta.json         task, seed, variant, instruction, agent, model, start time, and ``llm``: the client's model,
                      profile, base URL, timeout, retries, call deadline and tool_choice override
    requests.jsonl    one line per LLM call, failed calls included: the request body as sent (after the profile's
                      rewrites: model, messages, tools, tool_choice, ...; images replaced by file references), then
                      ``attempts`` (per HTTP attempt: attempt, latency_s, error, status) and ``error`` (null, or why
                      the call failed)
    responses.jsonl   one line per answered LLM call: the reply (content, tool calls, usage, latency with retries,
                      attempts, attempt_log, raw body)
    turns.jsonl       one line per turn: action, tool results, motion report, the agent-side state after acting
    robo_calls.jsonl  code cells: one line per robo call (turn, index in the turn, method, arguments, result summary,
                      error, duration), written once a call is made
    images/           every image sent, once, named by content hash (JPEG as sent)
    metrics.json      success, score, calls, tokens, cost, steps used, wall time, end reason (rewritten each turn)
    episode.mcap      the episode as ROS 2 messages for Foxglove, ``ros2 bag`` and rosbags, stamped in simulation
                      time: the instruction, joint states and grasp-point poses at the start and after each turn,
                      every camera frame the agent took (JPEG, with CameraInfo and the camera's pose), the tool calls
                      and tool results as text (topics: robodojo.episodes.mcap_record)

Every line is flushed when written, and metrics.json is rewritten after every turn, so a crash anywhere leaves a
complete record up to that point. episode.mcap gets one chunk per turn; closing it (the runner's ``finally``) writes
the index that ``ros2 bag`` and rosbags need.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from robodojo.agents.base import TurnRecord
from robodojo.agents.llm.types import AttemptRecord, LlmError, Message
from robodojo.episodes.mcap_record import MCAP_FILE, McapRecord
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

DATA_URL_PREFIX = "data:image/jpeg;base64,"


def _jsonable(value: Any) -> Any:
    """Dataclasses, enums, numpy values and tuples as plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class EpisodeRecorder:
    """Writes one episode's folder incrementally (see module docstring).

    ``robot`` is the episode's robot (its joints, cameras and control period name and stamp the MCAP messages);
    ``mcap=False`` leaves episode.mcap out.
    """

    def __init__(self, folder: Path, meta: dict[str, Any], robot: RobotConfig, *, mcap: bool = True) -> None:
        self.folder = folder
        (folder / "images").mkdir(parents=True, exist_ok=True)
        self._start = time.time()
        meta = {**meta, "started_unix_s": self._start}
        self._write_json("meta.json", meta)
        self._mcap = McapRecord(folder / MCAP_FILE, robot, _jsonable(meta)) if mcap else None
        self._metrics: dict[str, Any] | None = None  # the latest, for the MCAP file's metrics record
        self._requests = (folder / "requests.jsonl").open("a", encoding="utf-8")
        self._responses = (folder / "responses.jsonl").open("a", encoding="utf-8")
        self._turns = (folder / "turns.jsonl").open("a", encoding="utf-8")
        self._robo_calls: TextIO | None = None  # opened at the first robo call
        # Data URL -> stored file. The history re-sends the same string objects every turn, and str caches its
        # hash, so a repeated image costs a dict lookup instead of a base64 decode and a SHA-1.
        self._stored: dict[str, str] = {}

    def _write_json(self, name: str, data: Any) -> None:
        tmp = self.folder / f".{name}.tmp"
        tmp.write_text(json.dumps(_jsonable(data), indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.folder / name)  # atomic: a crash never leaves half a file

    @staticmethod
    def _line(stream, data: Any) -> None:
        stream.write(json.dumps(_jsonable(data)) + "\n")
        stream.flush()

    def _store_images(self, messages: list[Message]) -> list[Message]:
        """A copy of ``messages`` with every data-URL image saved to images/ and replaced by its file name."""
        out = []
        for message in messages:
            content = message.get("content")
            if not isinstance(content, list):
                out.append(message)
                continue
            parts = []
            for part in content:
                url = part.get("image_url", {}).get("url", "") if part.get("type") == "image_url" else ""
                if url.startswith(DATA_URL_PREFIX):
                    name = self._stored.get(url)
                    if name is None:
                        data = base64.b64decode(url[len(DATA_URL_PREFIX) :])
                        name = f"images/{hashlib.sha1(data).hexdigest()[:16]}.jpg"
                        if not (self.folder / name).exists():
                            (self.folder / name).write_bytes(data)
                        self._stored[url] = name
                    parts.append({"type": "image_file", "file": name})
                else:
                    parts.append(part)
            out.append({**message, "content": parts})
        return out

    def _request_line(
        self, turn: int, body: dict[str, Any], attempts: tuple[AttemptRecord, ...], error: str | None
    ) -> None:
        body = {**body, "messages": self._store_images(list(body.get("messages") or []))}
        self._line(self._requests, {"turn": turn, **body, "attempts": attempts, "error": error})

    def record_start(self, state: Observation, instruction: str) -> None:
        """The episode's first state (before any turn) and its instruction."""
        if self._mcap is not None:
            self._mcap.start(state, instruction)

    def record_observation(self, obs: Observation) -> None:
        """An observation the agent took: its camera frames go into episode.mcap (state-only ones add nothing)."""
        if self._mcap is not None:
            self._mcap.observation(obs)

    def record_turn(self, record: TurnRecord, state: Observation) -> None:
        """One answered call: request, response, turn line (with ``state``, the agent-side state after acting) and
        robo calls; in episode.mcap the tool calls, tool results and the state."""
        reply = record.reply
        # The body as sent; a caller that is not LlmClient (a test double) has none, so its messages stand in.
        body = reply.request or {"messages": record.request}
        self._request_line(record.turn, body, reply.attempt_log, None)
        self._line(
            self._responses,
            {
                "turn": record.turn,
                "model": reply.model,
                "content": reply.content,
                "tool_calls": reply.tool_calls,
                "finish_reason": reply.finish_reason,
                "usage": reply.usage,
                "latency_s": reply.latency_s,
                "attempts": reply.attempts,
                "attempt_log": reply.attempt_log,
                "raw": reply.raw,
            },
        )
        self._line(
            self._turns,
            {
                "turn": record.turn,
                "action": record.action,
                "tool_results": record.tool_results,
                "move": record.move,
                "gave_up": record.gave_up,
                "finished": record.finished,
                "details": record.details,
                "steps_left": state.steps_left,
                "arms": state.arms,
            },
        )
        for index, call in enumerate(record.robo_calls):
            if self._robo_calls is None:
                self._robo_calls = (self.folder / "robo_calls.jsonl").open("a", encoding="utf-8")
            self._line(self._robo_calls, {"turn": record.turn, "index": index, **_jsonable(call)})
        if self._mcap is not None:
            self._mcap.turn(record, state)

    def record_failed_call(self, turn: int, error: LlmError) -> None:
        """A call that got no usable answer: what was sent and every attempt, in requests.jsonl."""
        if error.request:
            self._request_line(turn, error.request, error.attempt_log, str(error))

    def record_error(self, turn: int, error: BaseException) -> None:
        text = f"{type(error).__name__}: {error}"
        self._line(self._turns, {"turn": turn, "action": "error", "error": text})
        if self._mcap is not None:
            self._mcap.error(turn, text)

    def write_metrics(self, metrics: dict[str, Any]) -> None:
        self._write_json("metrics.json", metrics)
        self._metrics = metrics

    def close(self) -> None:
        """Close every file; episode.mcap gets the latest metrics and its index (the files close even if that
        fails)."""
        try:
            if self._mcap is not None:
                self._mcap.close(_jsonable(self._metrics) if self._metrics is not None else None)
        finally:
            for stream in (self._requests, self._responses, self._turns, self._robo_calls):
                if stream is not None:
                    stream.close()
