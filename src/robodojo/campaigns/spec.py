"""What a campaign is asked to run (:class:`CampaignSpec`), read from YAML and command-line flags, and its grid of
episodes (:class:`EpisodeJob`, one per task x variant x seed x agent x LLM x condition).

A spec file, every key but ``tasks`` optional::

    name: pickup_probes
    tasks: [general_pickup, stack_blocks]
    variants: [standard, cluttered]        # default [standard]; also randomized
    seeds: 0-49                            # a range string as for --seeds, or a list
    agents: [move_eef, code_cell]          # default both; shell too when listed
    llms:                                  # name -> one spec for every agent, or a spec per agent
      gpt: openai:gpt-5.5
      offline:
        move_eef: replay:examples/replay/{task}_seed{seed}.yaml
        code_cell: replay:examples/cells/{task}.py
    conditions:                            # default {zero_shot: {}}
      zero_shot: {}
      flip_ud: {probes: {flip_vision_ud: true}}
      jitter: {probes: {pose_jitter_m: 0.1}}
      demo_images: {demonstration: demos/general_pickup, demonstration_mode: images}
      slow_model: {clock: "fixed:3"}       # every model call costs 3 s of world time (robodojo.episodes.clock)
    clock: fixed:0,1,3,10                  # optional: every condition above under each clock (--clock)
    llm_call_budget: 100
    retries: 2                             # re-runs of a crashed episode (each try is kept)
    agent_options: {images: all, image_horizon: 2, context_tokens: null}
    llm_options: {llm_config: null, base_url: null, timeout_s: null, retries: null, max_output_tokens: null,
                  reasoning_effort: null, tool_choice: profile}

LLM specs may hold ``{task}`` and ``{seed}``, filled per episode. Probes and demonstrations are move_eef's (seed 002):
a condition with probes or a demonstration gives the code-cell agent no episodes. A clock applies to every agent;
the ``clock`` key crosses every condition with each clock it lists: the zero-shot condition becomes the clock's own
(``fixed_1s``), another ``<name>_<clock>`` (``flip_ud_fixed_1s``); a paused clock keeps the name. An episode whose
replay script does not exist is left out of the grid and listed (:attr:`CampaignGrid.skipped`), as ``robodojo
compare`` does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from robodojo.agents.llm.settings import check_reasoning_effort
from robodojo.campaigns.results import ZERO_SHOT
from robodojo.episodes.clock import PAUSED, ClockSetting, parse_clock_sweep
from robodojo.episodes.compare import fill_spec, missing_script, parse_seeds
from robodojo.episodes.factory import DEFAULT_AGENTS, split_agent
from robodojo.episodes.spec import DEFAULT_LLM_CALL_BUDGET
from robodojo.errors import ConfigError, UnknownNameError

DEFAULT_RETRIES = 2
MAX_RETRIES = 10
SPEC_KEYS = (
    "name", "tasks", "variants", "seeds", "agents", "llms", "conditions", "clock", "llm_call_budget", "retries",
    "agent_options", "llm_options",
)  # fmt: skip
CONDITION_KEYS = ("probes", "demonstration", "demonstration_mode", "clock")
AGENT_OPTION_KEYS = ("images", "image_horizon", "context_tokens")
LLM_OPTION_KEYS = (
    "llm_config", "base_url", "timeout_s", "retries", "max_output_tokens", "reasoning_effort", "tool_choice",
)  # fmt: skip
PROBE_AGENTS = ("move_eef",)  #: the agents probes and demonstrations apply to
# Episodes a worker runs at once when an LLM is remote: each mostly waits for its replies, so a few threads per core
# keep the core busy (benchmarks/campaign.py measures the gain); replayed LLMs answer at once, one is enough.
REMOTE_LLM_PER_WORKER = 8


@dataclass(frozen=True)
class Condition:
    """A named episode condition: zero-shot (nothing set), seed 002's probes, or a one-shot demonstration; and the
    clock its episodes run under (any agent's)."""

    name: str
    probes: Mapping[str, Any] = field(default_factory=dict)
    demonstration: str = ""  #: a demonstration folder ("" for none)
    demonstration_mode: str = "images"
    clock: str = PAUSED  #: robodojo.episodes.clock's setting, in its canonical text

    @property
    def clock_setting(self) -> ClockSetting:
        return ClockSetting.parse(self.clock)

    @property
    def is_zero_shot(self) -> bool:
        return not self.probes and not self.demonstration

    def probe_options(self) -> dict[str, Any]:
        """make_agent's ``probes`` for this condition."""
        options = dict(self.probes)
        if self.demonstration:
            options.update(demonstration=Path(self.demonstration), demonstration_mode=self.demonstration_mode)
        return options


@dataclass(frozen=True)
class EpisodeJob:
    """One episode of the grid, with everything a worker process needs to run it (picklable, plain values)."""

    episode_id: str
    task: str
    variant: str
    seed: int
    agent: str
    llm: str  #: the LLM's name in the spec
    llm_spec: str  #: its spec text for this episode, placeholders filled
    condition: Condition
    llm_call_budget: int
    agent_options: Mapping[str, Any]
    llm_options: Mapping[str, Any]


@dataclass(frozen=True)
class CampaignGrid:
    jobs: tuple[EpisodeJob, ...]
    skipped: tuple[tuple[str, str], ...]  #: (episode id, why) of the grid's episodes left out


@dataclass(frozen=True)
class CampaignSpec:
    """A validated campaign request (see the module docstring for the file form)."""

    name: str
    tasks: tuple[str, ...]
    variants: tuple[str, ...] = ("standard",)
    seeds: tuple[int, ...] = (0,)
    agents: tuple[str, ...] = DEFAULT_AGENTS
    llms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  #: name -> agent -> spec
    conditions: tuple[Condition, ...] = (Condition(ZERO_SHOT),)
    llm_call_budget: int = DEFAULT_LLM_CALL_BUDGET
    retries: int = DEFAULT_RETRIES
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    llm_options: Mapping[str, Any] = field(default_factory=dict)

    def grid(self) -> CampaignGrid:
        """Every episode of the campaign, in a stable order (task, variant, seed, agent, LLM, condition)."""
        jobs, skipped = [], []
        grid = itertools.product(self.tasks, self.variants, self.seeds, self.agents, self.llms, self.conditions)
        for task, variant, seed, agent, llm, condition in grid:
            if not condition.is_zero_shot and agent not in PROBE_AGENTS:
                continue
            episode_id = f"{task}.{variant}.seed{seed}.{agent}.{llm}.{condition.name}"
            spec = fill_spec(self.llms[llm][agent], task, seed)
            if (missing := missing_script(spec)) is not None:
                skipped.append((episode_id, f"no replay script {missing}"))
                continue
            options = (self.llm_call_budget, self.agent_options, self.llm_options)
            jobs.append(EpisodeJob(episode_id, task, variant, seed, agent, llm, spec, condition, *options))
        return CampaignGrid(tuple(jobs), tuple(skipped))

    def default_per_worker(self) -> int:
        """Episodes per worker when not given: 1 when every LLM is replayed, else :data:`REMOTE_LLM_PER_WORKER`."""
        replayed = all(spec.startswith("replay:") for specs in self.llms.values() for spec in specs.values())
        return 1 if replayed else REMOTE_LLM_PER_WORKER

    def as_dict(self) -> dict[str, Any]:
        """The spec in its file form (what the campaign folder keeps as campaign.yaml)."""
        values = dataclasses.asdict(self)
        values["tasks"], values["variants"], values["agents"] = list(self.tasks), list(self.variants), list(self.agents)
        values["seeds"] = list(self.seeds)
        values["llms"] = {name: dict(specs) for name, specs in self.llms.items()}
        values["conditions"] = {
            # the defaults left out: a campaign from before clocks keeps its fingerprint (and resumes)
            c.name: {
                k: v for k, v in dataclasses.asdict(c).items()
                if k != "name" and v not in ({}, "") and not (k == "clock" and v == PAUSED)
            }
            for c in self.conditions
        }  # fmt: skip
        for c in values["conditions"].values():
            if "demonstration" not in c:
                c.pop("demonstration_mode", None)
        values["agent_options"], values["llm_options"] = dict(self.agent_options), dict(self.llm_options)
        return values

    def fingerprint(self) -> str:
        """A hash of what decides the episodes and their results (not the name): a resumed campaign must match."""
        values = {k: v for k, v in self.as_dict().items() if k != "name"}
        return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


def llm_name(spec: str) -> str:
    """A name for an LLM given by its spec alone (``openai:gpt-5.5`` -> ``gpt-5_5``, ``replay:dir/x.yaml`` ->
    ``replay``): the part after the profile, made a plain name."""
    kind, _, rest = spec.partition(":")
    if kind == "replay":
        return "replay"
    return re.sub(r"[^A-Za-z0-9_-]", "_", rest) or kind


# -- loading --------------------------------------------------------------------------------------------------------


def load_campaign_spec(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> CampaignSpec:
    """The spec of ``path`` (YAML) with ``overrides`` (the command line's flags, None values ignored) over it;
    either may be absent. Every error names the key and what was expected."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the campaign spec {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"the campaign spec {path} is not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"the campaign spec {path} must be a mapping of keys ({', '.join(SPEC_KEYS)})")
        values.update(loaded)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return campaign_spec_from_dict(values, source=str(path) if path else "the command line")


def campaign_spec_from_dict(values: Mapping[str, Any], source: str = "the campaign spec") -> CampaignSpec:
    """Validate ``values`` (the file form) into a CampaignSpec."""
    from robodojo.sim.tasks import get_task
    from robodojo.sim.tasks.base import VARIANTS

    unknown = sorted(set(values) - set(SPEC_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(SPEC_KEYS)}")
    if not values.get("tasks"):
        raise ConfigError(f"{source}: 'tasks' is required (a list of task names, or --tasks)")
    tasks = _names(values["tasks"], "tasks", source)
    for task in tasks:
        try:
            get_task(task)
        except UnknownNameError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    variants = _names(values.get("variants", ["standard"]), "variants", source)
    for variant in variants:
        if variant not in VARIANTS:
            raise ConfigError(f"{source}: unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    agents = _names(values.get("agents", list(DEFAULT_AGENTS)), "agents", source)
    for agent in agents:
        try:
            split_agent(agent)
        except (ConfigError, UnknownNameError) as exc:
            raise ConfigError(f"{source}: {exc}") from None
    seeds = _seeds(values.get("seeds", [0]), source)
    llms = _llms(values.get("llms"), agents, source)
    conditions = _conditions(values.get("conditions", {ZERO_SHOT: {}}), source)
    if values.get("clock") is not None:
        conditions = _with_clocks(conditions, values["clock"], source)
    budget = _int(values.get("llm_call_budget", DEFAULT_LLM_CALL_BUDGET), "llm_call_budget", source, 1, None)
    retries = _int(values.get("retries", DEFAULT_RETRIES), "retries", source, 0, MAX_RETRIES)
    agent_options = _options(values.get("agent_options"), AGENT_OPTION_KEYS, "agent_options", source)
    llm_options = _options(values.get("llm_options"), LLM_OPTION_KEYS, "llm_options", source)
    check_reasoning_effort(llm_options.get("reasoning_effort"), f"{source}: llm_options.reasoning_effort")
    name = values.get("name") or "campaign"
    if not isinstance(name, str) or "/" in name:
        raise ConfigError(f"{source}: 'name' must be a plain string, got {name!r}")
    return CampaignSpec(
        name, tasks, variants, seeds, agents, llms, conditions, budget, retries, agent_options, llm_options
    )


def _names(value: Any, key: str, source: str) -> tuple[str, ...]:
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items or not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"{source}: {key!r} must be a non-empty list of names (or a comma-separated string)")
    return tuple(dict.fromkeys(items))


def _seeds(value: Any, source: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        return tuple(parse_seeds(value))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        if min(value) < 0:
            raise ConfigError(f"{source}: seeds must be >= 0, got {min(value)}")
        return tuple(sorted(set(value)))
    raise ConfigError(f"{source}: 'seeds' must be a range string such as 0-49 or 0,2,5-7, or a list of integers")


def _llms(value: Any, agents: Sequence[str], source: str) -> dict[str, dict[str, str]]:
    from robodojo.episodes.compare import check_spec

    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{source}: 'llms' is required: a mapping of LLM names to a spec or to a spec per agent")
    llms: dict[str, dict[str, str]] = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not name or "." in name or "/" in name:
            raise ConfigError(f"{source}: LLM name {name!r} must be a plain name (no '.' or '/')")
        per_agent = dict.fromkeys(agents, spec) if isinstance(spec, str) else spec
        if not isinstance(per_agent, dict) or not all(isinstance(per_agent.get(a), str) for a in agents):
            raise ConfigError(
                f"{source}: llms.{name} must be a spec string or a mapping with a spec for each agent "
                f"({', '.join(agents)})"
            )
        for agent in agents:
            check_spec(per_agent[agent])
        llms[name] = {a: per_agent[a] for a in agents}
    return llms


def _conditions(value: Any, source: str) -> tuple[Condition, ...]:
    from robodojo.agents.move_eef.probes import DEMONSTRATION_FILE, DEMONSTRATION_MODES, Probes
    from robodojo.episodes.demonstration import is_demonstration

    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{source}: 'conditions' must be a mapping of condition names to settings")
    probe_fields = {f.name for f in dataclasses.fields(Probes)} - {"demonstration", "demonstration_mode"}
    conditions = []
    for name, settings in value.items():
        where = f"{source}: conditions.{name}"
        settings = settings or {}
        if not isinstance(name, str) or not name or "." in name or "/" in name:
            raise ConfigError(f"{source}: condition name {name!r} must be a plain name (no '.' or '/')")
        if not isinstance(settings, dict) or set(settings) - set(CONDITION_KEYS):
            raise ConfigError(f"{where} must be a mapping with keys among {', '.join(CONDITION_KEYS)}")
        probes = settings.get("probes") or {}
        if not isinstance(probes, dict) or set(probes) - probe_fields:
            raise ConfigError(f"{where}.probes must be a mapping with keys among {', '.join(sorted(probe_fields))}")
        Probes(**probes)  # the probes' own checks (jitter finite and >= 0, ...)
        demonstration = settings.get("demonstration") or ""
        mode = settings.get("demonstration_mode", "images")
        if demonstration and not is_demonstration(demonstration):
            raise ConfigError(
                f"{where}.demonstration: no {DEMONSTRATION_FILE} in {demonstration} and no episode record there"
            )
        if mode not in DEMONSTRATION_MODES:
            raise ConfigError(f"{where}.demonstration_mode must be one of {', '.join(DEMONSTRATION_MODES)}")
        try:
            clock = ClockSetting.parse(settings.get("clock", PAUSED)).text
        except ConfigError as exc:
            raise ConfigError(f"{where}.clock: {exc}") from None
        condition = Condition(name, probes, str(demonstration), mode, clock)
        if name == ZERO_SHOT and not condition.is_zero_shot:
            raise ConfigError(f"{where}: the {ZERO_SHOT} condition has no probes and no demonstration")
        conditions.append(condition)
    return tuple(conditions)


def _with_clocks(conditions: Sequence[Condition], value: Any, source: str) -> tuple[Condition, ...]:
    """Every condition under each clock ``value`` lists (``fixed:0,1,3,10``), named as the module docstring says."""
    try:
        clocks = parse_clock_sweep(value if isinstance(value, str | list | tuple) else str(value))
    except ConfigError as exc:
        raise ConfigError(f"{source}: clock: {exc}") from None
    crossed = []
    for condition in conditions:
        if condition.clock != PAUSED:
            raise ConfigError(
                f"{source}: conditions.{condition.name} sets its own clock; the clock key crosses the other "
                "conditions with its clocks (give one or the other)"
            )
        for clock in clocks:
            if clock.is_paused:
                name = condition.name
            else:
                name = clock.label if condition.name == ZERO_SHOT else f"{condition.name}_{clock.label}"
            crossed.append(dataclasses.replace(condition, name=name, clock=clock.text))
    names = [c.name for c in crossed]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: clock: conditions named twice once crossed with the clocks: {', '.join(names)}")
    return tuple(crossed)


def _int(value: Any, key: str, source: str, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"{source}: {key!r} must be an integer {bound}, got {value!r}")
    return value


def _options(value: Any, keys: Sequence[str], key: str, source: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) - set(keys):
        raise ConfigError(f"{source}: {key!r} must be a mapping with keys among {', '.join(keys)}")
    return {k: v for k, v in value.items() if v is not None}
