"""The move_eef agent (seed 002): each turn one observation, one LLM call, exactly one tool call acted on.

Turn contract (robodojo.agents.base.Agent):

1. observe the visible cameras and the state (``ctx.backend.observe``) and append the observation message;
2. one ``llm.chat(request, tools, tool_choice="required")`` call with the image horizon applied;
3. act on the reply:

   - exactly one valid ``move_eef`` call: the targets are converted from the model's frame and checked by the target
     parser (robodojo.motion.targets); an invalid one is an error turn (its rejection rendered in the model's frame,
     ending "; nothing moved"). Valid targets (jittered when that probe is on) go to
     ``ctx.motion.move_eef(..., is_success=ctx.is_success)``; the tool result is the motion server's text
     (``Accepted: playing N waypoints (S.SSs). ...``) or its rejection rendered in the model's frame; the next
     observations carry the arrival check of this move once it was accepted;
   - a valid ``give_up`` call: the tool result acknowledges it and the record says ``gave_up``;
   - anything else (no tool call, several calls, an unknown tool, invalid JSON, a schema violation): nothing moves and
     the error text goes back to the model, as one tool message per tool call id (the chat API needs an answer for
     every id) or, when the reply called no tool, as a user message.

Every turn is one LLM call, malformed ones included; budgets and success are the episode runner's business.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robodojo.agents.base import EpisodeContext, LlmCaller, TurnRecord
from robodojo.agents.context_budget import ContextBudget, cameras_sent, check_images, check_positive_or_none
from robodojo.agents.context_fit import chat_within_context
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.types import ChatReply, Message
from robodojo.agents.move_eef.observation import observation_message
from robodojo.agents.move_eef.probes import (
    DEFAULT_JITTER_M,
    DEMONSTRATION_MODES,
    DemonstrationStep,
    PoseJitter,
    Probes,
    load_demonstration,
)
from robodojo.agents.move_eef.prompts import Embodiment, demonstration_message, goal_message, system_message
from robodojo.agents.move_eef.tools import (
    GIVE_UP,
    GIVE_UP_TEXT,
    NO_TOOL_CALL_TEXT,
    SEVERAL_TOOL_CALLS_TEXT,
    tool_schemas,
    validate_tool_call,
)
from robodojo.agents.text_limits import TextLimits, default_text_limits
from robodojo.config import CONFIG_DIR, Section, load_yaml, resolve_path
from robodojo.errors import ConfigError, RobodojoError, UnknownNameError
from robodojo.motion.rejection import Rejection, render_rejection
from robodojo.motion.report import MoveReport
from robodojo.motion.targets import MoveTarget, TargetError, dimension_bounds, parse_move_eef
from robodojo.robots.config import RobotConfig

CONFIG_PATH = CONFIG_DIR / "agents" / "move_eef.yaml"
TOOL_CHOICES = ("required", "auto")


@dataclass(frozen=True)
class MoveEefConfig:
    """Settings of the move_eef agent (config/agents/move_eef.yaml)."""

    image_horizon: int | None = 2  #: observations that keep their pictures; None: all (never 0: see ``images``)
    jpeg_quality: int = 85
    tool_choice: str = "required"
    probes: Probes = field(default_factory=Probes)
    embodiments: Mapping[str, Embodiment] = field(default_factory=dict)
    images: str = "all"  #: which cameras' pictures are sent: none | head | all (robodojo.agents.context_budget)
    context: ContextBudget = field(default_factory=ContextBudget)  #: requests beyond a known context are refused

    def __post_init__(self) -> None:
        if self.image_horizon is not None and (
            isinstance(self.image_horizon, bool) or not isinstance(self.image_horizon, int) or self.image_horizon < 1
        ):
            raise ConfigError(
                f"image_horizon must be a positive integer or null (every image), got {self.image_horizon!r}; "
                "images: none sends no pictures"
            )
        check_images(self.images)
        if isinstance(self.jpeg_quality, bool) or not isinstance(self.jpeg_quality, int):
            raise ConfigError(f"jpeg_quality must be an integer in [1, 100], got {self.jpeg_quality!r}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ConfigError(f"jpeg_quality must be an integer in [1, 100], got {self.jpeg_quality!r}")
        if self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, got {self.tool_choice!r}")

    def embodiment(self, robot: RobotConfig) -> Embodiment:
        try:
            return self.embodiments[robot.name]
        except KeyError:
            raise UnknownNameError("robot in the move_eef config", robot.name, self.embodiments) from None


_TOP_KEYS = {"image_horizon", "images", "context_tokens", "image_tokens", "jpeg_quality", "tool_choice", "robots",
             "probes"}  # fmt: skip
_PROBE_KEYS = {
    "flip_vision_ud",
    "flip_vision_lr",
    "no_head_camera",
    "right_wrist_only",
    "negate_xyz",
    "pose_jitter",
    "demonstration",
    "demonstration_mode",
}


def _check_keys(section: Section, allowed: set[str]) -> None:
    for key in section.names():
        if key not in allowed:
            raise ConfigError(f"{section.where}: unknown key {key!r}; keys are {', '.join(sorted(allowed))}")


def parse_move_eef_config(data: Mapping[str, Any], where: str) -> MoveEefConfig:
    """Validate a move_eef config mapping; errors name the file and key."""
    root = Section(data, where)
    _check_keys(root, _TOP_KEYS)
    horizon: int | None = 2
    if "image_horizon" in root.data:
        horizon = None if root.data["image_horizon"] is None else root.integer("image_horizon", positive=True)
    embodiments = {}
    robots = root.section("robots")
    for name in robots.names():
        r = robots.section(name)
        _check_keys(r, {"embodiment_name", "reach_forward_m", "reach_sideways_m"})
        embodiments[name] = Embodiment(
            name=r.str("embodiment_name"),
            reach_forward_m=r.number("reach_forward_m", positive=True),
            reach_sideways_m=r.number("reach_sideways_m", positive=True),
        )
    probes = Probes()
    p = root.optional_section("probes")
    if p is not None:
        _check_keys(p, _PROBE_KEYS)
        jitter_m, jitter_seed = 0.0, 0
        j = p.optional_section("pose_jitter")
        if j is not None:
            _check_keys(j, {"enabled", "mean_m", "seed"})
            if j.boolean("enabled", default=False):
                jitter_m = j.number("mean_m", default=DEFAULT_JITTER_M, positive=True)
            jitter_seed = j.integer("seed", default=0)
        demo = p.data.get("demonstration")
        if demo is not None and (not isinstance(demo, str) or not demo):
            raise ConfigError(f"{p.where}.demonstration: expected a folder path or null, got {demo!r}")
        mode = p.str("demonstration_mode", default="images")
        if mode not in DEMONSTRATION_MODES:
            raise ConfigError(f"{p.where}.demonstration_mode: expected one of {', '.join(DEMONSTRATION_MODES)}")
        probes = Probes(
            flip_vision_ud=p.boolean("flip_vision_ud", default=False),
            flip_vision_lr=p.boolean("flip_vision_lr", default=False),
            no_head_camera=p.boolean("no_head_camera", default=False),
            right_wrist_only=p.boolean("right_wrist_only", default=False),
            negate_xyz=p.boolean("negate_xyz", default=False),
            pose_jitter_m=jitter_m,
            pose_jitter_seed=jitter_seed,
            demonstration=resolve_path(demo) if demo else None,
            demonstration_mode=mode,
        )
    tool_choice = root.str("tool_choice", default="required")
    images = check_images(root.data.get("images", "all"), f"{root.where}.images")
    context = ContextBudget(
        check_positive_or_none(root.data.get("context_tokens"), f"{root.where}.context_tokens"),
        check_positive_or_none(root.data.get("image_tokens"), f"{root.where}.image_tokens"),
    )
    return MoveEefConfig(
        image_horizon=horizon,
        images=images,
        context=context,
        jpeg_quality=root.integer("jpeg_quality", default=85, positive=True),
        tool_choice=tool_choice,
        probes=probes,
        embodiments=embodiments,
    )


def load_move_eef_config(path: str | Path = CONFIG_PATH) -> MoveEefConfig:
    """Load and validate config/agents/move_eef.yaml (or another file of the same shape)."""
    return parse_move_eef_config(load_yaml(path), str(path))


class MoveEefAgent:
    """The move_eef / give_up tool-calling agent of seed 002."""

    name = "move_eef"

    def __init__(
        self,
        config: MoveEefConfig | None = None,
        text_limits: TextLimits | None = None,
        *,
        demonstration: Sequence[DemonstrationStep] | None = None,
    ) -> None:
        """``text_limits``: bounds on the model's free text (default: config/agents/text_limits.yaml);
        ``demonstration``: the steps of the configured demonstration when the caller read them (make_agent reads
        episode records too), else ``config.probes.demonstration`` is read as a demonstration folder."""
        self.config = config or load_move_eef_config()
        self.text_limits = text_limits or default_text_limits()
        self.probes = self.config.probes
        if demonstration is None and self.probes.demonstration is not None:
            demonstration = load_demonstration(self.probes.demonstration)
        self.demonstration = None if demonstration is None else list(demonstration)
        self._ctx: EpisodeContext | None = None

    def describe(self) -> dict[str, Any]:
        """What this agent sends the model, for the episode record (meta.json)."""
        c = self.config
        probes = {f.name: getattr(c.probes, f.name) for f in dataclasses.fields(c.probes)}
        return {
            "images": c.images,
            "image_horizon": c.image_horizon,
            "context_tokens": c.context.context_tokens,
            "tool_choice": c.tool_choice,
            "probes": {k: str(v) if isinstance(v, Path) else v for k, v in probes.items()},
        }

    # -- episode ------------------------------------------------------------------------------------------------
    def begin(self, episode: EpisodeContext) -> None:
        """Build the system, Goal (and demonstration) messages and the tools; nothing is sent yet."""
        robot = episode.robot
        self._ctx = episode
        self.bounds = dimension_bounds(robot)
        self.model_bounds = self.probes.bounds_to_model(self.bounds)
        self.tools = tool_schemas(self.model_bounds, self.text_limits)
        # The cameras observed are the ones whose pictures are sent: with images none the observation is state only.
        self.cameras = cameras_sent(self.config.images, robot, self.probes.visible_cameras(robot))
        self.conversation = Conversation(
            self.config.image_horizon,
            self.text_limits,
            self.config.context,
            max_arguments_chars=self.text_limits.max_call_chars,
        )
        self.conversation.add(
            system_message(
                robot,
                self.config.embodiment(robot),
                episode.llm_call_budget,
                episode.backend.control_dt_s,
                self.config.images,
            )
        )
        self.conversation.add(goal_message(episode.instruction, episode.recipe))
        if self.demonstration is not None:
            self.conversation.add(
                demonstration_message(
                    self.demonstration,
                    self.probes,
                    with_images=self.probes.demonstration_mode == "images" and self.config.images != "none",
                    jpeg_quality=self.config.jpeg_quality,
                    cameras=self.cameras,
                )
            )
        self.arrival: str | None = None
        self.jitter = (
            PoseJitter(self.probes.pose_jitter_m, self.probes.pose_jitter_seed) if self.probes.jitter_enabled else None
        )

    @property
    def episode(self) -> EpisodeContext:
        if self._ctx is None:
            raise RobodojoError("MoveEefAgent.turn before begin(episode)")
        return self._ctx

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        """Observe, make exactly one LLM call, act on the reply (or return an error to the model), and report."""
        ctx = self.episode
        obs = ctx.backend.observe(cameras=self.cameras)
        self.conversation.add_observation(
            observation_message(
                instruction=ctx.instruction,
                robot=ctx.robot,
                obs=obs,
                probes=self.probes,
                arrival=self.arrival,
                jpeg_quality=self.config.jpeg_quality,
            )
        )
        # older exchanges left out to fit, more if the server says it does not; refused if it cannot
        request, reply = chat_within_context(self.conversation, llm, self.tools, tool_choice=self.config.tool_choice)
        self.conversation.add_reply(reply)

        several = SEVERAL_TOOL_CALLS_TEXT.format(
            n=len(reply.tool_calls), names=", ".join(c.name for c in reply.tool_calls)
        )
        valid, errors = self.conversation.accept_tool_call(
            reply, validate_tool_call, no_call_text=NO_TOOL_CALL_TEXT, several_text=several
        )
        if valid is None:
            return self._error(turn, request, reply, errors)
        call = reply.tool_calls[0]

        if valid.name == GIVE_UP:
            text = self.conversation.add_tool_result(call.id, GIVE_UP_TEXT)
            details = {"reason": valid.arguments["reason"], "hindsight": valid.arguments.get("hindsight", "")}
            return TurnRecord(
                turn=turn,
                request=request,
                reply=reply,
                tool_results=[text],
                action=GIVE_UP,
                gave_up=True,
                details=self.conversation.turn_details(details),
            )

        model_targets = valid.arguments["targets"]
        note = valid.arguments.get("note", "")  # cleaned and cut (text_limits)
        world_targets = self.probes.from_model(model_targets)
        details = {"targets": dict(model_targets), "world_targets": world_targets}
        try:
            target = parse_move_eef(world_targets, ctx.robot, obs.arms)
        except TargetError as exc:  # nothing to send: an error turn, as for a malformed call
            text = self.conversation.add_tool_result(call.id, self._rejection_text(exc.rejection))
            details.update(note=note, rejection=exc.rejection)
            return self._error(turn, request, reply, [text], details)
        report = self._move(world_targets, target, note, details)
        text = report.tool_text if report.rejection is None else self._rejection_text(report.rejection)
        text = self.conversation.add_tool_result(call.id, text)
        details["note"] = note
        return TurnRecord(
            turn=turn,
            request=request,
            reply=reply,
            tool_results=[text],
            action="move_eef",
            move=report,
            details=self.conversation.turn_details(details),
        )

    # -- helpers ------------------------------------------------------------------------------------------------
    def _error(
        self,
        turn: int,
        request: list[Message],
        reply: ChatReply,
        texts: list[str],
        details: Mapping[str, Any] | None = None,
    ) -> TurnRecord:
        return TurnRecord(
            turn=turn,
            request=request,
            reply=reply,
            tool_results=texts,
            action="error",
            details=self.conversation.turn_details({"error": texts[0], **(details or {})}),
        )

    def _rejection_text(self, rejection: Rejection) -> str:
        """A rejection as the model reads it: its facts rendered in the model's frame (negate_xyz)."""
        return render_rejection(rejection, self.probes.frame)

    def _move(
        self, world_targets: dict[str, object], target: MoveTarget, note: str, details: dict[str, Any]
    ) -> MoveReport:
        """Optionally jitter, execute; remember the arrival check of an accepted move. Adds to ``details``."""
        ctx = self.episode
        requested: dict[str, np.ndarray] = {}
        if self.jitter is not None:
            world_targets, requested, offsets = self._jittered(world_targets, target)
            details["world_targets"] = world_targets
            details["jitter_m"] = {arm: offset.tolist() for arm, offset in offsets.items()}
        report = ctx.motion.move_eef(world_targets, is_success=ctx.is_success, note=note)
        if report.accepted:
            self.arrival = arrival_text(report, requested) or None
        return report

    def _jittered(
        self, world_targets: dict[str, object], target: MoveTarget
    ) -> tuple[dict[str, object], dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Add one offset per arm whose (parsed) target names a position."""
        assert self.jitter is not None
        out = dict(world_targets)
        requested, offsets = {}, {}
        for arm, arm_target in target.arms.items():
            if not any(f"{arm}_{axis}" in world_targets for axis in ("x", "y", "z")):
                continue
            offset = self.jitter.sample()
            goal = np.array(arm_target.pos_m)
            for i, axis in enumerate(("x", "y", "z")):
                low, high = self.bounds[f"{arm}_{axis}"]
                out[f"{arm}_{axis}"] = float(np.clip(goal[i] + offset[i], low, high))
            requested[arm], offsets[arm] = goal, offset
        return out, requested, offsets


def arrival_text(report: MoveReport, requested: Mapping[str, np.ndarray]) -> str:
    """The arrival check (``left 20 mm and 0.0 deg away; ...``); under pose jitter positions are compared with what
    the model asked for (``requested``, per arm; an arm not in it is compared with the target it was sent)."""
    parts = []
    for arm, r in report.arms.items():
        if arm in requested:
            pos_err_mm = float(np.linalg.norm(np.array(r.final_pos_m) - requested[arm])) * 1e3
            parts.append(f"{arm} {pos_err_mm:.0f} mm and {r.rot_error_deg:.1f} deg away")
        else:
            parts.append(r.arrival_text)
    return "; ".join(parts)
