"""scripts/isaac_sim_robodojo.py --check: what the Isaac Sim runner reads from an exported stage, validated without
Isaac Sim (which cannot run on these machines; the script's header says so).

The plan it prints publishes Isaac's topic names (robodojo.robots.topic_names, not a copy: the ones isaac_bridge_node
and camera_node read under sim:=isaac) for every camera of the robot; a stage with a missing URDF, a camera mounted on
a link the robot lacks, or missing drive gains is refused with a message naming each problem. The layer Isaac opens
points the robot's payload at the file the URDF import wrote. What the Isaac part calls is checked against Isaac Sim
6.2's wheels in test/test_isaac_contract.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from robodojo import PACKAGE_ROOT
from robodojo.robots import topic_names
from robodojo.robots.config import load_robot_config
from robodojo.sim.usd import write_usd_stage

pytest.importorskip("pxr", reason="usd-core is not installed (make setup installs it)")
from pxr import Usd, UsdGeom

RUNNER = PACKAGE_ROOT / "scripts" / "isaac_sim_robodojo.py"


def _runner():
    spec = importlib.util.spec_from_file_location("isaac_sim_robodojo", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("isaac_sim_robodojo", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _check(stage) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(RUNNER), str(stage), "--check"], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("world_fixture", "task"), [("dual_world", "pick_from_conveyor"), ("fr3_world", "fr3_stack_two")]
)
def test_check_prints_the_bridge_topics_for_every_camera(request, tmp_path, world_fixture, task):
    world = request.getfixturevalue(world_fixture)
    world.reset(task, seed=1, variant="randomized")
    written = write_usd_stage(world.describe(), tmp_path / "scene.usda", world.settings)
    result = _check(written.stage)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "check: OK (Isaac Sim was not started)" in out
    assert f"publish {topic_names.CLOCK} " in out and f"publish {topic_names.ISAAC_JOINT_STATES} " in out
    assert f"follow  {topic_names.ISAAC_JOINT_COMMAND} " in out
    assert "OmniGraph /World/ROS2Bridge: " in out
    robot = load_robot_config(world.robot.name)
    for cam in robot.cameras:
        assert (
            f"camera {cam.name} on {cam.frame}: {cam.width}x{cam.height} rgb8 on "
            f"{topic_names.isaac_camera_image(cam.name)}, CameraInfo on {topic_names.isaac_camera_info(cam.name)}, "
            f"frame {cam.frame}"
        ) in out
    for obj in world.layout.objects:  # what the world sets moving once settled
        if obj.moving:
            vx, vy, vz = obj.velocity_m_s
            assert f"/World/Objects/{obj.name} at ({vx:+.3f}, {vy:+.3f}, {vz:+.3f}) m/s" in out
    assert ("/World/Objects/belt at" in out) == (task == "pick_from_conveyor")


def test_check_refuses_a_stage_it_cannot_run(dual_world, tmp_path):
    dual_world.reset("general_pickup", seed=0)
    written = write_usd_stage(dual_world.describe(), tmp_path / "scene.usda", dual_world.settings)
    written.robot_urdf.unlink()
    stage = Usd.Stage.Open(str(written.stage), Usd.Stage.LoadNone)
    stage.GetPrimAtPath("/World/Cameras/head").GetAttribute("robodojo:mountFrame").Set("no_such_link")
    stage.GetPrimAtPath("/World/Robot").RemoveProperty("robodojo:driveStiffness")
    stage.GetRootLayer().Save()
    result = _check(written.stage)
    assert result.returncode == 1
    assert f"the robot URDF {written.robot_urdf} is missing" in result.stderr
    assert "driveStiffness and driveDamping must have one entry per joint, have 16, 16, 0, 16" in result.stderr
    assert (
        _check(tmp_path / "nothing.usda")
        .stderr.strip()
        .endswith("no such stage (write one with `robodojo scene export`)")
    )


def test_check_names_a_camera_on_a_link_the_robot_lacks(dual_world, tmp_path):
    dual_world.reset("general_pickup", seed=0)
    written = write_usd_stage(dual_world.describe(), tmp_path / "scene.usda", dual_world.settings)
    stage = Usd.Stage.Open(str(written.stage), Usd.Stage.LoadNone)
    stage.GetPrimAtPath("/World/Cameras/head").GetAttribute("robodojo:mountFrame").Set("no_such_link")
    stage.GetRootLayer().Save()
    result = _check(written.stage)
    assert result.returncode == 1
    assert "camera head: mount frame 'no_such_link' is not a link of the robot URDF" in result.stderr


def test_check_names_a_robot_mesh_missing_beside_the_stage(fr3_world, tmp_path):
    pytest.importorskip("franky_sim", reason="franky-sim is not installed: the FR3 has no meshes to ship")
    fr3_world.reset("fr3_pick_cube", seed=0)
    written = write_usd_stage(fr3_world.describe(), tmp_path / "scene.usda", fr3_world.settings)
    shipped = sorted((tmp_path / "meshes").glob("*.obj"))
    assert any(p.name.startswith("link1_vis") for p in shipped)
    assert _check(written.stage).returncode == 0
    shipped[0].unlink()
    result = _check(written.stage)
    assert result.returncode == 1
    assert f"mesh 'meshes/{shipped[0].name}' of the robot URDF is missing beside it" in result.stderr


def test_the_layer_isaac_opens_loads_the_robot_the_import_wrote(dual_world, tmp_path):
    """Isaac's URDF importer writes into a folder of its choosing (numbered beside an earlier import) and returns the
    file; the stage's own payload names <robot>.usd beside it, so the runner opens a layer over the stage whose
    /World/Robot payload is the returned file, keeping the stage's metadata and everything else it holds."""
    runner = _runner()
    dual_world.reset("general_pickup", seed=0)
    written = write_usd_stage(dual_world.describe(), tmp_path / "scene.usda", dual_world.settings)
    plan = runner.read_plan(written.stage)
    imported = plan.import_dir / f"{plan.robot}_1" / f"{plan.robot}.usda"  # a stand-in for the importer's output
    robot = Usd.Stage.CreateNew(str(imported))
    robot.SetDefaultPrim(UsdGeom.Xform.Define(robot, f"/{plan.robot}").GetPrim())
    robot.DefinePrim(f"/{plan.robot}/joints/{plan.joint_names[0]}", "PhysicsRevoluteJoint")
    robot.GetRootLayer().Save()

    assert not Usd.Stage.Open(str(written.stage)).GetPrimAtPath(f"/World/Robot/joints/{plan.joint_names[0]}")
    stage = Usd.Stage.Open(str(runner.write_launch_layer(plan, imported)))
    assert stage.GetPrimAtPath(f"/World/Robot/joints/{plan.joint_names[0]}").GetTypeName() == "PhysicsRevoluteJoint"
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetRootLayer().customLayerData["robodojo:robot"] == plan.robot
    assert list(stage.GetPrimAtPath("/World/Robot").GetAttribute("robodojo:jointNames").Get()) == list(plan.joint_names)
    assert stage.GetPrimAtPath("/World/Cameras/head").IsValid()
