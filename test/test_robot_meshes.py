"""Visual meshes (robodojo.robots.meshes): the FR3 is drawn with franky-sim's meshes in franky-sim's colours, they sit
where franky-sim's own model puts them, the physics is the primitives' to the bit, and without franky-sim the arm
keeps its primitives with one log line. Mesh references, the cache and the decimation are checked on meshes made
here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from robodojo.robots import meshes
from robodojo.robots.config import load_robot_config
from robodojo.robots.meshes import (
    MeshUnavailable,
    cluster_vertices,
    prepared_mesh,
    read_obj,
    resolve_mesh_uri,
    urdf_with_resolved_meshes,
)
from robodojo.robots.mujoco_model import COLLISION_GROUP, VISUAL_GROUP, urdf_to_spec
from robodojo.robots.urdf import load_urdf, parse_urdf
from robodojo.sim.settings import load_sim_settings
from robodojo.sim.world import EmbeddedWorld

FR3 = load_robot_config("fr3")
FRACTION = load_sim_settings().render.robot_mesh_face_fraction
ARM_LINKS = tuple(f"fr3_link{i}" for i in range(8))
MESH_LINKS = (*ARM_LINKS, "fr3_hand", "fr3_leftfinger", "fr3_rightfinger")
WHITE, JOINT_BLACK = (1.0, 1.0, 1.0, 1.0), (0.2, 0.2, 0.2, 1.0)
# franky-sim's fr3.xml (MuJoCo Menagerie's FR3 with the Panda hand) names its hand and finger bodies differently.
FRANKY_BODIES = {"hand": "fr3_hand", "left_finger": "fr3_leftfinger", "right_finger": "fr3_rightfinger"}


def _needs_mesh_packages(*, decimation: bool = True) -> None:
    pytest.importorskip("franky_sim", reason="franky-sim is not installed (the hardware extra: make setup)")
    if decimation:
        pytest.importorskip("fast_simplification", reason="fast-simplification is not installed (the hardware extra)")


@pytest.fixture
def without_franky_sim(monkeypatch):
    """franky-sim looks uninstalled: importlib finds no package of that name (a fresh lookup, logged anew)."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "franky_sim" else find_spec(name, *a)
    )
    meshes._package_folder.cache_clear()
    meshes._log_fallback.cache_clear()
    yield
    meshes._package_folder.cache_clear()
    meshes._log_fallback.cache_clear()


@pytest.fixture(scope="module")
def fr3_models() -> tuple[mujoco.MjModel, mujoco.MjModel]:
    """The FR3 scene URDF compiled with its meshes (the simulator's fraction) and with primitives only."""
    _needs_mesh_packages()
    urdf = load_urdf(FR3.scene_urdf)
    return urdf_to_spec(urdf, mesh_face_fraction=FRACTION)[0].compile(), urdf_to_spec(urdf)[0].compile()


def _body_geoms(m: mujoco.MjModel, body: str, group: int) -> list[int]:
    bid = m.body(body).id
    return [g for g in range(m.ngeom) if m.geom_bodyid[g] == bid and m.geom_group[g] == group]


def _random_q(m: mujoco.MjModel, rng: np.random.Generator) -> np.ndarray:
    q = np.zeros(m.nq)
    for j in range(m.njnt):
        lo, hi = m.jnt_range[j]
        q[m.jnt_qposadr[j]] = rng.uniform(lo, hi)
    return q


# -- the FR3 -------------------------------------------------------------------------------------------------------
def test_fr3_links_are_drawn_with_meshes_in_franky_sim_colours(fr3_models):
    m, _ = fr3_models
    urdf = load_urdf(FR3.scene_urdf)
    for link in MESH_LINKS:
        geoms = _body_geoms(m, link, VISUAL_GROUP)
        expected = [v for v in urdf.links[link].visuals if v.kind == "mesh"]
        assert len(geoms) == len(expected) > 0, link
        assert all(m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH for g in geoms), link
        np.testing.assert_allclose(m.geom_rgba[geoms], [v.rgba for v in expected], atol=1e-6)
    # White links, black joint rings (the elbow's), as on the real arm; the wrist camera stays a box.
    elbow = {tuple(np.round(m.geom_rgba[g].astype(float), 3).tolist()) for g in _body_geoms(m, "fr3_link4", 2)}
    assert elbow == {WHITE, JOINT_BLACK}
    (camera,) = _body_geoms(m, "fr3_wrist_camera_link", VISUAL_GROUP)
    assert m.geom_type[camera] == mujoco.mjtGeom.mjGEOM_BOX
    # Decimated: well below franky-sim's 240k source triangles, and still a real shape per link.
    triangles = [int(m.mesh_facenum[m.geom_dataid[g]]) for link in MESH_LINKS for g in _body_geoms(m, link, 2)]
    assert 10_000 < sum(triangles) < 80_000


def test_the_meshes_sit_where_franky_sims_own_model_puts_them():
    """franky-sim's MJCF places its meshes in body frames; ours are the same frames (the URDF's MDH frames), so the
    meshes need no offset. Compared at random joint angles, link by link."""
    _needs_mesh_packages(decimation=False)
    folder = Path(importlib.util.find_spec("franky_sim").submodule_search_locations[0]) / "assets"
    spec = mujoco.MjSpec.from_file(str(folder / "fr3.xml"))
    spec.meshdir = str(folder / "meshes")  # the file's own meshdir points one level too deep
    theirs = spec.compile()
    ours = urdf_to_spec(load_urdf(FR3.arm_urdf))[0].compile()
    d_theirs, d_ours = mujoco.MjData(theirs), mujoco.MjData(ours)
    rng = np.random.default_rng(18)
    half_turn_z = np.diag([-1.0, -1.0, 1.0])  # franky-sim's right finger frame is turned about z
    for _ in range(10):
        q = _random_q(ours, rng)
        d_ours.qpos[:] = q
        for j in range(ours.njnt):
            name = ours.joint(j).name  # fr3_joint1..7 in both; their fingers are finger_joint1/2
            name = name.removeprefix("fr3_") if name.startswith("fr3_finger") else name
            d_theirs.qpos[theirs.joint(name).qposadr[0]] = q[ours.jnt_qposadr[j]]
        mujoco.mj_kinematics(ours, d_ours)
        mujoco.mj_kinematics(theirs, d_theirs)
        for body in (*ARM_LINKS[1:], *FRANKY_BODIES):
            mine = FRANKY_BODIES.get(body, body)
            np.testing.assert_allclose(d_ours.xpos[ours.body(mine).id], d_theirs.xpos[theirs.body(body).id], atol=1e-6)
            R_mine = d_ours.xmat[ours.body(mine).id].reshape(3, 3)
            R_theirs = d_theirs.xmat[theirs.body(body).id].reshape(3, 3)
            if body == "right_finger":
                R_mine = R_mine @ half_turn_z
            np.testing.assert_allclose(R_mine, R_theirs, atol=1e-6)


def test_meshes_change_nothing_in_the_physics(fr3_models):
    with_meshes, primitives = fr3_models
    for field in ("body_mass", "body_inertia", "body_ipos", "body_iquat", "body_pos", "body_quat", "jnt_range"):
        np.testing.assert_array_equal(getattr(with_meshes, field), getattr(primitives, field), err_msg=field)
    assert [with_meshes.body(b).name for b in range(with_meshes.nbody)] == [
        primitives.body(b).name for b in range(primitives.nbody)
    ]

    def collisions(m: mujoco.MjModel) -> list[tuple]:
        ids = [g for g in range(m.ngeom) if m.geom_group[g] == COLLISION_GROUP]
        fields = ("geom_type", "geom_size", "geom_pos", "geom_quat", "geom_contype", "geom_conaffinity")
        return [(m.geom(g).name, *(tuple(np.atleast_1d(getattr(m, f)[g])) for f in fields)) for g in ids]

    assert collisions(with_meshes) == collisions(primitives)
    visual = [g for g in range(with_meshes.ngeom) if with_meshes.geom_group[g] == VISUAL_GROUP]
    assert not with_meshes.geom_contype[visual].any() and not with_meshes.geom_conaffinity[visual].any()
    # Same link poses (TCP and camera frames included) for random joint vectors.
    d_mesh, d_prim = mujoco.MjData(with_meshes), mujoco.MjData(primitives)
    rng = np.random.default_rng(7)
    for _ in range(20):
        d_mesh.qpos[:] = d_prim.qpos[:] = _random_q(primitives, rng)
        mujoco.mj_kinematics(with_meshes, d_mesh)
        mujoco.mj_kinematics(primitives, d_prim)
        np.testing.assert_array_equal(d_mesh.xpos, d_prim.xpos)
        np.testing.assert_array_equal(d_mesh.xquat, d_prim.xquat)


def test_the_simulated_fr3_moves_the_same_with_meshes():
    """The whole embedded world (contacts, servos, a grasp-free move) steps identically with and without meshes."""
    _needs_mesh_packages()
    settings = load_sim_settings()
    worlds = [
        EmbeddedWorld(
            "fr3", settings=dataclasses.replace(settings, render=dataclasses.replace(settings.render, robot_meshes=on))
        )
        for on in (True, False)
    ]
    try:
        arm = FR3.arms[0]
        for world in worlds:
            world.reset("fr3_pick_cube", seed=0)
        target = np.array(arm.home_joints_rad) + np.array([0.1, 0.1, -0.1, -0.1, 0.1, 0.1, 0.1])
        for k in range(1, 11):
            q = np.array(arm.home_joints_rad) + (target - arm.home_joints_rad) * k / 10
            for world in worlds:
                world.step({arm.name: q}, {arm.name: 0.5})
        meshed, plain = worlds
        assert meshed.model.ngeom > plain.model.ngeom  # the meshes are really there
        np.testing.assert_array_equal(meshed.data.qpos, plain.data.qpos)
        np.testing.assert_array_equal(meshed.data.qvel, plain.data.qvel)
        tcp = [w.arm_state(arm.name).tcp_pos_m for w in worlds]
        np.testing.assert_array_equal(*tcp)
    finally:
        for world in worlds:
            world.close()


def test_without_franky_sim_the_fr3_keeps_its_primitives(without_franky_sim, caplog):
    urdf = load_urdf(FR3.scene_urdf)
    with caplog.at_level(logging.DEBUG, logger=meshes.__name__):
        fallback = urdf_to_spec(urdf, mesh_face_fraction=FRACTION)[0].compile()
        text = urdf_with_resolved_meshes(FR3.scene_urdf.read_text())
    primitives = urdf_to_spec(urdf)[0].compile()
    assert not (fallback.geom_type == mujoco.mjtGeom.mjGEOM_MESH).any()
    for field in ("geom_type", "geom_size", "geom_rgba", "geom_group", "geom_bodyid"):
        np.testing.assert_array_equal(getattr(fallback, field), getattr(primitives, field), err_msg=field)
    notes = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(notes) == 1 and "'franky_sim'" in notes[0].getMessage() and "primitive shapes" in notes[0].getMessage()
    # The URDF for ROS and Isaac: primitives only, no dangling package:// reference.
    rewritten = parse_urdf(text)
    assert "package://" not in text
    assert [v.kind for v in rewritten.links["fr3_link1"].visuals] == ["cylinder"]


def test_without_the_decimation_library_the_fr3_keeps_its_primitives(tmp_path, monkeypatch, caplog):
    """franky-sim there, fast-simplification not (an install without the hardware extra's latest pins): nothing
    cached yet, so nothing to draw but the primitives; one warning says why."""
    pytest.importorskip("franky_sim", reason="franky-sim is not installed (the hardware extra: make setup)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "fast_simplification", None)  # `import fast_simplification` raises
    meshes._fast_simplification_module.cache_clear()
    meshes._log_fallback.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger=meshes.__name__):
            model = urdf_to_spec(load_urdf(FR3.scene_urdf), mesh_face_fraction=FRACTION)[0].compile()
    finally:
        meshes._fast_simplification_module.cache_clear()
        meshes._log_fallback.cache_clear()
    assert not (model.geom_type == mujoco.mjtGeom.mjGEOM_MESH).any()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "fast-simplification is not installed" in warnings[0]


def test_the_urdf_for_other_readers_ships_the_meshes(tmp_path):
    _needs_mesh_packages()
    text = urdf_with_resolved_meshes(FR3.arm_urdf.read_text(), copy_to=tmp_path, fraction=FRACTION)
    urdf = parse_urdf(text)
    for link in MESH_LINKS:
        kinds = {v.kind for v in urdf.links[link].visuals}
        assert kinds == {"mesh"}, link  # the primitive stand-ins are gone where the meshes are
        for visual in urdf.links[link].visuals:
            assert visual.mesh_uri is not None and visual.mesh_uri.startswith("meshes/")
            _, faces = read_obj(tmp_path / visual.mesh_uri)
            assert len(faces) > 0
    assert urdf.links["fr3_link0"].collisions == load_urdf(FR3.arm_urdf).links["fr3_link0"].collisions
    # Without copy_to: absolute file:// URIs to the prepared copies, which resolve.
    absolute = parse_urdf(urdf_with_resolved_meshes(FR3.arm_urdf.read_text(), fraction=FRACTION))
    uri = absolute.links["fr3_link1"].visuals[0].mesh_uri
    assert uri is not None and uri.startswith("file:///") and resolve_mesh_uri(uri).is_file()


# -- references, cache, decimation (on meshes made here) -----------------------------------------------------------
def _sphere_obj(path: Path, radius_m: float = 0.05, rings: int = 24, segments: int = 48) -> int:
    """A UV sphere written as OBJ the way exporters split it: three vertices of its own per triangle (so only
    welding connects the surface). Returns the number of triangles."""
    theta = np.linspace(0, np.pi, rings + 1)[:, None]
    phi = np.linspace(0, 2 * np.pi, segments + 1)[None, :]
    grid = np.stack(np.broadcast_arrays(np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)), -1)
    tris = []
    for i in range(rings):
        for j in range(segments):
            a, b, c, d = grid[i, j], grid[i + 1, j], grid[i + 1, j + 1], grid[i, j + 1]
            if i > 0:
                tris.append((a, b, d))
            if i < rings - 1:
                tris.append((b, c, d))
    lines = ["mtllib missing.mtl"]
    for k, tri in enumerate(tris):
        lines += [f"v {x * radius_m:.8f} {y * radius_m:.8f} {z * radius_m:.8f}" for x, y, z in tri]
        lines.append(f"f {3 * k + 1}//1 {3 * k + 2}//1 {3 * k + 3}//1")
    path.write_text("\n".join(lines) + "\n")
    return len(tris)


def test_mesh_references_resolve_or_say_why_not(tmp_path):
    _needs_mesh_packages(decimation=False)
    path = resolve_mesh_uri("package://franky_sim/assets/meshes/link1_vis.obj")
    assert path.is_file() and path.parent.name == "meshes"
    obj = tmp_path / "part.obj"
    _sphere_obj(obj, rings=4, segments=8)
    assert resolve_mesh_uri(obj.as_uri()) == obj
    assert resolve_mesh_uri(str(obj)) == obj
    for uri, why in [
        ("meshes/part.obj", "use package://"),
        ("package://franky_sim", "expected package://<python package>/<path>"),
        ("package://no_such_package_here/x.obj", "'no_such_package_here' is not installed"),
        ("package://franky_sim/assets/meshes/link1_coll.stl", "only Wavefront OBJ"),
        (str(tmp_path / "absent.obj"), "no file"),
    ]:
        with pytest.raises(MeshUnavailable, match=why):
            resolve_mesh_uri(uri)


def test_prepared_meshes_are_welded_decimated_and_cached(tmp_path, monkeypatch):
    pytest.importorskip("fast_simplification", reason="fast-simplification is not installed (the hardware extra)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "sphere.obj"
    n = _sphere_obj(source)

    whole = prepared_mesh(source, 1.0)
    assert whole.parent == tmp_path / "cache" / "robodojo" / "meshes"
    verts, faces = read_obj(whole)
    assert len(faces) == n and len(verts) < n  # welded: neighbouring triangles share vertices (was 3 per triangle)

    quarter = prepared_mesh(source, 0.25)
    verts_q, faces_q = read_obj(quarter)
    assert 0.2 * n <= len(faces_q) <= 0.3 * n
    radii = np.linalg.norm(verts_q, axis=1)
    assert radii.max() < 0.052 and radii.min() > 0.045  # still the sphere, within 4 % of its radius

    stamp = os.stat(quarter).st_mtime_ns
    assert prepared_mesh(source, 0.25) == quarter and os.stat(quarter).st_mtime_ns == stamp  # from the cache
    source.write_text(source.read_text() + "# edited\n")
    meshes._source_digest.cache_clear()
    assert prepared_mesh(source, 0.25) != quarter  # a changed source is a new key


def test_vertex_clustering_keeps_the_outline(tmp_path):
    source = tmp_path / "sphere.obj"
    n = _sphere_obj(source)
    verts, faces = meshes.weld(*read_obj(source))
    v, f = cluster_vertices(verts, faces, 0.015)
    assert len(f) < n / 4
    assert np.linalg.norm(v, axis=1).max() <= 0.0501
    assert len({tuple(sorted(t)) for t in f.tolist()}) == len(f)  # no repeated triangles
