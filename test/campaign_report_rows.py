"""A small campaign written out by hand for the report's tests (test_campaign_report_*.py), with its figures
worked out by hand in the comments.

Three tasks on two axes: ``pick`` (pick_and_place, run in two variants: a generalization cell), ``stack`` and
``press`` (both precision: the axes hold different numbers of tasks). Two agents with one LLM, zero-shot, and a
probe condition ``demo_image`` of move_eef on some of move_eef's zero-shot layouts (one layout never run zero-shot).
"""

from __future__ import annotations

from robodojo.campaigns.results import ZERO_SHOT, EpisodeRow

AXIS = {"pick": "pick_and_place", "stack": "precision", "press": "precision"}
LLM = "gpt"
PROBE = "demo_image"

# (llm_calls, input_tokens, cached_input_tokens, output_tokens, cost_usd)
Usage = tuple[int, int, int, int, float]
NO_USAGE: Usage = (0, 0, 0, 0, 0.0)


WALL_S_PER_CALL = 0.5  #: each episode's wall time: half a second per LLM call


def row(
    agent: str,
    task: str,
    variant: str,
    seed: int,
    success: bool,
    score: float,
    usage: Usage = NO_USAGE,
    *,
    condition: str = ZERO_SHOT,
    llm: str = LLM,
) -> EpisodeRow:
    calls, tokens, cached, output, cost = usage
    return EpisodeRow(
        episode_id=f"{agent}-{llm}-{condition}-{task}-{variant}-{seed}",
        task=task,
        variant=variant,
        seed=seed,
        agent=agent,
        llm=llm,
        condition=condition,
        capability=AXIS[task],
        success=success,
        score=score,
        end_reason="success" if success else "llm_call_budget",
        llm_calls=calls,
        input_tokens=tokens,
        cached_input_tokens=cached,
        output_tokens=output,
        cost_usd=cost,
        wall_time_s=calls * WALL_S_PER_CALL,
    )


# move_eef, zero-shot: 5 successes in 12 episodes.
#   pick standard  1/2, scores 1.0 0.5            -> SR 50, Score 75
#   pick cluttered 1/4, scores 1.0 0.0 0.25 0.25  -> SR 25, Score 37.5
#   pick (generalization cell: mean of the variants) SR 37.5, Score 56.25; pooled 2/6 and Score 50
#   stack 3/4, scores 1 1 1 0.5 -> SR 75, Score 87.5;  press 0/2, scores 0 0.2 -> SR 0, Score 10
# Its layouts solved by both agents: pick standard 0, stack 0 and stack 2 (usage 10/20/30 calls, ...).
MOVE_EEF = [
    row("move_eef", "pick", "standard", 0, True, 1.0, (10, 1000, 400, 100, 0.1)),
    row("move_eef", "pick", "standard", 1, False, 0.5),
    row("move_eef", "pick", "cluttered", 0, True, 1.0, (99, 50_000, 0, 999, 9.0)),  # code_cell ran no cluttered
    row("move_eef", "pick", "cluttered", 1, False, 0.0),
    row("move_eef", "pick", "cluttered", 2, False, 0.25),
    row("move_eef", "pick", "cluttered", 3, False, 0.25),
    row("move_eef", "stack", "standard", 0, True, 1.0, (20, 2000, 800, 200, 0.2)),
    row("move_eef", "stack", "standard", 1, True, 1.0, (99, 90_000, 0, 999, 9.0)),  # code_cell failed it
    row("move_eef", "stack", "standard", 2, True, 1.0, (30, 3000, 1200, 300, 0.3)),
    row("move_eef", "stack", "standard", 3, False, 0.5),
    row("move_eef", "press", "standard", 0, False, 0.0),
    row("move_eef", "press", "standard", 1, False, 0.2),
]

# code_cell, zero-shot: 4 of 5. On the jointly solved layouts: 4/6/8 calls, 500/1000/1500 input tokens (100 cached
# each), 50 output tokens each, $0.05/0.10/0.15.
CODE_CELL = [
    row("code_cell", "pick", "standard", 0, True, 1.0, (4, 500, 100, 50, 0.05)),
    row("code_cell", "pick", "standard", 1, True, 1.0, (77, 77_777, 0, 777, 7.0)),  # move_eef failed it
    row("code_cell", "stack", "standard", 0, True, 1.0, (6, 1000, 100, 50, 0.10)),
    row("code_cell", "stack", "standard", 1, False, 0.5, (5, 5000, 0, 500, 0.5)),
    row("code_cell", "stack", "standard", 2, True, 1.0, (8, 1500, 100, 50, 0.15)),
]

# move_eef under the probe, each against move_eef's zero-shot episode on the same layout (zero-shot outcome noted).
PROBED = [
    row("move_eef", "pick", "standard", 0, False, 0.5, condition=PROBE),  # zero-shot succeeded: only zero-shot
    row("move_eef", "pick", "standard", 1, True, 1.0, condition=PROBE),  # zero-shot failed: only the probe
    row("move_eef", "press", "standard", 0, True, 1.0, condition=PROBE),  # only the probe
    row("move_eef", "press", "standard", 1, False, 0.0, condition=PROBE),  # neither
    row("move_eef", "stack", "standard", 3, True, 1.0, condition=PROBE),  # only the probe
    row("move_eef", "stack", "standard", 9, True, 1.0, condition=PROBE),  # never run zero-shot: unpaired
]

ROWS = [*MOVE_EEF, *CODE_CELL, *PROBED]
