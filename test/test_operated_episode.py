"""A real robot's episode book-keeping (robodojo.episodes.operated): text, steps from controller reports, verdicts."""

from __future__ import annotations

import math

import pytest

from robodojo.episodes.operated import OperatedEpisode, SceneConfirmation, episode_text
from robodojo.errors import ConfigError, InvalidCommandError, UnknownNameError
from robodojo.robots.config import load_robot_config
from robodojo.sim.tasks import get_task

FR3 = load_robot_config("fr3")


def test_the_task_gives_instruction_recipe_and_budget_unless_overridden():
    text = episode_text(FR3, "fr3_pick_cube", "standard", 3)
    assert text.instruction.startswith("Pick up the ") and "lift it 10 cm" in text.instruction
    assert text.step_limit == get_task("fr3_pick_cube").step_limit
    assert "Process score ladder" in text.recipe
    own = episode_text(FR3, "fr3_pick_cube", "", 0, instruction="  Pick up the red cube.  ", step_limit=50)
    assert (own.instruction, own.step_limit, own.variant) == ("Pick up the red cube.", 50, "standard")


def test_a_task_of_another_robot_or_a_bad_budget_is_refused():
    with pytest.raises(ConfigError, match="is for robot 'dual_arx_x5'"):
        episode_text(FR3, "general_pickup", "standard", 0)
    with pytest.raises(UnknownNameError):
        episode_text(FR3, "no_such_task", "standard", 0)
    with pytest.raises(ConfigError, match="step_limit"):
        episode_text(FR3, "fr3_pick_cube", "standard", 0, step_limit=-1)


def _episode(limit: int = 100) -> OperatedEpisode:
    return OperatedEpisode(episode_text(FR3, "fr3_pick_cube", "standard", 0, step_limit=limit))


def test_steps_count_the_points_played_as_the_simulator_does():
    episode = _episode()
    # one motion: arm and gripper trajectories share a start stamp and play on the same ticks
    assert episode.on_report("arm_arm_controller", 10.0, 5)
    assert not episode.on_report("arm_gripper_controller", 10.0, 3)  # fewer than the arm: same ticks
    assert episode.on_report("arm_arm_controller", 10.0, 12)
    assert not episode.on_report("arm_arm_controller", 10.0, 11)  # a late progress report never counts back
    assert episode.steps_used == 12
    episode.on_report("arm_gripper_controller", 12.0, 12)  # the next motion
    assert (episode.steps_used, episode.steps_left) == (24, 76)


def test_steps_are_kept_when_many_trajectories_went_by():
    episode = _episode(limit=10_000)
    for k in range(200):
        episode.on_report("arm_arm_controller", 100.0 + k, 3)
    assert episode.steps_used == 600


def test_the_budget_runs_out_at_zero_and_never_below():
    episode = _episode(limit=10)
    episode.on_report("arm_arm_controller", 1.0, 25)
    assert (episode.steps_used, episode.steps_left) == (25, 0)


def test_steps_of_a_reset_are_not_the_agents():
    episode = OperatedEpisode(episode_text(FR3, "fr3_pick_cube", "standard", 0), counting=False)
    assert not episode.on_report("arm_arm_controller", 1.0, 40)  # homing
    episode.start_counting()
    episode.on_report("arm_arm_controller", 2.0, 4)
    assert episode.steps_used == 4


def test_the_operators_verdict_sets_success_and_score():
    episode = _episode()
    assert (episode.success, episode.score) == (False, 0.0)
    episode.judge(False, 0.5, "held it, dropped it")
    assert (episode.success, episode.score) == (False, 0.5)
    assert episode.judge(True, math.nan, "").score == 1.0
    assert episode.success
    assert episode.judge(False, math.nan, "on second look, no").score == 0.0


@pytest.mark.parametrize(("success", "score"), [(False, 1.5), (False, -0.1), (True, 0.5)])
def test_an_impossible_verdict_is_refused_and_changes_nothing(success, score):
    episode = _episode()
    with pytest.raises(InvalidCommandError):
        episode.judge(success, score, "")
    assert episode.verdict is None


def test_each_episode_has_its_own_id():
    assert _episode().episode_id != _episode().episode_id


def test_the_status_topic_s_state_says_the_budget_and_the_verdict_as_they_are():
    episode = _episode(limit=10)
    episode.on_report("arm_arm_controller", 1.0, 4)
    state = episode.state()
    assert (state.episode_id, state.task, state.steps_used, state.step_limit, state.steps_left) == (
        episode.episode_id, "fr3_pick_cube", 4, 10, 6,
    )  # fmt: skip
    assert (state.success, state.score) == (False, 0.0)
    verdict = episode.judge(False, 0.5, "held it, dropped it")
    assert (episode.state().success, episode.state().score) == (False, 0.5)
    assert verdict.text("abc") == "episode abc: no success, score 0.5 (held it, dropped it)"
    assert episode.judge(True, math.nan, "").text("abc") == "episode abc: success, score 1"


def test_a_scene_confirmation_counts_only_while_a_reset_waits_for_it():
    import threading

    scene = SceneConfirmation()
    assert not scene.confirm()  # nobody waits: nothing to confirm, and nothing kept for a later wait
    prompts: list[float] = []
    assert not scene.wait(0.05, lambda: prompts.append(0.0), prompt_period_s=0.02)
    assert len(prompts) >= 2 and not scene.waiting  # prompted at once and again; timed out
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(scene.wait(600.0, lambda: None, 600.0)), daemon=True)
    waiter.start()
    while not scene.waiting:
        waiter.join(0.01)
    assert scene.confirm()
    waiter.join(60.0)
    assert outcome == [True] and not scene.waiting
