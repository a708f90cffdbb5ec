"""Compare the move_eef and code-cell agents on the same tasks and seeds (``robodojo compare``).

Both agents run every (task, seed) of the request in the embedded world, each with its own LLM spec. A spec may hold
``{task}`` and ``{seed}`` placeholders, filled per episode, so that offline replay scripts can be given per episode:

    robodojo compare --tasks general_pickup --seeds 0 \\
        --move-eef-llm 'replay:examples/replay/{task}_seed{seed}.yaml' --code-cell-llm 'replay:examples/cells/{task}.py'

A replay spec whose file does not exist is not an error: that episode is reported as "skipped: no script" and left
out. The summary has, per agent, the episodes run, the successes and the success rate; and, on the episodes both
agents solved (the same task, seed and variant), the mean LLM calls, input tokens (and cached), output tokens and
cost per solved episode of each agent and the ratio code_cell / move_eef (seed 000's metric: cost per solved episode,
on the episodes both solved, so that neither agent's mean is taken over easier episodes than the other's).
"""

from __future__ import annotations

import dataclasses
import json
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robodojo.episodes.clock import PAUSED_CLOCK, ClockSetting
from robodojo.episodes.efficiency import jointly_solved
from robodojo.episodes.factory import AGENTS, DEFAULT_AGENTS, make_agent, split_agent
from robodojo.episodes.hosts import WorldHost
from robodojo.episodes.runner import run_episode
from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET, EndReason, EpisodeOutcome, EpisodeResult, EpisodeSpec
from robodojo.errors import ConfigError
from robodojo.sim.variants import VARIANTS

if TYPE_CHECKING:
    from robodojo.agents.llm.settings import LlmSettings

PLACEHOLDERS = ("{task}", "{seed}")
#: those compare shows
METRICS = ("llm_calls", "input_tokens", "cached_input_tokens", "output_tokens", "cost_usd", "wall_time_s")
METRIC_LABELS = {
    "llm_calls": "LLM calls",
    "input_tokens": "input tokens",
    "cached_input_tokens": "  of which cached",
    "output_tokens": "output tokens",
    "cost_usd": "cost USD",
    "wall_time_s": "wall time s",
}
MAX_SEEDS = 10_000


@dataclass(frozen=True, kw_only=True)
class Outcome(EpisodeOutcome):
    """One agent's episode of one (task, seed, variant): its outcome, or skipped (end reason ``skipped``, with why)."""

    agent: str
    task: str
    seed: int
    variant: str
    llm: str  #: the spec with its placeholders filled
    skipped: str = ""  #: why the episode was not run ("" when it ran)
    folder: str = ""  #: the episode record (a crashed episode: the folder its record is under)

    @property
    def ran(self) -> bool:
        return not self.skipped

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.task, self.seed, self.variant)


@dataclass(frozen=True, kw_only=True)
class EpisodeRun:
    """One agent on one episode, as ``robodojo compare`` and a campaign's workers ask :func:`run_one` for it.

    ``llm_spec`` has its placeholders filled; ``settings`` and ``tool_choice`` go to open_llm (the user's profiles and
    the run's overrides), ``agent_options`` to make_agent (image_horizon, images, context_tokens, probes); a crash's
    traceback is written to ``crash_log`` when given; ``clock`` goes to the runner. The record goes under
    ``out_root``."""

    agent: str
    llm_spec: str
    episode: EpisodeSpec
    out_root: Path
    base_url: str | None = None
    settings: LlmSettings | None = None
    tool_choice: str | None = None
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    crash_log: Path | None = None
    clock: ClockSetting = PAUSED_CLOCK  #: the world time a model call costs (robodojo.episodes.clock)


# -- arguments ------------------------------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """``"0-4"``, ``"3"``, ``"0,2,5-7"`` -> sorted distinct seeds; anything else is a ConfigError."""
    seeds: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if dash else (int(part), int(part))
        except ValueError:
            raise ConfigError(f"bad seeds {text!r}: expected seeds and ranges such as 0-4 or 0,2,5-7") from None
        if first < 0 or last < first:
            raise ConfigError(f"bad seed range {part!r} in {text!r}: expected FIRST-LAST with 0 <= FIRST <= LAST")
        seeds.update(range(first, last + 1))
        if len(seeds) > MAX_SEEDS:
            raise ConfigError(f"too many seeds in {text!r} (at most {MAX_SEEDS})")
    return sorted(seeds)


def parse_tasks(text: str) -> list[str]:
    """``"general_pickup,handover"`` -> task names, each checked against the embedded tasks."""
    from robodojo.sim.tasks import get_task

    tasks = [t.strip() for t in str(text).split(",") if t.strip()]
    if not tasks:
        raise ConfigError(f"no tasks in {text!r}: expected task names separated by commas")
    for task in tasks:
        get_task(task)  # ConfigError naming the known tasks
    return list(dict.fromkeys(tasks))


def parse_agents(text: str) -> list[str]:
    """``"shell,shell:codex,mcp:codex"`` -> agent names (robodojo.episodes.factory.split_agent checks each), in
    order, the first the baseline of the ratios; an agent named twice is refused."""
    agents = [a.strip() for a in str(text).split(",") if a.strip()]
    if not agents:
        raise ConfigError(f"no agents in {text!r}: expected agent names separated by commas")
    if len(agents) != len(set(agents)):
        raise ConfigError(f"--agents names an agent twice: {text}")
    for agent in agents:
        split_agent(agent)  # an unknown agent or CLI: ConfigError naming the known ones
    return agents


def fill_spec(spec: str, task: str, seed: int) -> str:
    """The LLM spec of one episode: ``{task}`` and ``{seed}`` replaced (other braces are left as they are)."""
    return spec.replace("{task}", task).replace("{seed}", str(seed))


def check_spec(spec: str, settings: LlmSettings | None = None) -> None:
    """A ConfigError unless ``spec`` has the form open_llm accepts (PROFILE:REST with a known profile)."""
    from robodojo.agents.llm.client import parse_llm_spec

    parse_llm_spec(spec, settings)


def check_credentials(spec: str, base_url: str | None = None, settings: LlmSettings | None = None) -> None:
    """A ConfigError now (before any world is built, which takes tens of seconds) if the spec's profile needs an API
    key that is not set or a base URL that is not given; nothing is sent. Replay specs need neither."""
    from robodojo.agents.llm.client import LlmClient, parse_llm_spec

    kind, rest = parse_llm_spec(spec, settings)
    if kind != "replay":
        LlmClient(rest, base_url, profile=kind, settings=settings).close()


def missing_script(spec: str) -> Path | None:
    """The replay file of a ``replay:FILE`` spec when it does not exist, else None."""
    kind, _, rest = spec.partition(":")
    if kind == "replay" and not Path(rest).is_file():
        return Path(rest)
    return None


# -- running --------------------------------------------------------------------------------------------------------


def run_one(world: Any, run: EpisodeRun) -> EpisodeResult:
    """Run one agent on one episode in ``world``; a crash gives a ``crashed`` result (its record, if any, under
    ``run.out_root``). A ConfigError (a bad script or spec: the user's to fix, not an episode outcome) is raised."""
    from robodojo.agents.llm.client import open_llm

    agent = None
    started = time.perf_counter()
    try:
        with open_llm(
            run.llm_spec,
            base_url=None if run.llm_spec.startswith("replay:") else run.base_url,
            settings=run.settings,
            tool_choice=run.tool_choice,
        ) as llm:
            agent = make_agent(run.agent, **run.agent_options, reply_reserve_tokens=llm.max_output_tokens)
            return run_episode(
                WorldHost(world), agent, llm, run.episode, run.out_root, model=llm.model, clock=run.clock
            )
    except ConfigError:
        raise
    except Exception as exc:  # the episode crashed (its record, if any, says where); the comparison goes on
        if run.crash_log is not None:
            run.crash_log.parent.mkdir(parents=True, exist_ok=True)
            run.crash_log.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        return EpisodeResult(
            end_reason=EndReason.CRASHED,
            wall_time_s=time.perf_counter() - started,
            error="".join(traceback.format_exception_only(type(exc), exc)).strip(),
            folder=run.out_root,
        )
    finally:
        if agent is not None:
            getattr(agent, "close", lambda: None)()


def _compared(run: EpisodeRun, robot: str, worlds: dict[str, Any]) -> Outcome:
    """``run`` as an episode of the comparison: skipped if its replay script does not exist, else run in the robot's
    world from ``worlds`` (built when an episode first needs it)."""
    from robodojo.sim.world import EmbeddedWorld

    episode = run.episode
    who: dict[str, Any] = {
        "agent": run.agent, "task": episode.task, "seed": episode.seed, "variant": episode.variant, "llm": run.llm_spec
    }  # fmt: skip
    missing = missing_script(run.llm_spec)
    if missing is not None:
        return Outcome(**who, end_reason=EndReason.SKIPPED, skipped=f"no script ({missing})")
    if robot not in worlds:
        worlds[robot] = EmbeddedWorld(robot)
    result = run_one(worlds[robot], run)
    return Outcome(**who, **result.outcome_fields(), folder=str(result.folder))


def run_compare(
    tasks: Sequence[str],
    seeds: Sequence[int],
    specs: Mapping[str, str],
    out: Path,
    *,
    variant: str = "standard",
    budget: int = DEFAULT_LLM_CALL_BUDGET,
    base_url: str | None = None,
    progress: Callable[[Outcome], None] | None = None,
    settings: LlmSettings | None = None,
    tool_choice: str | None = None,
    agent_options: Mapping[str, Any] | None = None,
    clock: ClockSetting = PAUSED_CLOCK,
) -> list[Outcome]:
    """Run every agent of ``specs`` (agent name -> LLM spec, placeholders allowed) on every task and seed, each
    model call costing the world time ``clock`` says (robodojo.episodes.clock).

    Episode records go to ``out/episodes``. One embedded world per robot is reused across episodes. Every spec's
    credentials, and ``agent_options`` (make_agent's image_horizon, images, context_tokens), are checked before the
    first world is built.
    """
    from robodojo.sim.tasks import get_task
    from robodojo.sim.world import EmbeddedWorld

    if variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    for agent_name, spec in specs.items():
        split_agent(agent_name)  # an unknown agent or CLI: ConfigError
        check_spec(spec, settings)
        make_agent(agent_name, **(agent_options or {}))  # bad options fail here, before any world is built
        if tasks and seeds:
            check_credentials(fill_spec(spec, tasks[0], seeds[0]), base_url, settings)
    outcomes: list[Outcome] = []
    worlds: dict[str, EmbeddedWorld] = {}
    try:
        for task in tasks:
            robot = get_task(task).robot
            for seed in seeds:
                episode = EpisodeSpec(task=task, seed=seed, variant=variant, llm_call_budget=budget)
                for agent_name, spec in specs.items():
                    run = EpisodeRun(
                        agent=agent_name,
                        llm_spec=fill_spec(spec, task, seed),
                        episode=episode,
                        out_root=out / "episodes",
                        base_url=base_url,
                        settings=settings,
                        tool_choice=tool_choice,
                        agent_options=agent_options or {},
                        clock=clock,
                    )
                    outcome = _compared(run, robot, worlds)
                    outcomes.append(outcome)
                    if progress is not None:
                        progress(outcome)
    finally:
        for world in worlds.values():
            world.close()
    return outcomes


# -- summary --------------------------------------------------------------------------------------------------------


def summarize(outcomes: Iterable[Outcome], agents: Sequence[str] = DEFAULT_AGENTS) -> dict[str, Any]:
    """Per agent: episodes run, skipped, successes, success rate; on the episodes every agent solved: mean metrics
    per agent, each later agent's ratio to the first (``ratios``) and, as before, the last agent's (``ratio``:
    code_cell / move_eef), from :func:`robodojo.episodes.efficiency.jointly_solved`."""
    outcomes = list(outcomes)
    per_agent: dict[str, Any] = {}
    for agent in agents:
        mine = [o for o in outcomes if o.agent == agent]
        ran = [o for o in mine if o.ran]
        wins = [o for o in ran if o.success]
        per_agent[agent] = {
            "episodes": len(ran),
            "skipped": len(mine) - len(ran),
            "successes": len(wins),
            "success_rate": len(wins) / len(ran) if ran else None,
        }
    # A skipped outcome never succeeded, so it never enters the means.
    joint = jointly_solved(outcomes, agents, layout=lambda o: o.key)
    means = {agent: {m: joint.mean[agent].value(m) for m in METRICS} for agent in agents}
    ratios = {agent: {m: joint.ratio[agent].value(m) for m in METRICS} for agent in agents[1:]}
    ratio = ratios[agents[-1]] if len(agents) >= 2 else {}
    return {
        "agents": list(agents),
        "per_agent": per_agent,
        "both_solved": {
            "episodes": [{"task": t, "seed": s, "variant": v} for t, s, v in joint.layouts],
            "count": len(joint.layouts),
            "mean": means,
            "ratio": ratio,
            "ratio_of": f"{agents[-1]} / {agents[0]}" if len(agents) >= 2 else "",
            "ratios": ratios,
        },
    }


def _fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "cost_usd":
        return f"{value:.4f}"
    if metric == "llm_calls":
        return f"{value:.2f}"
    return f"{value:.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], aligns: str) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, aligns, widths, strict=True)).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_summary(summary: Mapping[str, Any]) -> str:
    """The comparison as text: per-agent success, then the means on the episodes all agents solved."""
    agents = summary["agents"]
    rows = []
    for agent in agents:
        s = summary["per_agent"][agent]
        rate = "-" if s["success_rate"] is None else f"{s['success_rate'] * 100:.1f}"
        rows.append((agent, str(s["episodes"]), str(s["successes"]), rate, str(s["skipped"])))
    lines = _table(("agent", "episodes", "successes", "success %", "skipped"), rows, "<>>>>")
    both = summary["both_solved"]
    lines.append("")
    every = "both agents" if len(agents) == 2 else "every agent"
    if not both["count"]:
        lines.append(f"no episode was solved by {every}: no per-episode means to compare")
        return "\n".join(lines)
    names = ", ".join(f"{e['task']} seed {e['seed']}" for e in both["episodes"][:6])
    more = f", ... ({both['count']} in all)" if both["count"] > 6 else ""
    lines.append(f"mean per solved episode, on the {both['count']} episode(s) {every} solved ({names}{more}):")
    later = agents[1:]
    header = ("metric", *agents, *(f"{a} / {agents[0]}" for a in later))
    metric_rows = []
    for m in METRICS:
        row = [METRIC_LABELS[m], *(_fmt(m, both["mean"][a][m]) for a in agents)]
        for agent in later:
            r = both["ratios"][agent].get(m)
            row.append("-" if r is None else f"{r:.2f}x")
        metric_rows.append(tuple(row))
    lines += _table(header, metric_rows, "<" + ">" * (len(header) - 1))
    return "\n".join(lines)


#: end reasons of an episode that never got to act as the agent meant: the run failed, not the agent
FAILED_END_REASONS = (EndReason.LLM_ERROR, EndReason.CRASHED)


def all_failed(outcomes: Iterable[Outcome]) -> bool:
    """True when episodes ran and every one of them ended by llm_error or a crash (nothing was measured)."""
    ran = [o for o in outcomes if o.ran]
    return bool(ran) and all(o.end_reason in FAILED_END_REASONS for o in ran)


def outcome_line(o: Outcome) -> str:
    """One progress line per episode."""
    head = f"{o.task} seed {o.seed} ({o.variant}) {o.agent:9s}"
    if o.skipped:
        return f"{head}: skipped: {o.skipped}"
    verdict = "success" if o.success else f"no success ({o.end_reason})"
    text = (
        f"{head}: {verdict}; {o.llm_calls} LLM calls, {o.input_tokens} input tokens ({o.cached_input_tokens} cached), "
        f"{o.output_tokens} output, ${o.cost_usd:.4f}, {o.wall_time_s:.1f} s"
    )
    if o.error:
        text += f"\n    {o.error.splitlines()[-1]}"
    return text


def write_report(
    path: Path, outcomes: Sequence[Outcome], summary: Mapping[str, Any], request: Mapping[str, Any]
) -> None:
    """compare.json: the request, every episode (run or skipped) and the summary."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "request": dict(request),
        "episodes": [{**dataclasses.asdict(o), "ran": o.ran} for o in outcomes],
        "summary": summary,
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


__all__ = [
    "AGENTS",
    "FAILED_END_REASONS",
    "EpisodeRun",
    "Outcome",
    "all_failed",
    "check_credentials",
    "check_spec",
    "fill_spec",
    "format_summary",
    "missing_script",
    "outcome_line",
    "parse_seeds",
    "parse_tasks",
    "run_compare",
    "run_one",
    "summarize",
    "write_report",
]
