"""Task registry, instructions, success checkers and the scripted grasp-and-lift."""

from __future__ import annotations

import pytest

from robodojo.errors import ConfigError
from robodojo.sim.scripted import grasp_and_lift
from robodojo.sim.tasks import available_tasks, get_task
from robodojo.sim.tasks.base import CAPABILITIES, Task


def test_the_suite_has_20_dual_arm_and_4_fr3_tasks_and_every_axis_on_the_dual_arm():
    dual = available_tasks("dual_arx_x5")
    assert len(dual) >= 20 and len(available_tasks("fr3")) >= 4
    assert {get_task(t).capability for t in dual} == set(CAPABILITIES)


@pytest.mark.parametrize("task", available_tasks())
def test_task_definition_is_complete(task):
    cls = get_task(task)
    t = cls(0.765)
    layout = t.layout(0)
    text = t.instruction(layout)
    assert "{" not in text and all(v in text for v in layout.slots.values())
    assert cls.step_limit >= 200 and cls.recipe
    scores = [s for s, _ in cls.score_ladder]
    assert scores == sorted(scores) and scores[-1] == 1.0 and all(0 < s <= 1 for s in scores)
    assert "Process score ladder" in t.recipe_text()


@pytest.mark.parametrize("task", available_tasks())
@pytest.mark.parametrize("variant", ["standard", "cluttered", "randomized"])
def test_success_is_false_initially_and_true_after_teleport_to_goal(dual_world, fr3_world, task, variant):
    world = fr3_world if get_task(task).robot == "fr3" else dual_world
    for seed in (0, 1):
        world.reset(task, seed=seed, variant=variant)
        truth = world.privileged()
        assert not truth.success() and truth.score() < 1.0
        truth.put_in_goal_state()
        assert truth.success() and truth.score() == 1.0


@pytest.mark.parametrize("seed", range(10))
def test_scripted_grasp_and_lift_succeeds_on_general_pickup(dual_world, seed):
    dual_world.reset("general_pickup", seed=seed)
    assert grasp_and_lift(dual_world, "target")
    assert dual_world.privileged().score() == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_scripted_grasp_and_lift_succeeds_on_cluttered_pickup_and_fr3(dual_world, fr3_world, seed):
    dual_world.reset("general_pickup", seed=seed, variant="cluttered")
    assert grasp_and_lift(dual_world, "target")
    fr3_world.reset("fr3_pick_cube", seed=seed)
    assert grasp_and_lift(fr3_world, "target")


def test_score_ladder_rises_through_a_grasp(dual_world):
    dual_world.reset("general_pickup", seed=4)
    truth = dual_world.privileged()
    seen = []
    dual_world.step_observers.append(lambda w: seen.append(truth.score()))
    try:
        assert grasp_and_lift(dual_world, "target")
    finally:
        dual_world.step_observers.clear()
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert {0.25, 0.5, 0.75} <= set(seen)


def test_a_new_task_module_registers_itself():
    class _Probe(Task):
        name = "probe_task_for_test"
        capability = "open"
        step_limit = 200
        instruction_template = "probe"
        recipe = "probe"
        score_ladder = ((1.0, "done"),)

        def sample_objects(self, rng):
            return [], {}

        def success(self, layout, view):
            return False

        def score(self, layout, view):
            return 0.0

        def put_in_goal_state(self, layout, world):
            pass

    try:
        assert get_task("probe_task_for_test") is _Probe
    finally:
        del Task.registry["probe_task_for_test"]


def test_a_task_without_a_known_capability_axis_is_refused_when_defined():
    with pytest.raises(
        ConfigError, match="capability 'dexterity'; expected one of open, precise, bimanual, dynamic, long_horizon"
    ):

        class _Unknown(Task):
            name = "unknown_axis_task_for_test"
            capability = "dexterity"

    assert "unknown_axis_task_for_test" not in Task.registry


@pytest.mark.parametrize("task", ["general_pickup", "fr3_pick_cube"])
def test_friction_grasp_holds_the_object_for_five_seconds(dual_world, fr3_world, task):
    world = fr3_world if get_task(task).robot == "fr3" else dual_world
    world.reset(task, seed=6)
    assert grasp_and_lift(world, "target")
    truth = world.privileged()
    arm = min(world.robot.arm_names, key=lambda a: float(((truth.tcp_pos(a) - truth.object_pos("target")) ** 2).sum()))
    offset = truth.object_pos("target") - truth.tcp_pos(arm)
    for _ in range(round(5.0 * 1 / world.control_dt_s)):
        world.step()
    drift = ((truth.object_pos("target") - truth.tcp_pos(arm)) - offset) * 1000
    assert abs(drift).max() < 3.0, f"object slipped {drift} mm in the gripper"
    assert truth.success()
