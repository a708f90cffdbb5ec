"""What every agent's tool-call validation shares: the error that refuses a call, and the call as it is used.

Each agent checks its own tools (``move_eef/tools.py``, ``code_cell/tools.py``, ``shell/agent.py``) and hands the
validator to :meth:`~robodojo.agents.conversation.Conversation.accept_tool_call`, which answers a
:class:`ToolCallError` with its message as the tool result and keeps a :class:`ValidCall`'s arguments as used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from robodojo.agents.llm.types import ToolCall
from robodojo.agents.text_limits import CleanText
from robodojo.errors import InvalidCommandError


class ToolCallError(InvalidCommandError):
    """A malformed tool call; nothing ran. The message is what the model is told."""


@dataclass(frozen=True)
class ValidCall:
    """A tool call that passed its agent's checks."""

    name: str
    arguments: dict[str, Any]  #: as used: free text cleaned and cut, everything else as sent
    cleaned: Mapping[str, CleanText] = field(default_factory=dict)  #: free-text arguments that were changed


def decode_arguments(call: ToolCall) -> Any:
    """The call's arguments decoded from JSON (empty: ``{}``); ToolCallError when they are not JSON. The caller checks
    the shape."""
    try:
        # strict=False: raw control characters (a newline typed into a string) are what the model meant; local
        # servers' grammars emit them, and refusing them would only make the model resend the same call.
        return json.loads(call.arguments or "{}", strict=False)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, integers of > 4300 digits, nesting too deep
        raise ToolCallError(f"arguments of {call.name} are not valid JSON ({exc}); nothing ran") from None
