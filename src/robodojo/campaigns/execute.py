"""Running one campaign episode where a worker is (:func:`run_job`): its world, agent and LLM client, the episode
runner, and the :class:`~robodojo.campaigns.results.EpisodeRow` of how it ended.

The same function runs in a local worker process, in one of its threads, or in a Ray actor, so that results do not
depend on where an episode ran. Each thread keeps one embedded world per robot (building one costs seconds; a reset
puts it in the episode's seeded layout whatever ran before).
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from pathlib import Path

from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.spec import EpisodeJob

_local = threading.local()
TRY_FOLDER = "try{}"  #: a try's folder under the episode's, numbered from 1


def episode_dir(campaign_dir: Path, episode_id: str) -> Path:
    return campaign_dir / "episodes" / episode_id


def try_dir(campaign_dir: Path, episode_id: str, try_index: int) -> Path:
    return episode_dir(campaign_dir, episode_id) / TRY_FOLDER.format(try_index)


def _world(robot: str):
    from robodojo.sim.world import EmbeddedWorld

    worlds = getattr(_local, "worlds", None)
    if worlds is None:
        worlds = _local.worlds = {}
    if robot not in worlds:
        worlds[robot] = EmbeddedWorld(robot)
    return worlds[robot]


def close_worlds() -> None:
    """Close this thread's worlds (a worker thread calls it before it ends)."""
    for world in getattr(_local, "worlds", {}).values():
        world.close()
    _local.worlds = {}


def run_job(job: EpisodeJob, campaign_dir: str | Path, try_index: int) -> EpisodeRow:
    """Run ``job`` as try ``try_index``, recorded under the campaign's ``episodes/<id>/try<k>/``.

    Never raises for an episode's own failure: an exception anywhere (world, client, agent) gives a row with
    end_reason ``crashed`` and the traceback's last line in ``error``, which the campaign retries.
    """
    from robodojo.agents.llm.client import open_llm
    from robodojo.agents.llm.settings import run_llm_settings
    from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
    from robodojo.episodes.factory import make_agent
    from robodojo.sim.tasks import get_task

    campaign_dir = Path(campaign_dir)
    out_root = try_dir(campaign_dir, job.episode_id, try_index)
    task = get_task(job.task)
    base = functools.partial(
        EpisodeRow,
        episode_id=job.episode_id, task=job.task, variant=job.variant, seed=job.seed, agent=job.agent, llm=job.llm,
        condition=job.condition.name, capability=task.capability, tries=try_index,
    )  # fmt: skip
    started = time.perf_counter()
    agent = None
    try:
        options = job.llm_options
        settings = run_llm_settings(
            options.get("llm_config"),
            timeout_s=options.get("timeout_s"),
            retries=options.get("retries"),
            max_output_tokens=options.get("max_output_tokens"),
        )
        spec = EpisodeSpec(task=job.task, seed=job.seed, variant=job.variant, llm_call_budget=job.llm_call_budget)
        replay = job.llm_spec.startswith("replay:")
        with open_llm(
            job.llm_spec,
            base_url=None if replay else options.get("base_url"),
            settings=settings,
            tool_choice=options.get("tool_choice", "profile"),
        ) as llm:
            agent = make_agent(
                job.agent,
                **job.agent_options,
                reply_reserve_tokens=llm.max_output_tokens,
                probes=job.condition.probe_options() or None,
            )
            result = run_episode(WorldHost(_world(task.robot)), agent, llm, spec, out_root, model=llm.model)
    except Exception as exc:  # the episode crashed: its record (if any) says where; the campaign retries it
        out_root.mkdir(parents=True, exist_ok=True)
        (out_root / "crash.txt").write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        return base(
            success=False,
            score=0.0,
            end_reason="crashed",
            wall_time_s=time.perf_counter() - started,
            folder=str(out_root.relative_to(campaign_dir)),
            error="".join(traceback.format_exception_only(type(exc), exc)).strip(),
        )
    finally:
        if agent is not None:
            getattr(agent, "close", lambda: None)()
    usage = result.usage
    return base(
        success=result.success,
        score=float(result.score),
        end_reason=result.end_reason.value,
        llm_calls=result.llm_calls,
        input_tokens=usage.input_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        steps_used=result.steps_used,
        wall_time_s=result.wall_time_s,
        folder=str(Path(result.folder).relative_to(campaign_dir)),
        error=result.error.strip().splitlines()[-1] if result.error.strip() else "",
    )
