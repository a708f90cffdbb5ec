"""What the two tool sets of the MCP server share: a tool's description, the outcome of one call, the protocol.

A tool set (:mod:`~robodojo.agents.mcp.move_eef_tools`, :mod:`~robodojo.agents.mcp.robo_tools`) names its tools and
runs one call of them on the episode; the agent (:mod:`~robodojo.agents.mcp.agent`) adds ``observe``, checks what
every call has in common (a known name, an object of bounded size) and records the turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from robodojo.agents.base import EpisodeContext
from robodojo.agents.mcp.channel import Answer
from robodojo.motion.report import MoveReport
from robodojo.observation import Observation

OBSERVE = "observe"
REFUSED = "refused"
OBSERVE_DESCRIPTION = (
    "Look: every camera's current image, each after a line naming the camera and the env step, and the robot's state "
    "as text. Free: it spends no env step (it does count as a call)."
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the client lists it: ``input_schema`` is a JSON Schema object."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class CallOutcome:
    """What one call did: the answer for the client and the turn record's fields."""

    answer: Answer
    #: the turn record's action: the tool's name, or "refused" (refused before anything ran: nothing moved). Not
    #: "error": turns.jsonl keeps only an error text for that action (the runner's own errors), and a refusal's
    #: answer belongs in the record.
    action: str
    move: MoveReport | None = None
    gave_up: bool = False
    finished: bool = False  #: the client declared the episode over (robo done)
    details: Mapping[str, Any] = field(default_factory=dict)
    robo_calls: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def refused(cls, text: str, **details: Any) -> CallOutcome:
        """A call that was refused before anything ran."""
        return cls(Answer.error(text), REFUSED, details={"error": text, **details})


class ToolSet(Protocol):
    """The tools of one ``--tools`` choice, bound to an episode by :meth:`begin`."""

    name: str  #: ``move_eef`` or ``robo``: what ``--tools`` names

    def specs(self) -> list[ToolSpec]:
        """The tools, without ``observe`` (the agent adds it), in the order the client sees them."""
        ...

    def begin(self, episode: EpisodeContext) -> None:
        """Start an episode."""
        ...

    def call(self, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """Run one call of a tool of :meth:`specs` (``arguments`` is a JSON object of bounded size, nothing more is
        known of it); never raises for anything the client sent."""
        ...

    def state_text(self, obs: Observation) -> str:
        """The robot's state as ``observe`` tells it, beside the images of ``obs``."""
        ...

    def manual(self) -> str:
        """The text that explains the tools (the ``manual`` resource)."""
        ...

    def close(self) -> None:
        """Release what :meth:`begin` took."""
        ...
