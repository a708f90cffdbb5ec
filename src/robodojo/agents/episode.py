"""The episode runner: reset a task, loop agent turns until an end condition, record everything.

An episode ends on the first of: the benchmark's own success signal, give_up (or the agent's finish), the LLM-call
budget, the env step budget, an LLM that cannot be reached after the client's bounded retries, a robot backend that
stops answering, or a crash. Whatever ends it, the record holds everything up to that point and metrics.json says why
it ended.

Where the episode runs is an :class:`EpisodeHost`: :class:`WorldHost` for the embedded world in this process, or the
ROS agent node's host for a simulator elsewhere on the graph. The runner and the record are the same for both.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Protocol

from robodojo.agents.base import Agent, EpisodeContext, LlmCaller
from robodojo.agents.llm.types import LlmError, Usage
from robodojo.agents.recorder import EpisodeRecorder
from robodojo.errors import BackendLostError, ConfigError, RobodojoError
from robodojo.motion.backend import RobotBackend
from robodojo.motion.report import StopReason
from robodojo.motion.server import MotionServer
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig
from robodojo.sim.world import EmbeddedWorld

DEFAULT_LLM_CALL_BUDGET = 100


class EndReason(str, Enum):
    RUNNING = "running"  # what metrics.json says while the episode is still going
    SUCCESS = "success"
    GIVE_UP = "give_up"
    FINISHED = "finished"  # the agent declared it was done (code cells' finish tool) without success
    LLM_CALL_BUDGET = "llm_call_budget"
    STEP_BUDGET = "step_budget"
    LLM_ERROR = "llm_error"
    BACKEND_LOST = "backend_lost"  # the robot backend stopped answering or restarted (ROS graph)
    CRASHED = "crashed"


@dataclass(frozen=True)
class EpisodeSpec:
    task: str
    seed: int = 0
    variant: str = "standard"
    llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET

    def __post_init__(self) -> None:
        if self.llm_call_budget < 1:
            raise ConfigError(f"llm_call_budget must be at least 1, got {self.llm_call_budget}")


@dataclass(frozen=True)
class EpisodeResult:
    success: bool
    score: float
    end_reason: EndReason
    llm_calls: int
    usage: Usage
    steps_used: int
    wall_time_s: float
    folder: Path
    error: str = field(default="", repr=False)


def episode_folder(out_root: Path, spec: EpisodeSpec, agent: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    return out_root / f"{spec.task}_{spec.variant}_seed{spec.seed}_{agent}_{stamp}"


def episode_context(
    world: EmbeddedWorld, *, llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET, backend: RobotBackend | None = None
) -> EpisodeContext:
    """What an agent gets for the task loaded in ``world`` (after ``reset``). ``backend`` may wrap the world."""
    if world.task is None:
        raise RobodojoError("no task loaded; call world.reset(task, seed) first")
    return EpisodeContext(
        task=world.task.name,
        instruction=world.instruction,
        recipe=world.task.recipe_text(),
        robot=world.robot,
        backend=backend or world,
        motion=MotionServer(world),
        is_success=world.privileged().success,
        llm_call_budget=llm_call_budget,
    )


class EpisodeHost(Protocol):
    """Where an episode runs: starts it, and answers the benchmark's questions about it while it runs."""

    robot: RobotConfig

    def start(self, spec: EpisodeSpec) -> EpisodeContext:
        """Begin the episode ``spec`` names (a reset, or joining one that runs) and give the agent its context."""
        ...

    def check(self) -> None:
        """Raise BackendLostError when the robot backend is gone or restarted (never for the embedded world)."""
        ...

    def success(self) -> bool: ...

    def score(self) -> float: ...

    @property
    def steps_used(self) -> int: ...

    @property
    def steps_left(self) -> int: ...

    @property
    def step_limit(self) -> int: ...

    def state(self) -> Observation:
        """The agent-side state without images, for the record after each turn."""
        ...


class WorldHost:
    """The embedded world in this process; success and score come from its privileged view."""

    def __init__(self, world: EmbeddedWorld) -> None:
        self.world = world
        self.robot = world.robot

    def start(self, spec: EpisodeSpec) -> EpisodeContext:
        self.world.reset(spec.task, seed=spec.seed, variant=spec.variant)
        self._truth = self.world.privileged()
        return episode_context(self.world, llm_call_budget=spec.llm_call_budget)

    def check(self) -> None:
        pass

    def success(self) -> bool:
        return self._truth.success()

    def score(self) -> float:
        return self._truth.score()

    @property
    def steps_used(self) -> int:
        return self.world.step_count

    @property
    def steps_left(self) -> int:
        return self.world.steps_left

    @property
    def step_limit(self) -> int:
        assert self.world.task is not None
        return self.world.task.step_limit

    def state(self) -> Observation:
        return self.world.observe(cameras=())


def run_episode(
    host: EpisodeHost | EmbeddedWorld,
    agent: Agent,
    llm: LlmCaller,
    spec: EpisodeSpec,
    out_root: Path,
    *,
    model: str = "",
) -> EpisodeResult:
    """Run one episode of ``spec.task`` with ``agent`` talking to ``llm``; record it under ``out_root``.

    ``host`` is where it runs; an EmbeddedWorld stands for ``WorldHost(world)``.
    """
    start = time.perf_counter()
    if isinstance(host, EmbeddedWorld):
        host = WorldHost(host)
    context = host.start(spec)
    folder = episode_folder(out_root, spec, agent.name)
    recorder = EpisodeRecorder(
        folder,
        {
            "task": spec.task,
            "seed": spec.seed,
            "variant": spec.variant,
            "robot": host.robot.name,
            "instruction": context.instruction,
            "agent": agent.name,
            "model": model,
            "llm_call_budget": spec.llm_call_budget,
            "env_step_limit": host.step_limit,
        },
    )
    calls, usage, reason, error = 0, Usage(), EndReason.CRASHED, ""

    def metrics() -> dict:
        return {
            "success": host.success(),
            "score": host.score(),
            "end_reason": reason.value,
            "llm_calls": calls,
            "input_tokens": usage.input_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": usage.cost_usd,
            "steps_used": host.steps_used,
            "env_step_limit": host.step_limit,
            "wall_time_s": time.perf_counter() - start,
            "error": error,
        }

    try:
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
                record = agent.turn(llm, turn)
            except LlmError as exc:
                recorder.record_error(turn, exc)
                reason, error = EndReason.LLM_ERROR, str(exc)
                calls += 1  # the call was made (and retried); it counts against the budget
                break
            calls += 1
            usage = usage + record.reply.usage
            recorder.record_turn(record, host.state())
            reason = EndReason.RUNNING
            recorder.write_metrics(metrics())
            move = record.move
            if move is not None and move.stop_reason is StopReason.BACKEND_LOST:
                raise BackendLostError(
                    f"the robot backend stopped answering during a motion ({move.steps_used} of {move.waypoints} "
                    "points played)" if move.accepted else move.tool_text
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
    except BaseException as exc:
        reason, error = EndReason.CRASHED, "".join(traceback.format_exception(exc))
        recorder.record_error(calls + 1, exc)
        raise
    finally:
        final = metrics()
        recorder.write_metrics(final)
        recorder.close()
    return EpisodeResult(
        success=final["success"],
        score=final["score"],
        end_reason=reason,
        llm_calls=calls,
        usage=usage,
        steps_used=final["steps_used"],
        wall_time_s=final["wall_time_s"],
        folder=folder,
        error=error,
    )
