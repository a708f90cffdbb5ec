"""Every agent on the same replayed general_pickup episode: the harness's cost per model call, start-up and memory,
and the MCP server's round trip.

1. Per agent (``--repeats`` episodes each, default 3; general_pickup seed 0, standard variant, the embedded world
   ``dual_arx_x5`` with its 3 cameras), in this process with ``time.perf_counter``: move_eef and code_cell (in
   process), the shell harness's built-in agent, and each coding-agent CLI the shell harness has installed
   (mini-swe-agent from make setup; Codex, opencode, Claude Code from make agents), and those three again as the
   MCP client of the episode's server (``mcp:<cli>``), each against its own replay (examples/), the model's answers
   served by the replay server through the episode's real LLM client. Each episode
   is run as campaigns run it (``robodojo.episodes.compare.run_one``) with these functions timed (monkeypatched,
   for the benchmark only):

   - the model: ``LlmClient.chat`` (the replay server's work and the HTTP round trip; a real model's latency
     replaces it): left out of the harness's cost;
   - the robot: ``EmbeddedWorld.step`` and ``EmbeddedWorld.observe`` (physics, rendering): left out too;
   - start-up: the agent's ``begin`` (for the shell agents the sandbox; for a CLI also the CLI's own start until its
     first model request arrives at the proxy).

   Printed per agent: LLM calls and success; start-up (ms); the harness's cost per model call, median and p95 over
   every call of every repeat: the wall time from the end of one model call to the start of the next (the first
   from the end of start-up), less the robot's time in it. For a CLI in the shell harness that is the proxy, the
   CLI's own loop and the commands the replay runs (a Python colour finder and ``robo`` calls, the same for every
   shell agent: compare the shell agents with one another); as an MCP client, the proxy, its loop and its tool calls
   through the sandbox's forwarder and the MCP server. Peak memory: the largest sum of RSS over this process's
   children (the sandbox, the CLI, its commands; the code-cell kernel), sampled every 20 ms; the in-process agents
   add nothing there. A move_eef episode first warms the world up (its first render probes the GL platforms in child
   processes).

2. ``robodojo mcp`` over stdio (``--tools robo``) with the official ``mcp`` client: round trip of ``status``
   (``--calls`` times, default 30) and of ``observe`` (three PNG images and the state; a third as many), median and
   p95, after the server answered its first call.

Run: ``.venv/bin/python benchmarks/agents.py [--repeats 3] [--calls 30] [--smoke] [--json out.json]``; ``--smoke``
(1 repeat, 3 MCP calls, one agent of each kind; the test suite runs it) takes under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, nproc, table, write_figures

from robodojo import PACKAGE_ROOT

TASK, SEED = "general_pickup", 0
SAMPLE_S = 0.02  # memory sampling period
# agent -> its replay (examples/): the same episode in each agent's own tool calls
AGENTS = {
    "move_eef": "examples/replay/general_pickup_seed0.yaml",
    "code_cell": "examples/cells/general_pickup.py",
    "shell": "examples/shell/general_pickup.yaml",
    "shell:mini-swe-agent": "examples/shell/general_pickup_mini_swe_agent.yaml",
    "shell:codex": "examples/shell/general_pickup_codex.yaml",
    "shell:opencode": "examples/shell/general_pickup_opencode.yaml",
    "shell:claude-code": "examples/shell/general_pickup_claude-code.yaml",
    "mcp:codex": "examples/mcp/general_pickup.yaml",
    "mcp:opencode": "examples/mcp/general_pickup_opencode.yaml",
    "mcp:claude-code": "examples/mcp/general_pickup.yaml",
}


def stats_ms(samples_s: list[float]) -> dict[str, float]:
    a = np.asarray(samples_s, dtype=float) * 1e3
    if a.size == 0:
        return {"n": 0, "median_ms": float("nan"), "p95_ms": float("nan")}
    return {"n": int(a.size), "median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95))}


# -- 1. episodes ----------------------------------------------------------------------------------------------------
class Timeline:
    """When the model was called, how long the robot took, when the agent had started: one episode's marks."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []  # (start, end) of each model call
        self.robot: list[tuple[float, float]] = []  # (start, end) of each world step or observation
        self.started: tuple[float, float] | None = None  # the agent's begin()

    def robot_s(self, t0: float, t1: float) -> float:
        return sum(min(b, t1) - max(a, t0) for a, b in self.robot if b > t0 and a < t1)

    def gaps_s(self) -> list[float]:
        """The harness's time between model calls, robot time left out: from start-up's end to the first call, and
        from each call's end to the next call's start."""
        ends = ([self.started[1]] if self.started else []) + [end for _, end in self.calls[:-1]]
        starts = [start for start, _ in self.calls][-len(ends) :] if ends else []
        return [max(0.0, s - e - self.robot_s(e, s)) for e, s in zip(ends, starts, strict=True)]


@contextlib.contextmanager
def timed(owner: Any, name: str, record: Callable[[float, float], None]) -> Iterator[None]:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            record(t0, time.perf_counter())

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def children_rss_mb() -> float:
    """The summed RSS of every process below this one (from /proc), in MB."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            parents[int(entry)], rss[int(entry)] = int(fields[1]), int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    mine, frontier = set(), [os.getpid()]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == pid and p not in mine]
        mine.update(kids)
        frontier.extend(kids)
    return sum(rss.get(p, 0) for p in mine) / 1e6


class PeakMemory:
    """Samples :func:`children_rss_mb` on a thread until stopped; the peak."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.peak_mb = max(self.peak_mb, children_rss_mb())

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


#: --smoke: each kind of agent once (the CLIs' own loops are the test suite's: test_shell_harness, test_mcp_cli_clients)
SMOKE_AGENTS = ("move_eef", "code_cell", "shell", "shell:mini-swe-agent", "shell:claude-code", "mcp:claude-code")


def installed(agent: str) -> str | None:
    """Why ``agent`` cannot run here, or None."""
    from robodojo.agents.shell.settings import load_shell_settings
    from robodojo.episodes.factory import split_agent

    _, cli = split_agent(agent)
    if cli and not load_shell_settings().coding_agents.get(cli).installed:
        return f"not installed ({'make setup' if cli == 'mini-swe-agent' else 'make agents'})"
    return None


def run_agent(world: Any, agent: str, repeats: int, out: Path) -> dict[str, Any]:
    from robodojo.agents.llm.client import LlmClient
    from robodojo.agents.mcp.cli_agent import McpCliAgent
    from robodojo.agents.shell.agent import ShellAgent
    from robodojo.agents.shell.external import ExternalShellAgent
    from robodojo.episodes.compare import EpisodeRun, run_one
    from robodojo.episodes.spec import EpisodeSpec
    from robodojo.sim.world import EmbeddedWorld

    gaps, startups, calls, peaks, successes = [], [], [], [], 0
    for k in range(repeats):
        line = Timeline()

        def on_start(t0: float, t1: float, line: Timeline = line) -> None:
            line.started = (t0, t1)

        def on_call(t0: float, t1: float, line: Timeline = line) -> None:
            line.calls.append((t0, t1))

        def on_robot(t0: float, t1: float, line: Timeline = line) -> None:
            line.robot.append((t0, t1))

        with contextlib.ExitStack() as stack:
            stack.enter_context(timed(LlmClient, "chat", on_call))
            for name in ("step", "observe"):
                stack.enter_context(timed(EmbeddedWorld, name, on_robot))
            for cls in (ShellAgent, ExternalShellAgent, McpCliAgent):
                stack.enter_context(timed(cls, "begin", on_start))
            memory = stack.enter_context(PeakMemory())
            run = EpisodeRun(
                agent=agent, llm_spec=f"replay:{PACKAGE_ROOT / AGENTS[agent]}",
                episode=EpisodeSpec(task=TASK, seed=SEED), out_root=out / f"{agent.replace(':', '_')}_{k}",
            )  # fmt: skip
            result = run_one(world, run)
        successes += bool(result.success)
        calls.append(len(line.calls))
        gaps.extend(line.gaps_s())
        if line.started is not None:
            startups.append(line.started[1] - line.started[0])
        peaks.append(memory.peak_mb)
    return {
        "episodes": repeats, "successes": successes, "llm_calls": float(np.mean(calls)),
        "startup": stats_ms(startups), "per_call": stats_ms(gaps), "peak_children_mb": max(peaks),
    }  # fmt: skip


# -- 2. MCP ---------------------------------------------------------------------------------------------------------
def mcp_round_trips(calls: int) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def measure() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as out:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "robodojo.cli", "mcp", "--task", TASK, "--seed", str(SEED), "--tools", "robo",
                      "--transport", "stdio", "--out", out, "--max-calls", str(2 * calls + 10)],
            )  # fmt: skip
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                t0 = time.perf_counter()
                await session.initialize()
                await session.call_tool("status", {})  # the world is built before the first answer
                first = time.perf_counter() - t0
                times: dict[str, list[float]] = {"status": [], "observe": []}
                for name, n in (("status", calls), ("observe", max(1, calls // 3))):
                    for _ in range(n):
                        t = time.perf_counter()
                        result = await session.call_tool(name, {})
                        times[name].append(time.perf_counter() - t)
                        assert not result.is_error, result
                images = sum(c.type == "image" for c in result.content)
        return {"first_call_s": first, "observe_images": images, **{k: stats_ms(v) for k, v in times.items()}}

    return anyio.run(measure)


# -- main ------------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="episodes per agent (default 3)")
    parser.add_argument("--calls", type=int, default=30, help="MCP status calls (observe: a third as many)")
    parser.add_argument("--smoke", action="store_true", help="1 repeat, 3 MCP calls: every part at its smallest")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    repeats, calls = (1, 3) if args.smoke else (args.repeats, args.calls)

    from robodojo.sim.world import EmbeddedWorld

    print(f"robodojo agents benchmark: {TASK} seed {SEED}, {repeats} episode(s) per agent")
    print(f"  machine: {nproc()} CPUs (nproc), {cpu_model()}; Python {sys.version.split()[0]}\n", flush=True)
    world = EmbeddedWorld("dual_arx_x5")
    figures: dict[str, Any] = {"agents": {}, "skipped": {}}
    with tempfile.TemporaryDirectory() as out:
        run_agent(world, "move_eef", 1, Path(out))  # warm-up: the first render probes the GL platforms in children
        for agent in SMOKE_AGENTS if args.smoke else AGENTS:
            why = installed(agent)
            if why:
                figures["skipped"][agent] = why
                continue
            figures["agents"][agent] = run_agent(world, agent, repeats, Path(out))
    rows: list[tuple[str, ...]] = []
    for agent, f in figures["agents"].items():
        rows.append((
            agent, f"{f['successes']}/{f['episodes']}", f"{f['llm_calls']:.1f}",
            f"{f['startup']['median_ms']:.0f}" if f["startup"]["n"] else "-",
            f"{f['per_call']['median_ms']:.0f}", f"{f['per_call']['p95_ms']:.0f}", f"{f['peak_children_mb']:.0f}",
        ))  # fmt: skip
    print("1. one replayed episode per agent; model and robot time left out")
    header = ("agent", "success", "calls", "start-up ms", "per call p50 ms", "per call p95 ms", "children peak MB")
    table(header, rows, "<>>>>>>")
    for agent, why in figures["skipped"].items():
        print(f"   {agent}: skipped, {why}")
    mcp = figures["mcp"] = mcp_round_trips(calls)
    print(f"\n2. robodojo mcp over stdio (the official mcp client): first call after {mcp['first_call_s']:.1f} s")
    table(
        ("call", "n", "p50 ms", "p95 ms"),
        [(f"{name}" + (f" ({mcp['observe_images']} images)" if name == "observe" else ""), str(mcp[name]["n"]),
          f"{mcp[name]['median_ms']:.1f}", f"{mcp[name]['p95_ms']:.1f}") for name in ("status", "observe")],
        "<>>>",
    )  # fmt: skip
    if args.json:
        write_figures(args.json, figures)
    return 0 if all(f["successes"] == f["episodes"] for f in figures["agents"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
