"""Campaign throughput (`robodojo eval`): episodes per minute by workers, the concurrent mode against a remote LLM,
the harness memory per concurrent episode, and the report's generation time for 1,000 episodes.

What is measured, in this process as the coordinator (``run_campaign`` with a ``LocalEngine``: worker processes
started by spawn, each running ``run_job`` in one or more threads), with ``time.perf_counter``:

1. Scaling with the replay LLM (answers at once): ``--episodes`` (16) move_eef episodes of general_pickup (seeds
   0.., LLM-call budget 5: the replayed script's five moves) with 1 and with 2 workers; episodes per minute and the
   ratio 2 workers / 1. The start of the workers (interpreter, imports, a world per worker) is included: it is
   part of what a campaign costs.
2. A remote model: the same replies from a replay server that answers every request only after ``--delay`` (2 s)
   seconds (the script's ``behaviour: {delay_s: ...}``), with budget 3 (at least 6 s of waiting an episode): 1
   worker running one episode at a time (``--baseline-episodes``, 8), against the concurrent mode, 2 workers x 8
   and x 16 episodes each in threads (``--remote-episodes``, 64: enough rounds that the start, each thread
   building its world, is not most of the run; it is included all the same). Target: at least 6x the episodes per
   minute on 2 cores.
3. Memory: every worker's resident set (VmRSS from /proc) sampled every 0.2 s in 2.; per worker the peak. The
   harness memory per concurrent episode = (peak of a worker running K at a time - peak of the worker running
   one) / (K - 1).
4. The report for 1,000 episodes: ``write_report`` over 1,000 stored rows whose records are copies of the episodes of
   1. (folders copied, so every episode page has a real record to read).

Run: ``make bench`` or ``.venv/bin/python benchmarks/campaign.py [--quick] [--smoke] [--json out.json]``; about 6
minutes on a 2-core CPU, ``--quick`` (fewer episodes, a 1 s delay) about 2. ``--smoke`` runs every part at its smallest
(1 episode per replay run and baseline, 2 remote episodes, a 0.1 s delay, a report of 2 episodes; the test suite runs
it).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import yaml
from _common import cpu_model, nproc, table, version, write_figures

from robodojo import PACKAGE_ROOT
from robodojo.campaigns.campaign import run_campaign
from robodojo.campaigns.engines import LocalEngine
from robodojo.campaigns.progress import CampaignProgress
from robodojo.campaigns.reporting import write_report
from robodojo.campaigns.results import EpisodeRow
from robodojo.campaigns.spec import campaign_spec_from_dict
from robodojo.campaigns.store import STORE_FILE, ResultsStore

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SAMPLE_S = 0.2
CONCURRENT_WORKERS = 2
CONCURRENT_PER_WORKER = (8, 16)  # 8: robodojo eval's default with a remote LLM
SMOKE_SIZES = (1, 1, 2, 0.1, 2)  # --smoke: episodes, baseline episodes, remote episodes, delay [s], report episodes


class _Quiet(CampaignProgress):
    """No progress lines in the benchmark's output."""

    def _line(self, text: str) -> None:
        pass


def children_rss_kb(pid: int) -> dict[int, int]:
    """VmRSS of each child process of ``pid`` [kB]."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                found[int(entry.name)] = int(line.split()[1])
    return found


def run(spec: dict, out: Path, workers: int, per_worker: int) -> tuple[float, int, list[int]]:
    """(wall seconds, episodes ended, peak RSS [kB] per worker) of one campaign."""
    import os

    peaks: dict[int, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            for pid, rss in children_rss_kb(os.getpid()).items():
                peaks[pid] = max(peaks.get(pid, 0), rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    campaign = campaign_spec_from_dict(spec)
    start = time.perf_counter()
    outcome = run_campaign(
        campaign,
        out,
        lambda folder: LocalEngine(folder, workers, per_worker),
        progress=_Quiet(len(campaign.grid().jobs)),
    )
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    assert outcome.complete and not outcome.crashed, outcome
    # The worker processes: the replay servers' threads live in them, but the multiprocessing resource tracker is a
    # child too; it is small (tens of MB) and has no world: keep the largest `workers` peaks.
    return wall, outcome.ended, sorted(peaks.values(), reverse=True)[:workers]


def spec_for(episodes: int, budget: int, replay: Path) -> dict:
    return {
        "tasks": ["general_pickup"], "seeds": f"0-{episodes - 1}", "agents": ["move_eef"],
        "llms": {"replayed": f"replay:{replay}"}, "llm_call_budget": budget, "retries": 0,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--baseline-episodes", type=int, default=8)
    parser.add_argument("--remote-episodes", type=int, default=64)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds the emulated remote model takes per call")
    parser.add_argument("--report-episodes", type=int, default=1000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.baseline_episodes, args.remote_episodes, args.delay = 4, 4, 32, 1.0
    if args.smoke:
        args.episodes, args.baseline_episodes, args.remote_episodes, args.delay, args.report_episodes = SMOKE_SIZES
    print(f"CPU: {cpu_model()} ({nproc()} cores); mujoco {version('mujoco')}, ray {version('ray')}")
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="campaign_bench_") as tmp:
        root = Path(tmp)
        # 1. scaling with the replay LLM
        rows = []
        per_min = {}
        for workers in (1, 2):
            wall, ended, _ = run(spec_for(args.episodes, 5, REPLAY), root / f"replay_{workers}", workers, 1)
            per_min[workers] = ended / wall * 60
            rows.append((str(workers), "1", str(ended), f"{wall:.1f}", f"{per_min[workers]:.1f}"))
        table(("workers", "per worker", "episodes", "wall s", "episodes/min"), rows, "<<>>>")
        figures["replay_episodes_per_min"] = per_min
        print(f"scaling 2 workers / 1: {per_min[2] / per_min[1]:.2f}x\n")

        # 2. and 3. a remote model: 1 worker one at a time, against the concurrent mode
        script = yaml.safe_load(REPLAY.read_text())
        replies = script["replies"] if isinstance(script, dict) else script
        slow = root / "remote_replay.yaml"
        slow.write_text(yaml.safe_dump({"replies": replies, "behaviour": {"delay_s": args.delay}}))
        rows, remote, peaks = [], {}, {}
        modes = [(1, 1, args.baseline_episodes)] + [
            (CONCURRENT_WORKERS, k, args.remote_episodes) for k in CONCURRENT_PER_WORKER
        ]
        for workers, per_worker, episodes in modes:
            out = root / f"remote_{workers}x{per_worker}"
            wall, ended, peak = run(spec_for(episodes, 3, slow), out, workers, per_worker)
            rate = remote[(workers, per_worker)] = ended / wall * 60
            peaks[per_worker] = peak
            peak_mb = " ".join(f"{p / 1024:.0f}" for p in peak)
            rows.append((str(workers), str(per_worker), str(ended), f"{wall:.1f}", f"{rate:.1f}", peak_mb))
        print(f"remote model emulated: every call answered after {args.delay:.1f} s; LLM-call budget 3")
        table(("workers", "per worker", "episodes", "wall s", "episodes/min", "peak RSS MB per worker"), rows, "<<>>>>")
        for k in CONCURRENT_PER_WORKER:
            ratio = remote[(CONCURRENT_WORKERS, k)] / remote[(1, 1)]
            per_episode_mb = (statistics.mean(peaks[k]) - peaks[1][0]) / (k - 1) / 1024
            print(f"{CONCURRENT_WORKERS} workers x {k} / one at a time: {ratio:.1f}x (target >= 6x); "
                  f"harness memory per concurrent episode {per_episode_mb:.0f} MB")  # fmt: skip
            figures[f"remote_ratio_{CONCURRENT_WORKERS}x{k}"] = ratio
            figures[f"memory_per_concurrent_episode_mb_{CONCURRENT_WORKERS}x{k}"] = per_episode_mb
        print(f"worker peak with 1 episode: {peaks[1][0] / 1024:.0f} MB\n")
        figures["remote_episodes_per_min"] = {f"{w}x{k}": v for (w, k), v in remote.items()}

        # 4. the report for --report-episodes episodes
        report_s = report_time(root / "replay_1", root / "report_1000", args.report_episodes)
        print(f"report for {args.report_episodes} episodes (tables, plots, HTML with a page each): {report_s:.1f} s")
        figures["report_s"] = report_s
    if args.json:
        write_figures(args.json, figures)


def report_time(source: Path, target: Path, episodes: int) -> float:
    """Seconds ``write_report`` takes over ``episodes`` stored rows whose records are copies of ``source``'s."""
    with ResultsStore(source / STORE_FILE) as store:
        rows = store.rows()
    shutil.copy(source / "campaign.yaml", target.mkdir(parents=True) or target / "campaign.yaml")
    with ResultsStore(target / STORE_FILE) as store:
        for i in range(episodes):
            row = rows[i % len(rows)]
            episode_id = f"{row.task}.{row.variant}.seed{i}.{row.agent}.{row.llm}.{row.condition}"
            folder = Path("episodes", episode_id, "try1")
            shutil.copytree(source / row.folder, target / folder)
            values = {**row.as_dict(), "episode_id": episode_id, "seed": i, "folder": str(folder)}
            store.record_try(EpisodeRow(**values), final=True)
    start = time.perf_counter()
    write_report(target)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
