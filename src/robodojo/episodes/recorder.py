"""The episode recorder: everything sent and received, every action and result, and the outcome, written into the
episode's record folder as it happens (the folder's files and their formats: robodojo.episodes.record).

Every line is flushed when written, and metrics.json is rewritten after every turn, so a crash anywhere leaves a
complete record up to that point. episode.mcap gets one chunk per turn; closing it (the runner's ``finally``) writes
the index that ``ros2 bag`` and rosbags need.
"""

from __future__ import annotations

import base64
import dataclasses
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

from robodojo.agents.base import TurnRecord
from robodojo.agents.llm.types import AttemptRecord, LlmError, Message
from robodojo.episodes import record as rec
from robodojo.episodes.mcap_record import MCAP_FILE, McapRecord
from robodojo.episodes.spec import EpisodeOutcome
from robodojo.motion.path_markers import PathMarker, planned_path_markers
from robodojo.motion.plan import Plan
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics

DATA_URL_PREFIX = "data:image/jpeg;base64,"


class StepSeen(Protocol):
    """What follows a host's control steps (:meth:`EpisodeRecorder.record_tick`): the state after a step, and for a
    host that reports states between steps (the graph's joint states come at the physics rate), how far past the
    step's start this one came [s]."""

    def __call__(self, state: Observation, within_step_s: float = 0.0) -> None: ...


class RecordWatcher(Protocol):
    """Sees what the record gets, as it gets it: the live view (robodojo.episodes.viewing.live.LiveView). Each hook
    runs on the episode's threads, the control loop's among them, so it must return at once (queue, never wait) and
    never raise; ``close`` gets metrics.json's last state and may wait, bounded."""

    def start(self, state: Observation, instruction: str) -> None: ...

    def tick(self, state: Observation, within_step_s: float = 0.0) -> None: ...

    def observation(self, obs: Observation) -> None: ...

    def turn(self, record: TurnRecord, state: Observation) -> None: ...

    def error(self, turn: int, text: str) -> None: ...

    def markers(self, markers: Sequence[PathMarker]) -> None: ...

    def close(self, metrics: dict[str, Any] | None = None) -> object: ...


class EpisodeRecorder:
    """Writes one episode's folder incrementally (see robodojo.episodes.record).

    ``meta`` is what meta.json says of the episode; the recorder adds the start time and the cameras the agent
    observes. ``robot`` is the episode's robot (its joints, cameras and control period name and stamp the MCAP
    messages); ``mcap=False`` leaves episode.mcap out. ``watchers`` see what the record gets (:class:`RecordWatcher`).
    """

    def __init__(
        self,
        folder: Path,
        meta: rec.RecordMeta,
        robot: RobotConfig,
        *,
        mcap: bool = True,
        watchers: Sequence[RecordWatcher] = (),
    ) -> None:
        self.folder = folder
        self.watchers = tuple(watchers)
        self._robot = robot
        self._kinematics: ArmKinematics | None = None
        (folder / rec.IMAGES_DIR).mkdir(parents=True, exist_ok=True)
        self._meta = dataclasses.replace(meta, started_unix_s=time.time(), cameras=())
        rec.write_json(folder, rec.META_FILE, self._meta)
        self._mcap = McapRecord(folder / MCAP_FILE, robot, rec.jsonable(self._meta)) if mcap else None
        self._metrics: dict[str, Any] | None = None  # the latest, for the MCAP file's metrics record
        self._requests = (folder / rec.REQUESTS_FILE).open("a", encoding="utf-8")
        self._responses = (folder / rec.RESPONSES_FILE).open("a", encoding="utf-8")
        self._turns = (folder / rec.TURNS_FILE).open("a", encoding="utf-8")
        self._robo_calls: TextIO | None = None  # opened at the first robo call
        # Data URL -> stored file. The history re-sends the same string objects every turn, and str caches its
        # hash, so a repeated image costs a dict lookup instead of a base64 decode and a SHA-1.
        self._stored: dict[str, str] = {}

    def _store_images(self, messages: list[Message]) -> list[Message]:
        """A copy of ``messages`` with every data-URL image saved to images/ and replaced by its file part."""
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
                        name = rec.image_name(data)
                        if not (self.folder / name).exists():
                            (self.folder / name).write_bytes(data)
                        self._stored[url] = name
                    parts.append(rec.image_part(name))
                else:
                    parts.append(part)
            out.append({**message, "content": parts})
        return out

    def _request_line(
        self, turn: int, body: dict[str, Any], attempts: tuple[AttemptRecord, ...], error: str | None
    ) -> None:
        body = {**body, "messages": self._store_images(list(body.get("messages") or []))}
        rec.append_line(self._requests, rec.request_line(turn, body, attempts, error))

    def record_start(self, state: Observation, instruction: str) -> None:
        """The episode's first state (before any turn) and its instruction."""
        if self._mcap is not None:
            self._mcap.start(state, instruction)
        for watcher in self.watchers:
            watcher.start(state, instruction)

    def record_tick(self, state: Observation, within_step_s: float = 0.0) -> None:
        """The state after one control step of the host (``within_step_s`` past it: a state between steps), with the
        camera frames rendered for the record, if any: episode.mcap's joint states and frames."""
        if self._mcap is not None:
            self._mcap.tick(state, within_step_s)
        for watcher in self.watchers:
            watcher.tick(state, within_step_s)

    def record_plan(self, plan: Plan, points: int) -> None:
        """A motion about to play its first ``points`` points (the motion server's plan observers): each arm's planned
        grasp-point path and target, as markers."""
        if self._mcap is None and not self.watchers:
            return
        if self._kinematics is None:  # built on the first motion: an episode that never moves needs none
            self._kinematics = ArmKinematics(self._robot)
        self.record_markers(planned_path_markers(plan, self._kinematics, points))

    def record_markers(self, markers: Iterable[PathMarker]) -> None:
        """A planned motion's markers (as :meth:`record_plan` drew them, or the graph's motion server): into
        episode.mcap and to the watchers."""
        markers = tuple(markers)
        if self._mcap is not None:
            self._mcap.markers(markers)
        for watcher in self.watchers:
            watcher.markers(markers)

    def record_observation(self, obs: Observation) -> None:
        """An observation the agent took: its camera frames go into episode.mcap (state-only ones add nothing), and a
        camera seen for the first time into meta.json's cameras."""
        cameras = self._meta.cameras or ()
        new = tuple(name for name in obs.cameras if name not in cameras)
        if new:
            self._meta = dataclasses.replace(self._meta, cameras=cameras + new)
            rec.write_json(self.folder, rec.META_FILE, self._meta)
        if self._mcap is not None:
            self._mcap.observation(obs)
        for watcher in self.watchers:
            watcher.observation(obs)

    def record_turn(self, record: TurnRecord, state: Observation) -> None:
        """One answered call: request, response, turn line (with ``state``, the agent-side state after acting) and
        robo calls; in episode.mcap the tool calls, tool results and the state."""
        reply = record.reply
        # The body as sent; a caller that is not LlmClient (a test double) has none, so its messages stand in.
        body = reply.request or {"messages": record.request}
        self._request_line(record.turn, body, reply.attempt_log, None)
        rec.append_line(self._responses, rec.response_line(record.turn, reply))
        rec.append_line(self._turns, rec.TurnLine.of(record, state).to_json())
        for index, call in enumerate(record.robo_calls):
            if self._robo_calls is None:
                self._robo_calls = (self.folder / rec.ROBO_CALLS_FILE).open("a", encoding="utf-8")
            rec.append_line(self._robo_calls, rec.robo_call_line(record.turn, index, call))
        if self._mcap is not None:
            self._mcap.turn(record, state)
        for watcher in self.watchers:
            watcher.turn(record, state)

    def record_failed_call(self, turn: int, error: LlmError) -> None:
        """A call that got no usable answer: what was sent and every attempt, in requests.jsonl."""
        if error.request:
            self._request_line(turn, error.request, error.attempt_log, str(error))

    def record_error(self, turn: int, error: BaseException) -> None:
        text = f"{type(error).__name__}: {error}"
        rec.append_line(self._turns, rec.TurnLine.failed(turn, text).to_json())
        if self._mcap is not None:
            self._mcap.error(turn, text)
        for watcher in self.watchers:
            watcher.error(turn, text)

    def write_metrics(self, outcome: EpisodeOutcome, env_step_limit: int) -> None:
        """metrics.json: the outcome so far (end reason ``running`` until the episode ends)."""
        self._metrics = rec.metrics(outcome, env_step_limit)
        rec.write_json(self.folder, rec.METRICS_FILE, self._metrics)

    def close(self) -> None:
        """Close every file; episode.mcap gets the latest metrics and its index (the files close even if that
        fails); then the watchers get the end (each waits at most its own bound)."""
        try:
            if self._mcap is not None:
                self._mcap.close(self._metrics)
        finally:
            for stream in (self._requests, self._responses, self._turns, self._robo_calls):
                if stream is not None:
                    stream.close()
            for watcher in self.watchers:
                watcher.close(self._metrics)
