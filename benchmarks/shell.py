"""The shell harness (seed 003): what a robo command costs, against the code-cell agent's robo call.

What is measured, on an ``EmbeddedWorld('dual_arx_x5')`` episode of general_pickup (seed 0, 3 cameras of 640x480),
with the real bubblewrap sandbox and command route (robodojo.agents.shell.workspace):

1. ``robo status`` round trip, CLI to JSON: a bash loop inside one sandboxed command runs ``robo status``
   ``--commands`` times (200; 50 with ``--quick``), timing each with ``date +%s%N`` around it: Python's start, the
   connection to the route, the harness's work, the JSON printed. Median and p95.
2. The same request without a process start: one Python process in the sandbox calls
   ``robo_shell.protocol.call(["status"])`` as often; and the harness's own service time per status command (from
   the route's log). The CLI round trip minus this is the price of a process per command.
3. ``robo obs``: ``--obs`` refreshes (20; 5 with ``--quick``) of obs/ (three images rendered and written as PNG,
   cameras.json, state.json), CLI to JSON.
4. A shell tool call: ``ShellWorkspace.run("true")`` from the harness (bubblewrap's start and end around bash),
   the fixed cost of every command the agent sends.
5. Baseline, same process: the code-cell agent's ``robo.state()`` over its kernel's RPC (a cell timing each of as
   many calls inside the kernel). Ratio: CLI round trip / code-cell call.
6. Isolation costs: an output flood (``yes | head -c 200M`` as a shell command): the harness process's peak
   resident memory during it over its level before (VmHWM, reset through /proc/self/clear_refs) and the bytes it
   held (head and tail); and ``robo status`` CLI to JSON (as in 1) while a client that connected and sent nothing
   and one that sent half a request stay connected to the route. Before the route read requests per connection,
   each such client held every other call for 10 s; before the output was read from a pipe, the 200 MB flood
   peaked the harness at +400 MB (this machine).
7. A repair round with the replay LLM: ``run_evolve`` on examples/shell/evolve (1 layout; the optimizer's replayed
   round diagnoses and fixes the grab tool), the round's wall time, and the delivery check on its own (loading and
   testing the task's tools in the sandbox), median of ``--checks`` runs (5; 2 with ``--quick``).

Run: ``make bench`` (every benchmark) or ``.venv/bin/python benchmarks/shell.py [--quick] [--smoke] [--json out.json]``.
``--smoke`` runs every part at its smallest (2 commands, 1 refresh, 2 shell calls, a 1 MB flood, 1 check; the test
suite runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import cpu_model, nproc, table, write_figures

from robo_shell.paths import POOL_DIR
from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.agent import CodeCellAgent
from robodojo.agents.llm.client import open_llm
from robodojo.agents.shell.commands import BaseCommands
from robodojo.agents.shell.delivery import check_task_tools
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace
from robodojo.episodes import episode_context
from robodojo.episodes.evolve import EvolvePlan, run_evolve
from robodojo.sim.world import EmbeddedWorld

EXAMPLE = PACKAGE_ROOT / "examples" / "shell" / "evolve"
MIN_SHELL_CALLS = 10  # shell tool calls timed, at least (part 4)
MIN_BESIDE_SILENT = 20  # robo status round trips beside the silent clients, at least (part 6)
SMOKE_SIZES = (2, 1, 1, 1)  # --smoke: commands, obs refreshes, checks, flood [MB]; the minimums above become 2


def percentiles(values_ms: list[float]) -> tuple[float, float]:
    return float(np.median(values_ms)), float(np.percentile(values_ms, 95))


def timed_loop(ws: ShellWorkspace, command: str, n: int) -> list[float]:
    """``command`` n times inside one sandboxed bash, each timed there [ms]."""
    script = (
        f"for i in $(seq {n}); do s=$(date +%s%N); {command} >/dev/null; e=$(date +%s%N); "
        'echo "T $(( (e - s) / 1000 ))"; done'
    )
    out = ws.run(script, timeout_s=600).output
    return [int(line.split()[1]) / 1e3 for line in out.splitlines() if line.startswith("T ")]


def in_process_calls(ws: ShellWorkspace, n: int) -> tuple[list[float], list[float]]:
    """n status requests from one Python process in the sandbox [ms], and the harness's service time of each."""
    script = (
        "python3 - <<'PY'\nimport time\nfrom robo_shell import protocol\n"
        f"for _ in range({n}):\n    t = time.perf_counter(); protocol.call(['status'])\n"
        "    print('T', (time.perf_counter() - t) * 1e3)\nPY"
    )
    outcome = ws.run(script, timeout_s=600)
    times = [float(line.split()[1]) for line in outcome.output.splitlines() if line.startswith("T ")]
    return times, [c.duration_s * 1e3 for c in outcome.calls]


def peak_rss_mb() -> float:
    """This process's peak resident memory since the last reset_peak_rss() [MB] (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM back to the current resident size


def output_flood(ws: ShellWorkspace, flood_mb: int) -> dict[str, float]:
    """The harness's memory while a command prints ``flood_mb`` MB."""
    reset_peak_rss()
    before = peak_rss_mb()
    t = time.perf_counter()
    ws.run(f"yes | head -c {flood_mb}M", timeout_s=600)
    wall = time.perf_counter() - t
    out = ws.last_output
    assert out is not None and out.total == flood_mb << 20
    return {"flood_mb": flood_mb, "peak_rss_over_before_mb": round(peak_rss_mb() - before, 1),
            "held_kb": round(out.peak_held / 1024, 1), "wall_s": round(wall, 3)}  # fmt: skip


def status_beside_silent_clients(ws: ShellWorkspace, n: int) -> list[float]:
    """``robo status`` CLI round trips [ms] while one client sent nothing and one half a request."""
    silent, half = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    try:
        silent.connect(str(ws.route.path))
        half.connect(str(ws.route.path))
        half.sendall(b'{"argv": ["sta')
        return timed_loop(ws, "robo status", n)
    finally:
        silent.close()
        half.close()


def code_cell_calls(world: EmbeddedWorld, n: int) -> list[float]:
    agent = CodeCellAgent()
    agent.begin(episode_context(world))
    try:
        assert agent.kernel is not None
        result = agent.kernel.run_cell(
            f"import time\nts = []\nfor _ in range({n}):\n    t = time.perf_counter(); robo.state()\n"
            "    ts.append((time.perf_counter() - t) * 1e3)\nprint(' '.join(f'{x:.4f}' for x in ts))"
        )
        return [float(x) for x in result.stdout.split()]
    finally:
        agent.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--obs", type=int, default=20)
    parser.add_argument("--checks", type=int, default=5)
    parser.add_argument("--flood-mb", type=int, default=200, help="output flood size (20 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer samples (50 commands, 5 obs, 2 checks, 20 MB)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    min_shell_calls, min_beside_silent = MIN_SHELL_CALLS, MIN_BESIDE_SILENT
    if args.quick:
        args.commands, args.obs, args.checks, args.flood_mb = 50, 5, 2, 20
    if args.smoke:
        args.commands, args.obs, args.checks, args.flood_mb = SMOKE_SIZES
        min_shell_calls = min_beside_silent = 2
    print(f"machine: {cpu_model()}, {nproc()} cores, Python {platform.python_version()}")
    settings = load_shell_settings()
    world = EmbeddedWorld("dual_arx_x5")
    world.reset("general_pickup", seed=0)
    figures: dict = {}
    holder: dict[str, BaseCommands] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = ShellWorkspace(settings, lambda argv: holder["c"].run(argv), root=Path(tmp) / "ws")
        holder["c"] = BaseCommands(episode_context(world), settings.commands, ws.obs_dir)
        try:
            ws.run("robo status", timeout_s=60)  # warm-up: page cache, first imports
            cli = timed_loop(ws, "robo status", args.commands)
            direct, service = in_process_calls(ws, args.commands)
            obs = timed_loop(ws, "robo obs", args.obs)
            shell_calls = []
            for _ in range(max(min_shell_calls, args.obs)):
                t = time.perf_counter()
                ws.run("true", timeout_s=60)
                shell_calls.append((time.perf_counter() - t) * 1e3)
            flood = output_flood(ws, args.flood_mb)
            beside_silent = status_beside_silent_clients(ws, max(min_beside_silent, args.commands // 4))
        finally:
            ws.close()
    cell = code_cell_calls(world, args.commands)
    world.close()

    rows = []
    for name, values in (
        ("robo status, CLI to JSON", cli),
        ("protocol.call(status), one process", direct),
        ("harness service time (status)", service),
        ("robo obs, CLI to JSON", obs),
        ("shell tool call (bwrap + bash, 'true')", shell_calls),
        ("robo status beside 2 silent clients", beside_silent),
        ("baseline: code cell robo.state()", cell),
    ):
        p50, p95 = percentiles(values)
        figures[name] = {"median_ms": round(p50, 3), "p95_ms": round(p95, 3), "n": len(values)}
        rows.append((name, f"{p50:.2f}", f"{p95:.2f}", str(len(values))))
    table(("what", "median ms", "p95 ms", "n"), rows, "<>>>")
    ratio = statistics.median(cli) / statistics.median(cell)
    startup = statistics.median(cli) - statistics.median(direct)
    print(f"\nrobo status CLI / code-cell robo.state(): {ratio:.1f}x; of the CLI's round trip, "
          f"{startup:.1f} ms is starting a Python process")  # fmt: skip
    figures["cli_over_code_cell"] = round(ratio, 2)
    figures["process_start_ms"] = round(startup, 2)
    print(f"output flood of {flood['flood_mb']} MB: harness peak memory +{flood['peak_rss_over_before_mb']:.1f} MB "
          f"over its level before, {flood['held_kb']:.0f} kB of output held, {flood['wall_s']:.2f} s")  # fmt: skip
    figures["output_flood"] = flood

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "evolve"
        plan = EvolvePlan(
            task="general_pickup", out=out, layouts=1, retest_layouts=0, seed_tools=EXAMPLE / "general_pickup"
        )
        world = EmbeddedWorld("dual_arx_x5")
        t = time.perf_counter()
        with open_llm(f"replay:{EXAMPLE / 'optimizer.yaml'}") as optimizer_llm:
            summary = run_evolve(
                plan, world, lambda: open_llm(f"replay:{EXAMPLE / 'acting.yaml'}"), optimizer_llm, log=lambda s: None
            )
        total = time.perf_counter() - t
        world.close()
        checks = []
        for _ in range(args.checks):
            t = time.perf_counter()
            report = check_task_tools(out / "tools" / "general_pickup", settings, ["general_pickup"], pool=[POOL_DIR])
            checks.append(time.perf_counter() - t)
            assert report.ok, report.problems
    rounds = summary.repair_round_wall_s
    print(f"\nrepair loop, replayed (examples/shell/evolve, 1 layout): {len(summary.attempts)} attempts, "
          f"{summary.edits_kept} edit kept; repair round {rounds[0]:.2f} s (the optimizer's commands in the sandbox), "
          f"delivery check median {statistics.median(checks):.2f} s; whole run {total:.1f} s")  # fmt: skip
    figures["repair_round_s"] = [round(r, 3) for r in rounds]
    figures["delivery_check_s"] = round(statistics.median(checks), 3)
    figures["evolve_run_s"] = round(total, 2)
    if args.json:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
