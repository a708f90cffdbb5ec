"""The episode runner: reset a task, loop agent turns until an end condition, record everything.

An episode ends on the first of: the benchmark's own success signal, give_up (or the agent's finish), the LLM-call
budget, the env step budget, an LLM that cannot be reached after the client's bounded retries, a robot backend that
stops answering, an interruption from outside (the host raises EpisodeInterrupted), or a crash. Whatever ends it, the
record holds everything up to that point and its outcome (metrics.json) says why it ended.

Where the episode runs is an :class:`EpisodeHost`: :class:`WorldHost` for the embedded world in this process, or the
ROS agent node's host for a simulator elsewhere on the graph. The runner and the record are the same for both.

The agent observes through a view of its backend that shows the recorder every observation it takes, so the camera
frames in episode.mcap are the ones the agent got, and none is rendered for the record alone.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from numpy.typing import ArrayLike

from robodojo.agents.base import Agent, LlmCaller
from robodojo.agents.llm.types import LlmError, Usage
from robodojo.episodes.clock import PAUSED_CLOCK, ClockSetting, EpisodeClock
from robodojo.episodes.record import RecordMeta
from robodojo.episodes.record_settings import RecordSettings, shipped_record_settings
from robodojo.episodes.recorder import EpisodeRecorder, RecordWatcher, StepSeen
from robodojo.episodes.spec import EndReason, EpisodeOutcome, EpisodeResult, EpisodeSpec
from robodojo.errors import BackendLostError, EpisodeInterrupted
from robodojo.motion.backend import RobotBackend
from robodojo.motion.report import StopReason
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

if TYPE_CHECKING:  # the in-process hosts bring the simulator: a graph's agent node runs its own host
    from robodojo.episodes.hosts import EpisodeHost


def episode_folder(out_root: Path, spec: EpisodeSpec, agent: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    return out_root / f"{spec.task}_{spec.variant}_seed{spec.seed}_{agent}_{stamp}"


class _ObservedBackend:
    """The agent's backend, unchanged but for ``observe``, which also hands each observation to ``seen``."""

    __slots__ = ("__backend", "__seen", "robot")

    def __init__(self, backend: RobotBackend, seen: Callable[[Observation], None]) -> None:
        self.__backend = backend
        self.__seen = seen
        self.robot: RobotConfig = backend.robot

    @property
    def control_dt_s(self) -> float:
        return self.__backend.control_dt_s

    @property
    def steps_left(self) -> int:
        return self.__backend.steps_left

    def observe(self, cameras: Iterable[str] | None = None, **options: Any) -> Observation:
        """The backend's observation; ``options`` (the embedded world's ``depth``) pass through, and a backend without
        them raises its TypeError as before (the episode context says whether the backend takes ``depth``)."""
        observe: Callable[..., Observation] = self.__backend.observe
        obs = observe(cameras, **options)
        self.__seen(obs)
        return obs

    def step(
        self,
        joint_targets: Mapping[str, ArrayLike] | None = None,
        gripper_targets: Mapping[str, float] | None = None,
    ) -> None:
        self.__backend.step(joint_targets, gripper_targets)

    def hold(self) -> None:
        self.__backend.hold()


def _follow_steps(host: EpisodeHost, seen: StepSeen, camera_every_steps: int) -> Callable[[], None]:
    """Hand ``seen`` the state after every control step of ``host``'s robot (every camera's frame too each
    ``camera_every_steps`` steps; 0: never), where the host can (the embedded world's
    :meth:`~robodojo.episodes.hosts.WorldHost.follow_steps`, the ROS agent node's
    ``robodojo.nodes.agent_graph.GraphEpisodeHost.follow_steps``); the function that stops it. Other hosts are
    recorded after each turn only."""
    follow = getattr(host, "follow_steps", None)
    return follow(seen, camera_every_steps) if callable(follow) else lambda: None


def _live_views(folder: Path, robot: RobotConfig) -> tuple[RecordWatcher, ...]:
    """The live view ``$ROBODOJO_VIEW`` asks for (``--view``; robodojo.episodes.viewing.live), as the record's
    watcher: () without one, and then Rerun is not even imported."""
    from robodojo.episodes.viewing import VIEW_ENV

    if not os.environ.get(VIEW_ENV, "").strip():
        return ()
    from robodojo.episodes.viewing.live import open_live_view

    view = open_live_view(folder, robot)
    return () if view is None else (view,)


def run_episode(
    host: EpisodeHost,
    agent: Agent,
    llm: LlmCaller,
    spec: EpisodeSpec,
    out_root: Path,
    *,
    model: str = "",
    mcap: bool = True,
    record_settings: RecordSettings | None = None,
    clock: ClockSetting = PAUSED_CLOCK,
) -> EpisodeResult:
    """Run one episode of ``spec.task`` with ``agent`` talking to ``llm``; record it under ``out_root``.

    ``host`` is where it runs (:class:`~robodojo.episodes.hosts.WorldHost` for the embedded world); ``mcap=False``
    leaves episode.mcap out of the record; ``record_settings`` say what else it holds (default: config/record.yaml);
    ``clock`` how much world time a model call costs (robodojo.episodes.clock; default paused: none).
    """
    start = time.perf_counter()
    context = host.start(spec)
    timed = EpisodeClock(clock, host)  # every model call goes through timed.caller(llm); the agent reports the rest
    folder = episode_folder(out_root, spec, agent.name)
    recorder = EpisodeRecorder(
        folder,
        RecordMeta(
            task=spec.task,
            seed=spec.seed,
            variant=spec.variant,
            robot=host.robot.name,
            instruction=context.instruction,
            agent=agent.name,
            model=model,
            # profile, base URL, timeouts: what a reader needs to reproduce the calls (LlmClient.describe)
            llm=describe() if callable(describe := getattr(llm, "describe", None)) else {},
            # what the agent sends the model: images, image horizon, known context (an agent's describe())
            agent_settings=describe() if callable(describe := getattr(agent, "describe", None)) else {},
            llm_call_budget=spec.llm_call_budget,
            env_step_limit=host.step_limit,
            clock=clock.text,
        ),
        host.robot,
        mcap=mcap,
        watchers=_live_views(folder, host.robot),
    )
    calls, usage, reason, error = 0, Usage(), EndReason.CRASHED, ""

    def outcome() -> EpisodeOutcome:
        return EpisodeOutcome.with_usage(
            usage,
            success=host.success(),
            score=host.score(),
            end_reason=reason,
            llm_calls=calls,
            steps_used=host.steps_used,
            wall_time_s=time.perf_counter() - start,
            latency_applied_s=round(timed.total_s, 6),
            error=error,
        )

    unfollow: Callable[[], None] = lambda: None  # noqa: E731 - replaced once the record has started
    unfollow_paths: Callable[[], None] = lambda: None  # noqa: E731 - replaced on the graph
    try:
        recorder.record_start(host.state(), context.instruction)
        if mcap or recorder.watchers:  # episode.mcap and a live view take every step's state; nothing else does
            every = (record_settings or shipped_record_settings()).camera_every_steps(host.robot.control_dt_s)
            unfollow = _follow_steps(host, recorder.record_tick, every)
            plan_observers = getattr(context.motion, "plan_observers", None)  # in process: the MotionServer's
            if isinstance(plan_observers, list):
                plan_observers.append(recorder.record_plan)
            elif callable(follow_paths := getattr(host, "follow_planned_paths", None)):  # the graph's motion server
                unfollow_paths = follow_paths(recorder.record_markers)
        context = dataclasses.replace(
            context, backend=_ObservedBackend(context.backend, recorder.record_observation), agent_time=timed
        )
        clocked_llm = timed.caller(llm)
        agent.begin(context)
        turn = 0
        while True:
            host.check()
            if host.success():
                reason = EndReason.SUCCESS
                break
            if calls >= spec.llm_call_budget:
                reason = EndReason.LLM_CALL_BUDGET
                break
            if host.steps_left <= 0:
                reason = EndReason.STEP_BUDGET
                break
            turn += 1
            try:
                record = agent.turn(clocked_llm, turn)
            except LlmError as exc:
                recorder.record_failed_call(turn, exc)
                recorder.record_error(turn, exc)
                reason, error = EndReason.LLM_ERROR, str(exc)
                # the call was made (and retried): it counts against the budget; a request refused before
                # sending (too large for the model's context: attempts 0) was never made
                calls += 1 if exc.attempts else 0
                break
            calls += 1
            record = timed.stamp(record)
            usage = usage + record.reply.usage
            recorder.record_turn(record, host.state())
            reason = EndReason.RUNNING
            recorder.write_metrics(outcome(), host.step_limit)
            move = record.move
            if move is not None and move.stop_reason is StopReason.BACKEND_LOST:
                raise BackendLostError(
                    f"the robot backend stopped answering during a motion ({move.steps_used} of {move.waypoints} "
                    "points played)"
                    if move.accepted
                    else move.tool_text
                )
            if host.success():
                reason = EndReason.SUCCESS
                break
            if record.gave_up:
                reason = EndReason.GIVE_UP
                break
            if record.finished:
                reason = EndReason.FINISHED
                break
    except BackendLostError as exc:
        reason, error = EndReason.BACKEND_LOST, str(exc)
        recorder.record_error(calls + 1, exc)
    except EpisodeInterrupted as exc:  # from host.check() between turns, or a motion refused during the turn
        reason, error = EndReason.INTERRUPTED, str(exc)
    except BaseException as exc:
        reason, error = EndReason.CRASHED, "".join(traceback.format_exception(exc))
        recorder.record_error(calls + 1, exc)
        raise
    finally:
        unfollow()
        unfollow_paths()
        final = outcome()
        recorder.write_metrics(final, host.step_limit)
        recorder.close()
    return EpisodeResult(**final.outcome_fields(), folder=folder)
