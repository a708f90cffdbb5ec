"""The code-cell agent (seed 000, PyRUA-Lean): the model writes Python cells against ``robo``.

Each turn is one LLM call. A python(code) call runs the cell in the sandboxed kernel (a separate process that reaches
the robot only through RPC to this process, where :class:`~robodojo.agents.robo.api.Robo` executes it); the
tool result is only what the cell printed, its last expression's repr, its traceback, and a notice if a limit was hit;
images queued with robo.show() follow as a user message (``images``: all cameras, only the head camera, or none:
then robo.show is not part of the API and no text promises pictures; robo.image() still serves code). finish(status,
summary) ends the episode. Every robo call a
cell makes is logged (:mod:`robodojo.agents.robo.call_log`) and handed to the record with its turn.

The time a cell computes between its robo calls (and after the last) is reported to the episode's clock
(``EpisodeContext.agent_time``), so that under a clock that does not wait for the agent the world moves on meanwhile;
the time inside a robo call is the robot's own and is not reported.
"""

from __future__ import annotations

import time
from typing import Any

from robodojo.agents.base import EpisodeContext, LlmCaller, TurnRecord
from robodojo.agents.code_cell.cell_protocol import CellResult, EpisodeOver
from robodojo.agents.code_cell.kernel import Kernel
from robodojo.agents.code_cell.kernel_config import KernelLimits
from robodojo.agents.code_cell.prompts import goal_message, system_message
from robodojo.agents.code_cell.tools import FINISH, tool_schemas, validate_tool_call
from robodojo.agents.context_budget import ContextBudget, check_images, head_cameras
from robodojo.agents.context_fit import chat_within_context
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import ChatReply, Message
from robodojo.agents.robo.api import Robo
from robodojo.agents.robo.call_log import RoboCallLog
from robodojo.agents.robo.reference import (
    PICTURE_METHODS,
    ROBO_CONSTANTS,
    call_robo,
    robo_api_methods,
    robo_api_properties,
    robo_api_reference,
)
from robodojo.agents.text_limits import TextLimits, default_text_limits

NO_TOOL_CALL_TEXT = "Your reply called no tool; call exactly one tool per turn (python or finish); nothing ran"
SEVERAL_TOOL_CALLS_TEXT = "Your reply called {n} tools; call exactly one tool per turn; none was run"
NO_OUTPUT_TEXT = "(the cell printed nothing and ended without a value)"
ROBO_RESULT_MODULES = ("robodojo.agents.robo.results",)  # loaded before the first cell, health-checked after each
IMAGE_HORIZON = 2  # turns whose robo.show() images stay in the context
MOTION_METHODS = ("move_to", "grasp", "release", "home")  # robo calls that end the cell once no env steps are left
JPEG_QUALITY = 85
#: what the agent asks for each turn: call one tool. The LLM profile (or --tool-choice) decides what is sent.
TOOL_CHOICE = "required"
LIMIT_TEXTS = {
    "wall_time": "the cell exceeded the wall-clock limit",
    "cpu_time": "the cell exceeded the CPU-time limit",
    "memory": "the cell exceeded the memory limit",
    "output": "the cell's output exceeded the output limit",
    "crashed": "the kernel process exited",
    "threads": "the cell left threads running",
    "broken": "the cell broke modules the kernel itself needs",
}


def cell_result_text(result: CellResult) -> str:
    """What the model gets back from a cell: printed output, result, traceback, limit notices; nothing else."""
    sections = [f"[{result.notice}]"] if result.notice else []
    if result.stdout:
        sections.append(result.stdout.rstrip("\n"))
    if result.stderr:
        sections.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.result_repr is not None:
        sections.append(result.result_repr)
    if result.error:
        sections.append(result.error.rstrip())
    if result.limit:
        notice = LIMIT_TEXTS.get(result.limit, f"limit: {result.limit}")
        if result.namespace_reset:
            notice += "; the kernel was restarted and your namespace was reset (define your helpers again)"
        sections.append(f"[{notice}; the robot holds still]")
    if result.episode_ended:
        sections.append("[the episode is over: the env step budget is used up]")
    return "\n".join(sections) if sections else NO_OUTPUT_TEXT


class CodeCellAgent:
    """python(code) + finish(status, summary) over a sandboxed kernel and the robo API."""

    name = "code_cell"

    def __init__(
        self,
        *,
        image_horizon: int | None = IMAGE_HORIZON,
        jpeg_quality: int = JPEG_QUALITY,
        kernel_limits: KernelLimits | None = None,
        text_limits: TextLimits | None = None,
        images: str = "all",
        context: ContextBudget | None = None,
    ) -> None:
        """``text_limits``: bounds on the model's free text and code (default: config/agents/text_limits.yaml);
        ``images``: which cameras robo.show() sends pictures of (none | head | all); ``context``: the model's context
        length, if known, against which each request is checked before it is sent."""
        self.images = check_images(images)
        self.context = context or ContextBudget()
        self.text_limits = text_limits or default_text_limits()
        self.tools = tool_schemas(self.text_limits, self.images)
        self.image_horizon = image_horizon
        self.jpeg_quality = jpeg_quality
        self.kernel_limits = kernel_limits
        self.kernel: Kernel | None = None
        self._computing_since: float | None = None  # time.monotonic() when the running cell last got control back

    def describe(self) -> dict[str, Any]:
        """What this agent sends the model, for the episode record (meta.json)."""
        return {
            "images": self.images,
            "image_horizon": self.image_horizon,
            "context_tokens": self.context.context_tokens,
            "tool_choice": TOOL_CHOICE,
        }

    def begin(self, episode: EpisodeContext) -> None:
        self.close()
        self.episode = episode
        self.robo = Robo(episode)
        self.call_log = RoboCallLog()
        properties = {**robo_api_properties(), **{name: f"robo.{name}" for name in ROBO_CONSTANTS}}
        api = robo_api_methods()
        if self.images == "none":  # robo.show would only queue pictures nobody sends: not in the cell's robo
            api = {name: doc for name, doc in api.items() if name not in PICTURE_METHODS}
        self.show_cameras = head_cameras(episode.robot) if self.images == "head" else None
        self.kernel = Kernel(
            self._dispatch,
            api=api,
            properties=properties,
            limits=self.kernel_limits,
            preload=ROBO_RESULT_MODULES,
        )
        self.kernel.start()
        self.conversation = Conversation(self.image_horizon, self.text_limits, self.context)
        label = f"robodojo-{episode.robot.name.replace('_', '-')}"
        self.conversation.add(
            system_message(
                episode,
                robo_api_reference(episode.robot, images=self.images),
                self.kernel.limits.wall_s,
                label,
                self.images,
            )
        )
        self.conversation.add(goal_message(episode))

    def _dispatch(self, method: str, args: tuple, kwargs: dict) -> Any:
        """Runs a robo call from the kernel, logged. Motion calls end the cell once the env step budget is used up."""
        self._report_computing()  # the cell computed since it started or since its last robo call returned

        def call() -> Any:
            if self.episode.backend.steps_left <= 0 and method in MOTION_METHODS:
                raise EpisodeOver("the env step budget is used up")
            if method in PICTURE_METHODS and self.images == "none":
                raise AttributeError("robo has no attribute 'show': this run sends no pictures")
            if method == "show" and self.show_cameras is not None:
                camera = kwargs.get("camera", args[0] if args else None)
                if isinstance(camera, str) and camera not in self.show_cameras:
                    raise ValueError(
                        f"robo.show({camera!r}): this run sends only the pictures of "
                        f"{', '.join(repr(c) for c in self.show_cameras)}"
                    )
            return call_robo(self.robo, method, args, kwargs)

        try:
            return self.call_log.run(method, args, kwargs, call)
        finally:
            self._computing_since = time.monotonic()

    def _report_computing(self) -> None:
        """Tell the episode's clock how long the cell computed since it last got control back."""
        if self._computing_since is not None:
            self.episode.agent_time.computed(time.monotonic() - self._computing_since)
            self._computing_since = None

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        # Older exchanges are left out to fit the context, more if the server says it does not; refused if it cannot.
        # "required" is the semantics asked for (call one tool); the LLM client's profile (or --tool-choice) decides
        # what is sent, exactly as for move_eef: "auto" to servers that reject "required", nothing to Ollama.
        request, reply = chat_within_context(self.conversation, llm, self.tools, tool_choice=TOOL_CHOICE)
        self.conversation.add_reply(reply)
        several = SEVERAL_TOOL_CALLS_TEXT.format(n=len(reply.tool_calls))
        valid, errors = self.conversation.accept_tool_call(
            reply, validate_tool_call, no_call_text=NO_TOOL_CALL_TEXT, several_text=several
        )
        if valid is None:
            return self._error(turn, request, reply, errors)
        call = reply.tool_calls[0]
        if valid.name == FINISH:
            text = (
                f"finish received ({valid.arguments['status']}): the episode ends here. It does not change the score."
            )
            text = self.conversation.add_tool_result(call.id, text)
            details = self.conversation.turn_details(dict(valid.arguments))
            return TurnRecord(turn, request, reply, [text], FINISH, finished=True, details=details)

        assert self.kernel is not None
        self._computing_since = time.monotonic()
        result = self.kernel.run_cell(valid.arguments["code"])
        self._report_computing()  # after its last robo call, until it ended
        text = self.conversation.add_tool_result(call.id, cell_result_text(result))
        shown = self.robo.take_shown()
        if self.images == "none":  # never queued through the cell's robo; dropped in case
            shown = []
        if shown:
            parts: list[dict] = [{"type": "text", "text": "Images from robo.show():"}]
            for camera, rgb in shown:
                parts.append({"type": "text", "text": f"camera '{camera}':"})
                parts.append(image_part(rgb, self.jpeg_quality))
            self.conversation.add_observation({"role": "user", "content": parts})
        details = {
            "code": valid.arguments["code"],
            "limit": result.limit,
            "namespace_reset": result.namespace_reset,
            "cell_wall_s": result.wall_s,
            "rpc_calls": result.rpc_calls,
            "images_shown": [camera for camera, _ in shown],
            **({"kernel_notice": result.notice} if result.notice else {}),
        }
        return TurnRecord(
            turn,
            request,
            reply,
            [text],
            "python",
            details=self.conversation.turn_details(details),
            robo_calls=self.call_log.drain(),
        )

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None

    def _error(self, turn: int, request: list[Message], reply: ChatReply, texts: list[str]) -> TurnRecord:
        details = self.conversation.turn_details({"error": texts[0]})
        return TurnRecord(turn, request, reply, texts, "error", details=details)
