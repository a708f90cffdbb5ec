"""Running one campaign episode where a worker is (:func:`run_job`): the thread's world for the task's robot and
the episode itself (robodojo.episodes.compare.run_one, as ``robodojo compare`` runs its episodes), as an
:class:`~robodojo.campaigns.results.EpisodeRow`.

The same function runs in a local worker process, in one of its threads, or in a Ray actor, so that results do not
depend on where an episode ran. Each thread keeps one embedded world per robot (building one costs seconds; a reset
puts it in the episode's seeded layout whatever ran before).
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

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


def run_job(job: EpisodeJob, campaign_dir: str | Path, try_index: int) -> EpisodeRow:
    """Run ``job`` as try ``try_index``, recorded under the campaign's ``episodes/<id>/try<k>/``.

    Never raises: an exception anywhere (the world, the client, the agent, a setting) gives a row with end_reason
    ``crashed``, the exception's last line in ``error`` and the traceback in the try's crash.txt; the campaign
    retries it.
    """
    from robodojo.agents.llm.settings import run_llm_settings
    from robodojo.episodes import EpisodeSpec
    from robodojo.episodes.compare import run_one
    from robodojo.sim.tasks import get_task

    campaign_dir = Path(campaign_dir)
    out_root = try_dir(campaign_dir, job.episode_id, try_index)
    task = get_task(job.task)
    options = job.llm_options
    started = time.perf_counter()
    try:
        outcome = run_one(
            _world(task.robot),
            job.agent,
            job.llm_spec,
            EpisodeSpec(task=job.task, seed=job.seed, variant=job.variant, llm_call_budget=job.llm_call_budget),
            out_root,
            options.get("base_url"),
            settings=run_llm_settings(
                options.get("llm_config"),
                timeout_s=options.get("timeout_s"),
                retries=options.get("retries"),
                max_output_tokens=options.get("max_output_tokens"),
            ),
            tool_choice=options.get("tool_choice", "profile"),
            agent_options={**job.agent_options, "probes": job.condition.probe_options() or None},
            crash_log=out_root / CRASH_FILE,
        )
        ended: dict = {
            k: getattr(outcome, k)
            for k in ("success", "score", "end_reason", "llm_calls", "input_tokens", "cached_input_tokens",
                      "output_tokens", "cost_usd", "steps_used", "wall_time_s")
        }  # fmt: skip
        folder, error = Path(outcome.folder or out_root), outcome.error
    except Exception as exc:  # before the episode could start (the world, a setting) or a ConfigError run_one raises
        out_root.mkdir(parents=True, exist_ok=True)
        (out_root / CRASH_FILE).write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        ended = {"success": False, "score": 0.0, "end_reason": "crashed", "wall_time_s": time.perf_counter() - started}
        folder, error = out_root, "".join(traceback.format_exception_only(type(exc), exc))
    return EpisodeRow(
        episode_id=job.episode_id, task=job.task, variant=job.variant, seed=job.seed, agent=job.agent, llm=job.llm,
        condition=job.condition.name, capability=task.capability, tries=try_index, **ended,
        folder=str(folder.relative_to(campaign_dir)),
        error=error.strip().splitlines()[-1] if error.strip() else "",
    )  # fmt: skip
