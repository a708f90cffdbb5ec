"""MoveIt planner (robodojo.motion.moveit_planner) and its config (config/moveit/<robot>/, scripts/generate_srdf.py).

Everything that needs no MoveIt runs here: the SRDF, kinematics, joint limits and moveit_py parameters against the
scene URDF and robot config; the re-timing of a MoveIt path; the planner's glue code against a stand-in for moveit_py
(which checks robodojo's side of the calls, not moveit_py itself); the error without moveit_py. Planning with the real
moveit_py runs where it is installed (the docker image) and skips elsewhere.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from test_planner import DT, _check_trajectory

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat, quat_from_matrix
from robodojo.motion.moveit_planner import (
    BOTH_ARMS_GROUP,
    MOVEIT_MISSING,
    MoveItPlanner,
    arm_group_name,
    error_code_name,
    gripper_group_name,
    moveit_config_dir,
    moveit_params,
    retime_path,
)
from robodojo.motion.planner import NativePlanner
from robodojo.motion.targets import ArmTarget, MoveTarget
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.robots.urdf import load_urdf

HAVE_MOVEIT = importlib.util.find_spec("moveit") is not None
MOVEIT_SKIP = "moveit_py is not installed (ROS 2 Jazzy with MoveIt: the docker image)"
ROBOTS = available_robots()


def _srdf(robot):
    return ET.parse(moveit_config_dir(robot) / f"{robot.name}.srdf").getroot()


def _movable_chain(urdf, base, tip):
    """Movable joints from base to tip, walked here independently of the generator."""
    by_child = {j.child: j for j in urdf.joints.values()}
    joints, link = [], tip
    while link != base:
        assert link in by_child, f"{tip} does not descend from {base}"
        j = by_child[link]
        if j.movable:
            joints.insert(0, j.name)
        link = j.parent
    return joints


def _srdf_content(text):
    """What an SRDF means, in a canonical form: element order, comments and float spelling do not count."""
    root = ET.fromstring(text)
    groups = {
        g.get("name"): {child.tag: sorted(tuple(sorted(e.attrib.items())) for e in g.findall(child.tag)) for child in g}
        for g in root.findall("group")
    }
    states = {
        (s.get("group"), s.get("name"), j.get("name")): float(j.get("value"))
        for s in root.findall("group_state")
        for j in s.findall("joint")
    }
    end_effectors = {tuple(sorted(e.attrib.items())) for e in root.findall("end_effector")}
    pairs = root.findall("disable_collisions")
    disabled = {(*sorted((d.get("link1"), d.get("link2"))), d.get("reason")) for d in pairs}
    tags = sorted({child.tag for child in root})
    return {
        "name": root.get("name"),
        "tags": tags,
        "groups": groups,
        "states": states,
        "end_effectors": end_effectors,
        "disabled_collisions": disabled,
    }


def _yaml_leaves(value, path=()):
    """A parsed YAML document as {path: leaf value}: key order and float spelling do not count."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _yaml_leaves(item, (*path, key)).items()}
    return {path: value}


# -- config files -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ROBOTS)
def test_generated_files_are_up_to_date(name, generate_srdf):
    stale = f"is stale: run scripts/generate_srdf.py {name} and commit the result"
    for path, text in generate_srdf.generated_files(load_robot_config(name)).items():
        if path.suffix == ".srdf":
            committed, generated = _srdf_content(path.read_text()), _srdf_content(text)
            states = committed.pop("states")
            assert states == pytest.approx(generated.pop("states"), rel=1e-12, abs=1e-12), f"{path} {stale}"
            assert committed == generated, f"{path} {stale}"
        else:
            committed, generated = (_yaml_leaves(yaml.safe_load(t)) for t in (path.read_text(), text))
            numbers = {k for k, v in generated.items() if isinstance(v, float)}
            assert {k: committed.get(k) for k in numbers} == pytest.approx(
                {k: generated[k] for k in numbers}, rel=1e-12
            ), f"{path} {stale}"
            assert {k: v for k, v in committed.items() if k not in numbers} == {
                k: v for k, v in generated.items() if k not in numbers
            }, f"{path} {stale}"


def test_up_to_date_check_sees_meaning_not_spelling(generate_srdf):
    """Reordered elements, another comment and another float spelling are the same SRDF; one reason more is not."""
    robot = load_robot_config("fr3")
    text = generate_srdf.srdf_text(robot)
    root = ET.fromstring(text)
    children = list(root)
    for child in children:
        root.remove(child)
    for child in reversed(children):
        for joint in child.findall("joint"):
            if joint.get("value") is not None:
                joint.set("value", f"{float(joint.get('value')):.17e}")
        root.append(child)
    respelled = ET.tostring(root, encoding="unicode")
    assert respelled != text and _srdf_content(respelled) == _srdf_content(text)
    ET.SubElement(root, "disable_collisions", link1="fr3_link1", link2="table", reason="Default")
    assert _srdf_content(ET.tostring(root, encoding="unicode")) != _srdf_content(text)


@pytest.mark.parametrize("name", ROBOTS)
def test_srdf_groups_are_the_configured_arm_chains(name):
    robot = load_robot_config(name)
    urdf = load_urdf(robot.scene_urdf)
    root = _srdf(robot)
    assert root.tag == "robot" and root.get("name") == urdf.name
    groups = {g.get("name"): g for g in root.findall("group")}
    expected = {arm_group_name(a) for a in robot.arm_names} | {gripper_group_name(a) for a in robot.arm_names}
    if len(robot.arms) == 2:
        expected.add(BOTH_ARMS_GROUP)
    assert set(groups) == expected
    for arm in robot.arms:
        (chain,) = groups[arm_group_name(arm.name)].findall("chain")
        base, tip = chain.get("base_link"), chain.get("tip_link")
        assert base in urdf.links and tip in urdf.links
        assert tip == arm.tcp_link
        assert _movable_chain(urdf, base, tip) == list(arm.joints)
        gripper = [j.get("name") for j in groups[gripper_group_name(arm.name)].findall("joint")]
        assert arm.gripper_joint in gripper and all(j in urdf.joints for j in gripper)
    if len(robot.arms) == 2:
        subgroups = [g.get("name") for g in groups[BOTH_ARMS_GROUP].findall("group")]
        assert subgroups == [arm_group_name(a) for a in robot.arm_names]
    for ee in root.findall("end_effector"):
        assert ee.get("parent_link") in urdf.links
        assert ee.get("group") in groups and ee.get("parent_group") in groups
    assert len(root.findall("end_effector")) == len(robot.arms)


@pytest.mark.parametrize("name", ROBOTS)
def test_srdf_named_states_lie_within_the_joint_limits(name):
    robot = load_robot_config(name)
    urdf = load_urdf(robot.scene_urdf)
    root = _srdf(robot)
    groups = {g.get("name") for g in root.findall("group")}
    for state in root.findall("group_state"):
        assert state.get("group") in groups
        for joint in state.findall("joint"):
            j = urdf.joint(joint.get("name"))
            assert j.lower <= float(joint.get("value")) <= j.upper
    homes = {s.get("group"): s for s in root.findall("group_state") if s.get("name") == "home"}
    for arm in robot.arms:
        values = [float(j.get("value")) for j in homes[arm_group_name(arm.name)].findall("joint")]
        assert values == list(arm.home_joints_rad)


@pytest.mark.parametrize("name", ROBOTS)
def test_disabled_collision_pairs_name_existing_links_and_cover_every_adjacent_pair(name):
    robot = load_robot_config(name)
    urdf = load_urdf(robot.scene_urdf)
    pairs = set()
    for pair in _srdf(robot).findall("disable_collisions"):
        a, b = pair.get("link1"), pair.get("link2")
        assert a in urdf.links and b in urdf.links and a != b
        assert urdf.links[a].collisions and urdf.links[b].collisions, "only links with collision shapes matter"
        assert pair.get("reason") in ("Adjacent", "Rigid", "Default")
        assert frozenset((a, b)) not in pairs, f"duplicate pair {a}, {b}"
        pairs.add(frozenset((a, b)))
    for joint in urdf.joints.values():
        if urdf.links[joint.parent].collisions and urdf.links[joint.child].collisions:
            assert frozenset((joint.parent, joint.child)) in pairs
    # Links of different arms, and an arm's moving links and the table, are always checked.
    for arm in robot.arms:
        for joint in arm.joints[1:]:
            assert frozenset((urdf.joint(joint).child, "table")) not in pairs


@pytest.mark.parametrize("name", ROBOTS)
def test_joint_limits_cover_every_arm_joint_within_the_urdf(name):
    robot = load_robot_config(name)
    urdf = load_urdf(robot.scene_urdf)
    limits = yaml.safe_load((moveit_config_dir(robot) / "joint_limits.yaml").read_text())["joint_limits"]
    for arm in robot.arms:
        for joint, accel in zip(arm.joints, robot.motion.joint_accel_rad_s2, strict=True):
            lim = limits[joint]
            assert lim["has_velocity_limits"] is True and lim["has_acceleration_limits"] is True
            assert 0 < lim["max_velocity"] <= urdf.joint(joint).velocity
            assert lim["max_velocity"] == pytest.approx(urdf.joint(joint).velocity * robot.motion.velocity_scale)
            assert lim["max_acceleration"] == pytest.approx(accel) and accel > 0


@pytest.mark.parametrize("name", ROBOTS)
def test_kinematics_and_moveit_py_parameters(name):
    robot = load_robot_config(name)
    folder = moveit_config_dir(robot)
    kinematics = yaml.safe_load((folder / "kinematics.yaml").read_text())
    assert set(kinematics) == {arm_group_name(a) for a in robot.arm_names}
    for solver in kinematics.values():
        assert solver["kinematics_solver"] == "kdl_kinematics_plugin/KDLKinematicsPlugin"
        assert solver["kinematics_solver_timeout"] > 0
    params = moveit_params(robot)
    pipelines = params["planning_pipelines"]["pipeline_names"]
    request = params["plan_request_params"]
    assert request["planning_pipeline"] in pipelines
    for pipeline in pipelines:
        assert params[pipeline]["planning_plugins"], f"pipeline {pipeline!r} has no planner plugin"
    assert request["planning_time"] > 0 and request["planning_attempts"] >= 1
    assert params["planning_scene_monitor_options"]["robot_description"] == "robot_description"
    assert params["moveit_manage_controllers"] is False  # robodojo executes plans itself
    assert params["robot_description"] == robot.scene_urdf.read_text()
    assert params["robot_description_semantic"] == (folder / f"{robot.name}.srdf").read_text()
    assert params["robot_description_kinematics"] == kinematics
    assert set(params["robot_description_planning"]["joint_limits"]) == {j for a in robot.arms for j in a.joints}
    yaml.safe_dump(params)  # MoveItPy writes the dict to a ROS parameter file with PyYAML


def test_missing_moveit_config_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"generate_srdf\.py"):
        moveit_params(load_robot_config("fr3"), tmp_path)


@pytest.mark.skipif(HAVE_MOVEIT, reason="moveit_py is installed here")
def test_planner_without_moveit_py_says_where_to_get_it():
    with pytest.raises(ConfigError) as info:
        MoveItPlanner(load_robot_config("dual_arx_x5"), DT)
    assert str(info.value) == MOVEIT_MISSING and "docker/README.md" in str(info.value)


def test_error_code_names():
    class Codes:  # the shape of moveit_msgs/MoveItErrorCodes
        SUCCESS = 1
        PLANNING_FAILED = -1
        NO_IK_SOLUTION = -31

        def __init__(self, val):
            self.val = val

    assert error_code_name(Codes(-31)) == "NO_IK_SOLUTION (-31)"
    assert error_code_name(Codes(-99)) == "error code -99"


# -- re-timing a MoveIt path -------------------------------------------------------------------------------------------
DUAL = load_robot_config("dual_arx_x5")
NATIVE = NativePlanner(DUAL, DT)
HOME = {a.name: np.array(a.home_joints_rad) for a in DUAL.arms}


def _goal(arm, offset):
    p, R = NATIVE.kinematics.tcp_pose(arm, HOME[arm])
    sol = NATIVE.kinematics.solve(arm, p + offset, R, HOME[arm], max_iterations=200)
    assert sol.converged
    return p + offset, R, sol.q


def test_retimed_path_passes_the_native_planners_checks():
    # A MoveIt-like path: joint names in another order with the gripper joint, a repeated waypoint.
    _, _, q_left = _goal("left", np.array([0.0, 0.05, -0.03]))
    _, _, q_right = _goal("right", np.array([0.04, 0.0, 0.02]))
    names = list(DUAL.arm("right").joints) + ["left_finger_left_joint"] + list(DUAL.arm("left").joints)
    u = np.linspace(0, 1, 15)[:, None]
    left, right = HOME["left"] + u * (q_left - HOME["left"]), HOME["right"] + u * (q_right - HOME["right"])
    positions = np.hstack([right, np.zeros((15, 1)), left])
    positions = np.vstack([positions[:5], positions[4:]])
    motion = retime_path(NATIVE.finisher, ["left", "right"], HOME, names, positions)
    assert set(motion) == {"left", "right"}
    np.testing.assert_allclose(motion["left"][-1], q_left, atol=1e-12)
    np.testing.assert_allclose(motion["right"][-1], q_right, atol=1e-12)
    gripper = {"left": 0.0, "right": 1.0}
    plan = NATIVE.finisher.finish(None, motion, gripper, {"left": 1.0, "right": None})
    assert plan.ok, plan.reason
    _check_trajectory(DUAL, plan, HOME, gripper)
    assert plan.trajectories["left"].gripper[-1] == 1.0


def test_retiming_keeps_the_grasp_point_under_the_tcp_speed():
    p1, _, q = _goal("left", np.array([0.0, 0.08, 0.0]))
    path = HOME["left"] + np.linspace(0, 1, 20)[:, None] * (q - HOME["left"])
    motion = retime_path(NATIVE.finisher, ["left"], HOME, DUAL.arm("left").joints, path)
    tcp = np.array([NATIVE.kinematics.tcp_pose("left", qk)[0] for qk in motion["left"]])
    speed = np.linalg.norm(np.diff(tcp, axis=0), axis=1) / DT
    assert speed.max() <= DUAL.motion.tcp_speed_m_s * 1.05  # the spline's TCP path is nearly the sampled one
    np.testing.assert_allclose(tcp[-1], p1, atol=5e-4)


@pytest.mark.parametrize(
    ("names", "positions", "reason"),
    [
        (["left_joint1"], np.zeros((3, 1)), "lacks joint 'left_joint2'"),
        (list(DUAL.arm("left").joints), np.zeros((0, 6)), "empty or malformed"),
        (list(DUAL.arm("left").joints), np.full((3, 6), 0.5), "does not start at the current joint angles"),
    ],
)
def test_unusable_moveit_paths_are_rejected_with_a_reason(names, positions, reason):
    result = retime_path(NATIVE.finisher, ["left"], HOME, names, positions)
    assert isinstance(result, str) and reason in result


# -- the planner's calls into moveit_py, against a stand-in ------------------------------------------------------------
class _Result:
    def __init__(self, trajectory):
        self.trajectory, self.error_code = trajectory, None

    def __bool__(self):
        return True


class _FakeState:
    def __init__(self, model):
        self.joint_positions = {}

    def set_to_default_values(self):
        self.joint_positions = {}

    def update(self):
        pass


class _FakeComponent:
    def __init__(self, group, calls):
        self.group, self.calls = group, calls

    def set_start_state(self, *, robot_state):
        self.start = dict(robot_state.joint_positions)

    def set_goal_state(self, **goal):
        self.goal = goal
        return True

    def plan(self, *, single_plan_parameters):
        self.calls.append((self.group, self.goal))
        arms = [a for a in DUAL.arm_names if self.group in (arm_group_name(a), BOTH_ARMS_GROUP)]
        if "pose_stamped_msg" in self.goal:  # one arm's pose goal on its TCP link
            pose = self.goal["pose_stamped_msg"]
            assert pose.header.frame_id == "world"
            goals = [(self.goal["pose_link"], pose.pose.position, pose.pose.orientation)]
            goals = [(link, [p.x, p.y, p.z], [o.x, o.y, o.z, o.w]) for link, p, o in goals]
        elif "motion_plan_constraints" in self.goal:
            (c,) = self.goal["motion_plan_constraints"]
            goals = [(p[0], p[1], o[1]) for p, o in zip(c.position_constraints, c.orientation_constraints, strict=True)]
        else:  # a RobotState goal
            q_goal = self.goal["robot_state"].joint_positions
        names, columns = [], []
        for arm in arms:
            q0 = np.array([self.start[j] for j in DUAL.arm(arm).joints])
            if "robot_state" in self.goal:
                q1 = np.array([q_goal[j] for j in DUAL.arm(arm).joints])
            else:
                _, pos, xyzw = next(g for g in goals if g[0] == DUAL.arm(arm).tcp_link)
                R = matrix_from_quat([xyzw[3], *xyzw[:3]])
                sol = NATIVE.kinematics.solve(arm, np.array(pos), R, q0, max_iterations=200)
                assert sol.converged
                q1 = sol.q
            names += DUAL.arm(arm).joints
            columns.append(q0 + np.linspace(0, 1, 12)[:, None] * (q1 - q0))
        points = [types.SimpleNamespace(positions=list(row)) for row in np.hstack(columns)]
        msg = types.SimpleNamespace(joint_trajectory=types.SimpleNamespace(joint_names=names, points=points))
        trajectory = types.SimpleNamespace(get_robot_trajectory_msg=lambda: msg)
        return _Result(trajectory)


@pytest.fixture
def fake_moveit(monkeypatch):
    """Modules named as moveit_py's, holding just what MoveItPlanner calls."""
    calls = []

    class MoveItPy:
        def __init__(self, *, node_name, config_dict, provide_planning_service):
            self.config = config_dict

        def get_planning_component(self, group):
            return _FakeComponent(group, calls)

        def get_robot_model(self):
            return object()

        def shutdown(self):
            pass

    def construct_link_constraint(*, link_name, source_frame, cartesian_position, cartesian_position_tolerance,
                                  orientation, orientation_tolerance):  # fmt: skip
        assert source_frame == "world"
        return types.SimpleNamespace(
            position_constraints=[(link_name, cartesian_position)],
            orientation_constraints=[(link_name, orientation)],
        )

    modules = {
        "moveit": {},
        "moveit.planning": {"MoveItPy": MoveItPy, "PlanRequestParameters": lambda moveit, ns: ns},
        "moveit.core": {},
        "moveit.core.robot_state": {"RobotState": _FakeState},
        "moveit.core.kinematic_constraints": {"construct_link_constraint": construct_link_constraint},
    }
    for name, attrs in modules.items():
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_planner_glue_against_a_stand_in_for_moveit_py(fake_moveit):
    planner = MoveItPlanner(DUAL, DT)
    gripper = {"left": 1.0, "right": 0.0}
    p_left, R_left, _ = _goal("left", np.array([0.0, 0.05, 0.0]))
    p_right, R_right, _ = _goal("right", np.array([-0.03, 0.0, 0.03]))
    left = ArmTarget("left", tuple(p_left), tuple(quat_from_matrix(R_left)), 0.0)
    right = ArmTarget("right", tuple(p_right), tuple(quat_from_matrix(R_right)), 1.0)
    for target, group in (
        (MoveTarget(arms={"left": left}), "left_arm"),
        (MoveTarget(arms={"left": left, "right": right}), BOTH_ARMS_GROUP),
    ):
        plan = planner.plan(target, HOME, gripper)
        assert plan.ok, plan.reason
        assert fake_moveit[-1][0] == group and set(plan.trajectories) == set(target.arms)
        _check_trajectory(DUAL, plan, HOME, gripper)
        for arm, t in target.arms.items():
            tcp = NATIVE.kinematics.tcp_pose(arm, plan.trajectories[arm].positions_rad[-1])[0]
            np.testing.assert_allclose(tcp, t.pos_m, atol=5e-4)
            assert plan.trajectories[arm].gripper[-1] == t.gripper
    goal = {"right": HOME["right"] + 0.1}
    plan = planner.plan_joints(goal, HOME, gripper)
    assert plan.ok and fake_moveit[-1][0] == "right_arm"
    np.testing.assert_allclose(plan.trajectories["right"].positions_rad[-1], goal["right"])
    below = MoveTarget(arms={"left": ArmTarget("left", (p_left[0], p_left[1], 0.7), left.quat_wxyz, None)})
    assert "below the table surface" in planner.plan(below, HOME, gripper).reason
    assert "outside the joint limits" in planner.plan_joints({"left": [0, 5, 0, 0, 0, 0]}, HOME, gripper).reason


# -- the real moveit_py ------------------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAVE_MOVEIT, reason=MOVEIT_SKIP)
def test_moveit_plans_a_5cm_move_that_passes_the_native_planners_checks():
    planner = MoveItPlanner(DUAL, DT, node_name="test_moveit_planner")
    try:
        gripper = {"left": 1.0, "right": 1.0}
        p0, R = NATIVE.kinematics.tcp_pose("left", HOME["left"])
        p1 = p0 + np.array([0.0, 0.05, 0.0])
        target = MoveTarget(arms={"left": ArmTarget("left", tuple(p1), tuple(quat_from_matrix(R)), 0.0)})
        plan = planner.plan(target, HOME, gripper)
        assert plan.ok, plan.reason
        assert set(plan.trajectories) == {"left"}
        _check_trajectory(DUAL, plan, HOME, gripper)
        tcp = NATIVE.kinematics.tcp_pose("left", plan.trajectories["left"].positions_rad[-1])[0]
        np.testing.assert_allclose(tcp, p1, atol=2e-3)  # MoveIt's pose goal tolerance is 1 mm
        assert plan.trajectories["left"].gripper[-1] == 0.0
        home = planner.plan_joints({a.name: a.home_joints_rad for a in DUAL.arms}, HOME, gripper)
        assert home.ok, home.reason
    finally:
        planner.shutdown()
