"""Campaign specs (robodojo.campaigns.spec): validation with precise errors, the episode grid, flags over a file,
the fingerprint that guards a resumed campaign folder, and the results store's bookkeeping."""

from __future__ import annotations

import dataclasses
import io
import re
import sqlite3
from pathlib import Path

import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.campaigns.campaign import _plan, open_campaign_folder
from robodojo.campaigns.execute import try_dir
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.campaigns.spec import campaign_spec_from_dict, llm_name, load_campaign_spec
from robodojo.campaigns.store import ResultsStore
from robodojo.errors import ConfigError

MOVE_EEF_REPLAY = f"replay:{PACKAGE_ROOT}/examples/replay/general_pickup_seed0.yaml"
CELLS = f"replay:{PACKAGE_ROOT}/examples/cells/{{task}}.py"
BASE = {
    "tasks": ["general_pickup", "stack_blocks"],
    "seeds": "0-2",
    "llms": {"offline": {"move_eef": MOVE_EEF_REPLAY, "code_cell": CELLS}},
}


def spec_of(**changes):
    return campaign_spec_from_dict({**BASE, **changes})


def test_the_grid_is_every_task_variant_seed_agent_llm_and_condition_with_probes_for_move_eef_only():
    spec = spec_of(
        variants=["standard", "cluttered"],
        conditions={ZERO_SHOT: {}, "flip_ud": {"probes": {"flip_vision_ud": True}}},
    )
    grid = spec.grid()
    ids = [job.episode_id for job in grid.jobs]
    # 2 tasks x 2 variants x 3 seeds x (move_eef zero-shot + move_eef flip_ud + code_cell zero-shot)
    assert len(ids) == len(set(ids)) == 2 * 2 * 3 * 3
    assert "stack_blocks.cluttered.seed2.move_eef.offline.flip_ud" in ids
    assert not any(".code_cell." in i and i.endswith(".flip_ud") for i in ids)
    job = next(j for j in grid.jobs if j.episode_id == "stack_blocks.standard.seed1.code_cell.offline.zero_shot")
    assert job.llm_spec == f"replay:{PACKAGE_ROOT}/examples/cells/stack_blocks.py"  # {task} filled
    flipped = next(j for j in grid.jobs if j.condition.name == "flip_ud")
    assert flipped.condition.probe_options() == {"flip_vision_ud": True}


def test_episodes_without_a_replay_script_are_listed_as_skipped_not_run(tmp_path):
    spec = spec_of(llms={"offline": f"replay:{tmp_path}/{{task}}_seed{{seed}}.yaml"})
    (tmp_path / "general_pickup_seed1.yaml").write_text("[]\n")
    grid = spec.grid()
    assert [j.episode_id for j in grid.jobs] == [
        "general_pickup.standard.seed1.move_eef.offline.zero_shot",
        "general_pickup.standard.seed1.code_cell.offline.zero_shot",
    ]
    assert len(grid.skipped) == 10 and all("no replay script" in why for _, why in grid.skipped)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"taks": ["general_pickup"]}, "unknown key(s) taks"),
        ({"tasks": []}, "'tasks' is required"),
        ({"tasks": ["no_such_task"]}, "no_such_task"),
        ({"variants": ["foggy"]}, "unknown variant 'foggy'"),
        ({"agents": ["terminal"]}, "unknown agent 'terminal'"),
        ({"seeds": "4-2"}, "bad seed range"),
        ({"seeds": [1, -1]}, "seeds must be >= 0"),
        ({"llms": {}}, "'llms' is required"),
        ({"llms": {"x.y": "openai:gpt"}}, "must be a plain name"),
        ({"llms": {"m": {"move_eef": "openai:gpt"}}}, "a spec for each agent (move_eef, code_cell)"),
        ({"llms": {"m": "nonsense"}}, "bad LLM spec 'nonsense'"),
        ({"conditions": {"flip": {"probes": {"flip_everything": True}}}}, "conditions.flip.probes must be a mapping"),
        ({"conditions": {"jitter": {"probes": {"pose_jitter_m": -1.0}}}}, "pose_jitter_m must be a finite number"),
        ({"conditions": {ZERO_SHOT: {"probes": {"negate_xyz": True}}}}, "has no probes and no demonstration"),
        ({"conditions": {"demo": {"demonstration": "/nonexistent"}}}, "no turns.jsonl in /nonexistent"),
        ({"llm_call_budget": 0}, "'llm_call_budget' must be an integer at least 1"),
        ({"retries": 11}, "'retries' must be an integer between 0 and 10"),
        ({"agent_options": {"colour": "red"}}, "'agent_options' must be a mapping with keys among"),
    ],
)
def test_a_bad_spec_is_refused_with_the_key_and_what_was_expected(changes, message):
    with pytest.raises(ConfigError) as error:
        spec_of(**changes)
    assert message in str(error.value)


def test_flags_override_the_file_and_none_keeps_its_value(tmp_path):
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({**BASE, "name": "from_file", "retries": 1}))
    spec = load_campaign_spec(path, {"seeds": "5", "retries": None, "agents": "code_cell"})
    assert (spec.name, spec.seeds, spec.retries, spec.agents) == ("from_file", (5,), 1, ("code_cell",))
    with pytest.raises(ConfigError, match="is not valid YAML"):
        (tmp_path / "bad.yaml").write_text("tasks: [unclosed\n")
        load_campaign_spec(tmp_path / "bad.yaml")


def test_llm_names_from_specs_are_plain_names():
    assert llm_name("openai:gpt-5.5") == "gpt-5_5"
    assert llm_name("replay:examples/x.yaml") == "replay"
    assert llm_name("ollama:qwen3:8b") == "qwen3_8b"


def test_a_campaign_folder_resumes_only_the_same_campaign(tmp_path):
    spec = spec_of(name="first")
    open_campaign_folder(spec, tmp_path)
    assert open_campaign_folder(spec_of(name="renamed"), tmp_path).fingerprint() == spec.fingerprint()
    with pytest.raises(ConfigError, match=r"holds another campaign \(its seeds differs\)"):
        open_campaign_folder(spec_of(seeds="0-3"), tmp_path)


def _row(episode_id: str, try_index: int, end_reason: str = "success") -> EpisodeRow:
    return EpisodeRow(
        episode_id=episode_id, task="general_pickup", variant="standard", seed=0, agent="move_eef", llm="offline",
        condition=ZERO_SHOT, capability="open", success=end_reason == "success", score=1.0, end_reason=end_reason,
        llm_calls=3, input_tokens=100, cached_input_tokens=40, tries=try_index, folder=f"episodes/{episode_id}",
    )  # fmt: skip


def test_the_store_keeps_each_ended_episode_once_and_every_try(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.record_try(_row("a", 1, "crashed"), final=False)  # a crash with retries left: a try, no episode
        assert store.ended_ids() == set()
        store.record_try(_row("a", 2), final=True)
        store.record_try(_row("b", 1, "crashed"), final=True)  # the last allowed crash ends it as crashed
        store.record_try(_row("a", 2), final=True)  # the same try stored again replaces, never duplicates
        assert [(r.episode_id, r.tries, r.success) for r in store.rows()] == [("a", 2, True), ("b", 1, False)]
        assert [r.episode_id for r in store.rows(status="crashed")] == ["b"]
        assert [(t["episode_id"], t["try"], t["status"]) for t in store.tries()] == [
            ("a", 1, "crashed"), ("a", 2, "finished"), ("b", 1, "crashed"),
        ]  # fmt: skip
        assert store.rows()[0] == _row("a", 2)  # every field round-trips, the bool included
    # Another reader (the report) sees the same rows: the writes are committed.
    count = sqlite3.connect(tmp_path / "results.sqlite").execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    assert count == 2


def test_a_store_written_before_reasoning_tokens_gets_the_column_and_keeps_its_rows(tmp_path):
    path = tmp_path / "results.sqlite"
    with ResultsStore(path) as store:
        store.record_try(dataclasses.replace(_row("a", 1), reasoning_tokens=7), final=True)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE episodes DROP COLUMN reasoning_tokens")  # as an older version wrote it
    db.commit()
    db.close()
    with ResultsStore(path) as store:  # a resumed campaign
        assert store.rows()[0].reasoning_tokens == 0
        store.record_try(dataclasses.replace(_row("b", 1), reasoning_tokens=5), final=True)
        assert [r.reasoning_tokens for r in store.rows()] == [0, 5]


def test_a_resume_reruns_cut_off_and_crashed_episodes_with_the_next_try_and_enters_cut_off_tries_as_killed(
    tmp_path,
):
    spec = spec_of(tasks=["general_pickup"], seeds="0", agents=["move_eef"], retries=1)
    (job,) = spec.grid().jobs
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.record_try(_row(job.episode_id, 1, "crashed"), final=False)
        try_dir(tmp_path, job.episode_id, 2).mkdir(parents=True)  # try 2 was running when the campaign was killed
        plan, crashes = _plan(spec.grid().jobs, tmp_path, store)
        assert [(j.episode_id, t) for j, t in plan] == [(job.episode_id, 3)]
        assert crashes[job.episode_id] == 1  # killed tries do not use up retries
        killed = store.tries(job.episode_id)[-1]
        assert (killed["try"], killed["status"]) == (2, "killed")
        assert Path(killed["folder"]) == Path("episodes", job.episode_id, "try2")
        store.record_try(_row(job.episode_id, 3), final=True)
        assert _plan(spec.grid().jobs, tmp_path, store)[0] == []  # ended: nothing left


def test_a_campaign_whose_llm_needs_a_missing_api_key_is_refused_before_any_worker_or_folder(tmp_path, monkeypatch):
    from robodojo.campaigns.campaign import run_campaign

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = []
    with pytest.raises(ConfigError, match="needs an API key"):
        run_campaign(spec_of(llms={"gpt": "openai:gpt-5.5"}), tmp_path / "campaign", started.append)
    assert not started and not (tmp_path / "campaign").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_counts_ended_episodes_only_and_says_which_will_be_retried(terminal):
    from robodojo.campaigns.progress import CampaignProgress

    stream = _Terminal() if terminal else io.StringIO()
    progress = CampaignProgress(3, [_row("a", 1)], stream=stream)
    progress.update(_row("b", 1, "crashed"), final=False)
    progress.update(_row("b", 2), final=True)
    progress.close()
    totals = progress.totals
    assert (totals.done, totals.successes, totals.crashed, totals.input_tokens) == (2, 2, 0, 200)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())  # a terminal's colours and cursor moves
    assert "2/3 done, 2 successes" in text
    assert "retrying b" in text if terminal else "b try 1: crashed (will retry)" in text
