"""The episode record read back (robodojo.episodes.record): what the recorder wrote, the outcome in metrics.json, the
cameras named in meta.json, a demonstration from a record, and partial or malformed records read with their
problems."""

from __future__ import annotations

import json

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.episodes import EndReason, EpisodeOutcome, EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.demonstration import read_demonstration
from robodojo.episodes.factory import make_agent
from robodojo.episodes.record import (
    METRICS_FILE,
    EpisodeRecord,
    RecordMeta,
    TurnLine,
    find_record,
    read_turns,
)

REPLAY = PACKAGE_ROOT / "examples" / "replay" / "general_pickup_seed0.yaml"
CAMERAS = ("head", "left_wrist", "right_wrist")


@pytest.fixture(scope="module")
def recorded(dual_world, tmp_path_factory):
    """A successful move_eef episode (the shipped replay script) and its result."""
    agent = make_agent("move_eef")
    with open_llm(f"replay:{REPLAY}") as llm:
        return run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec("general_pickup", 0),
                           tmp_path_factory.mktemp("rec"))  # fmt: skip


def test_a_record_reads_back_as_the_runner_ended_it(recorded):
    record = EpisodeRecord.open(recorded.folder)
    assert record.problems == ()
    assert record.outcome == EpisodeOutcome(**recorded.outcome_fields())  # metrics.json is the outcome
    assert record.outcome.end_reason is EndReason.SUCCESS
    meta = record.meta
    assert (meta.task, meta.seed, meta.agent, meta.robot) == ("general_pickup", 0, "move_eef", "dual_arx_x5")
    assert meta.cameras == CAMERAS and meta.instruction and meta.env_step_limit and meta.started_unix_s
    assert [t.turn for t in record.turns] == [1, 2, 3, 4] and len(record.requests) == len(record.responses) == 4
    assert set(record.turns[0].arm_states()) == {"left", "right"} and record.turns[0].move["accepted"]
    pictures = record.observation_images(2, meta.cameras)  # the observation after the first move
    assert tuple(pictures) == CAMERAS and all(p.is_file() for p in pictures.values())
    assert record.observation_images(2, meta.cameras[:2]) == {}  # a count that does not match names nothing
    assert find_record(recorded.folder.parent) == recorded.folder


def test_a_campaign_row_is_the_outcome_with_who_ran_it(recorded):
    row = EpisodeRow(
        **recorded.outcome_fields(), episode_id="e", task="general_pickup", variant="standard", seed=0,
        agent="move_eef", llm="replay", condition=ZERO_SHOT, capability="pick",
    )  # fmt: skip
    assert row.outcome_fields() == recorded.outcome_fields() and row.usage == recorded.usage
    assert EpisodeRow.from_dict(row.as_dict()) == row
    assert list(row.as_dict())[:2] == ["episode_id", "task"] and list(row.as_dict())[-1] == "error"
    with pytest.raises(ValueError, match="'budget_exhausted' is not a valid EndReason"):
        EpisodeOutcome(end_reason="budget_exhausted")


def test_a_record_is_a_demonstration_and_one_without_camera_names_still_is(recorded, tmp_path):
    steps = read_demonstration(recorded.folder)
    assert len(steps) == 4 and all(len(s.pose) == 14 for s in steps) and "move_eef" in steps[0].text
    assert tuple(steps[0].images) == CAMERAS and steps[-1].images == {}
    # A record from before meta.json named its cameras: named as the agent's recorded settings chose them.
    old = tmp_path / "old"
    old.mkdir()
    for path in recorded.folder.iterdir():
        (old / path.name).symlink_to(path)
    meta = json.loads((recorded.folder / "meta.json").read_text())
    del meta["cameras"]
    (old / "meta.json").unlink()
    (old / "meta.json").write_text(json.dumps(meta))
    assert EpisodeRecord.open(old).meta.cameras is None
    assert [tuple(s.images) for s in read_demonstration(old)] == [tuple(s.images) for s in steps]


def test_a_partial_record_reads_with_what_is_wrong(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"task": "general_pickup", "seed": "zero", "cameras": ["head"]}))
    turn = TurnLine(turn=1, action="move_eef", tool_results=("moved",), steps_left=9)
    lines = [turn.to_json(), {"action": "noop"}, TurnLine.failed(2, "E: x").to_json()]
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"turn": 3, "act')
    record = EpisodeRecord.open(tmp_path)
    assert record.meta == RecordMeta(task="general_pickup", cameras=("head",))  # the bad seed left at its default
    assert record.outcome is None and record.requests == ()
    assert record.turns == (turn, TurnLine(turn=2, action="error", error="E: x"))
    assert set(record.problems) == {
        "meta.json: seed should be int, got 'zero'",
        f"no {METRICS_FILE}",
        "turns.jsonl line 2: TurnLine.__init__() missing 1 required keyword-only argument: 'turn'",
        "turns.jsonl line 4 is not JSON (cut off?)",
    }
    # an error line is written as it always was; a turn line has no error key
    assert TurnLine.failed(2, "E: x").to_json() == {"turn": 2, "action": "error", "error": "E: x"}
    assert "error" not in turn.to_json() and read_turns(tmp_path / "nowhere") == ()
    # an agent's own error turn (a malformed or refused reply) keeps what it was answered
    refused = TurnLine(turn=3, action="error", tool_results=("move_eef: unknown key 'left_q'",), steps_left=8)
    (tmp_path / "refused").mkdir()
    (tmp_path / "refused" / "turns.jsonl").write_text(json.dumps(refused.to_json()) + "\n")
    assert read_turns(tmp_path / "refused") == (refused,)
    missing = tmp_path / "nowhere"
    assert EpisodeRecord.open(missing).problems == (f"the record folder {missing} does not exist",)
