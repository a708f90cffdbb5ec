"""The live view of an episode as it runs (``--view``): :class:`LiveView`, a watcher of the episode's record.

The recorder hands a watcher what it records, on the episode's own threads (robodojo.episodes.recorder: the first
state, the state after each control step with the frames rendered for the record, each observation the agent took,
each turn, each motion's planned paths and targets, an error, the end). A :class:`LiveView` only queues each of these
(:class:`~robodojo.episodes.feed.DroppingFeed`, config/view.yaml's ``queue_size``): a thread of its own turns them into
Rerun logs (:class:`~robodojo.episodes.viewing.episode_log.EpisodeLog`, the layout ``robodojo view`` gives a record)
and sends them to the target. When that thread falls behind (a slow or stalled viewer, a file nobody reads) the
oldest queued updates are dropped and counted (:class:`LiveStats`), and the control loop never waits for the
viewer. States come at most ``state_rate_hz`` (besides those with frames and each turn's); the rest are left out in
the hook, on the control thread, before they cost a queue entry. Nothing here renders: camera frames are those the
episode rendered anyway, at most ``camera_rate_hz`` per camera besides the agent's own.

Episodes pick their live view up from the environment (:data:`VIEW_ENV`), so the ``--view`` of ``robodojo run``,
``eval``, ``compare`` and ``graph`` reaches episodes in worker processes and in the graph's agent node alike.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robodojo.agents.base import TurnRecord
from robodojo.episodes.feed import DroppingFeed
from robodojo.episodes.frame_jpeg import frame_jpeg  # the pictures episode.mcap encoded, not encoded again
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.episode_log import EpisodeLog, LinkFrames, move_targets, stamp_of, target_point
from robodojo.episodes.viewing.settings import ViewSettings, shipped_view_settings
from robodojo.episodes.viewing.sinks import RRD_FILE, LiveTarget, new_recording, parse_live_target, save_to, stream_to
from robodojo.motion.path_markers import MarkerKind, PathMarker
from robodojo.observation import CameraFrame, Observation
from robodojo.robots.config import RobotConfig
from robodojo.robots.urdf import parse_urdf

#: a flush of the sink at the end of an episode takes at most this part of close_timeout_s; the rest is the queue's
_FLUSH_SHARE = 0.5
log = logging.getLogger(__name__)
STATS_LOG_KEY = "live_stats"  #: the LiveStats of a closed live view, on its log record (``record.live_stats``)
#: control steps whose link frames go to Rerun in one call: 0.2 s of simulation time at 25 Hz, a delay no one sees
LINK_BATCH_STATES = 5
OUTCOME_KEYS = ("end_reason", "success", "score", "steps_used")  #: metrics.json's fields in the live view's last line


@dataclass(frozen=True)
class LiveStats:
    """What a live view did with the updates its episode handed it."""

    queued: int  #: updates handed over by the episode
    thinned: int  #: states the episode offered that state_rate_hz left out (by design: not counted as dropped)
    logged: int  #: updates that reached Rerun
    dropped: int  #: updates dropped: the queue was full, or still waiting when the episode's end stopped waiting
    closed: bool  #: the view's thread ended within close_timeout_s (False: a stalled sink, left behind)
    failure: str = ""  #: the first error the view's thread met ("" for none); the episode went on regardless


def live_target_from_env() -> LiveTarget | None:
    """The live target ``$ROBODOJO_VIEW`` names, None when it is unset or empty (ConfigError when it is wrong)."""
    text = os.environ.get(VIEW_ENV, "").strip()
    return parse_live_target(text) if text else None


def open_live_view(folder: Path, robot: RobotConfig, target: LiveTarget | None = None) -> LiveView | None:
    """The live view of the episode recorded in ``folder`` (its name names the recording), to ``target`` or to the
    environment's (:data:`VIEW_ENV`); None when there is none."""
    target = target or live_target_from_env()
    if target is None:
        return None
    return LiveView(folder.name, robot, target, folder, shipped_view_settings())


class LiveView:
    """One episode's live view (see the module docstring). The hooks match the recorder's watchers; each only queues
    and never raises. :meth:`close` waits at most ``close_timeout_s`` and returns :class:`LiveStats`."""

    def __init__(self, name: str, robot: RobotConfig, target: LiveTarget, folder: Path, settings: ViewSettings) -> None:
        self.name = name
        self.robot = robot
        self.target = target
        self.folder = folder
        self.settings = settings
        self._queued = 0
        self._thinned = 0
        self._state_period_ns = round(settings.state_period_s() * 1e9)
        self._last_state_ns: int | None = None  # stamp of the latest state queued (ticks come from one thread)
        self._lock = threading.Lock()  # _queued: hooks come from the control thread and the agent's
        self._stats: LiveStats | None = None
        self._consumer = _LiveLogger(self)
        self._feed: DroppingFeed[tuple[Any, ...]] = DroppingFeed(
            self._consumer.consume, capacity=settings.queue_size, name=f"rerun-live-{name}"[:40]
        )

    # -- the watcher's hooks: on the episode's threads, queue only ----------------------------------------------------
    def _put(self, item: tuple[Any, ...]) -> None:
        with self._lock:
            self._queued += 1
        self._feed.put(item)

    def start(self, state: Observation, instruction: str) -> None:
        """The episode's first state and its instruction."""
        self._last_state_ns = stamp_of(state.step, 0.0, self.robot.control_dt_s)
        self._put(("start", state, instruction))

    def tick(self, state: Observation, within_step_s: float = 0.0) -> None:
        """The state after a control step (``within_step_s`` past it), with the frames rendered for the record. A
        state without frames sooner than state_rate_hz allows after the last one is left out here, on the control
        thread, before it costs a queue entry or the view thread's time."""
        stamp = stamp_of(state.step, within_step_s, self.robot.control_dt_s)
        last = self._last_state_ns
        if not state.cameras and last is not None and 0 <= stamp - last < self._state_period_ns:
            with self._lock:
                self._thinned += 1
            return
        self._last_state_ns = stamp
        self._put(("tick", state, within_step_s))

    def observation(self, obs: Observation) -> None:
        """An observation the agent took (its frames are shown whatever the camera rate)."""
        if obs.cameras:
            self._put(("observation", obs))

    def turn(self, record: TurnRecord, state: Observation) -> None:
        """An answered call: the model's text, tool calls and results, move targets; the state after it."""
        self._put(("turn", record, state))

    def error(self, turn: int, text: str) -> None:
        """What ended the episode early."""
        self._put(("error", turn, text))

    def markers(self, markers: Sequence[PathMarker]) -> None:
        """A motion about to play: each arm's planned grasp-point path and target."""
        self._put(("markers", tuple(markers)))

    def close(self, metrics: dict[str, Any] | None = None) -> LiveStats:
        """The end (``metrics``: metrics.json's last state, shown as the outcome): wait up to close_timeout_s for the
        queue and the sink, then give up on them (a stalled sink keeps its thread; nothing waits for it)."""
        if self._stats is not None:
            return self._stats
        self._put(("end", metrics or {}))
        closed = self._feed.close(self.settings.close_timeout_s)
        with self._lock:
            queued, thinned = self._queued, self._thinned
        logged = self._feed.consumed
        failure = self._feed.failure or self._consumer.failure
        self._stats = stats = LiveStats(
            queued=queued, thinned=thinned, logged=logged, dropped=queued - logged, closed=closed,
            failure="" if failure is None else f"{type(failure).__name__}: {failure}",
        )  # fmt: skip
        # A warning when the view lost something: the episode went on, its record is whole, the viewer is not.
        level = logging.WARNING if stats.dropped or not stats.closed or stats.failure else logging.INFO
        log.log(
            level, "live view of %s (%s): %d of %d updates shown, %d dropped%s%s", self.name, self.target.text(),
            logged, queued, stats.dropped, "" if closed else "; the sink did not finish in time",
            f"; {stats.failure}" if stats.failure else "", extra={STATS_LOG_KEY: stats},
        )  # fmt: skip
        return stats

    @property
    def stats(self) -> LiveStats | None:
        """The stats after :meth:`close` (None before)."""
        return self._stats


class _LiveLogger:
    """The view's thread: turns queued updates into Rerun logs (all Rerun calls of a live view happen here)."""

    def __init__(self, view: LiveView) -> None:
        self.view = view
        self.robot = view.robot
        self.dt_s = view.robot.control_dt_s
        self.camera_period_ns = round(view.settings.camera_period_s() * 1e9) if view.settings.camera_rate_hz else -1
        self.log: EpisodeLog | None = None
        self.frames: LinkFrames | None = None
        self.latest_ns = 0
        self.state_step = -1  # the env step of the latest state shown
        self.tcp_now: dict[str, tuple[float, float, float]] = {}
        # where the current turn began: the state after the previous turn (ticks move on during its motion)
        self.turn_start_ns = 0
        self.turn_start_tcp: dict[str, tuple[float, float, float]] = {}
        self.open_error: BaseException | None = None
        self.frame_ns: dict[str, int] = {}  # camera -> stamp of its latest frame shown
        self.rate_ns: dict[str, int] = {}  # camera -> stamp of its latest frame shown from the record's renders
        self.failure: BaseException | None = None
        self.links: list[tuple[int, np.ndarray, np.ndarray]] = []  # states' link frames not sent yet

    def consume(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if self.open_error is not None:  # the sink never opened: nothing to log to (counted as not logged)
            raise self.open_error
        if self.log is None:
            try:
                self.log = self._open()
            except Exception as exc:
                self.open_error = exc
                raise
        if kind != "tick":
            self._flush_links()  # a state's links before anything later (a turn's texts, the end)
        if kind == "start":
            _, state, instruction = item
            stamp = self._stamp(state)
            self.log.text(stamp, "instruction", instruction)
            self._state(state, stamp, agent_frames=False)
            self._turn_starts(stamp)
        elif kind == "tick":
            _, state, within_step_s = item
            self._state(state, self._stamp(state, within_step_s), agent_frames=False, tick=True)
        elif kind == "observation":
            _, obs = item
            self._frames(obs, self._stamp(obs), agent_frames=True)
        elif kind == "turn":
            self._turn(item[1], item[2])
        elif kind == "error":
            _, turn, text = item
            self.log.text(self.latest_ns, "error", f"turn {turn}: {text}")
        elif kind == "markers":
            self._markers(item[1])
        elif kind == "end":
            self._end(item[1])

    def _open(self) -> EpisodeLog:
        view = self.view
        target = view.target
        rec = new_recording(view.name)
        if target.url:
            stream_to(rec, target.url)
        else:
            # a file nobody reads (a FIFO) blocks here, this thread only: the queue then drops, counted
            save_to(rec, view.folder / RRD_FILE if target.episode_folder else target.file or Path(RRD_FILE))
        log = EpisodeLog(rec, trail_period_s=view.settings.trail_period_s)
        text = self.robot.scene_urdf.read_text(encoding="utf-8")
        self.frames = LinkFrames(parse_urdf(text, str(self.robot.scene_urdf)))
        log.robot(text)
        log.send_blueprint(self.robot.camera_names)
        return log

    def _stamp(self, obs: Observation, within_step_s: float = 0.0) -> int:
        stamp = stamp_of(obs.step, within_step_s, self.dt_s)
        self.latest_ns = max(self.latest_ns, stamp)
        return stamp

    def _state(self, state: Observation, stamp: int, *, agent_frames: bool, tick: bool = False) -> None:
        """A state: every tick's (the graph's come several a step), a turn's unless a state of its step was shown
        already, as in the record."""
        assert self.log is not None and self.frames is not None
        self._frames(state, stamp, agent_frames=agent_frames)
        if state.step == self.state_step and not tick:
            return
        self.state_step = state.step
        q: dict[str, float] = {}
        for arm_name, arm in state.arms.items():
            q.update(zip(arm.joint_names, (float(v) for v in arm.joint_positions_rad), strict=True))
            try:
                config = self.robot.arm(arm_name)
            except KeyError:
                continue
            q[config.gripper_joint] = float(arm.gripper_opening * config.gripper_max_m)
            self.tcp_now[arm_name] = arm.tcp_pos_m
            self.log.tcp(stamp, arm_name, arm.tcp_pos_m)
        translations, quats = self.frames.at(q)
        self.links.append((stamp, translations, quats))
        if len(self.links) >= LINK_BATCH_STATES:
            self._flush_links()

    def _flush_links(self) -> None:
        """Send the states' link frames gathered so far in one call (one call per state costs the control loop
        the GIL for longer than the frames are worth)."""
        if not self.links or self.log is None or self.frames is None:
            return
        n = len(self.frames.children)
        stamps = [stamp for stamp, _, _ in self.links for _ in range(n)]
        translations = np.concatenate([t for _, t, _ in self.links])
        quats = np.concatenate([q for _, _, q in self.links])
        self.log.link_frames(stamps, self.frames.parents * len(self.links), self.frames.children * len(self.links),
                             translations, quats)  # fmt: skip
        self.links = []

    def _frames(self, obs: Observation, stamp: int, *, agent_frames: bool) -> None:
        assert self.log is not None
        for name, frame in obs.cameras.items():
            if self.frame_ns.get(name) == stamp:  # the same picture: the record's frame and the agent's at one step
                continue
            if not agent_frames:  # the record's frames, at most camera_rate_hz; the agent's do not count
                last = self.rate_ns.get(name)
                if self.camera_period_ns < 0 or (last is not None and stamp - last < self.camera_period_ns):
                    continue
                self.rate_ns[name] = stamp
            self.frame_ns[name] = stamp
            self._camera(frame, stamp)

    def _camera(self, frame: CameraFrame, stamp: int) -> None:
        assert self.log is not None
        calibration = frame.calibration
        self.log.camera(
            stamp, frame.name, frame_jpeg(frame.rgb), np.asarray(calibration.K, dtype=float),
            (calibration.width, calibration.height), np.asarray(calibration.T_world_cam, dtype=float),
        )  # fmt: skip

    def _turn(self, record: TurnRecord, state: Observation) -> None:
        assert self.log is not None
        start = self.turn_start_ns
        reply = record.reply
        if reply.content:
            self.log.text(start, "agent", f"turn {record.turn}: {reply.content}")
        for call in reply.tool_calls:
            self.log.text(start, "agent", f"turn {record.turn}: {call.name}({call.arguments})")
        # The targets in the world frame as the agent sent them to the motion server (after a perturbation probe's
        # mapping), else as the model wrote them.
        world = record.details.get("world_targets") if isinstance(record.details, dict) else None
        if isinstance(world, dict):
            named = move_targets(json.dumps({"targets": world}), self.tcp_now)
        else:
            named = {}
            for call in reply.tool_calls:
                named.update(move_targets(call.arguments, self.tcp_now))
        for arm, dims in named.items():
            tcp = self.turn_start_tcp.get(arm)
            point = target_point(dims, tcp)
            if point is not None:
                self.log.target(start, arm, point, tcp)
        stamp = self._stamp(state)
        for result in record.tool_results:
            self.log.text(stamp, "tool_result", f"turn {record.turn}: {result}")
        self._state(state, stamp, agent_frames=False)
        self._turn_starts(stamp)

    def _markers(self, markers: tuple[PathMarker, ...]) -> None:
        """Stamped where the motion starts (the latest state, as episode.mcap stamps them)."""
        assert self.log is not None
        for m in markers:
            line = m.kind is MarkerKind.LINE_STRIP
            points = m.points_m if line else (m.position_m,)
            self.log.planned(self.latest_ns, f"{m.namespace}/{m.id}", points, line=line, width_m=m.scale_m,
                             color_rgba=m.color_rgba)  # fmt: skip

    def _turn_starts(self, stamp: int) -> None:
        """The next turn begins from the state just shown."""
        self.turn_start_ns = stamp
        self.turn_start_tcp = dict(self.tcp_now)

    def _end(self, metrics: dict[str, Any]) -> None:
        assert self.log is not None
        if metrics:
            outcome = ", ".join(f"{k} {metrics[k]}" for k in OUTCOME_KEYS if k in metrics)
            self.log.text(self.latest_ns, "outcome", outcome or json.dumps(metrics)[:200])
        self.log.finish()
        rec = self.log.rec
        try:
            rec.flush(timeout_sec=self.view.settings.close_timeout_s * _FLUSH_SHARE)
        except RuntimeError as exc:  # a viewer that is not there: what was sent is lost, the episode is not
            self.failure = exc
        rec.disconnect()
