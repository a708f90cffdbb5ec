"""Why an episode failed, from its record: the last thing the harness refused in it (:func:`last_refusal`), its text
normalised so that the same refusal groups across episodes (:func:`normalise_reason`).

A refusal is whatever the harness answered "no, nothing ran" to, in each agent style's own record:

- a move refused before it started (turns.jsonl ``move.accepted`` false: move_eef, MCP's move tools): its tool text;
- an MCP tool call refused (turns.jsonl ``details.tool_calls[].refused``): its error;
- a reply the agent could not act on (turns.jsonl action ``error`` answered with a text, no runner error): that text;
- a robo call (robo_calls.jsonl): a shell command answered ``refused`` or ``usage`` (its reason), a motion that was
  not planned (``result.planned`` false: its reason or stop reason), a call that raised (its error; the end of the
  episode raised inside a cell is not a refusal).

Within a turn the robo calls come first (they ran inside the turn, in their order), then the turn's own refusals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from robodojo.episodes.record import ERROR_ACTION, EpisodeRecord

#: exceptions a robo call raises when the episode ends around it (a cell's step budget ran out, the run was
#: stopped): not a refusal of the call
ENDING_ERRORS = ("EpisodeOver", "KeyboardInterrupt", "SystemExit")
REFUSED_VERDICTS = ("refused", "usage")  #: a shell command's verdicts that mean it did not run
NUMBER_MARK = "#"  #: what a number becomes in a normalised reason
# A number standing on its own (not the digit of a name such as cube_2 or x1): signed, decimal, with an exponent.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_])")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Refusal:
    """One refusal in a record: the ``turn``, what was refused (``source``: move, tool call, reply, robo call) and
    the ``text`` as recorded."""

    turn: int
    source: str
    text: str


def normalise_reason(text: str, max_chars: int) -> str:
    """``text`` as a group key: numbers replaced by ``#`` (targets and distances differ from episode to episode,
    the reason does not), whitespace collapsed, cut to ``max_chars`` characters."""
    key = _SPACE.sub(" ", _NUMBER.sub(NUMBER_MARK, text)).strip()
    return key if len(key) <= max_chars else key[: max_chars - 1].rstrip() + "…"


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _robo_call_refusal(call: Mapping[str, Any]) -> str:
    """The refusal text of one robo_calls.jsonl line, "" when the call ran."""
    record = _dict(call.get("record"))  # the shell harness: {ok, verdict, reason, ...}
    if record.get("verdict") in REFUSED_VERDICTS:
        return str(record.get("reason") or record.get("verdict"))
    result = _dict(call.get("result"))  # the robo API: a MoveResult's fields
    if result.get("planned") is False:
        return str(result.get("reason") or result.get("stop_reason") or "not planned")
    error = str(call.get("error") or "")
    if error and not error.startswith(ENDING_ERRORS):
        return error
    return ""


def _refusals(record: EpisodeRecord) -> Iterator[Refusal]:
    """Every refusal of the record, in the order it happened."""
    calls: dict[int, list[Mapping[str, Any]]] = {}
    for call in record.robo_calls:
        turn = call.get("turn")
        if isinstance(turn, int):
            calls.setdefault(turn, []).append(call)
    turns = sorted({*calls, *(t.turn for t in record.turns)})
    lines = {t: [line for line in record.turns if line.turn == t] for t in turns}
    for turn in turns:
        ordered = sorted(calls.get(turn, []), key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0)
        for call in ordered:
            text = _robo_call_refusal(call)
            if text:
                yield Refusal(turn, "robo call", text)
        for line in lines[turn]:
            move = _dict(line.move)
            if move.get("accepted") is False:
                yield Refusal(turn, "move", str(move.get("tool_text") or move.get("stop_reason") or "rejected"))
            for tool_call in line.details.get("tool_calls") or []:
                if isinstance(tool_call, dict) and tool_call.get("refused"):
                    text = tool_call.get("error") or tool_call.get("reason") or tool_call.get("tool") or "refused"
                    yield Refusal(turn, "tool call", str(text))
            # An agent's turn it could not act on (a malformed or missing tool call) is answered with a text; a
            # line with ``error`` is the runner's own (a failed LLM call, a crash): the end reason says that.
            if line.action == ERROR_ACTION and not line.error and line.tool_results:
                yield Refusal(turn, "reply", line.tool_results[-1])


def last_refusal(record: EpisodeRecord) -> Refusal | None:
    """The last refusal in ``record`` (see the module docstring), None when nothing was refused."""
    last: Refusal | None = None
    for refusal in _refusals(record):
        last = refusal
    return last


__all__ = ["ENDING_ERRORS", "Refusal", "last_refusal", "normalise_reason"]
