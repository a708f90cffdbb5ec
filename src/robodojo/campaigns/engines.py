"""Where campaign episodes run: :class:`LocalEngine` (worker processes on this machine) and :class:`RayEngine`
(Ray actors on a cluster, or a local Ray). Both run :func:`~robodojo.campaigns.execute.run_job`, ``per_worker``
episodes at a time in each worker (threads: an episode with a remote LLM mostly waits for it), and hand back
:class:`EpisodeRow` values; the coordinator (robodojo.campaigns.campaign) decides what runs and stores what ended.

A worker that dies (killed, out of memory, a crash in native code) ends each episode it held as ``crashed`` with the
reason, and a new worker takes its place, so no episode is lost and the campaign's retry bound applies.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from robodojo.addresses import is_loopback
from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.spec import EpisodeJob
from robodojo.episodes.record_settings import CONFIG_ENV as RECORD_CONFIG_ENV
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.settings import CONFIG_ENV as VIEW_CONFIG_ENV
from robodojo.errors import ConfigError

STOP = None  #: a worker's job queue item asking its threads to end
WORKER_JOIN_S = 10.0  #: how long a worker may take to end its threads when the campaign closes
PARENT_CHECK_S = 1.0  #: how often a worker checks that the coordinator is still there
#: A Ray address that does not take a TCP connection within this is not a cluster: said at once, where ray.init would
#: wait 41 s per attempt and try again.
RAY_PROBE_TIMEOUT_S = 5.0
RAY_GCS_PORT = 6379  #: Ray's default ports when an address names none: the GCS (ray start --head) ...
RAY_CLIENT_PORT = 10001  #: ... and the Ray Client server (ray://)
#: where `ray start` notes the cluster this machine is in (what address "auto" reads when RAY_ADDRESS is not set)
#: what episodes read from their process's environment (the live view's target, the view's and the record's settings):
#: a cluster's Ray workers do not inherit the campaign's, so each actor is given it
EPISODE_ENV = (VIEW_ENV, VIEW_CONFIG_ENV, RECORD_CONFIG_ENV)
RAY_CURRENT_CLUSTER = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"


class Engine(Protocol):
    """Runs episodes somewhere; ``capacity`` of them at a time."""

    capacity: int

    def submit(self, job: EpisodeJob, try_index: int) -> None: ...

    def wait(self, timeout_s: float) -> list[EpisodeRow]:
        """The episodes that ended since the last call (waits up to ``timeout_s`` for the first)."""
        ...

    def close(self, *, kill: bool = False) -> None:
        """End the workers: at once with ``kill`` (Ctrl-C: episodes still running are abandoned)."""
        ...


def crashed_row(job: EpisodeJob, try_index: int, campaign_dir: Path, error: str) -> EpisodeRow:
    """The row of an episode whose worker was lost (it never reported)."""
    from robodojo.campaigns.execute import job_row, try_dir
    from robodojo.episodes.spec import EndReason

    folder = try_dir(campaign_dir, job.episode_id, try_index)
    return job_row(job, try_index, campaign_dir, folder, {"end_reason": EndReason.CRASHED, "error": error})


# -- local worker processes -----------------------------------------------------------------------------------------


def _worker_main(jobs: Any, results: Any, campaign_dir: str, per_worker: int) -> None:
    """A worker process: ``per_worker`` threads take (job, try) from ``jobs`` and put their rows on ``results``."""
    from robodojo.campaigns.execute import close_worlds, run_job

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle; it ends the workers
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True, name="parent-watch").start()

    def loop() -> None:
        try:
            while (item := jobs.get()) is not STOP:
                job, try_index = item
                try:
                    row = run_job(job, campaign_dir, try_index)
                except Exception as exc:  # run_job does not raise; were it to, the episode must still be answered
                    row = crashed_row(job, try_index, Path(campaign_dir), f"{type(exc).__name__}: {exc}")
                results.put((os.getpid(), row))
        finally:
            close_worlds()

    threads = [threading.Thread(target=loop, name=f"episode-{i}") for i in range(per_worker)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker when the coordinator is gone (kill -9, a lost shell): nobody would read its results, and its
    job queue would never give it another job or a stop."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


@dataclass
class _Worker:
    process: BaseProcess
    jobs: Any  # its own queue: the coordinator knows which episodes each worker holds
    held: dict[str, tuple[EpisodeJob, int]] = field(default_factory=dict)


class LocalEngine:
    """``workers`` processes on this machine, each running ``per_worker`` episodes at a time."""

    def __init__(self, campaign_dir: Path, workers: int, per_worker: int = 1) -> None:
        if workers < 1 or per_worker < 1:
            raise ConfigError(f"--workers and --per-worker must be at least 1, got {workers} and {per_worker}")
        self.campaign_dir = campaign_dir
        self.per_worker = per_worker
        self.capacity = workers * per_worker
        # spawn: a fresh interpreter, with no threads, locks or GL state inherited from the coordinator
        self._ctx = multiprocessing.get_context("spawn")
        self._results = self._ctx.Queue()
        self._workers = [self._start_worker() for _ in range(workers)]

    def _start_worker(self) -> _Worker:
        jobs = self._ctx.Queue()
        process = self._ctx.Process(
            target=_worker_main, args=(jobs, self._results, str(self.campaign_dir), self.per_worker), daemon=True
        )
        process.start()
        return _Worker(process, jobs)

    def submit(self, job: EpisodeJob, try_index: int) -> None:
        worker = min(self._workers, key=lambda w: len(w.held))
        if len(worker.held) >= self.per_worker:
            raise RuntimeError("every worker is busy: submit at most `capacity` episodes at a time")
        worker.held[job.episode_id] = (job, try_index)
        worker.jobs.put((job, try_index))

    def wait(self, timeout_s: float) -> list[EpisodeRow]:
        rows: list[EpisodeRow] = []
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                pid, row = self._results.get(timeout=max(0.0, deadline - time.monotonic()) if not rows else 0.0)
            except queue.Empty:
                break
            for worker in self._workers:
                if worker.process.pid == pid:
                    worker.held.pop(row.episode_id, None)
            rows.append(row)
        return rows + self._replace_dead_workers()

    def _replace_dead_workers(self) -> list[EpisodeRow]:
        rows = []
        for i, worker in enumerate(self._workers):
            if worker.process.is_alive():
                continue
            why = f"its worker process {worker.process.pid} ended (exit code {worker.process.exitcode})"
            rows += [crashed_row(job, t, self.campaign_dir, why) for job, t in worker.held.values()]
            worker.jobs.cancel_join_thread()
            self._workers[i] = self._start_worker()
        return rows

    def close(self, *, kill: bool = False) -> None:
        for worker in self._workers:
            if kill:
                worker.process.kill()
            else:
                for _ in range(self.per_worker):
                    worker.jobs.put(STOP)
        for worker in self._workers:
            worker.process.join(timeout=WORKER_JOIN_S)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.jobs.cancel_join_thread()
        self._results.cancel_join_thread()


# -- Ray ------------------------------------------------------------------------------------------------------------


def check_ray_address(address: str) -> None:
    """ConfigError, at once and in one line, unless a Ray cluster may answer at ``address`` (host[:port],
    ray://host[:port], or "auto": RAY_ADDRESS, else the cluster `ray start` left noted on this machine): something
    must accept a TCP connection there within RAY_PROBE_TIMEOUT_S."""
    given = address
    if address == "auto":
        noted = RAY_CURRENT_CLUSTER.read_text().strip() if RAY_CURRENT_CLUSTER.is_file() else ""
        address = os.environ.get("RAY_ADDRESS", "") or noted
        if not address or address == "auto":
            raise ConfigError(
                "--ray auto: no Ray cluster on this machine (RAY_ADDRESS is not set and `ray start` noted none in "
                f"{RAY_CURRENT_CLUSTER}); start one with `ray start --head`, or give its address"
            )
    client, rest = address.startswith("ray://"), address.removeprefix("ray://")
    host, _, port_text = rest.rpartition(":") if ":" in rest else (rest, "", "")
    try:
        port = int(port_text) if port_text else (RAY_CLIENT_PORT if client else RAY_GCS_PORT)
    except ValueError:
        raise ConfigError(f"--ray {given}: '{port_text}' is not a port (host:port, ray://host:port or auto)") from None
    if not host or not 0 < port < 65536:
        raise ConfigError(f"--ray {given}: not an address (host:port, ray://host:port or auto)")
    try:
        socket.create_connection((host.strip("[]"), port), timeout=RAY_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ConfigError(
            f"--ray {given}: nothing answers at {host}:{port} ({why} within {RAY_PROBE_TIMEOUT_S:.0f} s): is the "
            "cluster running (`ray status` on its head node)?"
        ) from None


def episode_env(*, on_cluster: bool) -> dict[str, str]:
    """The variables of :data:`EPISODE_ENV` set in this process, for workers that do not inherit it. On a cluster
    (``on_cluster``) a live view streamed to this machine's loopback would reach each node's own: refused (ConfigError)
    with what to give instead. Files they name must be at the same path on every node, as the campaign folder is."""
    env = {name: os.environ[name] for name in EPISODE_ENV if os.environ.get(name)}
    host = urlsplit(env.get(VIEW_ENV, "")).hostname
    if on_cluster and host is not None and is_loopback(host):
        raise ConfigError(
            f"--view {env[VIEW_ENV]} with --ray on a cluster: its nodes cannot reach this machine's loopback; give "
            "--view rrd (episode.rrd beside each record) or a rerun+http://HOST:PORT/proxy the nodes can reach"
        )
    return env


class RayEngine:
    """``workers`` Ray actors (one CPU each, ``per_worker`` episodes at a time in threads) on the cluster at
    ``address`` ("auto": the running cluster this machine belongs to; None: a Ray started here for the campaign).

    On a cluster the campaign folder must be on a filesystem every node mounts at the same path: the workers write
    the episode records into it."""

    def __init__(self, campaign_dir: Path, workers: int, per_worker: int = 1, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError("--ray needs Ray: pip install 'agent_bringup[cluster]' (or pip install ray)") from None
        if workers < 1 or per_worker < 1:
            raise ConfigError(f"--workers and --per-worker must be at least 1, got {workers} and {per_worker}")
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here and address is not None:
            check_ray_address(address)
        if self._started_here:
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
        self.campaign_dir = campaign_dir
        self.per_worker = per_worker
        self.capacity = workers * per_worker
        self._episode_env = episode_env(on_cluster=address is not None)
        self._actor_class = ray.remote(_RayWorker)
        self._actors = [self._new_actor() for _ in range(workers)]
        self._held: dict[Any, tuple[int, EpisodeJob, int]] = {}  # object ref -> (actor index, job, try)

    def _new_actor(self) -> Any:
        runtime_env = {"env_vars": self._episode_env} if self._episode_env else None
        return self._actor_class.options(num_cpus=1, max_concurrency=self.per_worker, runtime_env=runtime_env).remote()

    def submit(self, job: EpisodeJob, try_index: int) -> None:
        load = [0] * len(self._actors)
        for index, _, _ in self._held.values():
            load[index] += 1
        index = min(range(len(self._actors)), key=load.__getitem__)
        ref = self._actors[index].run.remote(job, str(self.campaign_dir), try_index)
        self._held[ref] = (index, job, try_index)

    def wait(self, timeout_s: float) -> list[EpisodeRow]:
        if not self._held:
            time.sleep(timeout_s)
            return []
        ready, _ = self._ray.wait(list(self._held), num_returns=len(self._held), timeout=timeout_s)
        rows = []
        for ref in ready:
            index, job, try_index = self._held.pop(ref)
            try:
                rows.append(self._ray.get(ref))
            except self._ray.exceptions.RayError as exc:  # the actor died (its node lost, killed, out of memory)
                why = f"its Ray worker was lost: {type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
                rows.append(crashed_row(job, try_index, self.campaign_dir, why))
                self._actors[index] = self._new_actor()
        return rows

    def close(self, *, kill: bool = False) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._held.clear()
        if self._started_here:
            self._ray.shutdown()


class _RayWorker:
    """A Ray actor's body: episodes run in its threads (max_concurrency), each thread with its own worlds."""

    def run(self, job: EpisodeJob, campaign_dir: str, try_index: int) -> EpisodeRow:
        from robodojo.campaigns.execute import run_job

        return run_job(job, campaign_dir, try_index)
