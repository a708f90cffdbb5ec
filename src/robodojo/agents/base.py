"""What the episode runner needs from an agent, and what an agent gets to act with.

The runner owns the episode (reset, budgets, success, recording); an agent owns its conversation with the model and
turns each reply into calls on the motion server. Agents never see privileged state: ``EpisodeContext`` holds the
agent-side backend, the motion server and the benchmark's own done signal, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from robodojo.agents.llm.types import ChatReply, Message
from robodojo.motion.backend import RobotBackend
from robodojo.motion.interface import Motion
from robodojo.motion.report import MoveReport
from robodojo.robots.config import RobotConfig


class AgentTime(Protocol):
    """Where an agent reports time it spent that the runner cannot see from outside, so that the episode's clock
    (robodojo.episodes.clock, ``--clock``) lets that much world time pass. Model calls made through the ``llm`` a turn
    is handed are timed by the runner itself; only what happens elsewhere is reported here."""

    def model_called(self, wall_s: float) -> None:
        """A decision of a model the runner's LLM caller does not carry took ``wall_s`` [s] (an MCP client's time to
        its tool call); called before the decision acts."""
        ...

    def computed(self, wall_s: float) -> None:
        """The agent's own code computed for ``wall_s`` [s] between robot calls (a code cell between robo calls);
        called before the next robot call."""
        ...


class NoAgentTime:
    """An :class:`AgentTime` that lets no time pass: the world waits for the agent (the ``paused`` clock)."""

    def model_called(self, wall_s: float) -> None:
        """Nothing passes."""

    def computed(self, wall_s: float) -> None:
        """Nothing passes."""


NO_AGENT_TIME = NoAgentTime()


@dataclass(frozen=True)
class EpisodeContext:
    """Everything an agent may use during one episode."""

    task: str
    instruction: str  # the official episode instruction
    recipe: str  # the task recipe: description and process-score ladder
    robot: RobotConfig
    backend: RobotBackend  # agent-side view only: observe(), steps_left
    motion: Motion  # the in-process MotionServer, or the MoveEef action client on the ROS graph
    is_success: Callable[[], bool]  # the benchmark's own done signal (motion stops early on success)
    llm_call_budget: int
    #: the backend's cameras give depth images (``backend.observe(cameras, depth=True)``): declared by whoever builds
    #: the context (the embedded world's do; the ROS graph's topic view and real cameras without RGB-D do not)
    has_depth: bool = False
    #: where the agent reports its own time (code cells' computing, an MCP client's decisions); the runner sets it
    agent_time: AgentTime = NO_AGENT_TIME


@dataclass(frozen=True)
class TurnRecord:
    """One agent turn: the request as sent, the reply, what the agent did, and what it told the model."""

    turn: int
    request: list[Message]  # the messages sent this turn (images as data URLs; the recorder stores them as files)
    reply: ChatReply
    tool_results: list[str]  # texts returned to the model (tool results or error messages)
    action: str  # "move_eef", "give_up", "python", "finish", "error" (malformed reply: nothing moved)
    move: MoveReport | None = None
    gave_up: bool = False
    finished: bool = False  # the agent declared the episode over (code-cell finish tool)
    details: dict[str, Any] = field(default_factory=dict)  # agent-specific extras for the record (e.g. give_up reason)
    robo_calls: list[Any] = field(default_factory=list)  # code cells: the robo calls this turn made (robo_calls.jsonl)
    #: world time [s] the episode's clock let pass for this turn's model calls and computing (the runner fills it in)
    latency_applied_s: float = 0.0


class LlmCaller(Protocol):
    def chat(
        self, messages: list[Message], tools: list[dict], *, tool_choice: str | dict | None = "required"
    ) -> ChatReply: ...


class Agent(Protocol):
    """A policy driven by a language model through tool calls."""

    name: str

    def begin(self, episode: EpisodeContext) -> None:
        """Start a new episode: build the system and goal messages; nothing is sent yet."""
        ...

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        """Observe, make exactly one LLM call, act on the reply (or return an error to the model), and report."""
        ...
