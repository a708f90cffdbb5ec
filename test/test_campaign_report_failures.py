"""Why an episode failed, read from its record (robodojo.campaigns.report.failures), and what a try that no episode
row holds spent (robodojo.campaigns.report.tries): each agent style's refusals as its record keeps them, and the
text normalised so that one refusal groups across layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robodojo.campaigns.report.failures import Refusal, last_refusal, normalise_reason
from robodojo.campaigns.report.settings import CONFIG_PATH, load_report_settings, shipped_report_settings
from robodojo.campaigns.report.stats import EarlierUsage
from robodojo.campaigns.report.tries import earlier_tries, earlier_usage, try_usage
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.episodes.record import EpisodeRecord, TurnLine
from robodojo.errors import ConfigError

REASON_CHARS = 160

OUT_OF_BOUNDS = "target for 'right_z' is outside [0.7, 1.565]; nothing moved"


def _record(turns=(), robo_calls=()) -> EpisodeRecord:
    return EpisodeRecord(Path("/nowhere"), turns=tuple(turns), robo_calls=tuple(robo_calls))


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (OUT_OF_BOUNDS, "target for 'right_z' is outside [#, #]; nothing moved"),
        ("no IK along the line: 12.5 mm short at -3e-2 rad", "no IK along the line: # mm short at # rad"),
        ("cube_2 is 0.31 m   away\n(after 3 tries)", "cube_2 is # m away (after # tries)"),  # names keep digits
        ("x1 +4 -.5 1.", "x1 # # #"),
    ],
)
def test_normalised_reasons_replace_numbers_and_keep_names(text, key):
    assert normalise_reason(text, REASON_CHARS) == key


def test_a_long_reason_is_cut_to_the_limit():
    key = normalise_reason("refused " * 100, 40)
    assert len(key) == 40 and key.endswith("…")


def test_the_last_refusal_of_each_agent_style():
    move = {"accepted": False, "tool_text": OUT_OF_BOUNDS, "stop_reason": "refused"}
    accepted = {"accepted": True, "tool_text": "Accepted: playing 12 waypoints (0.48s)."}
    # move_eef: the refused move of turn 1, then an accepted one
    record = _record(
        [TurnLine(turn=1, action="move_eef", move=move), TurnLine(turn=2, action="move_eef", move=accepted)]
    )
    assert last_refusal(record) == Refusal(1, "move", OUT_OF_BOUNDS)
    # MCP: a refused tool call in the turn's details
    details = {"tool_calls": [{"tool": "move_eef", "refused": False}, {"tool": "robo", "refused": True,
                                                                      "error": "unknown tool 'robo'"}]}  # fmt: skip
    assert last_refusal(_record([TurnLine(turn=3, action="refused", details=details)])) == Refusal(
        3, "tool call", "unknown tool 'robo'"
    )
    # the shell harness: a command refused (its record's reason), then a usage error in the same turn
    shell = [
        {"turn": 2, "index": 0, "argv": ["move"], "record": {"ok": False, "verdict": "refused", "reason": "beyond"}},
        {"turn": 2, "index": 1, "argv": ["fly"], "record": {"ok": False, "verdict": "usage", "reason": "'fly' is not"}},
        {"turn": 2, "index": 2, "argv": ["obs"], "record": {"ok": True, "verdict": "executed", "reason": ""}},
    ]
    assert last_refusal(_record(robo_calls=shell)) == Refusal(2, "robo call", "'fly' is not")
    # code cells: a motion not planned, then a call that raised; the episode's end raised in a cell is not one
    cells = [
        {"turn": 1, "index": 0, "method": "move_to", "result": {"type": "MoveResult", "planned": False,
                                                                "stop_reason": "plan_failed", "reason": "no IK"}},
        {"turn": 1, "index": 1, "method": "segment", "error": "ValueError: point (900, 3) is outside the image"},
        {"turn": 2, "index": 0, "method": "move_to", "error": "EpisodeOver: the env step budget is used up"},
    ]  # fmt: skip
    assert last_refusal(_record(robo_calls=cells)) == Refusal(
        1, "robo call", "ValueError: point (900, 3) is outside the image"
    )
    assert last_refusal(_record(robo_calls=cells[:1])) == Refusal(1, "robo call", "no IK")
    # a reply the agent could not act on is one; the runner's own error line (a failed call) is not
    answered = TurnLine(turn=4, action="error", tool_results=("no valid tool call: call move_eef or give_up",))
    failed = TurnLine(turn=5, action="error", error="LlmError: the server kept answering 503")
    assert last_refusal(_record([answered, failed])) == Refusal(4, "reply", answered.tool_results[0])
    # robo calls run inside their turn: the turn's own refusal comes after them
    both = _record([TurnLine(turn=1, action="move_eef", move=move)], cells[:1])
    assert last_refusal(both) == Refusal(1, "move", OUT_OF_BOUNDS)
    assert last_refusal(_record([TurnLine(turn=1, action="move_eef", move=accepted)])) is None


def _jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _row(episode_id: str, tries: int, folder: str) -> EpisodeRow:
    return EpisodeRow(
        episode_id=episode_id, task="general_pickup", variant="standard", seed=0, agent="move_eef", llm="x",
        condition=ZERO_SHOT, capability="pick", end_reason="success", success=True, tries=tries, folder=folder,
    )  # fmt: skip


def test_earlier_tries_read_what_they_spent_from_their_lines(tmp_path):
    killed = tmp_path / "episodes" / "e" / "try1" / "general_pickup_x"
    killed.mkdir(parents=True)
    (killed / "meta.json").write_text("{}")
    usage = {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50, "cost_usd": 0.25}
    # three calls made, two answered (the third was cut off by the kill), metrics.json a turn behind
    _jsonl(killed / "requests.jsonl", [{"turn": t, "messages": []} for t in (1, 2, 3)])
    _jsonl(killed / "responses.jsonl", [{"turn": t, "usage": usage} for t in (1, 2)])
    (killed / "metrics.json").write_text(json.dumps({"end_reason": "running", "llm_calls": 1}))
    crashed = tmp_path / "episodes" / "e" / "try2"  # crashed before its episode began: crash.txt, no record
    crashed.mkdir()
    (crashed / "crash.txt").write_text("OSError")
    tries = [
        {"episode_id": "e", "try": 1, "status": "killed", "end_reason": "killed", "error": "",
         "folder": "episodes/e/try1"},
        {"episode_id": "e", "try": 2, "status": "crashed", "end_reason": "crashed", "error": "OSError",
         "folder": "episodes/e/try2"},
        {"episode_id": "e", "try": 3, "status": "finished", "end_reason": "success", "error": "",
         "folder": "episodes/e/try3"},
    ]  # fmt: skip
    found = earlier_tries(tmp_path, tries, [_row("e", 3, "episodes/e/try3")])
    assert [(t.try_index, t.status) for t in found] == [(1, "killed"), (2, "crashed")]
    first, second = found
    assert first.usage == EarlierUsage(tries=1, llm_calls=3, input_tokens=2000, cached_input_tokens=400,
                                       output_tokens=100, cost_usd=0.5)  # fmt: skip
    assert first.usage_from == "requests.jsonl" and first.folder == "episodes/e/try1"
    assert second.usage == EarlierUsage(tries=1) and second.usage_from == ""
    assert earlier_usage(found) == {"e": first.usage + second.usage}
    # a record with only metrics.json (no call line): its counts
    only_metrics = EpisodeRecord.open(killed)
    object.__setattr__(only_metrics, "requests", ())
    object.__setattr__(only_metrics, "responses", ())
    assert try_usage(only_metrics)[0].llm_calls == 1 and try_usage(only_metrics)[1] == "metrics.json"


def test_the_shipped_report_settings_and_a_typo():
    settings = shipped_report_settings()
    assert settings == load_report_settings(CONFIG_PATH)
    assert settings.ranking.significance_level == 0.05 and settings.ranking.min_shared_layouts == 10
    assert settings.image_strip.thumbnail_width_px > 0 and 1 <= settings.image_strip.jpeg_quality <= 100


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("ranking: {significance_level: 0.05, min_shared: 10}\nfailures: {examples: 3, reason_chars: 9}\n"
         "image_strip: {thumbnail_width_px: 9, jpeg_quality: 9}\n", "unknown key"),
        ("ranking: {significance_level: 1.5, min_shared_layouts: 10}\nfailures: {examples: 3, reason_chars: 9}\n"
         "image_strip: {thumbnail_width_px: 9, jpeg_quality: 9}\n", "significance_level must be in"),
        ("ranking: {significance_level: 0.05, min_shared_layouts: 10}\nfailures: {examples: 3, reason_chars: 9}\n"
         "image_strip: {thumbnail_width_px: 9, jpeg_quality: 101}\n", "jpeg_quality must be in"),
    ],
)  # fmt: skip
def test_bad_report_settings_are_config_errors(tmp_path, text, error):
    path = tmp_path / "report.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error):
        load_report_settings(path)
