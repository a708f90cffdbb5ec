"""The campaign coordinator (``robodojo eval``): prepares the campaign folder, works out what is left to run, hands
episodes to an engine, stores each as it ends and retries crashed ones.

Campaign folder::

    campaign.yaml     the spec (its fingerprint decides whether a folder can be resumed)
    meta.json         git revision, package versions, the machine, and each run of the command (start, engine)
    results.sqlite    the results store (robodojo.campaigns.store)
    episodes/<id>/try<k>/...   each try's episode record (robodojo.episodes.recorder)
    report/           written at the end (robodojo.campaigns.reporting)

Resuming is running the same command again: ended episodes are skipped, an episode cut off by Ctrl-C or a killed
process is run again (its cut-off try is kept and entered as killed), a crashed one again while its retries last.
Ctrl-C (or SIGTERM) ends the workers at once and leaves every ended episode stored exactly once.
"""

from __future__ import annotations

import getpass
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from robodojo import PACKAGE_ROOT
from robodojo.campaigns.engines import Engine
from robodojo.campaigns.execute import TRY_FOLDER, episode_dir, try_dir
from robodojo.campaigns.progress import CampaignProgress
from robodojo.campaigns.spec import CampaignSpec, EpisodeJob, campaign_spec_from_dict
from robodojo.campaigns.store import STORE_FILE, ResultsStore
from robodojo.errors import ConfigError

SPEC_FILE, META_FILE = "campaign.yaml", "meta.json"
POLL_S = 0.5  #: how often the coordinator looks for ended episodes
VERSIONED_PACKAGES = (
    "agent-bringup", "mujoco", "numpy", "openai", "opencv-python-headless", "scipy", "mcap", "ray", "franky-control",
    "arx5-interface",
)  # fmt: skip


@dataclass(frozen=True)
class CampaignOutcome:
    """How a run of the campaign command ended."""

    folder: Path
    total: int  #: episodes in the grid (skipped ones not counted)
    ended: int  #: of them, ended for good (in this run or before)
    successes: int
    crashed: int  #: ended as crashed after their last retry
    skipped: tuple[tuple[str, str], ...]
    interrupted: bool  #: Ctrl-C or SIGTERM ended it early

    @property
    def complete(self) -> bool:
        return self.ended == self.total and not self.interrupted


def read_campaign_spec(folder: Path) -> CampaignSpec | None:
    """The spec of the campaign in ``folder`` (its campaign.yaml), None when there is none; ConfigError when it is
    not a valid spec."""
    spec_path = folder / SPEC_FILE
    if not spec_path.exists():
        return None
    try:
        values = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{spec_path}: not YAML ({exc})") from None
    if not isinstance(values, dict):
        raise ConfigError(f"{spec_path}: expected a campaign spec (a mapping)")
    return campaign_spec_from_dict(values, str(spec_path))


def open_campaign_folder(spec: CampaignSpec, folder: Path) -> CampaignSpec:
    """Create ``folder`` for ``spec``, or check that the campaign already in it is the same one (resume)."""
    stored = read_campaign_spec(folder)
    if stored is not None:
        if stored.fingerprint() != spec.fingerprint():
            differ = [k for k, v in spec.as_dict().items() if k != "name" and stored.as_dict().get(k) != v]
            raise ConfigError(
                f"{folder} holds another campaign (its {', '.join(differ)} differ{'s' if len(differ) == 1 else ''}); "
                "resume it with the same spec, or give another --out"
            )
        return stored
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SPEC_FILE).write_text(yaml.safe_dump(spec.as_dict(), sort_keys=False), encoding="utf-8")
    return spec


def check_llm_access(spec: CampaignSpec, jobs: Sequence[EpisodeJob]) -> None:
    """A ConfigError now, before any worker starts, when an LLM's profile needs an API key that is not set or a base
    URL that is not given: otherwise every episode would crash on it and use up its retries. Nothing is sent."""
    from robodojo.agents.llm.settings import run_llm_settings
    from robodojo.episodes.compare import check_credentials

    options = spec.llm_options
    settings = run_llm_settings(options.get("llm_config"), timeout_s=options.get("timeout_s"))
    for llm_spec in sorted({job.llm_spec for job in jobs if not job.llm_spec.startswith("replay:")}):
        check_credentials(llm_spec, options.get("base_url"), settings)


def _record_run(folder: Path, engine: str) -> None:
    """meta.json: the machine and software the first time, and every run of the command appended."""
    path = folder / META_FILE
    meta = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    meta.setdefault("git", _git_revision())
    meta.setdefault("packages", _package_versions())
    meta.setdefault(
        "machine",
        {
            "hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "python": sys.version.split()[0], "user": getpass.getuser(),
        },
    )  # fmt: skip
    meta.setdefault("runs", []).append(
        {"started_unix_s": time.time(), "engine": engine, "command": sys.argv, "git": _git_revision()}
    )
    tmp = folder / f".{META_FILE}.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _git_revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(PACKAGE_ROOT), *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip() if done.returncode == 0 else ""

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked=no"))}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": "", "dirty": None}


def _package_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _plan(
    jobs: Sequence[EpisodeJob], folder: Path, store: ResultsStore
) -> tuple[list[tuple[EpisodeJob, int]], Counter]:
    """What is left to run, each with its next try number, and the crashes each has used; a cut-off try found on
    disk without a row is entered as killed."""
    ended = store.ended_ids()
    left = [job for job in jobs if job.episode_id not in ended]
    used = store.tries_used(job.episode_id for job in left)
    crashes: Counter = Counter()
    for row in store.tries():
        crashes[row["episode_id"]] += row["status"] == "crashed"
    prefix = TRY_FOLDER.format("")
    plan = []
    for job in left:
        names = [p.name[len(prefix) :] for p in episode_dir(folder, job.episode_id).glob(f"{prefix}*")]
        on_disk = [int(n) for n in names if n.isdigit()]
        for cut_off in sorted(t for t in on_disk if t > used[job.episode_id]):
            where = try_dir(folder, job.episode_id, cut_off).relative_to(folder)
            store.record_killed(job.episode_id, cut_off, str(where))
        plan.append((job, max([used[job.episode_id], *on_disk]) + 1))
    return plan, crashes


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the job) ends the campaign like Ctrl-C."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _ignoring_interrupts(*, restore: bool = True) -> Iterator[None]:
    """A second Ctrl-C while the workers are being ended must not leave them running; after an interrupt the
    handlers are left ignoring (``restore`` false): the caller is on its way out, and an impatient third Ctrl-C
    must not turn a clean end into a traceback."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        if restore:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


def run_campaign(
    spec: CampaignSpec,
    folder: Path,
    make_engine: Callable[[Path], Engine],
    *,
    engine_name: str = "local",
    progress: CampaignProgress | None = None,
) -> CampaignOutcome:
    """Run what is left of ``spec``'s campaign in ``folder`` on the engine ``make_engine(folder)`` builds.

    Ctrl-C or SIGTERM ends it early (``interrupted`` in the outcome); from then on both stay ignored in this
    process, which is expected to exit."""
    folder = folder.resolve()
    grid = spec.grid()  # once: a resumed folder's stored spec has the same fingerprint, so the same grid
    check_llm_access(spec, grid.jobs)
    spec = open_campaign_folder(spec, folder)
    _record_run(folder, engine_name)
    with ResultsStore(folder / STORE_FILE) as store:
        plan, crashes = _plan(grid.jobs, folder, store)
        progress = progress or CampaignProgress(len(grid.jobs), store.rows())
        for episode_id, why in grid.skipped:
            progress.message(f"skipped {episode_id}: {why}")
        interrupted = False
        engine: Engine | None = None
        try:
            with _sigterm_as_interrupt():
                if plan:
                    engine = make_engine(folder)
                    _drive(engine, deque(plan), crashes, spec.retries, store, progress)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the next Ctrl-C may come at once: we are ending already
            interrupted = True
            progress.message("interrupted: ending the workers; run the same command again to resume")
        finally:
            with _ignoring_interrupts(restore=not interrupted):
                if engine is not None:
                    engine.close(kill=interrupted)
                progress.close()
        rows = store.rows()
    return CampaignOutcome(
        folder=folder,
        total=len(grid.jobs),
        ended=len({r.episode_id for r in rows} & {j.episode_id for j in grid.jobs}),
        successes=sum(r.success for r in rows),
        crashed=sum(r.end_reason == "crashed" for r in rows),
        skipped=grid.skipped,
        interrupted=interrupted,
    )


def _drive(
    engine: Engine,
    pending: deque[tuple[EpisodeJob, int]],
    crashes: Counter,
    retries: int,
    store: ResultsStore,
    progress: CampaignProgress,
) -> None:
    jobs = {job.episode_id: job for job, _ in pending}
    running = 0
    while pending or running:
        while pending and running < engine.capacity:
            engine.submit(*pending.popleft())
            running += 1
        for row in engine.wait(POLL_S):
            running -= 1
            crashed = row.end_reason == "crashed"
            crashes[row.episode_id] += crashed
            final = not crashed or crashes[row.episode_id] > retries
            store.record_try(row, final=final)
            progress.update(row, final=final)
            if not final:
                pending.append((jobs[row.episode_id], row.tries + 1))
