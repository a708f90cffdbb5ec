"""What moves by itself in a task's world (robodojo.sim.dynamics): a launched ball, a conveyor belt, a layout changed
mid-episode; and the robo API's wait and clock, which agents use to act on them."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.agents.robo.api import Robo
from robodojo.episodes import episode_context
from robodojo.sim.tasks import get_task
from robodojo.sim.tasks.base import belt_region
from robodojo.sim.world import EmbeddedWorld


@pytest.mark.parametrize("variant", ["standard", "cluttered"])
def test_a_launched_ball_rolls_along_its_lane_and_its_lane_is_kept_clear(dual_world: EmbeddedWorld, variant):
    for seed in (0, 3):
        dual_world.reset("stop_rolling_ball", seed=seed, variant=variant)
        truth, layout = dual_world.privileged(), dual_world.layout
        velocity = np.array(layout.object("ball").velocity_m_s)
        assert abs(velocity[0]) > 0.05 and velocity[1] == velocity[2] == 0.0
        assert truth.object_speed("ball") == pytest.approx(np.linalg.norm(velocity), rel=1e-6)
        (lane,) = get_task("stop_rolling_ball")(0.765).keep_clear(list(layout.objects))
        others = [o for o in layout.objects if o.name != "ball"]
        assert all(
            not (lane.x_m[0] < o.pos_m[0] < lane.x_m[1] and lane.y_m[0] < o.pos_m[1] < lane.y_m[1]) for o in others
        )
        start = truth.object_pos("ball")
        for _ in range(50):  # 2 s
            dual_world.step()
        travelled = truth.object_pos("ball") - start
        # Rolling, not sliding: it keeps its lane and loses little speed (rolling friction only).
        assert abs(travelled[1]) < 0.002 and abs(travelled[2]) < 0.001
        assert 0.9 * 2.0 * abs(velocity[0]) < travelled[0] * np.sign(velocity[0]) <= 2.0 * abs(velocity[0])
        assert truth.touching_table("ball") and not truth.success()


def test_a_belt_carries_what_rests_on_it_at_its_speed_and_nothing_else(dual_world: EmbeddedWorld):
    dual_world.reset("pick_from_conveyor", seed=1, variant="cluttered")
    truth, layout = dual_world.privileged(), dual_world.layout
    belt = layout.object("belt")
    region = belt_region(belt)
    riders = [o.name for o in layout.objects if o.name == "target" or o.name.startswith("other_")]
    beside = [o.name for o in layout.objects if o.name.startswith("distractor_")]
    assert riders and beside
    assert all(
        not (
            region.x_m[0] < layout.object(n).pos_m[0] < region.x_m[1]
            and region.y_m[0] - 0.02 < layout.object(n).pos_m[1] < region.y_m[1] + 0.02
        )
        for n in beside
    )
    start = {n: truth.object_pos(n) for n in riders + beside}
    for _ in range(50):  # 2 s
        dual_world.step()
    for name in riders:
        np.testing.assert_allclose(truth.object_pos(name) - start[name], np.array(belt.velocity_m_s) * 2.0, atol=1e-3)
    for name in beside:
        np.testing.assert_allclose(truth.object_pos(name), start[name], atol=1e-3)
    # Lifted off the belt, a block is no longer carried: it falls straight back down, then rides again.
    lifted = truth.object_pos("target") + (0, 0, 0.03)
    truth.set_object_pose("target", lifted)
    dual_world.step()
    assert abs(truth.object_pos("target")[0] - lifted[0]) < 1e-4


def test_a_layout_change_happens_once_at_its_step_the_same_for_a_seed(dual_world: EmbeddedWorld):
    dual_world.reset("restore_moved_block", seed=4)
    truth, layout = dual_world.privileged(), dual_world.layout
    (change,) = layout.changes
    assert layout == get_task("restore_moved_block")(0.765).layout(4)  # the change is part of the seeded layout
    before = truth.object_pos(change.name)
    assert truth.changes_made == 0 and np.allclose(before[:2], layout.object(change.name).pos_m[:2], atol=1e-3)
    dual_world.step()
    assert truth.changes_made == 1
    after = truth.object_pos(change.name)
    np.testing.assert_allclose(after[:2], change.pos_m[:2], atol=1e-3)
    assert np.linalg.norm(after[:2] - before[:2]) >= 0.12
    for _ in range(5):
        dual_world.step()
    assert truth.changes_made == 1  # once
    np.testing.assert_allclose(truth.object_pos(change.name)[:2], change.pos_m[:2], atol=1e-3)


def test_robo_wait_lets_robot_time_pass_and_the_clock_says_how_much(dual_world: EmbeddedWorld):
    dual_world.reset("pick_from_conveyor", seed=0)
    robo = Robo(episode_context(dual_world, llm_call_budget=10))
    truth = dual_world.privileged()
    joints = robo.state().left.joints
    t0, steps0, x0 = robo.state().time_s, robo.steps_left, truth.object_pos("target")[0]
    result = robo.wait(1.0)
    assert result.planned and result.steps_used == 25 and result.stop_reason == "completed"
    assert robo.steps_left == steps0 - 25
    assert robo.state().time_s == pytest.approx(t0 + 1.0)
    np.testing.assert_allclose(robo.state().left.joints, joints, atol=2e-3)  # held where it was
    speed = dual_world.layout.object("belt").velocity_m_s[0]
    assert truth.object_pos("target")[0] - x0 == pytest.approx(speed * 1.0, abs=1e-3)
    assert robo.wait(0).steps_used == 0
    dual_world.step_count = get_task("pick_from_conveyor").step_limit - 3
    ended = robo.wait(1.0)
    assert ended.steps_used == 3 and ended.stop_reason == "budget_exhausted" and ended.terminated
