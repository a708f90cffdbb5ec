"""The clock in campaigns and reports: a condition's ``clock``, the spec's ``clock`` sweep crossed with the conditions
(``robodojo eval --clock fixed:0,1,3,10``), the clock carried into each episode job and its row, and the report's
success-against-latency table, CSV and figure with Wilson intervals; and the command line: the clock taken by
compare and graph, a bad one refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.campaigns.execute import run_job
from robodojo.campaigns.report.clock import CLOCK_CSV, CLOCK_PNG, CLOCK_TITLE, clock_cells, clock_figure, clock_table
from robodojo.campaigns.report.plots import write_plots
from robodojo.campaigns.report.stats import wilson_interval
from robodojo.campaigns.report.tables import report_markdown, write_tables
from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow
from robodojo.campaigns.spec import campaign_spec_from_dict
from robodojo.cli import main
from robodojo.episodes.record import EpisodeRecord, find_record
from robodojo.errors import ConfigError

CELLS = "replay:examples/cells/{task}.py"


def _spec(**values):
    return campaign_spec_from_dict({"tasks": ["stop_rolling_ball"], "llms": {"cells": CELLS}, **values})


def test_the_clock_key_crosses_every_condition_with_each_clock():
    spec = _spec(
        agents=["move_eef", "code_cell"], clock="fixed:0,1,3,10",
        conditions={ZERO_SHOT: {}, "flip": {"probes": {"flip_vision_ud": True}}},
    )  # fmt: skip
    names = [(c.name, c.clock) for c in spec.conditions]
    assert names == [("fixed_0s", "fixed:0"), ("fixed_1s", "fixed:1"), ("fixed_3s", "fixed:3"),
                     ("fixed_10s", "fixed:10"), ("flip_fixed_0s", "fixed:0"), ("flip_fixed_1s", "fixed:1"),
                     ("flip_fixed_3s", "fixed:3"), ("flip_fixed_10s", "fixed:10")]  # fmt: skip
    jobs = spec.grid().jobs
    # a clock is every agent's; the probes stay move_eef's
    assert sorted({(j.agent, j.condition.name) for j in jobs if j.agent == "code_cell"}) == [
        ("code_cell", name) for name in ("fixed_0s", "fixed_10s", "fixed_1s", "fixed_3s")
    ]
    assert len(jobs) == 4 * 2 + 4
    # the file form holds the crossed conditions, and reads back as the same campaign (a resume matches)
    again = campaign_spec_from_dict(spec.as_dict())
    assert again == spec and again.fingerprint() == spec.fingerprint()
    # a paused clock keeps the condition's name; a campaign without clocks keeps its fingerprint
    assert [c.name for c in _spec(clock="paused,real").conditions] == [ZERO_SHOT, "real"]
    assert "clock" not in str(_spec().as_dict()["conditions"])


def test_a_condition_may_set_its_own_clock_and_bad_clocks_are_refused():
    spec = _spec(conditions={"slow": {"clock": "fixed:3"}, ZERO_SHOT: {}})
    assert [(c.name, c.clock) for c in spec.conditions] == [("slow", "fixed:3"), (ZERO_SHOT, "paused")]
    for values, why in (
        ({"conditions": {"slow": {"clock": "fixed:-3"}}}, "conditions.slow.clock: clock fixed"),
        ({"clock": "fixed:1,nan"}, "clock: clock fixed: 'nan'"),
        ({"clock": "1,3"}, "follows no fixed"),
        ({"conditions": {"slow": {"clock": "fixed:3"}}, "clock": "fixed:1"}, "sets its own clock"),
    ):
        with pytest.raises(ConfigError, match=why):
            _spec(**values)


def test_a_job_runs_under_its_condition_s_clock_and_its_row_says_which(tmp_path):
    spec = _spec(agents=["code_cell"], clock="fixed:3", seeds=[0])
    (job,) = spec.grid().jobs
    row = run_job(job, tmp_path, 1)
    assert (row.condition, row.clock, row.end_reason) == ("fixed_3s", "fixed:3", "step_budget"), row.error
    # the ball rolled 3 s between the sighting and the wall: the cells that solve it paused fail
    assert not row.success and row.latency_applied_s == pytest.approx(3.0 * row.llm_calls)
    record = EpisodeRecord.open(find_record(tmp_path / row.folder))
    assert record.meta.clock == "fixed:3"


# -- the report -------------------------------------------------------------------------------------------------------


def _row(task: str, axis: str, seed: int, clock: str, success: bool, calls: int = 3) -> EpisodeRow:
    condition = ZERO_SHOT if clock == "paused" else f"fixed_{clock.split(':')[1]}s"
    return EpisodeRow(
        episode_id=f"{task}.{seed}.{condition}", task=task, variant="standard", seed=seed, agent="code_cell",
        llm="cells", condition=condition, capability=axis, clock=clock, success=success, end_reason="success",
        llm_calls=calls, latency_applied_s=calls * float(clock.split(":")[1]) if ":" in clock else 0.0,
    )  # fmt: skip


# The dynamic axis breaks with latency (4/4, then 1/4); the precise one does not (4/4 and 4/4).
ROWS = [
    *(_row("stop_rolling_ball", "dynamic", s, "fixed:0", True) for s in range(4)),
    *(_row("stop_rolling_ball", "dynamic", s, "fixed:3", s == 0) for s in range(4)),
    *(_row("stack_blocks", "precise", s, clock, True) for s in range(4) for clock in ("fixed:0", "fixed:3")),
]


def test_success_against_latency_per_axis_with_wilson_intervals():
    cells = clock_cells(ROWS)
    assert [(c.axis, c.clock, c.successes, c.n) for c in cells] == [
        ("dynamic", "fixed:0", 4, 4), ("dynamic", "fixed:3", 1, 4), ("precise", "fixed:0", 4, 4),
        ("precise", "fixed:3", 4, 4),
    ]  # fmt: skip
    broken = cells[1]
    low, high = wilson_interval(1, 4)
    assert (broken.sr_pct, broken.ci_low_pct, broken.ci_high_pct) == (25.0, 100 * low, 100 * high)
    assert broken.latency_per_call_s == 3.0 and broken.condition == ZERO_SHOT  # the clock's part taken off
    header, rows, names = clock_table(cells)
    assert header == ["agent / LLM / condition", "axis", "fixed:0", "fixed:3"] and names == 2
    assert rows[0][:3] == ["code_cell / cells / zero_shot", "dynamic", "100.0 [51.0, 100.0] n=4, 0.00 s/call"]
    assert rows[0][3].startswith("25.0 [4.6, 69.9] n=4, 3.00 s/call")
    assert clock_figure(cells) is not None
    assert clock_cells([_row("stack_blocks", "precise", 0, "paused", True)]) == ()  # nothing swept: no section


def test_the_report_shows_the_clock_section_its_csv_and_its_figure(tmp_path):
    assert f"## {CLOCK_TITLE}" in report_markdown(ROWS)
    written = write_tables(ROWS, tmp_path)
    assert tmp_path / CLOCK_CSV in written
    with (tmp_path / CLOCK_CSV).open(newline="") as f:
        lines = list(csv.DictReader(f))
    assert [(r["axis"], r["clock"], r["successes"]) for r in lines] == [
        ("dynamic", "fixed:0", "4"), ("dynamic", "fixed:3", "1"), ("precise", "fixed:0", "4"),
        ("precise", "fixed:3", "4"),
    ]  # fmt: skip
    plots = write_plots(ROWS, tmp_path)
    assert (tmp_path / CLOCK_PNG) in plots
    # a campaign that never swept the clock has neither
    paused = [_row("stack_blocks", "precise", 0, "paused", True)]
    assert CLOCK_CSV not in [p.name for p in write_tables(paused, tmp_path / "paused")]
    assert CLOCK_TITLE not in report_markdown(paused)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--task", "stop_rolling_ball", "--llm", "replay:x.yaml", "--clock", "fixed:-1"],
        ["compare", "--tasks", "stop_rolling_ball", "--llm", "replay:x.yaml", "--clock", "sundial"],
        ["eval", "--tasks", "stop_rolling_ball", "--llm", "replay:x.yaml", "--clock", "fixed:0,nan"],
        ["graph", "--clock", "scaled:0"],
    ],
)
def test_the_command_line_refuses_a_bad_clock_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and "--clock" in capsys.readouterr().err


def test_the_campaign_example_sweeps_the_clock():
    path = PACKAGE_ROOT / "examples" / "campaigns" / "latency_sweep.yaml"
    spec = campaign_spec_from_dict(yaml.safe_load(path.read_text()), str(path))
    assert [c.clock for c in spec.conditions] == ["fixed:0", "fixed:1", "fixed:3", "fixed:10"]


def test_compare_and_graph_take_the_clock(tmp_path, monkeypatch):
    out = tmp_path / "compare"
    argv = ["compare", "--tasks", "stop_rolling_ball", "--seeds", "0", "--agents", "code_cell", "--llm", CELLS,
            "--out", str(out), "--clock", "fixed:1"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((out / "compare.json").read_text())
    (episode,) = report["episodes"]
    assert report["request"]["clock"] == "fixed:1" and episode["latency_applied_s"] == episode["llm_calls"] * 1.0
    assert EpisodeRecord.open(Path(episode["folder"])).meta.clock == "fixed:1"

    from robodojo.nodes import process_graph

    seen: dict = {}
    monkeypatch.setattr(process_graph, "run_graph", lambda **kwargs: seen.update(kwargs) or 0)
    assert main(["graph", "--clock", "fixed:2"]) == 0
    assert seen["agent_params"]["clock"] == "fixed:2"
    assert main(["graph"]) == 0 and "clock" not in seen["agent_params"]  # the node's own: config/nodes.yaml's real
