"""Bounds on the free text a model sends: cleaning and cutting, the config, and what the conversation keeps and tells
the model (the agents' end-to-end cases are in test_move_eef_agent and test_code_cell_agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robodojo.agents.code_cell import tools as cell_tools
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.types import ChatReply, ToolCall, Usage
from robodojo.agents.move_eef import tools as eef_tools
from robodojo.agents.text_limits import (
    CONFIG_PATH,
    CodeTooLongError,
    TextLimits,
    check_code,
    clean_text,
    default_text_limits,
    load_text_limits,
    quote,
)
from robodojo.agents.tool_calls import ToolCallError
from robodojo.errors import ConfigError

LIMITS = TextLimits(
    max_note_chars=20,
    max_reason_chars=30,
    max_summary_chars=40,
    max_content_chars=50,
    max_code_chars=1000,
    max_arguments_chars=1200,
    max_targets_chars=100,
    max_call_chars=200,
)
INVISIBLE_SAMPLES = (
    [chr(c) for c in range(0x00, 0x20) if chr(c) not in "\t\n"]
    + ["\x7f", "\x80", "\x85", "\x9f"]  # DEL and C1
    + [chr(c) for c in range(0x202A, 0x202F)]  # bidi embeddings and overrides
    + [chr(c) for c in range(0x2066, 0x206A)]  # bidi isolates
    + ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u061c", "\ufeff"]  # zero-width, marks, BOM
    + ["\ud800", "\udfff"]  # lone surrogates
)
VISIBLE = "Grip the red cube\tnow,\nthen lift: é ü 中文 עברית العربية 😀 ½ ≤ →"


def _reply(*calls: tuple[str, str], content: str | None = None) -> ChatReply:
    tool_calls = tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls))
    return ChatReply(content, tool_calls, Usage(), "scripted", "tool_calls", 0.0, 1)


def _accept(conversation: Conversation, reply: ChatReply, validate=eef_tools.validate_tool_call):
    conversation.add_reply(reply)
    return conversation.accept_tool_call(reply, validate, no_call_text="no call", several_text="several")


# -- cleaning and cutting -----------------------------------------------------------------------------------------


def test_control_and_invisible_characters_are_removed_and_the_rest_kept() -> None:
    mixed = "".join(f"{c}{INVISIBLE_SAMPLES[i % len(INVISIBLE_SAMPLES)]}" for i, c in enumerate(VISIBLE))
    text = clean_text(mixed, 10_000)
    assert text.text == VISIBLE and text.removed_chars == len(VISIBLE) and not text.cut and text.changed
    for sample in INVISIBLE_SAMPLES:
        assert clean_text(f"a{sample}b", 10).text == "ab", repr(sample)
    plain = clean_text(VISIBLE, len(VISIBLE))
    assert plain.text == VISIBLE and not plain.changed and plain.notice("note") is None


def test_long_text_keeps_its_head_and_says_so() -> None:
    text = clean_text("\x07" + "abc" * 1000, 2000)
    assert text.text == ("abc" * 1000)[:2000] and text.cut
    assert text.notice("'note'") == (
        "1 control or invisible character(s) removed from 'note'; 'note' cut to 2000 characters (it had 3000)"
    )
    assert text.record() == {"cut": True, "sent_chars": 3001, "removed_chars": 1, "max_chars": 2000}
    exact = clean_text("x" * 2000, 2000)
    assert exact.text == "x" * 2000 and not exact.cut and not exact.changed


def test_quoted_names_are_short_and_clean() -> None:
    assert quote("pick") == "'pick'"
    long = quote("p\u202e" * 5000)
    assert long == repr("p" * 60) + " (cut; 10000 characters)"


def test_code_is_never_altered_only_refused_when_too_long() -> None:
    code = "s = 'a\u202eb\u200bc'\r\nif s:\n\tprint(len(s))\x0c\n"  # bidi and zero-width inside a string, CRLF, tab, FF
    assert check_code(code, LIMITS) is code
    with pytest.raises(CodeTooLongError, match=r"python 'code' is 1001 characters; a cell may have at most 1000"):
        check_code("x" * 1001, LIMITS)


# -- config -------------------------------------------------------------------------------------------------------


def test_config_file_loads_and_is_validated(tmp_path: Path) -> None:
    limits = default_text_limits()
    assert limits == load_text_limits() and limits.max_note_chars == 2000
    assert limits.max_arguments_chars >= limits.max_code_chars
    text = CONFIG_PATH.read_text()
    for old, new, message in (
        ("max_note_chars: 2000", "max_note_chars: 0", "must be > 0"),
        ("max_note_chars: 2000", "max_note_chars: true", "expected an integer"),
        ("max_note_chars: 2000", "max_note_chars: 2000.5", "expected an integer"),
        ("max_note_chars: 2000", "max_notes_chars: 2000", "unknown key"),
        ("max_code_chars: 100000", "max_code_chars: 200000", "max_arguments_chars"),
        ("max_targets_chars: 2000", "max_targets_chars: 9000", "max_call_chars"),
    ):
        path = tmp_path / "text_limits.yaml"
        path.write_text(text.replace(old, new))
        with pytest.raises(ConfigError, match=message):
            load_text_limits(path)
    with pytest.raises(ConfigError, match="positive integer"):
        TextLimits(**{**LIMITS.__dict__, "max_note_chars": -1})


# -- validators ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validate", "name"),
    [(eef_tools.validate_tool_call, "move_eef"), (cell_tools.validate_tool_call, "python")],
)
def test_hostile_json_is_refused_not_raised(validate, name) -> None:
    for arguments in ('{"targets": {"left_z": ' + "1" * 5000 + "}}", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ToolCallError) as info:
            validate(ToolCall("c", name, arguments), LIMITS)
        assert "not valid JSON" in str(info.value) and len(str(info.value)) < 400


def test_model_sent_names_in_errors_are_bounded() -> None:
    for validate, name in ((eef_tools.validate_tool_call, "move_eef"), (cell_tools.validate_tool_call, "python")):
        with pytest.raises(Exception, match="unknown tool") as unknown:
            validate(ToolCall("c", "x" * 1_000_000, "{}"), LIMITS)
        assert len(str(unknown.value)) < 300
        with pytest.raises(Exception, match="unexpected argument") as extra:
            validate(ToolCall("c", name, json.dumps({"targets": {}, "code": "", "k\x00" * 10**5: 1})), LIMITS)
        assert len(str(extra.value)) < 300 and "\x00" not in str(extra.value)
    with pytest.raises(ToolCallError, match="'targets' has a name of 100000 characters"):
        eef_tools.validate_tool_call(ToolCall("c", "move_eef", json.dumps({"targets": {"y" * 10**5: 1}})), LIMITS)


def test_a_repeated_target_or_argument_is_refused_not_the_last_one_kept() -> None:
    repeated = '{"targets": {"left_z": 0.8, "left_x": -0.3, "left_z": 0.9}}'
    with pytest.raises(ToolCallError) as info:
        eef_tools.validate_tool_call(ToolCall("c", "move_eef", repeated), LIMITS)
    assert str(info.value) == "dimension 'left_z' is named more than once; name each dimension once; nothing moved"
    with pytest.raises(ToolCallError, match="argument 'note' of move_eef is given more than once"):
        eef_tools.validate_tool_call(ToolCall("c", "move_eef", '{"targets": {}, "note": "a", "note": "b"}'), LIMITS)
    nested = '{"targets": {"left_z": 0.8}, "note": "{\\"a\\": 1, \\"a\\": 2}"}'  # repeats inside a string are text
    valid = eef_tools.validate_tool_call(ToolCall("c", "move_eef", nested), LIMITS)
    assert valid.arguments["targets"] == {"left_z": 0.8} and valid.arguments["note"] == '{"a": 1, "a": 2}'


def test_free_text_arguments_are_cleaned_and_cut() -> None:
    move = eef_tools.validate_tool_call(
        ToolCall("c", "move_eef", json.dumps({"targets": {"left_z": 0.8}, "note": "go\x00\x07 left" + "!" * 100})),
        LIMITS,
    )
    assert move.arguments["note"] == ("go left" + "!" * 100)[:20] and move.cleaned["note"].cut
    assert move.arguments["targets"] == {"left_z": 0.8}
    give_up = eef_tools.validate_tool_call(
        ToolCall("c", "give_up", json.dumps({"reason": "r" * 31, "hindsight": "\u202eh"})), LIMITS
    )
    assert give_up.arguments == {"reason": "r" * 30, "hindsight": "h"} and set(give_up.cleaned) == {
        "reason",
        "hindsight",
    }
    finish = cell_tools.validate_tool_call(
        ToolCall("c", "finish", json.dumps({"status": "success", "summary": "s" * 41})), LIMITS
    )
    assert finish.arguments == {"status": "success", "summary": "s" * 40} and finish.cleaned["summary"].cut
    plain = eef_tools.validate_tool_call(ToolCall("c", "give_up", json.dumps({"reason": "stuck"})), LIMITS)
    assert plain.arguments == {"reason": "stuck"} and not plain.cleaned


def test_the_tools_tell_the_model_the_limits() -> None:
    move_eef, give_up = eef_tools.tool_schemas({"left_z": (0.7, 1.5)}, LIMITS)
    assert (
        "at most 20 characters; longer notes are cut"
        in move_eef["function"]["parameters"]["properties"]["note"]["description"]
    )
    assert "at most 30 characters" in give_up["function"]["parameters"]["properties"]["reason"]["description"]
    python, finish = cell_tools.tool_schemas(LIMITS)
    assert "at most 1000 characters" in python["function"]["parameters"]["properties"]["code"]["description"]
    assert "at most 40 characters" in finish["function"]["parameters"]["properties"]["summary"]["description"]


# -- the conversation keeps what was used -------------------------------------------------------------------------


def test_the_history_keeps_the_used_note_and_the_model_is_told() -> None:
    conversation = Conversation(text_limits=LIMITS)
    note = "\u202egoal: " + "n" * 10_000_000
    valid, errors = _accept(conversation, _reply(("move_eef", json.dumps({"targets": {"left_z": 0.8}, "note": note}))))
    assert valid is not None and not errors and valid.arguments["note"] == "goal: " + "n" * 14
    stored = conversation.history[-1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(stored) == {"targets": {"left_z": 0.8}, "note": "goal: " + "n" * 14}  # re-sent every turn
    assert conversation.cleaned == {"note": valid.cleaned["note"].record()}
    assert conversation.turn_details({"a": 1}) == {"a": 1, "text_limits": conversation.cleaned}
    text = conversation.add_tool_result("call_0", "Accepted")
    assert text == (
        "Accepted\n[1 control or invisible character(s) removed from 'note'; 'note' cut to 20 characters "
        "(it had 10000006)]"
    )
    assert conversation.history[-1]["content"] == text
    assert conversation.add_tool_result("call_0", "again") == "again"  # told once
    ok, _ = _accept(conversation, _reply(("move_eef", json.dumps({"targets": {"left_z": 0.8}, "note": "fine"}))))
    assert ok is not None and conversation.cleaned == {} and conversation.turn_details({}) == {}


def test_reply_text_is_cleaned_and_cut_in_the_history() -> None:
    conversation = Conversation(text_limits=LIMITS)
    valid, errors = _accept(conversation, _reply(content="thinking\x1b[31m " + "t" * 1000))
    assert valid is None and errors == ["no call\n[1 control or invisible character(s) removed from your reply's "
                                        "text; your reply's text cut to 50 characters (it had 1013)]"]  # fmt: skip
    assert conversation.history[0]["content"] == ("thinking[31m " + "t" * 1000)[:50]
    assert conversation.cleaned["content"]["cut"]


def test_refused_calls_keep_a_bounded_copy_and_valid_code_is_kept_whole() -> None:
    conversation = Conversation(text_limits=LIMITS)
    huge = '{"targets": ' + " " * 10_000_000 + "oops"
    valid, errors = _accept(conversation, _reply(("m\x00ove_eef" * 1000, huge)))
    assert valid is None and "unknown tool" in errors[0] and len(errors[0]) < 300
    call = conversation.history[-2]["tool_calls"][0]["function"]
    assert len(call["name"]) <= 60 and "\x00" not in call["name"]
    assert len(call["arguments"]) < LIMITS.max_arguments_chars + 100 and "characters omitted" in call["arguments"]
    too_long = json.dumps({"code": "x" * 1001})
    valid, errors = _accept(conversation, _reply(("python", too_long)), cell_tools.validate_tool_call)
    assert valid is None and errors[0].startswith("python 'code' is 1001 characters")
    # A valid cell whose JSON is longer than max_arguments_chars (escaped newlines) is kept exactly as sent.
    code = "\n" * 999
    sent = json.dumps({"code": code})
    assert len(sent) > LIMITS.max_arguments_chars
    valid, errors = _accept(conversation, _reply(("python", sent)), cell_tools.validate_tool_call)
    assert valid is not None and valid.arguments["code"] == code
    assert conversation.history[-1]["tool_calls"][0]["function"]["arguments"] == sent
