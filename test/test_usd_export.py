"""`robodojo scene export`: the embedded world's scene as a USD stage, read back with pxr (usd-core), not our code.

Every object's pose and every shape's size and world pose, every camera's intrinsics (from focal length and apertures,
as Isaac Sim computes them) and pose equal the MuJoCo scene's to 1e-6; the table, the lights, the robot's payload, its
joint state and the URDF for Isaac's importer are there.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from robodojo.cli import main
from robodojo.robots.urdf import parse_urdf
from robodojo.sim.usd import write_usd_stage

pxr = pytest.importorskip("pxr", reason="usd-core is not installed (make setup installs it)")
from pxr import Usd, UsdGeom, UsdLux, UsdPhysics  # noqa: E402

EXPORTS = [
    ("press_by_number", 0, "standard"),
    ("sort_into_bowls", 3, "randomized"),
    ("block_into_slot", 1, "cluttered"),
    ("pick_from_conveyor", 2, "randomized"),
    ("fr3_sort_two", 5, "randomized"),
    ("tube_into_rack", 2, "standard"),
    ("mug_on_coaster", 4, "randomized"),
]
OPTICAL_TO_USD = np.diag([1.0, -1.0, -1.0])


def _world_pose(prim) -> np.ndarray:
    """T_world_prim as a column-vector 4x4 (USD matrices are row-vector)."""
    matrix = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    T = np.array(matrix, dtype=float).T
    return T


def _unscaled(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    R = T[:3, :3]
    scale = np.linalg.norm(R, axis=0)
    return R / scale, scale


def _mujoco_size(prim, scale: np.ndarray) -> np.ndarray:
    """The shape's MuJoCo size parameters from the USD prim."""
    if prim.IsA(UsdGeom.Cube):
        return scale * UsdGeom.Cube(prim).GetSizeAttr().Get() / 2
    if prim.IsA(UsdGeom.Cylinder):
        c = UsdGeom.Cylinder(prim)
        return np.array([c.GetRadiusAttr().Get(), c.GetHeightAttr().Get() / 2, 0.0])
    return np.array([UsdGeom.Sphere(prim).GetRadiusAttr().Get(), 0.0, 0.0])


@pytest.mark.parametrize(("task", "seed", "variant"), EXPORTS)
def test_the_usd_stage_is_the_mujoco_scene(request, tmp_path, task, seed, variant):
    world = request.getfixturevalue("fr3_world" if task.startswith("fr3_") else "dual_world")
    world.reset(task, seed=seed, variant=variant)
    written = write_usd_stage(world.describe(), tmp_path / "scene.usda", world.settings)
    m, d = world.model, world.data
    mujoco.mj_forward(m, d)  # geom and body poses of the current state

    stage = Usd.Stage.Open(str(written.stage), Usd.Stage.LoadNone)
    assert UsdGeom.GetStageUpAxis(stage) == "Z" and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetRootLayer().customLayerData["robodojo:task"] == task
    checked_shapes = 0
    for obj in world.scene.objects:
        prim = stage.GetPrimAtPath(f"/World/Objects/{obj.name}")
        assert prim.IsValid(), obj.name
        body = m.body(obj.name).id
        T = _world_pose(prim)
        np.testing.assert_allclose(T[:3, 3], d.xpos[body], atol=1e-6)
        np.testing.assert_allclose(T[:3, :3], d.xmat[body].reshape(3, 3), atol=1e-6)
        assert prim.HasAPI(UsdPhysics.RigidBodyAPI) == obj.movable
        for shape in obj.shapes:
            shape_prim = prim.GetChild(shape.name)
            geom = m.geom(shape.name).id
            R, scale = _unscaled(_world_pose(shape_prim))
            np.testing.assert_allclose(_world_pose(shape_prim)[:3, 3], d.geom_xpos[geom], atol=1e-6)
            np.testing.assert_allclose(R, d.geom_xmat[geom].reshape(3, 3), atol=1e-6)
            np.testing.assert_allclose(
                _mujoco_size(shape_prim, scale), m.geom_size[geom], atol=1e-6, err_msg=shape.name
            )
            assert shape_prim.HasAPI(UsdPhysics.CollisionAPI) == (m.geom_contype[geom] != 0)
            color = UsdGeom.Gprim(shape_prim).GetDisplayColorAttr().Get()[0]
            if m.geom_matid[geom] < 0:  # textured geoms show their texture tinted by their rgba
                np.testing.assert_allclose(color, m.geom_rgba[geom][:3], atol=1e-6)
            checked_shapes += 1
    # every object geom of the model is in the stage
    assert checked_shapes == sum(1 for i in range(m.ngeom) if m.geom_bodyid[i] > 0 and m.body(m.geom_bodyid[i]).name
                                 in {o.name for o in world.scene.objects})  # fmt: skip

    for name in world.robot.camera_names:
        prim = stage.GetPrimAtPath(f"/World/Cameras/{name}")
        camera = UsdGeom.Camera(prim)
        width, height = prim.GetAttribute("robodojo:width").Get(), prim.GetAttribute("robodojo:height").Get()
        focal = camera.GetFocalLengthAttr().Get()
        fx = width * focal / camera.GetHorizontalApertureAttr().Get()
        fy = height * focal / camera.GetVerticalApertureAttr().Get()
        cx = (width - 1) / 2 + camera.GetHorizontalApertureOffsetAttr().Get() * fx / focal
        cy = (height - 1) / 2 - camera.GetVerticalApertureOffsetAttr().Get() * fy / focal
        calibration = world.calibration(name)
        np.testing.assert_allclose([[fx, 0, cx], [0, fy, cy], [0, 0, 1]], calibration.K, rtol=1e-6)
        T = _world_pose(prim)
        T[:3, :3] = T[:3, :3] @ OPTICAL_TO_USD
        np.testing.assert_allclose(T, calibration.T_world_cam, atol=1e-6)
        assert prim.GetAttribute("robodojo:mountFrame").Get() == world.robot.camera(name).frame

    # the table's top and legs and the room's walls: the MuJoCo geoms of the same names
    table_and_room = [
        *stage.GetPrimAtPath("/World/Table").GetChildren(),
        *stage.GetPrimAtPath("/World/Room").GetChildren(),
    ]
    assert [p.GetName() for p in table_and_room] == [
        *(s.name for s in world.scene.table.shapes), *(w.name for w in world.scene.walls)
    ]  # fmt: skip
    for prim in table_and_room:
        geom = m.geom(prim.GetName()).id
        R, scale = _unscaled(_world_pose(prim))
        np.testing.assert_allclose(_world_pose(prim)[:3, 3], d.geom_xpos[geom], atol=1e-6)
        np.testing.assert_allclose(scale / 2, m.geom_size[geom], atol=1e-6)
        # the table's parts collide (MuJoCo has them twice: table_visual<i> drawn, table_collision<i> touched)
        table_part = prim.GetParent().GetName() == "Table"
        assert prim.HasAPI(UsdPhysics.CollisionAPI) == table_part
        if table_part:
            collider = m.geom(prim.GetName().replace("visual", "collision")).id
            np.testing.assert_allclose(d.geom_xpos[collider], d.geom_xpos[geom], atol=1e-9)
            np.testing.assert_allclose(m.geom_size[collider], m.geom_size[geom], atol=1e-9)
    top = m.geom(world.scene.table.shapes[0].name).id
    assert d.geom_xpos[top][2] + m.geom_size[top][2] == pytest.approx(world.robot.table.top_z_m)
    spots = [p for p in stage.Traverse() if p.IsA(UsdLux.SphereLight)]
    assert len(spots) == m.nlight
    for spot in spots:  # a light shines along its -z
        light = m.light(spot.GetName()).id
        direction = -_world_pose(spot)[:3, 2]
        np.testing.assert_allclose(direction, m.light_dir[light] / np.linalg.norm(m.light_dir[light]), atol=1e-6)

    robot = stage.GetPrimAtPath("/World/Robot")
    assert [p.assetPath for p in robot.GetMetadata("payload").GetAddedOrExplicitItems()] == [
        f"./{world.robot.name}.usd"
    ]
    names = robot.GetAttribute("robodojo:jointNames").Get()
    joints = dict(zip(names, robot.GetAttribute("robodojo:jointPositions_rad").Get(), strict=True))
    for arm in world.robot.arms:
        np.testing.assert_allclose([joints[j] for j in arm.joints], world.arm_state(arm.name).joint_positions_rad)
    urdf = parse_urdf(written.robot_urdf.read_text())
    assert "table" not in urdf.links and world.robot.arms[0].tcp_link in urdf.links
    assert all(j.child != "table" for j in urdf.joints.values())
    # Mesh visuals (the FR3's, where franky-sim is installed) ship beside the stage, referenced relative to the URDF.
    for visual in (v for link in urdf.links.values() for v in link.visuals if v.kind == "mesh"):
        assert visual.mesh_uri is not None and not visual.mesh_uri.startswith(("package:", "file:", "/"))
        assert (written.robot_urdf.parent / visual.mesh_uri).is_file()


def test_labels_are_textured_quads_on_top_faces(dual_world, tmp_path):
    dual_world.reset("press_by_number", seed=2)
    written = write_usd_stage(dual_world.describe(), tmp_path / "scene.usda", dual_world.settings)
    labels = {o.label for o in dual_world.layout.objects if o.label}
    assert sorted(p.name for p in written.textures) == sorted(f"label_{label}.png" for label in labels)
    stage = Usd.Stage.Open(str(written.stage), Usd.Stage.LoadNone)
    faces = [p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh) and p.GetName().endswith("_label_face")]
    assert len(faces) == len(dual_world.layout.objects)
    for face in faces:
        decal = face.GetParent().GetChild(face.GetName().removesuffix("_face"))
        top_z = _world_pose(decal)[2, 3] + _unscaled(_world_pose(decal))[1][2] / 2
        assert _world_pose(face)[2, 3] == pytest.approx(top_z, abs=2e-4)
        st = UsdGeom.PrimvarsAPI(face).GetPrimvar("st").Get()
        assert len(st) == 4


def test_scene_export_command_writes_the_stage(tmp_path, capsys):
    out = tmp_path / "out" / "scene.usda"
    assert main(["scene", "export", "--task", "stop_rolling_ball", "--seed", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert str(out) in printed and "dual_arx_x5.urdf" in printed
    stage = Usd.Stage.Open(str(out), Usd.Stage.LoadNone)
    ball = stage.GetPrimAtPath("/World/Objects/ball")
    assert ball.HasAPI(UsdPhysics.RigidBodyAPI)
    assert np.linalg.norm(ball.GetAttribute("robodojo:velocity_m_s").Get()) > 0  # launched once settled
    ET.fromstring((out.parent / "dual_arx_x5.urdf").read_text())
    assert main(["scene", "export", "--task", "no_such_task", "--out", str(out)]) == 2
    assert "unknown task 'no_such_task'" in capsys.readouterr().err
