"""The report's markdown and CSV tables on the hand-worked campaign of campaign_report_rows.py (its figures are
checked in test_campaign_report_stats.py; here: that the writers put them where a reader expects them)."""

from __future__ import annotations

import csv

import pytest
from campaign_report_rows import CODE_CELL, MOVE_EEF, ROWS

from robodojo.campaigns.report.tables import report_markdown, write_tables
from robodojo.campaigns.results import EpisodeRow

FILES = [
    "leaderboard.csv",
    "axis_ranks.csv",
    "tasks.csv",
    "efficiency.csv",
    "endings.csv",
    "matched_pairs.csv",
    "failure_reasons.csv",
    "earlier_tries.csv",
    "episodes.csv",
    "report.md",
]


def _read(path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _only(rows: list[dict[str, str]], **match: str) -> dict[str, str]:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_write_tables_writes_every_table_as_csv(tmp_path):
    out = tmp_path / "report"
    paths = write_tables(ROWS, out)
    assert [p.name for p in paths] == FILES and all(p.parent == out and p.is_file() for p in paths)

    header, board = _read(out / "leaderboard.csv")
    assert header == [
        "agent", "llm", "condition",
        "pick_and_place_score", "pick_and_place_sr_pct", "precision_score", "precision_sr_pct",
        "average_score", "average_sr_pct",
        "micro_n", "micro_successes", "micro_score", "micro_sr_pct", "micro_ci_low_pct", "micro_ci_high_pct",
    ]  # fmt: skip
    assert [(r["agent"], r["condition"]) for r in board] == [
        ("move_eef", "zero_shot"),
        ("move_eef", "demo_image"),
        ("code_cell", "zero_shot"),
    ]
    me = board[0]
    assert float(me["pick_and_place_score"]) == 56.25 and float(me["precision_score"]) == pytest.approx(48.75)
    assert float(me["average_sr_pct"]) == 37.5 and float(me["micro_sr_pct"]) == pytest.approx(100 * 5 / 12)
    assert (me["micro_n"], me["micro_successes"]) == ("12", "5")
    assert float(me["micro_ci_low_pct"]) == pytest.approx(19.3257, abs=1e-3)

    header, tasks = _read(out / "tasks.csv")
    assert header == [
        "agent", "llm", "condition", "capability", "task", "variant", "generalization",
        "n", "successes", "score", "sr_pct", "ci_low_pct", "ci_high_pct",
    ]  # fmt: skip
    mine = [r for r in tasks if (r["agent"], r["condition"], r["task"]) == ("move_eef", "zero_shot", "pick")]
    assert [(r["variant"], r["generalization"], r["n"], float(r["sr_pct"])) for r in mine] == [
        ("", "True", "6", 37.5),  # the cell: the mean of the variants
        ("standard", "True", "2", 50.0),
        ("cluttered", "True", "4", 25.0),
    ]
    stack = _only(tasks, agent="move_eef", condition="zero_shot", task="stack")
    assert (stack["variant"], stack["generalization"], float(stack["score"])) == ("", "False", 87.5)
    assert len(tasks) == 3 + 2 + 3 + 2  # move_eef: 3 tasks + 2 variants; the probe 3 tasks; code_cell 2

    header, table = _read(out / "efficiency.csv")
    assert header[:8] == [
        "llm", "agent", "base_agent", "episodes", "successes", "sr_pct", "joint_layouts", "solved_episodes",
    ]  # fmt: skip
    assert header[8:] == [f"{kind}_{m}" for kind in ("mean", "ratio") for m in (
        "llm_calls", "input_tokens", "cached_input_tokens", "uncached_input_tokens", "output_tokens", "cost_usd",
        "wall_time_s",
    )]  # fmt: skip
    cc = _only(table, agent="code_cell")
    assert (cc["base_agent"], cc["joint_layouts"], cc["solved_episodes"]) == ("move_eef", "3", "3")
    assert float(cc["mean_llm_calls"]) == 6 and float(cc["ratio_llm_calls"]) == pytest.approx(0.3)
    assert float(cc["ratio_cached_input_tokens"]) == pytest.approx(0.125)
    assert float(cc["mean_wall_time_s"]) == 3.0 and float(cc["ratio_wall_time_s"]) == pytest.approx(0.3)

    header, pairs = _read(out / "matched_pairs.csv")
    assert header == [
        "agent", "llm", "condition", "subset", "task_count", "tasks", "pairs",
        "condition_successes", "zero_shot_successes", "condition_sr_pct", "zero_shot_sr_pct", "delta_pp",
        "both", "only_condition", "only_zero_shot", "neither", "net_successes", "unpaired",
    ]  # fmt: skip
    assert [(r["subset"], r["tasks"], r["pairs"], r["net_successes"], r["unpaired"]) for r in pairs] == [
        ("all", "pick;press;stack", "5", "2", "1"),
        ("with_zero_shot_success", "pick", "2", "0", ""),
        ("without_zero_shot_success", "press;stack", "3", "2", ""),
    ]
    assert float(pairs[0]["delta_pp"]) == pytest.approx(40.0)

    header, episodes = _read(out / "episodes.csv")
    assert header == list(EpisodeRow.columns()) and header[0] == "episode_id"
    assert [e["episode_id"] for e in episodes] == [r.episode_id for r in ROWS]
    first = episodes[0]
    assert (first["seed"], first["success"], first["input_tokens"]) == ("0", "True", "1000")
    assert float(first["cost_usd"]) == 0.1

    assert (out / "report.md").read_text(encoding="utf-8") == report_markdown(ROWS)


def test_an_axis_a_group_never_ran_is_an_empty_cell(tmp_path):
    write_tables([*MOVE_EEF, *(r for r in CODE_CELL if r.task == "pick")], tmp_path)
    _, board = _read(tmp_path / "leaderboard.csv")
    cc = _only(board, agent="code_cell")
    assert (cc["precision_score"], cc["precision_sr_pct"]) == ("", "")
    assert float(cc["average_sr_pct"]) == 100.0  # the mean over the one axis it has
    _, pairs = _read(tmp_path / "matched_pairs.csv")
    assert pairs == []


def test_report_markdown_in_seed_002s_cell_format():
    text = report_markdown(ROWS)
    for line in (
        "| agent | llm | condition | pick_and_place | precision | Average | micro [95% CI] | micro successes |",
        # every pooled rate with its 95 % Wilson interval: 5 of 12 is [19.3, 68.0] %
        "| move_eef | gpt | zero_shot | 56.25 / 37.50% | 48.75 / 37.50% | 52.50 / 37.50% | 55.83 / 41.67% [19.3-68.0] "
        "| 5/12 |",
        "| axis | task | move_eef / gpt / zero_shot | move_eef / gpt / demo_image | code_cell / gpt / zero_shot |",
        "| pick_and_place | pick | 56.25 / 37.50% [9.7-70.0] | 75.00 / 50.00% [9.5-90.5] "
        "| 100.00 / 100.00% [34.2-100.0] |",
        "| pick_and_place | pick [cluttered] | 37.50 / 25.00% [4.6-69.9] | - | - |",
        "| precision | press | 10.00 / 0.00% [0.0-65.8] | 50.00 / 50.00% [9.5-90.5] | - |",
        "| gpt | move_eef | 12 | 41.67% [19.3-68.0] | 3 | 3 | 20.00 | 2000 | 800 | 1200 | 200 | 0.2000 | 10.0 |",
        # a ratio over 3 jointly solved layouts is marked as too few to cite
        "| gpt | code_cell / move_eef (only 3 layouts: not to cite) |  |  |  |  | 0.30x | 0.50x | 0.12x | 0.75x "
        "| 0.25x | 0.50x | 0.30x |",
        "| move_eef | gpt | demo_image | all | 3 | 5 | 60.00% [23.1-88.2] | 20.00% [3.6-62.4] | +40.00 pp | 0 | 3 | 1 "
        "| 1 | +2 | 1 |",
        "| move_eef | gpt | demo_image | tasks without | 2 | 3 | 66.67% [20.8-93.9] | 0.00% [0.0-56.2] | +66.67 pp | 0 "
        "| 2 | 0 | 1 | +2 |  |",
    ):
        assert line in text.splitlines(), line
    assert "| :--- | :--- | :--- | ---: |" in text  # names left, numbers right

    alone = report_markdown(MOVE_EEF)
    assert "No LLM was run zero-shot by two agents" in alone and "no matched pairs" in alone


def test_no_rows_still_write_every_file_with_its_header(tmp_path):
    paths = write_tables([], tmp_path)
    assert [p.name for p in paths] == FILES
    for path in paths[:-1]:
        header, rows = _read(path)
        assert header and rows == [], path.name
    assert _read(tmp_path / "leaderboard.csv")[0][:3] == ["agent", "llm", "condition"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == report_markdown([])
    assert report_markdown([]) == "# Campaign report\n\nNo episodes.\n"


def test_endings_count_every_episode_and_charge_the_failures_to_the_successes(tmp_path):
    write_tables(ROWS, tmp_path)
    _, table = _read(tmp_path / "endings.csv")
    assert {r["agent"] + "/" + r["condition"] for r in table} == {"move_eef/zero_shot", "move_eef/demo_image",
                                                                   "code_cell/zero_shot"}  # fmt: skip
    for row in table:
        mine = [r for r in ROWS if (r.agent, r.llm, r.condition) == (row["agent"], row["llm"], row["condition"])]
        ended = {k.removeprefix("ended_"): int(v) for k, v in row.items() if k.startswith("ended_")}
        assert sum(ended.values()) == int(row["episodes"]) == len(mine)
        assert ended["success"] == int(row["successes"]) == sum(r.success for r in mine)
        for reason in {r.end_reason for r in mine}:
            assert ended[str(reason)] == sum(r.end_reason == reason for r in mine)
        successes = sum(r.success for r in mine)
        assert float(row["cost_usd_per_success"]) == pytest.approx(sum(r.cost_usd for r in mine) / successes)
        assert float(row["llm_calls_per_success"]) == pytest.approx(sum(r.llm_calls for r in mine) / successes)
    text = report_markdown(ROWS)
    assert "## How episodes ended, and what a success cost" in text
    assert "| agent | llm | condition | episodes | success | llm_call_budget | LLM calls per success |" in text


def test_each_axis_is_ranked_or_says_it_has_too_few_shared_layouts(tmp_path):
    text = report_markdown(ROWS)
    assert "## Ranking on the pick_and_place axis" in text and "## Ranking on the precision axis" in text
    assert "Too few shared layouts to rank: 0 layout(s) (task, variant, seed) of this axis (press, stack)" in text
    assert ("| rank | agent | llm | condition | episodes | SR [95% CI] | vs next: only this / only next | p "
            "| p (Holm) | significant at 0.05 |") in text  # fmt: skip
    assert "| - | move_eef | gpt | zero_shot | 6 | 33.33% [9.7-70.0] | - | - | - | - |" in text
    write_tables(ROWS, tmp_path)
    _, ranks = _read(tmp_path / "axis_ranks.csv")
    assert {(r["axis"], r["ranked"], r["rank"]) for r in ranks} == {("pick_and_place", "False", ""),
                                                                      ("precision", "False", "")}  # fmt: skip


def test_a_ranked_axis_marks_its_significant_neighbour_differences():
    from test_campaign_report_stats import _axis_rows

    text = report_markdown(_axis_rows())
    # a (11 of its 12 shared layouts) over b (4): only a won 7 of them, p = 0.0156, Holm x3 = 0.0469 < 0.05
    assert "| 1 | move_eef | a | zero_shot | 12 | 91.67% [64.6-98.5] | 7 / 0 | 0.016 | 0.047 | yes * |" in text
    assert "| 2 | move_eef | c | zero_shot | 12 | 33.33% [13.8-60.9] | 4 / 1 | 0.375 | 0.750 | no |" in text
    assert "| 4 | move_eef | d | zero_shot | 12 | 8.33% [1.5-35.4] | - | - | - | - |" in text
    assert "Ranked by SR on the 12 layouts" in text and "Holm-adjusted over the axis's 3 neighbour" in text


def test_record_findings_add_failure_reasons_and_earlier_tries_with_links(tmp_path):
    from robodojo.campaigns.report.stats import EarlierUsage
    from robodojo.campaigns.report.tables import RecordFindings
    from robodojo.campaigns.report.tries import EarlierTry

    failed = [r for r in ROWS if not r.success]
    lost = EarlierTry(MOVE_EEF[0].episode_id, 1, "killed", "killed", "ended", "episodes/x/try1",
                      EarlierUsage(tries=1, llm_calls=3, input_tokens=300, output_tokens=30, cost_usd=0.5),
                      "requests.jsonl")  # fmt: skip
    findings = RecordFindings(
        last_refusals={failed[0].episode_id: "target for 'right_z' is outside [#, #]"},
        earlier=(lost,),
        episode_pages={r.episode_id: f"episodes/{r.episode_id}.html" for r in ROWS},
        campaign_href="..",
    )
    text = report_markdown(ROWS, findings=findings)
    calls = sum(r.llm_calls for r in ROWS) + 3
    assert f"; {calls:,} LLM calls, $" in text and "(of which 3 calls and $0.50 in 1 earlier tries)" in text
    assert "## Why episodes failed" in text and "## Killed and retried tries" in text
    example = failed[0].episode_id
    assert (
        f"| llm_call_budget | target for 'right_z' is outside [#, #] | move_eef / gpt / zero_shot: 1 "
        f"| [{example}](episodes/{example}.html) | 1 |"
    ) in text
    assert (
        f"| [{lost.episode_id}](episodes/{lost.episode_id}.html) | 1 | killed | killed: ended "
        "| [record folder](../episodes/x/try1/) | 3 | 300 | 30 | 0.5000 |"
    ) in text
    write_tables(ROWS, tmp_path, findings=findings)
    _, earlier = _read(tmp_path / "earlier_tries.csv")
    assert [(e["episode_id"], e["try"], e["llm_calls"], e["cost_usd"]) for e in earlier] == [
        (lost.episode_id, "1", "3", "0.5")
    ]
    _, reasons = _read(tmp_path / "failure_reasons.csv")
    assert sum(int(r["episodes"]) for r in reasons) == len(failed)
    _, ends = _read(tmp_path / "endings.csv")
    me = _only(ends, agent="move_eef", condition="zero_shot")
    assert (me["earlier_tries"], me["earlier_llm_calls"]) == ("1", "3")
