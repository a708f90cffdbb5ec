"""The efficiency core shared by ``robodojo compare`` and the campaign report: means on jointly solved layouts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from robodojo.episodes.efficiency import METRICS, UsageMeans, jointly_solved


@dataclass(frozen=True)
class Episode:
    agent: str
    layout: tuple[str, int]
    success: bool
    llm_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_time_s: float = 0.0


def test_means_ratios_and_their_undefined_cases():
    means = UsageMeans.of(
        [Episode("a", ("t", 0), True, 2, 100, 40, 10, 0.5, 7.0), Episode("a", ("t", 1), True, 4, 300, wall_time_s=3.0)]
    )
    # calls (2 + 4) / 2; input (100 + 300) / 2; cached 20; uncached (60 + 300) / 2; output 5; cost 0.25; wall 5 s
    assert dataclasses.astuple(means) == pytest.approx((3, 200, 20, 180, 5, 0.25, 5))
    assert [means.value(m) for m in METRICS] == list(dataclasses.astuple(means))
    assert UsageMeans.of([]) == UsageMeans() and UsageMeans().llm_calls is None
    half = UsageMeans(llm_calls=1.5, input_tokens=100, cached_input_tokens=0).over(means)
    assert half.llm_calls == pytest.approx(0.5) and half.input_tokens == pytest.approx(0.5)
    assert half.cached_input_tokens == pytest.approx(0.0) and half.output_tokens is None  # 0 / 20; None / 5
    assert means.over(UsageMeans(cached_input_tokens=0)).cached_input_tokens is None  # over 0: no ratio
    with pytest.raises(KeyError, match="unknown metric 'tokens'; known: llm_calls, input_tokens"):
        means.value("tokens")


def test_only_layouts_every_agent_solved_count():
    episodes = [
        Episode("a", ("t", 0), True, llm_calls=10),
        Episode("b", ("t", 0), True, llm_calls=4),
        Episode("a", ("t", 1), True, llm_calls=99),  # b failed it
        Episode("b", ("t", 1), False, llm_calls=5),
        Episode("b", ("t", 2), True, llm_calls=77),  # a never ran it
        Episode("c", ("t", 0), True, llm_calls=1),  # not compared
    ]
    joint = jointly_solved(episodes, ("a", "b"), layout=lambda e: e.layout)
    assert joint.agents == ("a", "b") and joint.layouts == (("t", 0),)
    assert joint.solved_episodes == {"a": 1, "b": 1}
    assert joint.mean["a"].llm_calls == 10 and joint.mean["b"].llm_calls == 4
    assert joint.ratio["b"].llm_calls == pytest.approx(0.4) and joint.ratio["a"].llm_calls == 1.0
    # A layout solved twice by one agent: both of its episodes enter its mean.
    again = jointly_solved([*episodes, Episode("a", ("t", 0), True, llm_calls=20)], ("a", "b"), lambda e: e.layout)
    assert again.solved_episodes["a"] == 2 and again.mean["a"].llm_calls == 15
    empty = jointly_solved(episodes, (), layout=lambda e: e.layout)
    assert empty.layouts == () and empty.mean == {}
