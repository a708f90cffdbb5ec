"""The move_eef and give_up tools: chat-completions schemas and the validation of one tool call.

Validation covers the call's envelope (tool name, JSON, argument names and types); the targets themselves are
validated by the motion server's parser (robodojo.motion.targets), whose messages go back to the model unchanged
(coordinates transformed under negate_xyz). Every message ends with what did not happen. The messages:

- ``unknown tool 'pick'; the tools are move_eef and give_up; nothing moved``
- ``arguments of move_eef are not valid JSON (Expecting value: line 1 column 1 (char 0)); nothing moved``
- ``arguments of move_eef must be a JSON object, got array; nothing moved``
- ``move_eef needs 'targets' (an object mapping dimension names to numbers); nothing moved``
- ``'targets' must be an object mapping dimension names to numbers, got string; nothing moved``
- ``'note' must be a string, got number; nothing moved``
- ``unexpected argument 'speed' for move_eef; its arguments are targets and note; nothing moved``
- ``'targets' is 2190000 characters of JSON; at most 2000 (one number per dimension name, such as {"left_z": 0.95});
  nothing moved`` (the call is kept in the history cut to ``max_call_chars``, and the model is told)
- ``'targets' has a name of 5000 characters; dimension names are like left_x or right_gripper; nothing moved``
- ``dimension 'left_z' is named more than once; name each dimension once; nothing moved`` (JSON keeps only the last
  of a repeated key, so repeats are found while decoding; the text is the target parser's DuplicateDimension)
- ``argument 'note' of move_eef is given more than once; nothing moved``
- ``give_up needs 'reason' (a string); the episode continues`` (and the same shapes for give_up's other errors)
- replies without exactly one tool call: :data:`NO_TOOL_CALL_TEXT`, :data:`SEVERAL_TOOL_CALLS_TEXT`.

Names the model sent are quoted cleaned and shortened (:func:`robodojo.agents.text_limits.quote`). The free-text
arguments (note, reason, hindsight) are cleaned and cut to their limits (:mod:`robodojo.agents.text_limits`); the
valid call carries what was used and, in ``cleaned``, what was changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from robodojo.agents.llm.types import ToolCall, ToolSchema
from robodojo.agents.text_limits import TextLimits, clean_text, quote
from robodojo.agents.tool_calls import ToolCallError, ValidCall
from robodojo.motion.rejection import DuplicateDimension, render_rejection
from robodojo.text import cut_name

MOVE_EEF = "move_eef"
GIVE_UP = "give_up"
TOOL_NAMES = (MOVE_EEF, GIVE_UP)

NO_TOOL_CALL_TEXT = "Your reply called no tool; call exactly one tool per turn (move_eef or give_up); nothing moved"
SEVERAL_TOOL_CALLS_TEXT = (
    "Your reply called {n} tools ({names}); call exactly one tool per turn; none was executed and nothing moved"
)
GIVE_UP_TEXT = "give_up received: the episode ends here. It does not change the score."

# Argument name -> (required, JSON type, description) per tool.
_ARGUMENTS: dict[str, dict[str, tuple[bool, str, str]]] = {
    MOVE_EEF: {
        "targets": (True, "object", "an object mapping dimension names to numbers"),
        "note": (False, "string", "a string"),
    },
    GIVE_UP: {
        "reason": (True, "string", "a string"),
        "hindsight": (False, "string", "a string"),
    },
}
_CONSEQUENCE = {MOVE_EEF: "nothing moved", GIVE_UP: "the episode continues"}
# Free-text argument -> the TextLimits field that bounds it.
_FREE_TEXT = {"note": "max_note_chars", "reason": "max_reason_chars", "hindsight": "max_reason_chars"}
MAX_DIMENSION_NAME_CHARS = 40  # longer target names are refused here (the longest real one is 15 characters)


class _RepeatedKey(dict):
    """A decoded JSON object that named a key more than once (``repeated``, the first such); ``json`` would keep the
    last value silently, so the call is refused instead."""

    def __init__(self, pairs: list[tuple[str, Any]], repeated: str) -> None:
        super().__init__(pairs)
        self.repeated = repeated


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a dict, or a :class:`_RepeatedKey` when a key repeats."""
    decoded = dict(pairs)
    if len(decoded) == len(pairs):
        return decoded
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return _RepeatedKey(pairs, key)
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means one repeats")


def _fmt(value: float) -> str:
    return f"{value:g}"


def move_eef_schema(bounds: Mapping[str, tuple[float, float]], limits: TextLimits) -> ToolSchema:
    """The move_eef tool; ``bounds`` are the dimension bounds as the model is told them (probe-transformed)."""
    listed = ", ".join(f"{name} [{_fmt(lo)}, {_fmt(hi)}]" for name, (lo, hi) in bounds.items())
    description = (
        "Move the grasp point of one or both arms. Name only the world-frame dimensions you want to change; unnamed "
        "dimensions keep their observed values, and naming dimensions of both arms moves them together. Units: "
        "metres for x, y, z; degrees from a straight-down grasp for pitch_deg, roll_deg, yaw_deg; gripper 0 is closed "
        f"and 1 is open. Bounds: {listed}. An invalid or unreachable target returns an error as the tool result and "
        "does not move the robot; an accepted one returns the planned waypoints and duration, and the next "
        "observation reports how close the grasp point landed."
    )
    properties = {
        name: {"type": "number", "minimum": lo, "maximum": hi, "description": f"[{_fmt(lo)}, {_fmt(hi)}]"}
        for name, (lo, hi) in bounds.items()
    }
    return {
        "type": "function",
        "function": {
            "name": MOVE_EEF,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "targets": {
                        "type": "object",
                        "description": "Absolute targets for any non-empty subset of the dimensions.",
                        "properties": properties,
                        "additionalProperties": False,
                        "minProperties": 1,
                    },
                    "note": {
                        "type": "string",
                        "description": "What you observe now and why you make this motion "
                        f"(at most {limits.max_note_chars} characters; longer notes are cut).",
                    },
                },
                "required": ["targets"],
                "additionalProperties": False,
            },
        },
    }


def give_up_schema(limits: TextLimits) -> ToolSchema:
    most = f"(at most {limits.max_reason_chars} characters)"
    return {
        "type": "function",
        "function": {
            "name": GIVE_UP,
            "description": (
                "End the episode because you judge it unrecoverable. It does not declare success or change the score."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "description": f"Why the episode is unrecoverable {most}."},
                    "hindsight": {"type": "string", "description": f"What would have been needed {most}."},
                },
                "required": ["reason"],
                "additionalProperties": False,
            },
        },
    }


def tool_schemas(bounds: Mapping[str, tuple[float, float]], limits: TextLimits) -> list[ToolSchema]:
    """Both tools, in the order the model sees them; their free-text arguments name their ``limits``."""
    return [move_eef_schema(bounds, limits), give_up_schema(limits)]


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type (for error texts)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate_tool_call(call: ToolCall, limits: TextLimits) -> ValidCall:
    """Check one call's name and arguments and clean its free text (``limits``); raises ToolCallError with the message
    to return to the model."""
    if call.name not in TOOL_NAMES:
        raise ToolCallError(f"unknown tool {quote(call.name)}; the tools are {' and '.join(TOOL_NAMES)}; nothing moved")
    spec, consequence = _ARGUMENTS[call.name], _CONSEQUENCE[call.name]
    raw = call.arguments if call.arguments.strip() else "{}"
    try:
        # strict=False: raw control characters inside strings (a newline in the note) are harmless and meant.
        arguments = json.loads(raw, object_pairs_hook=_json_object, strict=False)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, integers of > 4300 digits, nesting too deep
        raise ToolCallError(f"arguments of {call.name} are not valid JSON ({exc}); {consequence}") from None
    if not isinstance(arguments, dict):
        raise ToolCallError(
            f"arguments of {call.name} must be a JSON object, got {json_type(arguments)}; {consequence}"
        )
    if isinstance(arguments, _RepeatedKey):
        repeated = quote(arguments.repeated)
        raise ToolCallError(f"argument {repeated} of {call.name} is given more than once; {consequence}")
    for key in arguments:
        if key not in spec:
            raise ToolCallError(
                f"unexpected argument {quote(key)} for {call.name}; its arguments are {' and '.join(spec)}; "
                f"{consequence}"
            )
    for key, (required, kind, what) in spec.items():
        if key not in arguments:
            if required:
                raise ToolCallError(f"{call.name} needs {key!r} ({what}); {consequence}")
            continue
        if json_type(arguments[key]) != kind:
            raise ToolCallError(f"{key!r} must be {what}, got {json_type(arguments[key])}; {consequence}")
    for name in arguments.get("targets", {}) if call.name == MOVE_EEF else ():
        if len(name) > MAX_DIMENSION_NAME_CHARS:
            raise ToolCallError(
                f"'targets' has a name of {len(name)} characters; dimension names are like left_x or right_gripper; "
                f"{consequence}"
            )
    if call.name == MOVE_EEF:
        size = len(json.dumps(arguments["targets"], separators=(",", ":"), ensure_ascii=False))
        if size > limits.max_targets_chars:
            raise ToolCallError(
                f"'targets' is {size} characters of JSON; at most {limits.max_targets_chars} (one number per "
                f'dimension name, such as {{"left_z": 0.95}}); {consequence}'
            )
    targets = arguments.get("targets") if call.name == MOVE_EEF else None
    if isinstance(targets, _RepeatedKey):
        raise ToolCallError(render_rejection(DuplicateDimension(cut_name(targets.repeated))))
    cleaned = {}
    for key, limit in _FREE_TEXT.items():
        if key in arguments:
            text = clean_text(arguments[key], getattr(limits, limit))
            arguments[key] = text.text
            if text.changed:
                cleaned[key] = text
    return ValidCall(call.name, arguments, cleaned)
