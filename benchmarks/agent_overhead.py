"""Harness overhead of the move_eef agent per turn, and the size of its requests over an episode.

What is measured, in one process with ``time.perf_counter``, on ``--task`` (default general_pickup) in the embedded
world (``EmbeddedWorld('dual_arx_x5')``, 3 cameras of 640x480):

1. Overhead per turn. ``run_episode`` (with its recorder, into a temporary folder) drives the real ``MoveEefAgent``
   (config/agents/move_eef.yaml: image_horizon 2, JPEG quality 85) against the real ``LlmClient`` of
   ``open_llm('replay:FILE')``, i.e. HTTP to a ``ReplayServer`` on 127.0.0.1. FILE is generated: ``--turns`` (30)
   move_eef replies that move the right arm's grasp point back and forth by 3 cm along x (9 waypoints each, every
   one accepted), with a short note; the LLM-call budget is ``--turns``, so each episode has exactly that many turns.
   ``--seeds`` layouts (5; 2 with ``--quick``). To split a turn into parts, the benchmark (only) wraps these
   functions with timers, by monkeypatching for the duration of the run; each part is timed exclusive of the
   wrapped parts nested in it:

   (a) observation capture: ``EmbeddedWorld.observe`` with cameras (3 RGB renders plus the arm state);
   (b) JPEG encodes: ``image_part`` (RGB->BGR, ``cv2.imencode`` quality 85, base64), 3 per turn;
   (c) message assembly: ``observation_message`` without (b) (state text, camera labels) and
       ``Conversation.request`` (the image horizon applied to the history);
   (d) the LLM call: ``LlmClient.chat`` with its parts ``build_request`` (the profile rewrite, a deep copy of the
       messages), the openai SDK's ``maybe_transform`` of the parameters (a walk of the whole request against the
       SDK's TypedDicts), the rest of the SDK's request (JSON encode, HTTP over loopback, JSON decode of the
       answer), the replay server's handler (``do_POST`` on the server thread, taken out of the client's wait:
       reading and decoding the body, rendering the prompt, the answer; a real model's server does this work and
       more, inside its latency) and ``LlmClient._parse``;
   (e) the agent's own handling: ``MoveEefAgent.turn`` less everything above and less the motion call
       (tool-call validation, the assistant and tool messages, the TurnRecord).

   Harness overhead = (a) + (b) + (c) + (d) + (e); target: median under 30 ms, so the harness is negligible next to
   a model's latency. Not harness overhead, reported separately: ``MotionServer.move_eef`` as the agent calls it,
   split into ``MotionServer.plan`` (the IK planner), ``MotionServer.execute`` (one env step per waypoint, i.e. the
   robot's motion: physics and the success check) and the rest (target parsing, state reads, the report); and the
   episode runner's work between turns: the recorder (``EpisodeRecorder.record_turn``, which decodes, hashes and
   stores every image of the request, plus ``write_metrics``, plus ``record_observation``: episode.mcap's frames,
   encoded as the agent observes) and the rest of the loop (success checks, state read).
   Medians and p95 are over every turn of every seed (the first turn included: it opens the HTTP connection); the
   recorder and the runner's gap exclude each episode's last turn, after which the runner only closes the record.
   The same episode with image_horizon unlimited (seed 0) gives a second overhead row: its requests grow each turn.
   A third row runs it with horizon 2 and a known context (FIT_CONTEXT: 6000 tokens, images at 765): the oldest
   exchanges are left out to fit, so every turn pays for the fit (a size estimate of every message).
   Also printed: the overhead by turn (the history grows), and the round trip of a one-line text request (no images,
   no tools, as most tests send) to the replay server with Nagle's algorithm on and with TCP_NODELAY (as shipped:
   the server writes the headers and the body of an answer separately, and with Nagle's algorithm on the body
   waits for the client's delayed ACK).

2. Request size per turn over one ``--turns``-turn episode (seed 0), image_horizon 2 against unlimited (None), from
   the episodes of 1: the JSON body as sent (its Content-Length on the replay server) and estimated input tokens:
   images by OpenAI's rule for detail "high" (the agent sends no ``detail``, so OpenAI picks; high is the upper
   bound): fit within 2048x2048, then scale so the shortest side is 768 px, 170 tokens per 512-px tile plus 85 (a
   640x480 camera image -> 768x576 -> 2x2 tiles -> 765 tokens; read without upscaling small images, 640x480 stays
   as it is -> 2x1 tiles -> 425 tokens, printed as a second total); detail "low" (85 flat) totals beside them.
   Text: every text part and string content, tool-call names and arguments, and the tool schemas as JSON, at 4
   characters a token, plus 3 tokens per message and 3 for the reply's priming (OpenAI's cookbook rule). Printed:
   every 5th turn of both curves, both totals over the episode and their ratio.

Run: ``make bench`` (every benchmark) or
``.venv/bin/python benchmarks/agent_overhead.py [--seeds 5] [--turns 30] [--quick] [--smoke] [--json out.json]``. On
a 2-core CPU the default takes about 15 s, ``--quick`` about 9 s; ``--smoke`` (1 seed, 3 turns: every part at its
smallest; the test suite runs it) a few seconds.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import functools
import json
import math
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import cv2
import numpy as np
import openai.resources.chat.completions.completions as sdk_completions
from _common import cpu_model, gl_renderer_string, mark, nproc, table, write_figures

import robodojo.agents.move_eef.agent as agent_module
import robodojo.agents.move_eef.observation as observation_module
from robodojo.agents.context_budget import ContextBudget
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.client import LlmClient, open_llm
from robodojo.agents.llm.replay_server import _Handler
from robodojo.agents.move_eef import MoveEefAgent, load_move_eef_config
from robodojo.agents.move_eef.observation import state_values
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.recorder import DATA_URL_PREFIX, EpisodeRecorder
from robodojo.motion.server import MotionServer
from robodojo.sim.render import select_gl_backend
from robodojo.sim.world import EmbeddedWorld

ROBOT = "dual_arx_x5"
OVERHEAD_TARGET_MS = 30.0
DEFAULT_SEEDS = 5
QUICK_SEEDS = 2
DEFAULT_TURNS = 30
SMOKE_SIZES = (1, 3)  # --smoke: seeds, turns (3: the image horizon of 2 is passed)
SHIFT_M = 0.03  # the scripted moves: right grasp point x, home and home + 3 cm, alternately
CURVE_EVERY = 5

# Harness parts (exclusive times) and what is reported beside them.
OBSERVE, JPEG, OBS_TEXT, REQUEST = "observe", "jpeg", "obs_text", "request"
BUILD, TRANSFORM, CLIENT, SERVER, PARSE = "build_request", "sdk_transform", "client_http", "server", "parse"
AGENT = "agent"
MOTION, PLAN, EXECUTE = "motion_rest", "plan", "execute"
RECORDER = "recorder"
LLM_CALL = (BUILD, TRANSFORM, CLIENT, SERVER, PARSE)
HARNESS = (OBSERVE, JPEG, OBS_TEXT, REQUEST, *LLM_CALL, AGENT)
ROUND_TRIPS = 20  # text-only requests per replay-server socket setting
#: the context of the fitted episode: small enough that a 30-turn episode drops exchanges every few turns
FIT_CONTEXT = ContextBudget(context_tokens=6000, image_tokens=765, reply_reserve_tokens=1024)
MOTION_PARTS = (MOTION, PLAN, EXECUTE)

# OpenAI's image-token rule and the text rule of thumb.
HIGH_FIT_PX, HIGH_SHORT_PX, TILE_PX = 2048, 768, 512
TOKENS_PER_TILE, TOKENS_BASE, TOKENS_LOW = 170, 85, 85
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE, TOKENS_REPLY_PRIMING = 3, 3


# -- machine -------------------------------------------------------------------------------------------------------


# -- timing --------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Turn:
    """One turn's exclusive part times [s], the agent.turn wall time, the request's size and the runner's gap."""

    episode: str
    turn: int
    parts: dict[str, float] = dataclasses.field(default_factory=dict)
    turn_s: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    gap_s: float | None = None  # end of this turn to the start of the next (None after the last)
    body_bytes: int = 0
    accepted: bool = False
    omitted_turns: int = 0  # exchanges the request left out to fit a known context

    def add(self, name: str, dt: float) -> None:
        self.parts[name] = self.parts.get(name, 0.0) + dt

    def harness_s(self) -> float:
        return sum(self.parts.get(p, 0.0) for p in HARNESS)

    def motion_s(self) -> float:
        return sum(self.parts.get(p, 0.0) for p in MOTION_PARTS)


class Profiler:
    """Exclusive section times on the main thread; the replay server's handler adds from its own thread."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.current: Turn | None = None
        self.episode = ""
        self._stack: list[list[Any]] = []  # [name, time spent in nested sections]
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def section(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        self._stack.append([name, 0.0])
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            _, nested = self._stack.pop()
            if self._stack:
                self._stack[-1][1] += dt
            if self.current is not None:
                self.current.add(name, dt - nested)

    def wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.section(name):
                return fn(*args, **kwargs)

        return timed

    def add_from_thread(self, name: str, dt: float, body_bytes: int) -> None:
        with self._lock:
            if self.current is not None:
                self.current.add(name, dt)
                self.current.body_bytes += body_bytes


@contextlib.contextmanager
def instrumented(prof: Profiler) -> Iterator[None]:
    """Timers around the agent's, client's, SDK's, servers' and recorder's functions (for this run only)."""
    observe = EmbeddedWorld.observe
    turn = MoveEefAgent.turn
    do_post = _Handler.do_POST

    def timed_observe(self: EmbeddedWorld, cameras: Any = None, **kwargs: Any) -> Any:
        names = None if cameras is None else tuple(cameras)
        if names == ():  # state only: part of whatever called it (the motion server, the runner)
            return observe(self, names, **kwargs)
        with prof.section(OBSERVE):
            return observe(self, names, **kwargs)

    def timed_turn(self: MoveEefAgent, llm: Any, number: int) -> Any:
        now = time.perf_counter()
        if prof.turns and prof.turns[-1].episode == prof.episode:
            prof.turns[-1].gap_s = now - prof.turns[-1].ended
        prof.current = Turn(prof.episode, number, started=now)
        prof.turns.append(prof.current)
        with prof.section(AGENT):
            record = turn(self, llm, number)
        prof.current.ended = time.perf_counter()
        prof.current.turn_s = prof.current.ended - now
        prof.current.accepted = record.move is not None and record.move.accepted
        prof.current.omitted_turns = record.details.get("omitted_turns", 0)
        return record

    def timed_post(self: _Handler) -> None:
        t0 = time.perf_counter()
        size = int(self.headers.get("Content-Length") or 0)
        try:
            do_post(self)
        finally:
            prof.add_from_thread(SERVER, time.perf_counter() - t0, size)

    patches = [
        mock.patch.object(EmbeddedWorld, "observe", timed_observe),
        mock.patch.object(MoveEefAgent, "turn", timed_turn),
        mock.patch.object(_Handler, "do_POST", timed_post),
        mock.patch.object(observation_module, "image_part", prof.wrap(JPEG, observation_module.image_part)),
        mock.patch.object(agent_module, "observation_message", prof.wrap(OBS_TEXT, agent_module.observation_message)),
        mock.patch.object(Conversation, "request", prof.wrap(REQUEST, Conversation.request)),
        mock.patch.object(LlmClient, "chat", prof.wrap(CLIENT, LlmClient.chat)),
        mock.patch.object(LlmClient, "build_request", prof.wrap(BUILD, LlmClient.build_request)),
        mock.patch.object(LlmClient, "_parse", prof.wrap(PARSE, LlmClient._parse)),
        mock.patch.object(sdk_completions, "maybe_transform", prof.wrap(TRANSFORM, sdk_completions.maybe_transform)),
        mock.patch.object(MotionServer, "move_eef", prof.wrap(MOTION, MotionServer.move_eef)),
        mock.patch.object(MotionServer, "plan", prof.wrap(PLAN, MotionServer.plan)),
        mock.patch.object(MotionServer, "execute", prof.wrap(EXECUTE, MotionServer.execute)),
        mock.patch.object(EpisodeRecorder, "record_turn", prof.wrap(RECORDER, EpisodeRecorder.record_turn)),
        mock.patch.object(EpisodeRecorder, "write_metrics", prof.wrap(RECORDER, EpisodeRecorder.write_metrics)),
        # episode.mcap's frames: called from inside the agent's observation, but the record's work, not the agent's
        mock.patch.object(
            EpisodeRecorder, "record_observation", prof.wrap(RECORDER, EpisodeRecorder.record_observation)
        ),
    ]
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield
    prof.current = None


def client_only(turns: Sequence[Turn]) -> None:
    """The server's handler ran inside the client's wait: take it out of the client's exclusive time."""
    for t in turns:
        t.parts[CLIENT] = t.parts.get(CLIENT, 0.0) - t.parts.get(SERVER, 0.0)


# -- the episode -------------------------------------------------------------------------------------------------
def replay_script(world: EmbeddedWorld, task: str, turns: int) -> dict[str, Any]:
    """``turns`` move_eef replies: the right grasp point to home x + SHIFT_M and back, alternately."""
    world.reset(task, seed=0)
    home = state_values(world.robot, world.observe(cameras=()))
    replies = []
    for k in range(turns):
        out = k % 2 == 0
        x = home["right_x"] + (SHIFT_M if out else 0.0)
        note = f"Right arm {'out' if out else 'back'} {SHIFT_M * 100:g} cm along x; checking the arrival report."
        replies.append(
            {
                "content": None,
                "tool_calls": [{"name": "move_eef", "arguments": {"targets": {"right_x": round(x, 3)}, "note": note}}],
            }
        )
    return {"model": "replay-bench", "replies": replies}


@dataclasses.dataclass
class Episode:
    name: str
    seed: int
    horizon: int | None
    turns: list[Turn]
    bodies: list[dict[str, Any]]
    end_reason: str
    steps_used: int
    server_input_tokens: int  # the replay server's own estimate (4 chars a token, 85 per image)
    wall_s: float


def run(
    world: EmbeddedWorld,
    prof: Profiler,
    script: Path,
    task: str,
    seed: int,
    horizon: int | None,
    turns: int,
    out: Path,
    context: ContextBudget | None = None,
) -> Episode:
    config = dataclasses.replace(load_move_eef_config(), image_horizon=horizon)
    if context is not None:
        config = dataclasses.replace(config, context=context)
    spec = EpisodeSpec(task=task, seed=seed, llm_call_budget=turns)
    name = f"seed {seed}, horizon {horizon if horizon is not None else 'unlimited'}"
    name += f", context {context.context_tokens}" if context is not None else ""
    prof.episode = name
    start = len(prof.turns)
    t0 = time.perf_counter()
    with open_llm(f"replay:{script}") as llm:
        result = run_episode(WorldHost(world), MoveEefAgent(config), llm, spec, out, model=llm.model)
        assert llm.replay_server is not None
        bodies = list(llm.replay_server.requests)
    wall = time.perf_counter() - t0
    prof.current = None
    ep_turns = prof.turns[start:]
    client_only(ep_turns)
    return Episode(
        name,
        seed,
        horizon,
        ep_turns,
        bodies,
        result.end_reason.value,
        result.steps_used,
        result.usage.input_tokens,
        wall,
    )


def text_round_trip(folder: Path, nodelay: bool) -> dict[str, float]:
    """LlmClient.chat of a one-line text request (no images, no tools), as the tests send, ROUND_TRIPS times."""
    script = folder / "text.json"
    script.write_text(json.dumps([{"content": "ok"}] * (ROUND_TRIPS + 1)))
    times = []
    with mock.patch.object(_Handler, "disable_nagle_algorithm", nodelay), open_llm(f"replay:{script}") as llm:
        llm.chat([{"role": "user", "content": "hi"}], tool_choice=None)  # opens the connection
        for _ in range(ROUND_TRIPS):
            t0 = time.perf_counter()
            llm.chat([{"role": "user", "content": "hi"}], tool_choice=None)
            times.append(time.perf_counter() - t0)
    return stats_ms(times)


# -- request size ------------------------------------------------------------------------------------------------
def image_tokens_high(width: int, height: int, upscale: bool = True) -> int:
    """OpenAI detail "high": fit within 2048x2048, shortest side to 768, 170 per 512-px tile + 85.

    ``upscale`` False: a shortest side under 768 px is left as it is (some token counters read the rule that way).
    """
    w, h = float(width), float(height)
    fit = min(1.0, HIGH_FIT_PX / max(w, h))
    w, h = w * fit, h * fit
    short = HIGH_SHORT_PX / min(w, h)
    if upscale or short < 1.0:
        w, h = w * short, h * short
    tiles = math.ceil(round(w, 6) / TILE_PX) * math.ceil(round(h, 6) / TILE_PX)
    return TOKENS_BASE + TOKENS_PER_TILE * tiles


class TokenEstimator:
    """Estimated input tokens of one request body (module docstring, part 2)."""

    def __init__(self) -> None:
        self._sizes: dict[str, tuple[int, int]] = {}

    def image_size(self, url: str) -> tuple[int, int]:
        if url not in self._sizes:
            data = np.frombuffer(base64.b64decode(url[len(DATA_URL_PREFIX) :]), np.uint8)
            image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
            self._sizes[url] = (int(image.shape[1]), int(image.shape[0]))
        return self._sizes[url]

    def estimate(self, body: Mapping[str, Any]) -> dict[str, int]:
        chars, high, high_noup, images = 0, 0, 0, 0
        messages = body.get("messages") or []
        for m in messages:
            content = m.get("content")
            if isinstance(content, str):
                chars += len(content)
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        chars += len(part.get("text", ""))
                    elif part.get("type") == "image_url":
                        images += 1
                        size = self.image_size(part["image_url"]["url"])
                        high += image_tokens_high(*size)
                        high_noup += image_tokens_high(*size, upscale=False)
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                chars += len(fn.get("name", "")) + len(fn.get("arguments", ""))
        chars += len(json.dumps(body.get("tools") or [], separators=(",", ":")))
        text = math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages) + TOKENS_REPLY_PRIMING
        return {
            "images": images,
            "text_tokens": text,
            "tokens_high": text + high,
            "tokens_high_no_upscale": text + high_noup,
            "tokens_low": text + TOKENS_LOW * images,
        }


# -- report ----------------------------------------------------------------------------------------------------------
def stats_ms(samples_s: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples_s, dtype=float) * 1e3
    if a.size == 0:
        return {"n": 0, "median_ms": math.nan, "p95_ms": math.nan, "mean_ms": math.nan}
    return {
        "n": int(a.size),
        "median_ms": float(np.median(a)),
        "p95_ms": float(np.percentile(a, 95)),
        "mean_ms": float(a.mean()),
    }


def fmt(v: float, digits: int = 2) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def part_stats(turns: Sequence[Turn], names: Sequence[str]) -> dict[str, float]:
    return stats_ms([sum(t.parts.get(n, 0.0) for n in names) for t in turns])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds", type=int, help=f"layouts for the overhead (default {DEFAULT_SEEDS}; {QUICK_SEEDS} with --quick)"
    )
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS, help=f"turns per episode (default {DEFAULT_TURNS})")
    parser.add_argument("--task", default="general_pickup")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds (about 9 s)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds, args.turns = SMOKE_SIZES
    n_seeds = args.seeds or (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
    if n_seeds < 1 or args.turns < 2:
        parser.error("--seeds must be at least 1 and --turns at least 2")

    t_all = time.perf_counter()
    backend = select_gl_backend()
    world = EmbeddedWorld(ROBOT)
    config = load_move_eef_config()
    prof = Profiler()
    episodes: list[Episode] = []
    with tempfile.TemporaryDirectory(prefix="robodojo-agent-overhead-") as tmp:
        script = Path(tmp) / "replies.json"
        script.write_text(json.dumps(replay_script(world, args.task, args.turns), indent=1))
        gl_string = gl_renderer_string()
        cams = ", ".join(f"{c.name} {c.width}x{c.height}" for c in world.robot.cameras)
        print(
            f"robodojo agent overhead benchmark: move_eef agent on {args.task} ({ROBOT}), {n_seeds} seeds x "
            f"{args.turns} turns, replay LLM over HTTP{' (quick)' if args.quick else ''}"
        )
        print(f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
        print(f"  GL       : {backend} ({gl_string})")
        print(f"  cameras  : {cams}")
        print(
            f"  agent    : image_horizon {config.image_horizon}, JPEG quality {config.jpeg_quality}, tool_choice "
            f"{config.tool_choice}; script: right grasp point x home / home + {SHIFT_M * 100:g} cm, alternately"
        )
        print(flush=True)

        out = Path(tmp)
        with instrumented(prof):
            for seed in range(n_seeds):
                episodes.append(run(world, prof, script, args.task, seed, config.image_horizon, args.turns, out))
            unlimited = run(world, prof, script, args.task, 0, None, args.turns, out)
            fitted = run(world, prof, script, args.task, 0, config.image_horizon, args.turns, out, FIT_CONTEXT)
        round_trip = {nodelay: text_round_trip(Path(tmp), nodelay) for nodelay in (False, True)}
    world.close()
    bounded = episodes
    turns = [t for e in bounded for t in e.turns]
    between = [t for t in turns if t.gap_s is not None]

    # -- 1. overhead ---------------------------------------------------------------------------------------------
    every = [*bounded, unlimited]
    valid = sum(t.accepted for e in every for t in e.turns)
    n_all = sum(len(e.turns) for e in every)
    steps = [e.steps_used for e in every]
    ends = sorted({e.end_reason for e in every})
    print(
        f"1. overhead per turn, image_horizon {config.image_horizon}: {len(turns)} turns ({n_seeds} episodes); with "
        f"the unlimited-horizon episode, moves accepted in {valid}/{n_all} turns, env steps per episode "
        f"{min(steps)}-{max(steps)}, ended by {', '.join(ends)}"
    )
    rows_spec: list[tuple[str, Sequence[str], str]] = [
        ("(a) observation capture", (OBSERVE,), "world.observe: 3 RGB renders + arm state"),
        ("(b) JPEG encodes x3", (JPEG,), "RGB->BGR, cv2.imencode q85, base64"),
        ("(c) message assembly", (OBS_TEXT, REQUEST), ""),
        ("      observation text", (OBS_TEXT,), "state/joint lines, camera labels"),
        ("      Conversation.request", (REQUEST,), "history with the image horizon applied"),
        ("(d) LLM call", LLM_CALL, "LlmClient.chat"),
        ("      build_request", (BUILD,), "profile rewrite: deep copy of the messages"),
        ("      openai SDK transform", (TRANSFORM,), "maybe_transform: TypedDict walk of the params"),
        ("      openai SDK + HTTP", (CLIENT,), "JSON encode, loopback, JSON decode"),
        ("      replay server handler", (SERVER,), "server thread; a model server's share"),
        ("      _parse", (PARSE,), "reply -> ChatReply"),
        ("(e) agent handling", (AGENT,), "validation, messages, TurnRecord"),
    ]
    rows = []
    figures: dict[str, Any] = {}
    for label, names, note in rows_spec:
        s = part_stats(turns, names)
        figures["+".join(names)] = s
        rows.append((label, fmt(s["median_ms"]), fmt(s["p95_ms"]), fmt(s["mean_ms"]), note))
    harness = stats_ms([t.harness_s() for t in turns])
    ok = harness["median_ms"] < OVERHEAD_TARGET_MS
    rows.append(
        (
            "harness overhead (a)-(e)",
            fmt(harness["median_ms"]),
            fmt(harness["p95_ms"]),
            fmt(harness["mean_ms"]),
            f"median < {OVERHEAD_TARGET_MS:g} ms: {mark(ok)}",
        )
    )
    no_server = stats_ms([t.harness_s() - t.parts.get(SERVER, 0.0) for t in turns])
    rows.append(
        (
            "  without the server handler",
            fmt(no_server["median_ms"]),
            fmt(no_server["p95_ms"]),
            fmt(no_server["mean_ms"]),
            "client side only",
        )
    )
    no_render = stats_ms([t.harness_s() - t.parts.get(OBSERVE, 0.0) for t in turns])
    rows.append(
        (
            "  without (a)",
            fmt(no_render["median_ms"]),
            fmt(no_render["p95_ms"]),
            fmt(no_render["mean_ms"]),
            "everything but the renders",
        )
    )
    un = stats_ms([t.harness_s() for t in unlimited.turns])
    last = unlimited.turns[-1]
    rows.append(
        (
            "  same, horizon unlimited",
            fmt(un["median_ms"]),
            fmt(un["p95_ms"]),
            fmt(un["mean_ms"]),
            f"seed 0; turn {last.turn}: {last.harness_s() * 1e3:.1f} ms, LLM call "
            f"{sum(last.parts.get(p, 0.0) for p in LLM_CALL) * 1e3:.1f} ms",
        )
    )
    fit = stats_ms([t.harness_s() for t in fitted.turns])
    dropped = fitted.turns[-1].omitted_turns
    rows.append(
        (
            f"  same, context {FIT_CONTEXT.context_tokens}",
            fmt(fit["median_ms"]),
            fmt(fit["p95_ms"]),
            fmt(fit["mean_ms"]),
            f"seed 0, images at {FIT_CONTEXT.image_tokens} tokens: the fit runs every turn; the last request "
            f"left out {dropped} exchanges",
        )
    )
    rows.append(("not harness overhead:", "", "", "", ""))
    motion_rows = [
        ("motion: MotionServer.plan", (PLAN,), "IK planner"),
        ("motion: execute", (EXECUTE,), "env steps (physics + success check)"),
        ("motion: rest of move_eef", (MOTION,), "target parsing, state reads, report"),
    ]
    for label, names, note in motion_rows:
        s = part_stats(turns, names)
        figures["+".join(names)] = s
        rows.append((label, fmt(s["median_ms"]), fmt(s["p95_ms"]), fmt(s["mean_ms"]), note))
    motion = stats_ms([t.motion_s() for t in turns])
    rows.append(("motion total", fmt(motion["median_ms"]), fmt(motion["p95_ms"]), fmt(motion["mean_ms"]), ""))
    wall = stats_ms([t.turn_s for t in turns])
    rows.append(
        ("agent.turn wall time", fmt(wall["median_ms"]), fmt(wall["p95_ms"]), fmt(wall["mean_ms"]), "harness + motion")
    )
    rec = part_stats(between, (RECORDER,))
    rows.append(
        (
            "recorder per turn",
            fmt(rec["median_ms"]),
            fmt(rec["p95_ms"]),
            fmt(rec["mean_ms"]),
            "record_turn + write_metrics + record_observation",
        )
    )
    rec_un = part_stats([t for t in unlimited.turns if t.gap_s is not None], (RECORDER,))
    rows.append(
        (
            "  same, horizon unlimited",
            fmt(rec_un["median_ms"]),
            fmt(rec_un["p95_ms"]),
            fmt(rec_un["mean_ms"]),
            f"seed 0; turn {unlimited.turns[-2].turn}: {unlimited.turns[-2].parts.get(RECORDER, 0.0) * 1e3:.1f} ms",
        )
    )
    gap = stats_ms([t.gap_s for t in between if t.gap_s is not None])
    rows.append(
        ("runner between turns", fmt(gap["median_ms"]), fmt(gap["p95_ms"]), fmt(gap["mean_ms"]), "recorder included")
    )
    table(("per turn", "median ms", "p95 ms", "mean ms", "notes"), rows, "<>>><")
    by_turn = sorted({1, *range(CURVE_EVERY, args.turns + 1, CURVE_EVERY), args.turns})
    growth = {k: stats_ms([t.harness_s() for t in turns if t.turn == k])["median_ms"] for k in by_turn}
    sdk = {k: stats_ms([t.parts.get(TRANSFORM, 0.0) for t in turns if t.turn == k])["median_ms"] for k in by_turn}
    print(
        "harness overhead by turn (median over seeds), ms: "
        + ", ".join(f"turn {k} {fmt(v, 1)}" for k, v in growth.items())
        + "\n  of which the openai SDK transform, ms: "
        + ", ".join(f"turn {k} {fmt(v, 1)}" for k, v in sdk.items())
    )
    slow, fast = round_trip[False], round_trip[True]
    print(
        f"replay server round trip of a text-only request ({ROUND_TRIPS} calls): with Nagle's algorithm median "
        f"{fmt(slow['median_ms'])} ms, with TCP_NODELAY (as shipped) {fmt(fast['median_ms'])} ms"
    )
    print(f"harness overhead median < {OVERHEAD_TARGET_MS:g} ms: {mark(ok)} ({fmt(harness['median_ms'])} ms)")
    print()

    # -- 2. request size -----------------------------------------------------------------------------------------
    est = TokenEstimator()
    h2 = next(e for e in bounded if e.seed == 0)
    curves = {}
    for key, ep in (("horizon_2", h2), ("unlimited", unlimited)):
        per_turn = []
        for t, body in zip(ep.turns, ep.bodies, strict=True):
            per_turn.append({"turn": t.turn, "bytes": t.body_bytes, **est.estimate(body)})
        curves[key] = per_turn
    print(
        f"2. request size per turn over one {args.turns}-turn episode (seed 0): JSON body bytes as sent, "
        f"estimated input tokens (images: detail high, {image_tokens_high(640, 480)} per 640x480 image; "
        f"text: {CHARS_PER_TOKEN} chars a token)"
    )
    shown = [i for i in range(args.turns) if i == 0 or (i + 1) % CURVE_EVERY == 0]
    crow = []
    for i in shown:
        a, b = curves["horizon_2"][i], curves["unlimited"][i]
        crow.append(
            (
                str(a["turn"]),
                str(a["images"]),
                f"{a['bytes'] / 1e3:,.1f}",
                f"{a['tokens_high']:,}",
                str(b["images"]),
                f"{b['bytes'] / 1e3:,.1f}",
                f"{b['tokens_high']:,}",
                f"{b['tokens_high'] / a['tokens_high']:.1f}x",
            )
        )
    table(
        ("turn", "h2 images", "h2 kB", "h2 tokens", "unl images", "unl kB", "unl tokens", "unl / h2"),
        crow,
        ">>>>>>>>",
    )
    totals = {}
    for key, per_turn in curves.items():
        totals[key] = {
            "bytes": sum(p["bytes"] for p in per_turn),
            "tokens_high": sum(p["tokens_high"] for p in per_turn),
            "tokens_high_no_upscale": sum(p["tokens_high_no_upscale"] for p in per_turn),
            "tokens_low": sum(p["tokens_low"] for p in per_turn),
            "text_tokens": sum(p["text_tokens"] for p in per_turn),
            "images": sum(p["images"] for p in per_turn),
        }
    totals["horizon_2"]["server_estimate"] = h2.server_input_tokens
    totals["unlimited"]["server_estimate"] = unlimited.server_input_tokens
    a, b = totals["horizon_2"], totals["unlimited"]

    def ratio_row(label: str, key: str, unit: Callable[[float], str], digits: int = 1) -> tuple[str, ...]:
        return (label, unit(a[key]), unit(b[key]), f"{b[key] / a[key]:.{digits}f}x")

    def count(v: float) -> str:
        return f"{v:,}"

    def mb(v: float) -> str:
        return f"{v / 1e6:,.2f} MB"

    noup = image_tokens_high(640, 480, upscale=False)
    trow = [
        ratio_row("JSON body bytes", "bytes", mb),
        ratio_row("images sent", "images", count),
        ratio_row("input tokens, detail high", "tokens_high", count),
        ratio_row(f"  same, no upscaling ({noup}/image)", "tokens_high_no_upscale", count),
        ratio_row("input tokens, detail low", "tokens_low", count),
        ratio_row("  of which text", "text_tokens", count, 2),
        ratio_row("replay server's own estimate", "server_estimate", count),
    ]
    print(f"totals over {args.turns} turns")
    table(("", "horizon 2", "unlimited", "unlimited / h2"), trow, "<>>>")
    total = time.perf_counter() - t_all
    print(f"\nbenchmark wall time {total:.1f} s")

    if args.json is not None:
        out = {
            "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            "gl_backend": backend,
            "gl_renderer": gl_string,
            "task": args.task,
            "robot": ROBOT,
            "seeds": n_seeds,
            "turns": args.turns,
            "quick": args.quick,
            "image_horizon": config.image_horizon,
            "jpeg_quality": config.jpeg_quality,
            "overhead_ms": {
                "parts": figures,
                "harness": harness,
                "harness_without_server": no_server,
                "harness_without_observation": no_render,
                "harness_by_turn_median": growth,
                "sdk_transform_by_turn_median": sdk,
                "text_round_trip_as_shipped": slow,
                "text_round_trip_nodelay": fast,
                "harness_unlimited_horizon": un,
                "motion": motion,
                "turn_wall": wall,
                "recorder": rec,
                "recorder_unlimited_horizon": rec_un,
                "runner_between_turns": gap,
            },
            "per_turn": [
                {
                    "episode": t.episode,
                    "turn": t.turn,
                    "parts_ms": {k: v * 1e3 for k, v in t.parts.items()},
                    "harness_ms": t.harness_s() * 1e3,
                }
                for e in every
                for t in e.turns
            ],
            "request_size": {"per_turn": curves, "totals": totals},
            "targets": {"harness_median_ms_max": OVERHEAD_TARGET_MS, "harness_ok": ok},
            "benchmark_wall_s": total,
        }
        write_figures(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
