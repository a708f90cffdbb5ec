"""The `robodojo` command line."""

from __future__ import annotations

import argparse
import math
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robodojo import calibrate
from robodojo.agents.mcp.settings import TOOL_SETS
from robodojo.errors import RobodojoError
from robodojo.sim.variants import VARIANTS

if TYPE_CHECKING:
    from robodojo.campaigns.reporting import ReportFiles
    from robodojo.episodes.clock import ClockSetting


def _cmd_demo(args: argparse.Namespace) -> int:
    from robodojo.demo import run_demo

    episodes = run_demo(Path(args.out), seed=args.seed)
    return 0 if all(e.success for e in episodes) else 1


def _cmd_tasks(args: argparse.Namespace) -> int:
    from robodojo.sim.tasks import available_tasks, get_task
    from robodojo.sim.tasks.base import CAPABILITIES

    names = available_tasks(args.robot)
    for axis in CAPABILITIES:
        on_axis = [get_task(n) for n in names if get_task(n).capability == axis]
        if not on_axis:
            continue
        print(f"{axis} ({len(on_axis)})")
        for task in on_axis:
            print(f"  {task.name:28s} {task.robot:12s} {task.step_limit:5d} steps  {task.instruction_template}")
    return 0


def _cmd_robots(args: argparse.Namespace) -> int:
    from robodojo.robots.config import available_robots, load_robot_config

    for name in available_robots():
        robot = load_robot_config(name)
        print(
            f"{name:12s} arms={','.join(robot.arm_names):11s} "
            f"cameras={','.join(robot.camera_names):28s} {robot.description}"
        )
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    import cv2

    from robodojo.sim.tasks import get_task
    from robodojo.sim.world import EmbeddedWorld

    world = EmbeddedWorld(get_task(args.task).robot)
    obs = world.reset(args.task, seed=args.seed, variant=args.variant)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(world.instruction)
    for name, frame in obs.cameras.items():
        path = out / f"{args.task}_{args.variant}_seed{args.seed}_{name}.png"
        cv2.imwrite(str(path), cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR))
        print(f"  {path}")
    world.close()
    return 0


def _cmd_scene_export(args: argparse.Namespace) -> int:
    from robodojo.sim.tasks import get_task
    from robodojo.sim.usd import write_usd_stage
    from robodojo.sim.world import EmbeddedWorld

    world = EmbeddedWorld(get_task(args.task).robot)
    try:
        world.reset(args.task, seed=args.seed, variant=args.variant)
        written = write_usd_stage(world.describe(), Path(args.out), world.settings)
    finally:
        world.close()
    print(f"{args.task} seed {args.seed} ({args.variant}): {world.instruction}")
    print(f"  stage      {written.stage}")
    print(f"  robot URDF {written.robot_urdf} (for Isaac Sim's URDF importer; the stage holds the table)")
    for texture in written.textures:
        print(f"  texture    {texture}")
    return 0


def _add_scene(sub: argparse._SubParsersAction) -> None:
    scene = sub.add_parser("scene", help="the simulator-neutral scene of a task layout, for other simulators")
    actions = scene.add_subparsers(dest="scene_command", required=True)
    export = actions.add_parser(
        "export",
        help="write a task layout's scene (settled, as the embedded world starts it) as a USD stage for Isaac Sim",
    )
    export.add_argument("--task", required=True)
    export.add_argument("--seed", type=int, default=0)
    export.add_argument("--variant", default="standard", choices=VARIANTS)
    export.add_argument("--out", default="out/scene/scene.usda", help="the stage (.usda text, .usd binary)")
    export.set_defaults(func=_cmd_scene_export)


def _cmd_record_repair(args: argparse.Namespace) -> int:
    from robodojo.episodes.mcap_record import MCAP_FILE, repair_mcap
    from robodojo.errors import ConfigError

    path = Path(args.path)
    if path.is_dir():
        path = path / MCAP_FILE
    if not path.is_file():
        raise ConfigError(f"no MCAP file at {path} (give an episode folder or its {MCAP_FILE})")
    print(f"{path}: {repair_mcap(path).text()}")
    return 0


def _add_record(sub: argparse._SubParsersAction) -> None:
    record = sub.add_parser("record", help="work on an episode's record")
    actions = record.add_subparsers(dest="record_command", required=True)
    repair = actions.add_parser(
        "repair",
        help="make an episode.mcap cut short (a killed try) complete again: every record before the cut, indexed, "
        "with its summary and footer (the file as found is kept as episode.mcap.cut)",
    )
    repair.add_argument("path", help="an episode folder or its episode.mcap")
    repair.set_defaults(func=_cmd_record_repair)


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    """--llm-config, --timeout, --retries, --max-output-tokens, --reasoning-effort and --tool-choice: the LLM
    client's settings."""
    from robodojo.agents.llm.settings import REASONING_EFFORTS, TOOL_CHOICES, user_llm_config_path

    parser.add_argument(
        "--llm-config",
        default=None,
        metavar="FILE",
        help="LLM profiles/defaults merged over config/llm.yaml (after the per-user file "
        f"{user_llm_config_path()}, if it exists); a profile of a known name has only the given keys replaced",
    )
    parser.add_argument("--timeout", type=float, default=None, help="per-request LLM timeout [s] (default: config)")
    parser.add_argument("--retries", type=int, default=None, help="LLM retries per call (default: config)")
    parser.add_argument(
        "--max-output-tokens", type=_positive_int, default=None,
        help="answer length sent with every LLM call (default: config/llm.yaml, per profile)",
    )  # fmt: skip
    parser.add_argument(
        "--reasoning-effort", default=None, choices=REASONING_EFFORTS,
        help="how hard a reasoning model thinks before answering, sent as each server takes it (OpenAI, Gemini, "
        "vLLM: reasoning_effort; Anthropic: a thinking budget); default: config/llm.yaml, per profile (not sent)",
    )  # fmt: skip
    parser.add_argument(
        "--tool-choice",
        default="profile",
        choices=TOOL_CHOICES,
        help="tool_choice sent with every LLM call; 'profile' (default) lets the server profile decide",
    )


def add_agent_options(parser: argparse.ArgumentParser, *, image_horizon: bool = True) -> None:
    """--image-horizon (unless ``image_horizon`` is false), --images and --context-tokens: what the agents send the
    model."""
    if image_horizon:
        parser.add_argument(
            "--image-horizon",
            type=_image_horizon,
            default=None,
            help="observations whose images stay in the context: N >= 1 or 'all' (default: the agent's, 2)",
        )
    parser.add_argument(
        "--images",
        default=None,
        choices=("none", "head", "all"),
        help="which cameras' pictures are sent to the model: none (text-only models), head, all (default)",
    )
    parser.add_argument(
        "--context-tokens", type=_positive_int, default=None,
        help="the model's context length (robodojo doctor measures it): the oldest turns are left out of requests "
        "that would not fit, and a request that cannot fit is refused before sending (llm_error)",
    )  # fmt: skip


def agent_options(args: argparse.Namespace) -> dict[str, Any]:
    """make_agent's keyword arguments from add_agent_options' flags."""
    options = {"images": args.images, "context_tokens": args.context_tokens}
    return {**options, "image_horizon": args.image_horizon} if "image_horizon" in args else options


def llm_settings(args: argparse.Namespace):
    """The LLM settings of this run: config/llm.yaml, the per-user file, --llm-config, then --timeout/--retries."""
    from robodojo.agents.llm.settings import run_llm_settings

    return run_llm_settings(
        args.llm_config,
        timeout_s=args.timeout,
        retries=args.retries,
        max_output_tokens=args.max_output_tokens,
        reasoning_effort=args.reasoning_effort,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from robodojo.agents.llm.client import open_llm
    from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
    from robodojo.sim.tasks import get_task
    from robodojo.sim.world import EmbeddedWorld

    _start_view(args, one_episode=True)
    spec = EpisodeSpec(task=args.task, seed=args.seed, variant=args.variant, llm_call_budget=args.budget)
    robot = get_task(args.task).robot
    settings = llm_settings(args)
    # The client first: a missing API key or base URL is reported at once, not after the world is built (~30 s).
    with open_llm(args.llm, base_url=args.base_url, settings=settings, tool_choice=args.tool_choice) as llm:
        world = EmbeddedWorld(robot)
        try:
            agent = _make_agent(args, reply_reserve_tokens=llm.max_output_tokens)
            try:
                result = run_episode(
                    WorldHost(world), agent, llm, spec, Path(args.out), model=llm.model, clock=args.clock
                )
            finally:
                getattr(agent, "close", lambda: None)()
        finally:
            world.close()
    u = result.usage
    print(
        f"{args.task} seed {args.seed} ({args.variant}), agent {args.agent}: "
        f"{'success' if result.success else 'no success'}, score {result.score:.2f}, "
        f"ended by {result.end_reason.value}\n"
        f"  {result.llm_calls} LLM calls, {u.input_tokens} input tokens ({u.cached_input_tokens} cached), "
        f"{u.output_tokens} output tokens ({u.reasoning_tokens} reasoning), ${u.cost_usd:.4f}; "
        f"{result.steps_used} env steps; "
        f"{result.wall_time_s:.1f} s{_latency_text(args.clock, result.latency_applied_s)}\n  record: {result.folder}/"
    )
    if result.error:  # why it ended (llm_error, backend_lost, ...): the last line is the cause
        print(f"  error: {result.error.strip().splitlines()[-1]}")
    return 0 if result.success else 1


def _latency_text(clock: ClockSetting | None, latency_s: float) -> str:
    """What a clock that is not paused let pass, for the episode's summary line."""
    return "" if clock is None or clock.is_paused else f"; clock {clock.text}: {latency_s:.1f} s of latency applied"


def _cmd_evolve(args: argparse.Namespace) -> int:
    from robodojo.agents.llm.client import open_llm
    from robodojo.episodes.evolve import EvolvePlan, run_evolve
    from robodojo.sim.tasks import get_task
    from robodojo.sim.world import EmbeddedWorld

    plan = EvolvePlan(
        task=args.task, out=Path(args.out) / args.task, layouts=args.layouts,
        retest_layouts=args.layouts if args.retest is None else args.retest, first_seed=args.first_seed,
        variant=args.variant, max_edits=args.max_edits, llm_call_budget=args.budget, coding_agent=args.coding_agent,
        seed_tools=Path(args.tools) if args.tools else None,
    )  # fmt: skip
    robot = get_task(args.task).robot
    settings = llm_settings(args)
    plan.out.mkdir(parents=True, exist_ok=True)

    def acting_llm():
        return open_llm(args.llm, base_url=args.base_url, settings=settings, tool_choice=args.tool_choice)

    with open_llm(args.optimizer_llm or args.llm, base_url=args.base_url, settings=settings,
                  tool_choice=args.tool_choice) as optimizer_llm:  # fmt: skip
        world = EmbeddedWorld(robot)
        try:
            summary = run_evolve(plan, world, acting_llm, optimizer_llm)
        finally:
            world.close()
    kept, reverted = summary.edits_kept, summary.edits_reverted
    print(
        f"{args.task}: {len(summary.attempts)} attempts on {args.layouts} layouts, {kept} edits kept, {reverted} "
        f"reverted; frozen retest: {summary.retest_rate('dev'):.0%} of the development layouts, "
        f"{summary.retest_rate('new'):.0%} of the new; {summary.wall_s:.0f} s\n  record: {plan.out}/"
    )
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from robodojo.agents.mcp.settings import load_mcp_settings
    from robodojo.episodes import EpisodeSpec
    from robodojo.episodes.mcp_episode import McpPlan, serve_episode

    settings = load_mcp_settings()
    budget = args.max_calls if args.max_calls is not None else settings.call_budget
    spec = EpisodeSpec(task=args.task, seed=args.seed, variant=args.variant, llm_call_budget=budget)
    plan = McpPlan(spec, args.tools, args.transport, Path(args.out), host=args.host, port=args.port, clock=args.clock)
    result = serve_episode(plan, settings)
    # stderr: with --transport stdio, stdout was the protocol's
    if result is None:
        print(f"robodojo mcp: {args.task} seed {args.seed}: no episode ran", file=sys.stderr)
        return 1
    print(
        f"robodojo mcp: {args.task} seed {args.seed} ({args.variant}), tools {args.tools}: "
        f"{'success' if result.success else 'no success'}, score {result.score:.2f}, ended by "
        f"{result.end_reason.value}; {result.llm_calls} calls, {result.steps_used} env steps; record: {result.folder}/",
        file=sys.stderr,
    )
    return 0 if result.success else 1


def _add_mcp(sub: argparse._SubParsersAction) -> None:
    from robodojo.agents.mcp.settings import LOCAL_HOST, TOOL_SETS, TRANSPORTS

    mcp = sub.add_parser(
        "mcp", help="serve one episode of the embedded world to an MCP client (Claude Code, Codex, Cursor, ...)"
    )
    mcp.add_argument("--task", required=True)
    mcp.add_argument("--seed", type=int, default=0)
    mcp.add_argument("--variant", default="standard", choices=VARIANTS)
    mcp.add_argument(
        "--tools", default="robo", choices=TOOL_SETS,
        help="robo: the base commands (move, rotate, point, gripper, home, wait, obs, status, done); move_eef: "
        "move_eef and give_up; both add observe (default robo)",
    )  # fmt: skip
    mcp.add_argument("--transport", default="stdio", choices=TRANSPORTS)
    mcp.add_argument("--host", default=LOCAL_HOST, help=f"http: only {LOCAL_HOST} is served")
    mcp.add_argument("--port", type=int, default=0, help="http: the port (default 0: a free one, printed on stderr)")
    mcp.add_argument("--out", default="out/episodes", help="episode records go here (default out/episodes)")
    mcp.add_argument(
        "--max-calls", type=_positive_int, default=None,
        help="tool calls the episode allows (default: config/agents/mcp.yaml call_budget)",
    )  # fmt: skip
    add_clock_option(mcp)
    mcp.set_defaults(func=_cmd_mcp)


def _make_agent(args: argparse.Namespace, reply_reserve_tokens: int | None = None):
    from robodojo.episodes.factory import make_agent

    probes: dict[str, object] = {name: True for name in args.probe}
    if args.pose_jitter is not None:
        probes["pose_jitter_m"] = args.pose_jitter
    if args.demonstration:
        probes["demonstration"] = Path(args.demonstration)
    tools_root = Path(args.tools) if getattr(args, "tools", None) else None
    return make_agent(
        args.agent, **agent_options(args), reply_reserve_tokens=reply_reserve_tokens, probes=probes,
        tools_root=tools_root, coding_agent=getattr(args, "coding_agent", None),
    )  # fmt: skip


def _image_horizon(text: str) -> int | str:
    """--image-horizon: a positive count or 'all' (0 is refused: it reads as "no images", which is --images none)."""
    from robodojo.episodes.factory import horizon_value

    try:
        value: int | str = "all" if text == "all" else int(text)
        horizon_value(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {text!r}") from None
    except RobodojoError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def graph_llm(agent: str, llm: str | None, task: str, seed: int) -> str:
    """The LLM spec of `robodojo graph`: ``llm`` when given, else the agent's replayed example for the task and seed
    (no agent: none needed); ConfigError when there is none."""
    from robodojo.nodes.graph_choices import llm_or_example

    return llm_or_example(agent, llm or "", task, seed)


def _cmd_graph(args: argparse.Namespace) -> int:
    from robodojo.nodes.graph_choices import HARDWARE, backend, task_or_default
    from robodojo.nodes.process_graph import run_graph

    _start_view(args, one_episode=True)  # the agent node's episodes read it from the environment they inherit
    if args.hardware in HARDWARE:
        backend("", args.hardware, args.robot)  # a driver of another robot: refused in one line
    args.task = task_or_default(args.robot, args.task or "")
    llm = graph_llm(args.agent, args.llm, args.task, args.seed)
    llm_settings(args)  # bad --llm-config, --timeout or --retries: said here, not in the agent node's log
    agent_params = {
        "llm_config": str(Path(args.llm_config).expanduser().resolve()) if args.llm_config else "",
        "llm_timeout_s": args.timeout or 0.0,
        "llm_retries": -1 if args.retries is None else args.retries,
        "llm_max_output_tokens": args.max_output_tokens or 0,
        "llm_reasoning_effort": args.reasoning_effort or "",
        "tool_choice": args.tool_choice,
        "images": args.images or "",
        "context_tokens": args.context_tokens or 0,
    }
    if args.mcp_tools is not None:  # else config/nodes.yaml's
        agent_params["mcp_tools"] = args.mcp_tools
    if args.mcp_port is not None:
        agent_params["mcp_port"] = args.mcp_port
    if args.clock is not None:  # else config/nodes.yaml's: real
        agent_params["clock"] = args.clock.text
    config_param = "isaac_config" if args.hardware == "isaac" else "hardware_config"
    hardware_params = {config_param: args.hardware_config or ""}
    if args.hardware == "franka":
        hardware_params["robot_ip"] = args.robot_ip or ""
    episode_params: dict[str, object] = {"instruction": args.instruction or ""}
    sim_params: dict[str, object] = {"calibration_board": True} if args.calibration_board else {}
    if args.step_limit:  # the episode's budget: the simulator's or, with hardware, episode_node's
        (sim_params if args.hardware == "none" else episode_params)["step_limit"] = args.step_limit
    return run_graph(
        robot=args.robot, task=args.task, seed=args.seed, variant=args.variant, agent=args.agent, llm=llm,
        base_url=args.base_url or "", out=Path(args.out), log_dir=Path(args.log_dir), domain_id=args.domain_id,
        agent_params=agent_params, hardware=args.hardware, hardware_params=hardware_params,
        episode_params=episode_params, camera_topic=args.camera_topic, camera_inputs=args.camera_inputs,
        sim_params=sim_params or None,
    )  # fmt: skip


def _cmd_judge(args: argparse.Namespace) -> int:
    from robodojo.nodes.process_graph import build_interfaces, use_interfaces_here

    build_interfaces()
    use_interfaces_here()
    from robodojo.nodes.judge_client import send_judgement

    if args.ready:
        answer = send_judgement(ready=True, timeout_s=args.timeout)
    else:
        score = math.nan if args.score is None else args.score
        success = bool(args.success) or (args.score is not None and args.score >= 1.0)
        answer = send_judgement(
            success=success, score=score, note=args.note, episode_id=args.episode, timeout_s=args.timeout
        )
    print(f"{'accepted' if answer.accepted else 'refused'}: {answer.message}")
    return 0 if answer.accepted else 1


def _cmd_api(args: argparse.Namespace) -> int:
    from robodojo.agents.robo.reference import robo_api_reference

    print(robo_api_reference(args.robot))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from robodojo.episodes.compare import (
        all_failed,
        format_summary,
        outcome_line,
        parse_agents,
        parse_seeds,
        parse_tasks,
        run_compare,
        summarize,
        write_report,
    )
    from robodojo.episodes.factory import DEFAULT_AGENTS
    from robodojo.errors import ConfigError

    agents = parse_agents(args.agents) if args.agents else list(DEFAULT_AGENTS)
    given = {"move_eef": args.move_eef_llm, "code_cell": args.code_cell_llm}
    for item in args.agent_llm:
        agent, sep, spec = item.partition("=")
        if not sep or not spec or agent not in agents:
            raise ConfigError(
                f"--agent-llm takes AGENT=SPEC with AGENT one of --agents ({', '.join(agents)}), got {item!r}"
            )
        given[agent] = spec
    specs = {agent: given.get(agent) or args.llm for agent in agents}
    if not all(specs.values()):
        missing = ", ".join(a for a, spec in specs.items() if not spec)
        raise ConfigError(f"no LLM spec for {missing}: give --llm SPEC for every agent, or --agent-llm AGENT=SPEC")
    if args.budget < 1:
        raise ConfigError(f"--budget must be at least 1, got {args.budget}")
    tasks, seeds, out = parse_tasks(args.tasks), parse_seeds(args.seeds), Path(args.out)
    _start_view(args, one_episode=False)
    settings = llm_settings(args)
    print(
        f"comparing {', '.join(agents)} on {', '.join(tasks)}, seeds {args.seeds} ({args.variant}), "
        f"LLM-call budget {args.budget}, clock {args.clock.text}",
        flush=True,
    )
    for agent, spec in specs.items():
        print(f"  {agent:9s} --llm {spec}")
    outcomes = run_compare(
        tasks,
        seeds,
        specs,
        out,
        variant=args.variant,
        budget=args.budget,
        base_url=args.base_url,
        progress=lambda o: print(outcome_line(o), flush=True),
        settings=settings,
        tool_choice=args.tool_choice,
        agent_options=agent_options(args),
        clock=args.clock,
    )
    summary = summarize(outcomes, agents)
    print()
    print(format_summary(summary))
    request = {
        "tasks": tasks,
        "seeds": seeds,
        "variant": args.variant,
        "llm": specs,
        "budget": args.budget,
        "out": str(out),
        "llm_config": args.llm_config,
        "timeout_s": settings.timeout_s,
        "max_retries": settings.max_retries,
        "tool_choice": args.tool_choice,
        "reasoning_effort": settings.reasoning_effort,
        "clock": args.clock.text,
    }
    write_report(out / "compare.json", outcomes, summary, request)
    print(f"\nreport: {out / 'compare.json'}; episode records under {out / 'episodes'}/")
    if all_failed(outcomes):
        print("every episode that ran failed (llm_error or crashed): nothing was measured", file=sys.stderr)
        return 1
    return 0 if any(o.ran for o in outcomes) else 1


def _cmd_eval(args: argparse.Namespace) -> int:
    from robodojo.campaigns.campaign import run_campaign
    from robodojo.campaigns.engines import LocalEngine, RayEngine
    from robodojo.campaigns.reporting import write_report
    from robodojo.campaigns.spec import llm_name, load_campaign_spec

    overrides = {
        "name": args.name, "tasks": args.tasks, "seeds": args.seeds, "variants": args.variants,
        "agents": args.agents, "llm_call_budget": args.budget, "retries": args.retries,
        "llms": {llm_name(spec): spec for spec in args.llm} if args.llm else None, "clock": args.clock,
    }  # fmt: skip
    if args.spec is None and args.ray is not None and _names_a_spec(args.ray):
        args.spec, args.ray = args.ray, "local"  # `eval --ray SPEC`: --ray's optional ADDRESS took the spec
    spec = load_campaign_spec(args.spec, overrides)
    _start_view(args, one_episode=False)  # the workers' episodes read it from the environment they inherit
    out = Path(args.out or f"out/campaigns/{spec.name}")
    per_worker = args.per_worker or spec.default_per_worker()
    if args.ray is not None:
        address = None if args.ray == "local" else args.ray
        outcome = run_campaign(
            spec, out, lambda folder: RayEngine(folder, args.workers, per_worker, address), engine_name="ray"
        )
    else:
        outcome = run_campaign(spec, out, lambda folder: LocalEngine(folder, args.workers, per_worker))
    print(
        f"{outcome.ended}/{outcome.total} episodes ended, {outcome.successes} successes, {outcome.crashed} crashed"
        + (f", {len(outcome.skipped)} skipped" if outcome.skipped else "")
        + f"; campaign folder {outcome.folder}/"
    )
    if outcome.interrupted:
        return 130
    if outcome.ended:
        _print_report(write_report(outcome.folder))
    return 0 if outcome.complete else 1


def _print_report(files: ReportFiles) -> None:
    crashed = f" ({files.crashed} crashed episodes left out of the figures)" if files.crashed else ""
    print(f"report: {files.index_html} and {files.markdown}; {files.episodes} episodes{crashed}")


def _cmd_report(args: argparse.Namespace) -> int:
    from robodojo.campaigns.reporting import write_report

    _print_report(write_report(Path(args.campaign)))
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from robodojo.agents.llm.doctor import diagnose, format_report

    report = diagnose(args.llm, args.base_url, timeout_s=args.timeout, reasoning_effort=args.reasoning_effort)
    print(format_report(report))
    return 0 if report.working else 1


def _cmd_view(args: argparse.Namespace) -> int:
    from robodojo.episodes.viewing.commands import view_episode, wait_while_serving

    save = Path(args.save) if args.save else None
    report = view_episode(
        Path(args.episode), save=save, spawn=args.spawn, connect=args.connect or "", serve=args.serve, port=args.port
    )
    print(report.text())
    if args.serve:
        print(f"serving {report.url}: open it with `rerun {report.url}`; Ctrl-C stops")
        wait_while_serving()
    return 0


def _add_view(sub: argparse._SubParsersAction) -> None:
    view = sub.add_parser(
        "view",
        help="an episode in Rerun: episode.mcap as episode.rrd beside it (default: `rerun episode.rrd` opens it), "
        "or streamed to a viewer",
    )
    view.add_argument("episode", metavar="EPISODE", help="an episode folder or its episode.mcap")
    view.add_argument(
        "--save", metavar="FILE.rrd", default=None,
        help="write the recording here (default with no other target: episode.rrd beside the episode.mcap)",
    )  # fmt: skip
    view.add_argument("--spawn", action="store_true", help="start a native Rerun viewer here and stream to it")
    view.add_argument(
        "--connect", metavar="URL", default=None,
        help="stream to a running viewer or server, e.g. rerun+http://127.0.0.1:9876/proxy",
    )  # fmt: skip
    view.add_argument(
        "--serve", action="store_true",
        help="serve the recording over gRPC from this process until Ctrl-C (a viewer connects with `rerun URL`; no "
        "web viewer: its analytics cannot be turned off)",
    )  # fmt: skip
    view.add_argument(
        "--port", type=int, default=None, help="--spawn/--serve: the gRPC port (default config/view.yaml)"
    )
    view.set_defaults(func=_cmd_view)


def add_view_option(parser: argparse.ArgumentParser) -> None:
    """``--view [TARGET]``: every episode shown live in Rerun as it runs (robodojo.episodes.viewing.live)."""
    parser.add_argument(
        "--view", nargs="?", const="spawn", default=None, metavar="TARGET",
        help="show the episodes live in Rerun: spawn (the default: a native viewer here), rrd (episode.rrd in each "
        "episode's folder), a rerun+http://HOST:PORT/proxy URL, or FILE.rrd (one episode); Rerun's analytics are "
        "turned off first",
    )  # fmt: skip


def add_clock_option(parser: argparse.ArgumentParser, *, sweep: bool = False, default: str | None = "paused") -> None:
    """``--clock``: how much world time a model call costs (robodojo.episodes.clock); ``sweep``: several, each a
    campaign condition."""
    from robodojo.episodes.clock import CLOCK_FORMS, ClockSetting, parse_clock_sweep

    def one(text: str) -> ClockSetting:
        try:
            return ClockSetting.parse(text)
        except RobodojoError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def several(text: str) -> str:
        try:
            return ",".join(c.text for c in parse_clock_sweep(text))
        except RobodojoError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    what = "clocks separated by commas, each a condition (fixed:0,1,3,10)" if sweep else "the clock"
    default_text = (
        "paused (the default) lets none pass" if default == "paused" or sweep
        else "the world never waits on the graph: real (the default) adds nothing to it"
    )  # fmt: skip
    parser.add_argument(
        "--clock", type=several if sweep else one, default=None if sweep else default, metavar="CLOCK",
        help=f"world time a model call costs, {what}: {CLOCK_FORMS}; {default_text}; fixed:S compares across "
        "machines and models (docs/clock.md)",
    )  # fmt: skip


def _start_view(args: argparse.Namespace, *, one_episode: bool) -> None:
    """``--view``: set up the live target every episode of this process and its children reads."""
    if getattr(args, "view", None) is None:
        return
    from robodojo.episodes.viewing.commands import start_live_view

    print(f"live view: {start_live_view(args.view, one_episode=one_episode)}", file=sys.stderr)


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    from robodojo.agents.llm.settings import REASONING_EFFORTS

    doctor = sub.add_parser(
        "doctor", help="probe an LLM endpoint once and print what it supports, the profile to use and the fixes"
    )
    doctor.add_argument("--llm", required=True, help="as for run, e.g. llamacpp:MODEL, vllm:MODEL, openai:gpt-4.1-mini")
    doctor.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: the provider's)")
    doctor.add_argument("--timeout", type=float, default=15.0, help="seconds per request (default 15)")
    doctor.add_argument(
        "--reasoning-effort", default=None, choices=REASONING_EFFORTS,
        help="the effort to probe, sent as the profile sends it (default: config/llm.yaml's, if any)",
    )  # fmt: skip
    doctor.set_defaults(func=_cmd_doctor)


def _names_a_spec(value: str) -> bool:
    """Whether a value given to ``--ray`` is a campaign spec, not an address."""
    return value.endswith((".yaml", ".yml")) or Path(value).is_file()


def _add_eval(sub: argparse._SubParsersAction) -> None:
    evaluate = sub.add_parser(
        "eval",
        help="run a campaign: a grid of episodes (tasks x variants x seeds x agents x LLMs x conditions), resumable",
        description="Run the campaign SPEC.yaml describes (flags override its keys, or replace it for the common "
        "cases). Running the same command again resumes it: ended episodes are skipped.",
    )
    evaluate.add_argument("spec", nargs="?", default=None, help="campaign spec (YAML; robodojo.campaigns.spec)")
    evaluate.add_argument("--out", default=None, help="campaign folder (default out/campaigns/<name>)")
    evaluate.add_argument("--name", default=None, help="campaign name (default: the spec's, or 'campaign')")
    evaluate.add_argument("--tasks", default=None, help="task names separated by commas")
    evaluate.add_argument("--seeds", default=None, help="seeds and ranges, e.g. 0-49 or 0,2,5-7")
    evaluate.add_argument("--variants", default=None, help=f"variants separated by commas ({', '.join(VARIANTS)})")
    evaluate.add_argument(
        "--agents", default=None,
        help="agents separated by commas: move_eef, code_cell, shell, shell:<cli> (shell:codex, shell:opencode, ...)",
    )  # fmt: skip
    evaluate.add_argument(
        "--llm", action="append", default=[],
        help="an LLM spec for every agent (repeatable; {task} and {seed} are filled per episode); replaces the "
        "spec's llms",
    )  # fmt: skip
    evaluate.add_argument("--budget", type=_positive_int, default=None, help="LLM-call budget per episode")
    evaluate.add_argument("--retries", type=int, default=None, help="re-runs of a crashed episode (default 2)")
    evaluate.add_argument("--workers", type=_positive_int, default=1, help="worker processes (default 1)")
    evaluate.add_argument(
        "--per-worker", type=_positive_int, default=None,
        help="episodes each worker runs at once (threads); default 1 with replayed LLMs only, else "
        "a few, since an episode with a remote LLM mostly waits for it",
    )  # fmt: skip
    evaluate.add_argument(
        "--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
        help="run the episodes as Ray actors: on the cluster at ADDRESS ('auto': the one this machine is in), or on "
        "a Ray started here without one; --workers actors",
    )  # fmt: skip
    add_clock_option(evaluate, sweep=True)
    add_view_option(evaluate)
    evaluate.set_defaults(func=_cmd_eval)
    report = sub.add_parser(
        "report", help="write a campaign's report (tables, plots, HTML with a page per episode) into DIR/report"
    )
    report.add_argument("campaign", metavar="DIR", help="the campaign folder (robodojo eval --out)")
    report.set_defaults(func=_cmd_report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robodojo", description="LLM agents on simulated and real dual-arm robots")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run short scripted episodes in the embedded world and write images")
    demo.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)
    tasks = sub.add_parser("tasks", help="list the embedded tasks by capability axis, with their step limits")
    tasks.add_argument("--robot", default=None, help="only tasks for this robot")
    tasks.set_defaults(func=_cmd_tasks)
    sub.add_parser("robots", help="list the robot configurations").set_defaults(func=_cmd_robots)
    run = sub.add_parser("run", help="run one agent episode in the embedded world and record it")
    run.add_argument("--task", required=True)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--variant", default="standard", choices=VARIANTS)
    run.add_argument(
        "--agent", default="move_eef",
        help="move_eef (default), code_cell, shell, or shell:<cli> (a coding-agent CLI of config/agents/shell.yaml "
        "acts in the shell harness; the same as --agent shell --coding-agent <cli>)",
    )  # fmt: skip
    run.add_argument(
        "--tools",
        default=None,
        help="shell agent: folder of task tool folders (<tools>/<task>/ with enabled_tools.txt); default: the shared "
        "pool's table_plane and pick",
    )
    run.add_argument(
        "--coding-agent", default=None,
        help="shell agent: a coding-agent CLI from config/agents/shell.yaml (mini-swe-agent) acts instead of the "
        "built-in shell-tool agent; its model calls go through the harness to --llm",
    )  # fmt: skip
    run.add_argument(
        "--llm",
        required=True,
        help="replay:FILE (offline, scripted replies), openai:MODEL (needs OPENAI_API_KEY), vllm:MODEL, "
        "ollama:MODEL, llamacpp:MODEL (llama-server), llamacpppy:MODEL (llama-cpp-python) or PROFILE:MODEL of "
        "--llm-config",
    )
    run.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: the provider's)")
    add_llm_options(run)
    run.add_argument("--budget", type=int, default=100, help="LLM-call budget (default 100)")
    run.add_argument("--out", default="out/episodes", help="episode records go here (default out/episodes)")
    add_agent_options(run)
    run.add_argument(
        "--probe",
        action="append",
        default=[],
        choices=("flip_vision_ud", "flip_vision_lr", "no_head_camera", "right_wrist_only", "negate_xyz"),
        help="a seed-002 perturbation probe (repeatable)",
    )
    run.add_argument("--pose-jitter", type=float, default=None, help="mean per-move pose jitter [m]")
    run.add_argument("--demonstration", default=None, help="folder of a recorded demonstration (one-shot)")
    add_clock_option(run)
    add_view_option(run)
    run.set_defaults(func=_cmd_run)
    evolve = sub.add_parser(
        "evolve", help="seed 003's repair loop: the shell agent attempts layouts, an optimizer agent repairs its tools"
    )
    evolve.add_argument("--task", required=True)
    evolve.add_argument("--layouts", type=_positive_int, default=10, help="development layouts (default 10)")
    evolve.add_argument(
        "--retest", type=int, default=None, help="new layouts for the frozen retest (default: as many as --layouts)"
    )
    evolve.add_argument("--first-seed", type=int, default=0, help="seed of the first layout (default 0)")
    evolve.add_argument("--variant", default="standard", choices=VARIANTS)
    evolve.add_argument("--llm", required=True, help="the acting agent's LLM spec (as for run)")
    evolve.add_argument("--optimizer-llm", default=None, help="the optimizer's LLM spec (default: --llm)")
    evolve.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: the provider's)")
    add_llm_options(evolve)
    evolve.add_argument("--max-edits", type=int, default=None, help="repair rounds per layout (default: config)")
    evolve.add_argument("--budget", type=_positive_int, default=100, help="LLM-call budget per episode")
    evolve.add_argument("--tools", default=None, help="a task tool folder to start from (copied; default: empty)")
    evolve.add_argument("--coding-agent", default=None, help="a coding-agent CLI acts (config/agents/shell.yaml)")
    evolve.add_argument("--out", default="out/evolve", help="the run's folder (default out/evolve/<task>)")
    evolve.set_defaults(func=_cmd_evolve)
    compare = sub.add_parser(
        "compare", help="run agents (move_eef and code_cell unless --agents) on the same tasks and seeds and compare "
        "their success and what a solved episode costs"
    )  # fmt: skip
    compare.add_argument("--tasks", required=True, help="task names separated by commas, e.g. general_pickup,handover")
    compare.add_argument("--seeds", default="0-4", help="seeds and ranges, e.g. 0-4 or 0,2,5-7 (default 0-4)")
    compare.add_argument("--variant", default="standard", choices=VARIANTS)
    compare.add_argument(
        "--llm", default=None, help="LLM spec for both agents (as for run); {task} and {seed} are filled per episode"
    )
    compare.add_argument(
        "--agents", default=None, help="agents separated by commas, the first the baseline of the ratios, e.g. "
        "shell,shell:codex,mcp:claude-code (default move_eef,code_cell)",
    )  # fmt: skip
    compare.add_argument(
        "--agent-llm", action="append", default=[], metavar="AGENT=SPEC",
        help="one agent's LLM spec (overrides --llm; repeat per agent)",
    )  # fmt: skip
    compare.add_argument("--move-eef-llm", default=None, help="LLM spec for the move_eef agent (overrides --llm)")
    compare.add_argument("--code-cell-llm", default=None, help="LLM spec for the code_cell agent (overrides --llm)")
    compare.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: the provider's)")
    add_llm_options(compare)
    add_agent_options(compare)
    compare.add_argument("--budget", type=int, default=100, help="LLM-call budget per episode (default 100)")
    compare.add_argument("--out", default="out/compare", help="compare.json and episodes/ (default out/compare)")
    add_clock_option(compare)
    add_view_option(compare)
    compare.set_defaults(func=_cmd_compare)
    _add_eval(sub)
    calibrate.add_parser(sub)
    graph = sub.add_parser(
        "graph", help="run the ROS 2 graph (simulator, motion server, agent nodes) as processes, without ros2 launch"
    )
    graph.add_argument("--robot", default="dual_arx_x5")
    graph.add_argument("--task", default=None, help="default: the robot's default_task (config/robots/<robot>.yaml)")
    graph.add_argument("--seed", type=int, default=0)
    graph.add_argument("--variant", default="standard", choices=VARIANTS)
    graph.add_argument(
        "--agent", default="move_eef", choices=("move_eef", "code_cell", "shell", "mcp", "none"),
        help="the agent node's agent; mcp: the episode is served to one MCP client over HTTP (--mcp-tools, "
        "--mcp-port; http://127.0.0.1:8766/mcp by default)",
    )  # fmt: skip
    graph.add_argument("--mcp-tools", choices=TOOL_SETS, help="--agent mcp: the tools served (default robo)")
    graph.add_argument("--mcp-port", type=int, help="--agent mcp: http://127.0.0.1:<port>/mcp (default 8766; 0: free)")
    graph.add_argument(
        "--llm",
        default=None,
        help="as for run (default: the agent's replayed example for the task and seed: "
        "examples/replay/<task>_seed<seed>.yaml, examples/cells/<task>.py, examples/shell/<task>.yaml)",
    )
    graph.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: the provider's)")
    add_llm_options(graph)
    add_agent_options(graph, image_horizon=False)
    graph.add_argument("--out", default="out/episodes", help="episode records go here (default out/episodes)")
    add_clock_option(graph, default=None)
    graph.add_argument("--log-dir", default="out/graph", help="one log file per node (default out/graph)")
    graph.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: the environment's)")
    graph.add_argument(
        "--hardware",
        default="none",
        choices=("none", "franka", "arx5", "isaac"),
        help="none: the embedded simulator; franka: an FR3 over libfranka (fr3_driver_node, episode_node, "
        "camera_node per camera; --robot fr3); arx5: the dual ARX X5 over CAN (arx5_driver_node, ...; --robot "
        "dual_arx_x5); isaac: Isaac Sim running scripts/isaac_sim_robodojo.py on this ROS domain (isaac_bridge_node, "
        "...)",
    )
    graph.add_argument(
        "--hardware-config",
        default=None,
        help="hardware config (default config/hardware/fr3.yaml or dual_arx_x5.yaml, or config/isaac/<robot>.yaml, "
        "by --hardware)",
    )
    graph.add_argument("--robot-ip", default=None, help="the control box's address (default: the hardware config's)")
    graph.add_argument("--instruction", default=None, help="real robots: free-text instruction (default: the task's)")
    graph.add_argument(
        "--camera-topic",
        default="/{camera}/image_raw",
        help="real robots: each camera driver's image topic, {camera} replaced (default %(default)s)",
    )
    graph.add_argument(
        "--camera-inputs",
        default=None,
        help="real robots: a rig's camera inputs file, or its name in config/camera_inputs/ (topic, transport, "
        "intrinsics and agent size per camera; instead of --camera-topic)",
    )
    graph.add_argument(
        "--calibration-board",
        action="store_true",
        help="the simulator shows the calibration board on the table (robodojo calibrate's rehearsal)",
    )
    graph.add_argument(
        "--step-limit",
        type=int,
        default=0,
        help="25 Hz trajectory points every episode may play (default: the task's); a calibration session needs more",
    )
    add_view_option(graph)
    graph.set_defaults(func=_cmd_graph)
    judge = sub.add_parser(
        "judge", help="real robots: the operator's verdict on the running episode, or --ready after a reset"
    )
    verdict = judge.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--success", action="store_true", help="the task succeeded (score 1)")
    verdict.add_argument("--fail", action="store_true", help="the task failed (score 0 unless --score)")
    verdict.add_argument("--ready", action="store_true", help="the scene is set up: a waiting reset goes on")
    verdict.add_argument("--score", type=float, default=None, help="process score in [0, 1] (1: success)")
    judge.add_argument("--note", default="", help="why, in your words (logged and published on /episode/verdict)")
    judge.add_argument("--episode", default="", help="the episode id judged (default: the running one)")
    judge.add_argument("--timeout", type=float, default=10.0, help="wait this long for episode_node [s]")
    judge.set_defaults(func=_cmd_judge)
    api = sub.add_parser("api", help="print the robo API reference the code-cell agent's model sees")
    api.add_argument("--robot", default="dual_arx_x5")
    api.set_defaults(func=_cmd_api)
    render = sub.add_parser("render", help="render every camera of a task layout to PNG files")
    render.add_argument("--task", required=True)
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--variant", default="standard", choices=VARIANTS)
    render.add_argument("--out", default="out/render")
    render.set_defaults(func=_cmd_render)
    _add_scene(sub)
    _add_record(sub)
    _add_view(sub)
    _add_doctor(sub)
    _add_mcp(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C reaches every command, even one started where SIGINT is ignored (a script's background job: POSIX shells
    # ignore it there, and Python then leaves it ignored): several of them move an arm.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RobodojoError as exc:
        print(f"robodojo: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
