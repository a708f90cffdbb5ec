"""The episode clock (robodojo.episodes.clock): each setting parsed and the bad ones refused; world time let pass in
whole control steps with the arms holding and no step of the budget used; a move_eef episode under fixed:S whose
world moves S per model call (a rolling ball rolls, the arms hold) with each turn's latency recorded in turns.jsonl,
episode.mcap and metrics.json; and the paused clock changing nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from robodojo import PACKAGE_ROOT
from robodojo.agents.llm.client import open_llm
from robodojo.episodes import EpisodeSpec, WorldHost, run_episode
from robodojo.episodes.clock import (
    MAX_FIXED_S,
    MAX_SCALE,
    PAUSED_CLOCK,
    ClockedCaller,
    ClockSetting,
    EpisodeClock,
    parse_clock_sweep,
)
from robodojo.episodes.factory import make_agent
from robodojo.episodes.mcap_record import ACTION_TOPIC
from robodojo.episodes.record import EpisodeRecord
from robodojo.errors import ConfigError

TASK = "stop_rolling_ball"  # the ball rolls from the start: time that passes shows in its position
# A servo holding its command still settles by a hair; a joint that moved would move by far more.
HELD_JOINT_RAD = 1e-3
CELLS = PACKAGE_ROOT / "examples" / "cells" / f"{TASK}.py"


# -- the setting ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "value", "canonical", "label"),
    [
        ("paused", "paused", 0.0, "paused", "paused"),
        ("real", "real", 0.0, "real", "real"),
        ("fixed:3", "fixed", 3.0, "fixed:3", "fixed_3s"),
        ("fixed:0", "fixed", 0.0, "fixed:0", "fixed_0s"),
        (" FIXED:0.50 ", "fixed", 0.5, "fixed:0.5", "fixed_0p5s"),
        ("scaled:2", "scaled", 2.0, "scaled:2", "scaled_2x"),
        ("scaled:.25", "scaled", 0.25, "scaled:0.25", "scaled_0p25x"),
    ],
)
def test_each_clock_kind_is_parsed(text, kind, value, canonical, label):
    clock = ClockSetting.parse(text)
    assert (clock.kind, clock.value, clock.text, clock.label) == (kind, value, canonical, label)
    assert ClockSetting.parse(clock.text) == clock and "." not in clock.label and ":" not in clock.label


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("fixed:-1", "not a non-negative number"),
        ("fixed:nan", "not a non-negative number"),
        ("fixed:inf", "not a non-negative number"),
        ("scaled:-0.5", "not a non-negative number"),
        ("scaled:0", "K = 0 is the paused clock"),
        (f"fixed:{MAX_FIXED_S * 2:g}", "0 <= S <= 600"),
        (f"scaled:{MAX_SCALE * 2:g}", "0 < K <= 100"),
        ("fixed", "needs a value: fixed:S"),
        ("fixed:", "needs a value"),
        ("fixed:abc", "not a non-negative number"),
        ("real:1", "takes no value"),
        ("paused:0", "takes no value"),
        ("wall", "unknown clock 'wall'; the clock is one of paused, real, fixed:S"),
        ("", "unknown clock"),
    ],
)
def test_a_bad_clock_is_refused_with_the_forms(text, why):
    with pytest.raises(ConfigError, match=why):
        ClockSetting.parse(text)


def test_a_clock_built_directly_is_checked_too():
    for kind, value in (("fixed", math.nan), ("fixed", -1.0), ("scaled", math.inf), ("real", 1.0), ("sundial", 0)):
        with pytest.raises(ConfigError):
            ClockSetting(kind, value)


@given(st.floats(min_value=0, max_value=MAX_FIXED_S, allow_nan=False))
def test_every_fixed_latency_round_trips_through_its_text(seconds):
    clock = ClockSetting("fixed", seconds)
    assert ClockSetting.parse(f"fixed:{seconds!r}") == clock
    assert clock.model_latency_s(123.0) == seconds and clock.compute_latency_s(5.0) == 0.0


def test_latency_per_kind():
    assert PAUSED_CLOCK.model_latency_s(2.0) == PAUSED_CLOCK.compute_latency_s(2.0) == 0.0
    assert ClockSetting.parse("real").model_latency_s(2.0) == ClockSetting.parse("real").compute_latency_s(2.0) == 2.0
    assert ClockSetting.parse("fixed:3").model_latency_s(0.01) == 3.0
    assert ClockSetting.parse("scaled:2").model_latency_s(1.5) == ClockSetting.parse("scaled:2").compute_latency_s(1.5)


def test_a_sweep_takes_the_kind_before_a_bare_number():
    texts = [c.text for c in parse_clock_sweep("fixed:0,1,3,10")]
    assert texts == ["fixed:0", "fixed:1", "fixed:3", "fixed:10"]
    assert [c.text for c in parse_clock_sweep(["paused", "real", "scaled:2", "4", "real"])] == [
        "paused", "real", "scaled:2", "scaled:4",
    ]  # fmt: skip
    for bad, why in (("1,2", "follows no fixed"), ("real,3", "follows no fixed"), ("fixed:1,,2", "empty clock"),
                     ("fixed:1,-2", "not a non-negative")):  # fmt: skip
        with pytest.raises(ConfigError, match=why):
            parse_clock_sweep(bad)


# -- the host ---------------------------------------------------------------------------------------------------------


def _joints(world) -> np.ndarray:
    return np.concatenate([world.arm_state(a).joint_positions_rad for a in world.robot.arm_names])


def test_time_passes_in_whole_steps_with_the_arms_holding_and_the_budget_untouched(dual_world):
    dual_world.reset(TASK, seed=0)
    host = WorldHost(dual_world)
    host.start(EpisodeSpec(TASK, 0))
    truth = dual_world.privileged()
    t0, q0, ball0 = host.world_time_s, _joints(dual_world), truth.object_pos("ball")
    assert host.let_time_pass(1.0) == pytest.approx(1.0, abs=1e-12)
    assert host.world_time_s == pytest.approx(t0 + 1.0, abs=1e-9)
    assert host.steps_used == 0 and host.steps_left == host.step_limit
    assert np.max(np.abs(_joints(dual_world) - q0)) < HELD_JOINT_RAD
    assert np.linalg.norm(truth.object_pos("ball") - ball0) > 0.05  # it rolls at 0.09-0.12 m/s
    # less than a control step cannot pass: it is the clock's to carry; and time passes after the budget too
    assert host.let_time_pass(0.03) == 0.0
    dual_world.step_count = dual_world.step_limit
    assert host.let_time_pass(0.08) == pytest.approx(0.08) and host.steps_left == 0


def test_the_clock_carries_what_could_not_pass_yet(dual_world):
    dual_world.reset(TASK, seed=0)
    host = WorldHost(dual_world)
    clock = EpisodeClock(ClockSetting.parse("fixed:0.05"), host)  # 1.25 control steps per call
    t0 = host.world_time_s
    for _ in range(4):
        clock.model_called(0.0)
    assert host.world_time_s - t0 == pytest.approx(0.2, abs=1e-9) and clock.total_s == pytest.approx(0.2)


def test_a_host_that_cannot_let_time_pass_refuses_any_clock_but_paused():
    class Bare:
        pass

    EpisodeClock(PAUSED_CLOCK, Bare())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a host that lets time pass"):
        EpisodeClock(ClockSetting.parse("real"), Bare())  # type: ignore[arg-type]


# -- a move_eef episode -----------------------------------------------------------------------------------------------


def _think_then_give_up(tmp_path, thoughts: int = 1):
    """A replay: ``thoughts`` replies without a tool call (nothing moves), then give_up."""
    replies = [{"content": "Let me think about where the ball goes."}] * thoughts
    replies.append(
        {"content": None, "tool_calls": [{"name": "give_up", "arguments": {"reason": "test", "hindsight": "none"}}]}
    )
    path = tmp_path / "think.yaml"
    path.write_text(yaml.safe_dump(replies))
    return path


def _episode(world, script, out, clock, agent="move_eef"):
    with open_llm(f"replay:{script}") as llm:
        agent_ = make_agent(agent)
        try:
            return run_episode(WorldHost(world), agent_, llm, EpisodeSpec(TASK, 0), out, model=llm.model, clock=clock)
        finally:
            getattr(agent_, "close", lambda: None)()


def _mcap_actions(folder) -> list[dict]:
    from rosbags.highlevel import AnyReader

    with AnyReader([folder / "episode.mcap"]) as reader:
        connections = [c for c in reader.connections if c.topic == ACTION_TOPIC]
        return [json.loads(reader.deserialize(raw, c.msgtype).data) for c, _, raw in reader.messages(connections)]


def test_under_fixed_s_each_model_call_moves_the_world_s_and_uses_no_step(dual_world, tmp_path):
    script = _think_then_give_up(tmp_path)
    dual_world.reset(TASK, seed=0)
    settled = float(dual_world.data.time)
    # S a whole number of 40 ms control steps (time passes in control steps; test_the_clock_carries... the rest)
    result = _episode(dual_world, script, tmp_path / "fixed", ClockSetting.parse("fixed:1.2"))
    assert result.end_reason == "give_up" and result.llm_calls == 2
    # two calls, 1.2 s each, and no env step: exactly 2.4 s passed
    assert dual_world.data.time == pytest.approx(settled + 2.4, abs=1e-9)
    assert result.steps_used == 0 and result.latency_applied_s == pytest.approx(2.4)
    truth = dual_world.privileged()
    ball_fixed = truth.object_pos("ball")
    assert np.linalg.norm(ball_fixed[:2] - truth.initial_pos("ball")[:2]) > 0.15  # ~0.25 m at 0.09-0.12 m/s

    record = EpisodeRecord.open(result.folder)
    assert record.meta.clock == "fixed:1.2" and record.outcome is not None
    assert record.outcome.latency_applied_s == pytest.approx(2.4)
    assert [t.latency_applied_s for t in record.turns] == [1.2, 1.2]
    assert [t.steps_left for t in record.turns] == [dual_world.step_limit] * 2
    # the arms held: the state after each turn is the start's
    start = record.turns[0].arm_states()
    for turn in record.turns[1:]:
        for arm, state in turn.arm_states().items():
            assert np.max(np.abs(np.subtract(state.joint_positions_rad, start[arm].joint_positions_rad))) < 1e-3
    assert [a["latency_applied_s"] for a in _mcap_actions(result.folder)] == [1.2, 1.2]

    # paused, the same replies: the world waited, the ball is where the episode left it at its start
    dual_world.reset(TASK, seed=0)
    paused = _episode(dual_world, script, tmp_path / "paused", PAUSED_CLOCK)
    assert dual_world.data.time == pytest.approx(settled, abs=1e-9) and paused.latency_applied_s == 0.0
    assert [t.latency_applied_s for t in EpisodeRecord.open(paused.folder).turns] == [0.0, 0.0]


def _comparable(folder) -> tuple:
    """What an episode record says of the world and the agent, without its wall-clock times."""
    record = EpisodeRecord.open(folder)
    turns = [(t.action, t.tool_results, t.move, t.steps_left, t.arms, t.latency_applied_s) for t in record.turns]
    assert record.outcome is not None
    o = record.outcome
    return turns, (o.success, o.score, o.end_reason, o.llm_calls, o.steps_used, o.latency_applied_s)


def test_the_paused_clock_changes_nothing(dual_world, tmp_path):
    """The scripted cells of stop_rolling_ball run as before: no wrapper around the model, no time but the steps', and
    the same record with the clock left out as with paused given."""
    assert EpisodeClock(PAUSED_CLOCK, WorldHost(dual_world)).caller(llm := object()) is llm  # type: ignore[arg-type]
    runs = []
    for name, clock in (("default", None), ("paused", PAUSED_CLOCK)):
        dual_world.reset(TASK, seed=0)
        settled = float(dual_world.data.time)
        with open_llm(f"replay:{CELLS}") as llm:
            agent = make_agent("code_cell")
            try:
                kwargs = {} if clock is None else {"clock": clock}
                result = run_episode(WorldHost(dual_world), agent, llm, EpisodeSpec(TASK, 0), tmp_path / name,
                                     model=llm.model, **kwargs)  # fmt: skip
            finally:
                agent.close()
        # time passed only in the env steps the cells used (robo.wait's included)
        assert dual_world.data.time == pytest.approx(settled + result.steps_used * dual_world.control_dt_s, abs=1e-9)
        runs.append((_comparable(result.folder), dual_world.privileged().object_pos("ball").tolist()))
    assert runs[0] == runs[1]
    assert runs[0][0][1][0], "the scripted cells solve seed 0 paused"


def test_a_clocked_caller_passes_on_what_it_does_not_time(dual_world, tmp_path):
    with open_llm(f"replay:{_think_then_give_up(tmp_path)}") as llm:
        caller = EpisodeClock(ClockSetting.parse("real"), WorldHost(dual_world)).caller(llm)
        assert isinstance(caller, ClockedCaller)
        assert caller.model == llm.model and caller.describe() == llm.describe()
