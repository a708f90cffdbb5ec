"""The episode runner: reset a task, loop agent turns until an end condition, record everything.

An episode ends on the first of: the benchmark's own success signal, give_up (or the agent's finish), the LLM-call
budget, the env step budget, an LLM that cannot be reached after the client's bounded retries, or a crash. Whatever
ends it, the record holds everything up to that point and metrics.json says why it ended.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from robodojo.agents.base import Agent, EpisodeContext, LlmCaller
from robodojo.agents.llm.types import LlmError, Usage
from robodojo.agents.recorder import EpisodeRecorder
from robodojo.errors import ConfigError, RobodojoError
from robodojo.motion.backend import RobotBackend
from robodojo.motion.server import MotionServer
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


def run_episode(
    world: EmbeddedWorld, agent: Agent, llm: LlmCaller, spec: EpisodeSpec, out_root: Path, *, model: str = ""
) -> EpisodeResult:
    """Run one episode of ``spec.task`` with ``agent`` talking to ``llm``; record it under ``out_root``."""
    start = time.perf_counter()
    world.reset(spec.task, seed=spec.seed, variant=spec.variant)
    truth = world.privileged()  # the runner's alone: success, score
    assert world.task is not None
    context = episode_context(world, llm_call_budget=spec.llm_call_budget)
    folder = episode_folder(out_root, spec, agent.name)
    recorder = EpisodeRecorder(
        folder,
        {
            "task": spec.task,
            "seed": spec.seed,
            "variant": spec.variant,
            "robot": world.robot.name,
            "instruction": world.instruction,
            "agent": agent.name,
            "model": model,
            "llm_call_budget": spec.llm_call_budget,
            "env_step_limit": world.task.step_limit,
        },
    )
    calls, usage, reason, error = 0, Usage(), EndReason.CRASHED, ""

    def metrics() -> dict:
        return {
            "success": truth.success(),
            "score": truth.score(),
            "end_reason": reason.value,
            "llm_calls": calls,
            "input_tokens": usage.input_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": usage.cost_usd,
            "steps_used": world.step_count,
            "env_step_limit": world.task.step_limit,  # type: ignore[union-attr]
            "wall_time_s": time.perf_counter() - start,
            "error": error,
        }

    try:
        agent.begin(context)
        turn = 0
        while True:
            if truth.success():
                reason = EndReason.SUCCESS
                break
            if calls >= spec.llm_call_budget:
                reason = EndReason.LLM_CALL_BUDGET
                break
            if world.steps_left <= 0:
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
            recorder.record_turn(record, world.observe(cameras=()))
            reason = EndReason.RUNNING
            recorder.write_metrics(metrics())
            if truth.success():
                reason = EndReason.SUCCESS
                break
            if record.gave_up:
                reason = EndReason.GIVE_UP
                break
            if record.finished:
                reason = EndReason.FINISHED
                break
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
    )
