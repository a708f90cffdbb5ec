"""The MCP agent: the policy is an MCP client outside this process; each of its tool calls is one turn.

The episode runner drives this agent as any other (robodojo.episodes.runner): :meth:`McpAgent.turn` waits for the
client's next request (:class:`~robodojo.agents.mcp.channel.CallChannel`), serves resource reads on the way without
counting them, and runs the first tool call: the runner then counts it against the call budget (``--max-calls``:
the runner's LLM-call budget, since every call is one decision of the client's model), records it (requests.jsonl
holds the call as received, responses.jsonl the call, turns.jsonl the answer and the motion, robo_calls.jsonl a robo
command's record) and checks success and the step budget. No LLM is called here: the ``llm`` the runner hands over
is :class:`McpClientModel`, which only describes the client for meta.json.

Every call is hostile input: an unknown tool, arguments that are not an object or longer than
``max_argument_chars`` as JSON, and ``observe`` with arguments are refused here with one error each; the tool set
refuses the rest (wrong types, NaN, bounds) with the texts the other agents give; nothing moves for any of them.
A call the client cancelled before it ran is skipped (no turn); a running call cannot be cancelled.
"""

from __future__ import annotations

import json
import time
from typing import Any

from robodojo.agents.base import EpisodeContext, TurnRecord
from robodojo.agents.llm.types import ChatReply, Message, ToolCall, Usage
from robodojo.agents.mcp.channel import Answer, CallChannel, ClientRequest, RequestKind, settle
from robodojo.agents.mcp.content import observation_answer, resource_answer
from robodojo.agents.mcp.settings import McpSettings
from robodojo.agents.mcp.toolset import OBSERVE, OBSERVE_DESCRIPTION, CallOutcome, ToolSet, ToolSpec
from robodojo.agents.move_eef.tools import json_type
from robodojo.agents.text_limits import quote
from robodojo.errors import RobodojoError
from robodojo.text import trim_text

PROVIDER = "mcp"
FINISH_REASON = "tool_calls"
OBSERVE_SPEC = ToolSpec(
    OBSERVE, OBSERVE_DESCRIPTION, {"type": "object", "properties": {}, "additionalProperties": False}
)


class McpClientModel:
    """The ``llm`` of an MCP episode: the client's own model decides, and is never called from here."""

    def __init__(self, transport: str, client_name: str) -> None:
        self.transport = transport
        self.client_name = client_name

    def chat(self, messages: list[Message], tools: list[dict], *, tool_choice: str | dict | None = "required") -> Any:
        raise RobodojoError("an MCP episode calls no LLM: the MCP client's own model decides")

    def describe(self) -> dict[str, Any]:
        """meta.json's ``llm``: who decided."""
        return {"provider": PROVIDER, "transport": self.transport, "client": self.client_name}


class McpAgent:
    """One episode's tools, served to an MCP client through ``channel`` (see the module docstring)."""

    name = "mcp"

    def __init__(self, tools: ToolSet, channel: CallChannel, settings: McpSettings, *, transport: str) -> None:
        self.tools = tools
        self.channel = channel
        self.settings = settings
        self.transport = transport
        self.client_name = ""  #: the client's name from its initialize request, set before the episode starts
        self._episode: EpisodeContext | None = None

    def specs(self) -> list[ToolSpec]:
        """Every tool the client may call: the tool set's, then ``observe``."""
        return [*self.tools.specs(), OBSERVE_SPEC]

    def describe(self) -> dict[str, Any]:
        """meta.json's ``agent_settings``."""
        s = self.settings
        return {
            "tools": self.tools.name,
            "transport": self.transport,
            "image_format": s.image_format,
            "max_argument_chars": s.max_argument_chars,
            "idle_timeout_s": s.idle_timeout_s,
            "max_pending_calls": s.max_pending_calls,
        }

    @property
    def episode(self) -> EpisodeContext:
        if self._episode is None:
            raise RobodojoError("McpAgent.turn before begin(episode)")
        return self._episode

    def begin(self, episode: EpisodeContext) -> None:
        self._episode = episode
        self.tools.begin(episode)

    def turn(self, llm: object, turn: int) -> TurnRecord:
        """Serve requests until a tool call was run; EpisodeInterrupted when the client is gone or silent.

        The client's time to its tool call is its model's decision: the episode's clock lets it pass before the call
        runs (``EpisodeContext.agent_time``), as the runner does after the other agents' model calls."""
        started = time.monotonic()
        decided = False
        while True:
            request = self.channel.next()
            if request.kind is not RequestKind.RESOURCE and not decided:
                self.episode.agent_time.model_called(time.monotonic() - started)
                decided = True
            outcome = self.handle(request)
            if outcome is not None:
                return self._record(turn, request, outcome, time.monotonic() - started)

    def handle(self, request: ClientRequest) -> CallOutcome | None:
        """Serve one request and answer it: a tool call's outcome, None for a resource read or a call the client
        cancelled before it ran (neither is a turn)."""
        if not request.answer.set_running_or_notify_cancel():
            return None
        if request.kind is RequestKind.RESOURCE:
            self._serve(request, lambda: resource_answer(request.name, self.episode, self.tools, self.settings))
            return None
        outcome: CallOutcome = self._serve(request, lambda: self._call(request))
        return outcome

    def _serve(self, request: ClientRequest, run: Any) -> Any:
        """``run()``'s answer goes to the client; an error of the harness answers too before it propagates."""
        try:
            result = run()
        except BaseException as exc:
            settle(request.answer, Answer.error(f"the robot server failed ({type(exc).__name__}); nothing more runs"))
            raise
        settle(request.answer, result.answer if isinstance(result, CallOutcome) else result)
        return result

    def _call(self, request: ClientRequest) -> CallOutcome:
        names = [s.name for s in self.specs()]
        name, arguments = request.name, request.arguments
        if name not in names:
            return CallOutcome.refused(f"unknown tool {quote(name)}; the tools are {', '.join(names)}; nothing moved")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return CallOutcome.refused(
                f"arguments of {name} must be a JSON object, got {json_type(arguments)}; nothing moved"
            )
        size = _json_chars(arguments)
        if size is None or size > self.settings.max_argument_chars:
            what = "cannot be written as JSON" if size is None else f"are {size} characters of JSON"
            return CallOutcome.refused(
                f"the arguments of {name} {what}; at most {self.settings.max_argument_chars}; nothing moved"
            )
        if name == OBSERVE:
            if arguments:
                return CallOutcome.refused(
                    f"observe takes no arguments, got {quote(next(iter(arguments)))}; nothing ran"
                )
            obs = self.episode.backend.observe(self.episode.robot.camera_names)
            return CallOutcome(observation_answer(obs, self.tools.state_text(obs), self.settings), OBSERVE)
        return self.tools.call(name, arguments)

    def _record(self, turn: int, request: ClientRequest, outcome: CallOutcome, waited_s: float) -> TurnRecord:
        raw = _json_text(request.arguments, self.settings.max_argument_chars)
        name = trim_text(request.name, self.settings.max_argument_chars, " ")
        call = ToolCall(f"mcp-{turn}", name, raw)
        body = {"method": "tools/call", "name": name, "arguments": raw}
        reply = ChatReply(
            content=None,
            tool_calls=(call,),
            usage=Usage(),
            model=self.client_name,
            finish_reason=FINISH_REASON,
            latency_s=waited_s,  # the client's time to its next call
            attempts=1,
            request=body,
        )
        return TurnRecord(
            turn,
            [],
            reply,
            [outcome.answer.text],
            outcome.action,
            move=outcome.move,
            gave_up=outcome.gave_up,
            finished=outcome.finished,
            details=dict(outcome.details),
            robo_calls=list(outcome.robo_calls),
        )

    def close(self) -> None:
        self.tools.close()


def _json_chars(value: Any) -> int | None:
    """Length of ``value`` as compact JSON, None if it cannot be written (nested too deeply)."""
    try:
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    except (ValueError, TypeError, RecursionError):
        return None


def _json_text(value: Any, max_chars: int) -> str:
    """``value`` as JSON for the record, head and tail of at most ``max_chars``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = "<not writable as JSON>"
    return trim_text(text, max_chars, " ")
