"""The code-cell agent's tools: python(code) and finish(status, summary), and validation of the model's calls.

The code of a cell is used exactly as sent but refused beyond ``max_code_chars``; the finish summary is free text,
cleaned and cut (:mod:`robodojo.agents.text_limits`).
"""

from __future__ import annotations

from typing import Any

from robodojo.agents.llm.types import ToolCall
from robodojo.agents.text_limits import CodeTooLongError, TextLimits, check_code, clean_text, quote
from robodojo.agents.tool_calls import ToolCallError, ValidCall, decode_arguments

PYTHON, FINISH = "python", "finish"
FINISH_STATUSES = ("success", "failure")


#: the python tool's description, by the run's ``images`` choice (none: no pictures come back)
PYTHON_DESCRIPTIONS = {
    "all": "Run a Python cell in the persistent namespace (robo, np, math predefined). Returns what the cell printed, "
    "the repr of its last expression, its traceback if it raised, and the images queued with robo.show(camera).",
    "head": "Run a Python cell in the persistent namespace (robo, np, math predefined). Returns what the cell printed, "
    "the repr of its last expression, its traceback if it raised, and the head camera images queued with "
    "robo.show(camera).",
    "none": "Run a Python cell in the persistent namespace (robo, np, math predefined). Returns what the cell printed, "
    "the repr of its last expression, and its traceback if it raised.",
}


def tool_schemas(limits: TextLimits, images: str = "all") -> list[dict[str, Any]]:
    """python and finish, in the order the model sees them; the code and summary name their ``limits``."""
    return [
        {
            "type": "function",
            "function": {
                "name": PYTHON,
                "description": PYTHON_DESCRIPTIONS[images],
                "parameters": {
                    "type": "object",
                    "properties": {
                        "code": {
                            "type": "string",
                            "description": f"Python source of the cell (at most {limits.max_code_chars} characters)",
                        }
                    },
                    "required": ["code"],
                    "additionalProperties": False,
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": FINISH,
                "description": "End the episode: status 'success' if you believe the task is done, 'failure' if it "
                "cannot be done. It does not change the score; the environment judges success.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "enum": list(FINISH_STATUSES)},
                        "summary": {
                            "type": "string",
                            "description": "what was done, or why it cannot be done (at most "
                            f"{limits.max_summary_chars} characters)",
                        },
                    },
                    "required": ["status", "summary"],
                    "additionalProperties": False,
                },
            },
        },
    ]


def validate_tool_call(call: ToolCall, limits: TextLimits) -> ValidCall:
    """Check one call against ``limits``; raises ToolCallError with the text to return to the model."""
    if call.name not in (PYTHON, FINISH):
        raise ToolCallError(f"unknown tool {quote(call.name)}; the tools are python and finish; nothing ran")
    args = decode_arguments(call)
    if not isinstance(args, dict):
        raise ToolCallError(f"arguments of {call.name} must be a JSON object; nothing ran")
    if call.name == PYTHON:
        if not isinstance(args.get("code"), str):
            raise ToolCallError("python needs 'code' (a string of Python source); nothing ran")
        extra = set(args) - {"code"}
    else:
        if args.get("status") not in FINISH_STATUSES:
            raise ToolCallError(f"finish needs 'status': one of {', '.join(FINISH_STATUSES)}; the episode continues")
        if not isinstance(args.get("summary", ""), str):
            raise ToolCallError("finish 'summary' must be a string; the episode continues")
        extra = set(args) - {"status", "summary"}
    if extra:
        raise ToolCallError(f"unexpected argument {quote(sorted(extra)[0])} for {call.name}; nothing ran")
    if call.name == PYTHON:
        try:
            check_code(args["code"], limits)
        except CodeTooLongError as exc:
            raise ToolCallError(str(exc)) from None
        return ValidCall(call.name, args)
    if "summary" not in args:
        return ValidCall(call.name, args)
    summary = clean_text(args["summary"], limits.max_summary_chars)
    args["summary"] = summary.text
    return ValidCall(call.name, args, {"summary": summary} if summary.changed else {})
