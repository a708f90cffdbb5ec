"""The launch file's and `robodojo graph`'s defaults and refusals (robodojo.nodes.graph_choices): no launch
argument combination silently runs something other than what was asked."""

from __future__ import annotations

import pytest

from robodojo.errors import ConfigError
from robodojo.nodes import graph_choices
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.sim.tasks import available_tasks


@pytest.mark.parametrize("robot", available_robots())
def test_each_robot_s_default_task_is_one_of_its_own_tasks(robot):
    task = graph_choices.task_or_default(robot, "")
    assert task == load_robot_config(robot).default_task and task in available_tasks(robot)
    assert graph_choices.task_or_default(robot, "lift_bar") == "lift_bar"  # a named task is kept


def test_a_real_arm_driver_implies_sim_none_and_refuses_a_simulator_beside_it():
    assert graph_choices.backend("", "franka", "fr3") == "none"
    assert graph_choices.backend("none", "arx5", "dual_arx_x5") == "none"
    assert graph_choices.backend("", "none", "fr3") == "mujoco"
    assert graph_choices.backend("isaac", "none", "dual_arx_x5") == "isaac"
    for sim in ("mujoco", "isaac"):
        with pytest.raises(ConfigError, match=f"needs sim:=none .* not sim:={sim}"):
            graph_choices.backend(sim, "franka", "fr3")


def test_a_driver_for_another_robot_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="hardware:=franka drives robot fr3, not dual_arx_x5: give robot:=fr3"):
        graph_choices.backend("", "franka", "dual_arx_x5")
    with pytest.raises(ConfigError, match="hardware:=arx5 drives robot dual_arx_x5"):
        graph_choices.backend("none", "arx5", "fr3")
    with pytest.raises(ConfigError, match="is not one of none, franka, arx5"):
        graph_choices.backend("", "ur5", "fr3")


def test_use_sim_time_follows_the_backend_unless_given():
    assert graph_choices.sim_time("", "mujoco") and graph_choices.sim_time("", "isaac")
    assert not graph_choices.sim_time("", "none")
    assert graph_choices.sim_time("true", "none") and not graph_choices.sim_time("False", "mujoco")
    with pytest.raises(ConfigError, match="must be true or false"):
        graph_choices.sim_time("maybe", "none")


def test_the_default_llm_is_the_agent_s_example_for_the_task_or_a_clear_refusal():
    choose = graph_choices.llm_or_example
    assert choose("move_eef", "", "fr3_pick_cube", 0) == "replay:examples/replay/fr3_pick_cube_seed0.yaml"
    assert choose("code_cell", "", "lift_bar", 4) == "replay:examples/cells/lift_bar.py"  # cells read the scene
    assert choose("shell", "", "general_pickup", 0) == "replay:examples/shell/general_pickup.yaml"
    assert choose("move_eef", " openai:gpt-4.1 ", "lift_bar", 0) == "openai:gpt-4.1"
    assert choose("none", "", "lift_bar", 0) == ""
    with pytest.raises(ConfigError, match=r"no replayed move_eef example for task lift_bar seed 0 .* give llm:="):
        choose("move_eef", "", "lift_bar", 0)  # not general_pickup's replay on another task, as before
