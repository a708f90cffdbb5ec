"""Running one campaign episode where a worker is (:func:`run_job`): the thread's world for the task's robot and
the episode itself (robodojo.episodes.compare.run_one, as ``robodojo compare`` runs its episodes), as an
:class:`~robodojo.campaigns.results.EpisodeRow`: the episode's outcome with the job's identity (:func:`job_row`).

The same function runs in a local worker process, in one of its threads, or in a Ray actor, so that results do not
depend on where an episode ran. Each thread keeps one embedded world per robot (building one costs seconds; a reset
puts it in the episode's seeded layout whatever ran before).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.spec import EpisodeJob

_local = threading.local()
TRY_FOLDER = "try{}"  #: a try's folder under the episode's, numbered from 1
CRASH_FILE = "crash.txt"  #: a crashed try's traceback, in its folder


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


def job_row(
    job: EpisodeJob, try_index: int, campaign_dir: Path, folder: Path, outcome: Mapping[str, Any]
) -> EpisodeRow:
    """The row of ``job``'s try ``try_index``: ``outcome`` (EpisodeOutcome fields by name; its error cut to the last
    line, the cause) with the job's identity and the record ``folder`` (under ``campaign_dir``)."""
    from robodojo.sim.tasks import get_task

    error = str(outcome.get("error", "")).strip()
    return EpisodeRow(
        **{**outcome, "error": error.splitlines()[-1] if error else ""},
        episode_id=job.episode_id, task=job.task, variant=job.variant, seed=job.seed, agent=job.agent, llm=job.llm,
        condition=job.condition.name, capability=get_task(job.task).capability, tries=try_index,
        folder=str(folder.relative_to(campaign_dir)), clock=job.condition.clock,
    )  # fmt: skip


def run_job(job: EpisodeJob, campaign_dir: str | Path, try_index: int) -> EpisodeRow:
    """Run ``job`` as try ``try_index``, recorded under the campaign's ``episodes/<id>/try<k>/``.

    Never raises: an exception anywhere (the world, the client, the agent, a setting) gives a row with end_reason
    ``crashed``, the exception's last line in ``error`` and the traceback in the try's crash.txt; the campaign
    retries it.
    """
    from robodojo.agents.llm.settings import run_llm_settings
    from robodojo.episodes.compare import EpisodeRun, run_one
    from robodojo.episodes.spec import EndReason, EpisodeSpec
    from robodojo.sim.tasks import get_task

    campaign_dir = Path(campaign_dir)
    out_root = try_dir(campaign_dir, job.episode_id, try_index)
    options = job.llm_options
    started = time.perf_counter()
    try:
        run = EpisodeRun(
            agent=job.agent,
            llm_spec=job.llm_spec,
            episode=EpisodeSpec(task=job.task, seed=job.seed, variant=job.variant, llm_call_budget=job.llm_call_budget),
            out_root=out_root,
            base_url=options.get("base_url"),
            settings=run_llm_settings(
                options.get("llm_config"),
                timeout_s=options.get("timeout_s"),
                retries=options.get("retries"),
                max_output_tokens=options.get("max_output_tokens"),
                reasoning_effort=options.get("reasoning_effort"),
            ),
            tool_choice=options.get("tool_choice", "profile"),
            agent_options={**job.agent_options, "probes": job.condition.probe_options() or None},
            crash_log=out_root / CRASH_FILE,
            clock=job.condition.clock_setting,
        )
        result = run_one(_world(get_task(job.task).robot), run)
        return job_row(job, try_index, campaign_dir, result.folder, result.outcome_fields())
    except Exception as exc:  # before the episode could start (the world, a setting) or a ConfigError run_one raises
        out_root.mkdir(parents=True, exist_ok=True)
        (out_root / CRASH_FILE).write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        error = "".join(traceback.format_exception_only(type(exc), exc))
        crashed = {"end_reason": EndReason.CRASHED, "wall_time_s": time.perf_counter() - started, "error": error}
        return job_row(job, try_index, campaign_dir, out_root, crashed)
