"""Campaign throughput (`robodojo eval`): episodes per minute by workers, the concurrent mode against a remote LLM,
the harness memory per concurrent episode, and the report's generation time for 1,000 episodes.

What is measured, in this process as the coordinator (``run_campaign`` with a ``LocalEngine``: worker processes
started by spawn, each running ``run_job`` in one or more threads), with ``time.perf_counter``:

1. Scaling with the replay LLM (answers at once): ``--episodes`` (8) move_eef episodes of general_pickup (seeds 0..,
   LLM-call budget 4: four planned moves of the replayed script) with 1 and with 2 workers; episodes per minute
   and the ratio 2 workers / 1. The start of the workers (interpreter, imports, a world per worker) is included:
   it is part of what a campaign costs.
2. A remote model: the same replies from a replay server that answers every request only after ``--delay`` (2 s)
   seconds (the script's ``behaviour: {delay_s: ...}``), ``--remote-episodes`` (16) episodes with budget 3 (at
   least 6 s of waiting each): 1 worker running one episode at a time, against the concurrent mode (2 workers x 8
   episodes each in threads). Target: at least 6x the episodes per minute on 2 cores.
3. Memory: every worker's resident set (VmRSS from /proc) sampled every 0.2 s in 2.; per worker the peak. The
   harness memory per concurrent episode = (peak of a worker running 8 at a time - peak of the worker running
   one) / 7.
4. The report for 1,000 episodes: ``write_report`` over 1,000 stored rows whose records are copies of the episodes of
   1. (folders copied, so every episode page has a real record to read).

Run: ``make bench`` or ``.venv/bin/python benchmarks/campaign.py [--quick] [--json out.json]``; about 5 minutes on a
2-core CPU, ``--quick`` (fewer episodes, a 1 s delay) about 2.
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
from robodojo.campaigns.spec import campaign_spec_from_dict

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
SAMPLE_S = 0.2
CONCURRENT_WORKERS, CONCURRENT_PER_WORKER = 2, 8


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
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--remote-episodes", type=int, default=16)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds the emulated remote model takes per call")
    parser.add_argument("--report-episodes", type=int, default=1000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.remote_episodes, args.delay = 4, 16, 1.0
    print(f"CPU: {cpu_model()} ({nproc()} cores); mujoco {version('mujoco')}, ray {version('ray')}")
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="campaign_bench_") as tmp:
        root = Path(tmp)
        # 1. scaling with the replay LLM
        rows = []
        per_min = {}
        for workers in (1, 2):
            wall, ended, _ = run(spec_for(args.episodes, 4, REPLAY), root / f"replay_{workers}", workers, 1)
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
        for workers, per_worker in ((1, 1), (CONCURRENT_WORKERS, CONCURRENT_PER_WORKER)):
            wall, ended, peak = run(spec_for(args.remote_episodes, 3, slow), root / f"remote_{workers}", workers,
                                    per_worker)  # fmt: skip
            rate = remote[(workers, per_worker)] = ended / wall * 60
            peaks[per_worker] = peak
            peak_mb = " ".join(f"{p / 1024:.0f}" for p in peak)
            rows.append((str(workers), str(per_worker), str(ended), f"{wall:.1f}", f"{rate:.1f}", peak_mb))
        print(f"remote model emulated: every call answered after {args.delay:.1f} s; LLM-call budget 3")
        table(("workers", "per worker", "episodes", "wall s", "episodes/min", "peak RSS MB per worker"), rows, "<<>>>>")
        ratio = remote[(CONCURRENT_WORKERS, CONCURRENT_PER_WORKER)] / remote[(1, 1)]
        print(f"concurrent mode / one at a time: {ratio:.1f}x (target >= 6x)")
        per_episode_mb = (
            (statistics.mean(peaks[CONCURRENT_PER_WORKER]) - peaks[1][0]) / (CONCURRENT_PER_WORKER - 1) / 1024
        )
        print(f"harness memory per concurrent episode: {per_episode_mb:.0f} MB "
              f"(worker peak {peaks[1][0] / 1024:.0f} MB with 1 episode)\n")  # fmt: skip
        figures.update(remote_episodes_per_min={f"{w}x{k}": v for (w, k), v in remote.items()}, remote_ratio=ratio,
                       memory_per_concurrent_episode_mb=per_episode_mb)  # fmt: skip

        # 4. the report for --report-episodes episodes
        report_s = report_time(root / "replay_1", root / "report_1000", args.report_episodes)
        if report_s is not None:
            print(f"report for {args.report_episodes} episodes: {report_s:.1f} s")
            figures["report_s"] = report_s
    if args.json:
        write_figures(args.json, figures)


def report_time(source: Path, target: Path, episodes: int) -> float | None:
    """Seconds ``write_report`` takes over ``episodes`` stored rows whose records are copies of ``source``'s."""
    try:
        from robodojo.campaigns.reporting import write_report
    except ImportError:
        print("report: robodojo.campaigns.reporting is not there yet; not measured")
        return None
    from robodojo.campaigns.results import EpisodeRow
    from robodojo.campaigns.store import STORE_FILE, ResultsStore

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
