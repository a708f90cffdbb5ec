"""The table's height by plane sweep: exact synthetic views, the embedded world's cameras, and bad input."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from robodojo.geometry import look_at
from robodojo.perception.camera import CameraModel
from robodojo.perception.table_plane import PairHeight, TableHeight, _consensus, measure_table_height
from robodojo.sim.settings import load_sim_settings
from robodojo.sim.world import EmbeddedWorld

WORLD_CASES = [
    (task, variant, seed)
    for task in ("general_pickup", "stack_blocks")
    for variant in ("standard", "cluttered")
    for seed in range(3)
]


# -- synthetic views of a textured plane ------------------------------------------------------------------------
def _look_at(eye, target, width=640, height=480, f=520.0, distortion=None, name="cam") -> CameraModel:
    """A camera at ``eye`` looking at ``target`` (optical frame: z forward, x right, y down; world z up)."""
    K = np.array([[f, 0.0, (width - 1) / 2], [0.0, f, (height - 1) / 2], [0.0, 0.0, 1.0]])
    dist = np.zeros(5) if distortion is None else np.asarray(distortion, dtype=float)
    return CameraModel(name, K, look_at(eye, target), width, height, dist)


def _texture(seed=3, size=1024):
    """A band-limited random texture covering 1 m x 1 m of the plane (about 1 mm per texel)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 1.0, (size, size)).astype(np.float32)
    tex = cv2.GaussianBlur(noise, (0, 0), 2.0) * 0.6 + cv2.GaussianBlur(noise, (0, 0), 8.0) * 2.0
    return np.clip(128 + 40 * tex / tex.std(), 0, 255).astype(np.float32)


def _render_plane(camera: CameraModel, plane_z: float, texture, origin_xy=(-0.5, -0.8), texel_m=1.0 / 1024):
    """The image of the textured plane z = plane_z (grey background where the camera does not see it)."""
    rows, cols = np.mgrid[0 : camera.height, 0 : camera.width]
    d = camera.pixel_rays(rows.ravel(), cols.ravel())
    o = camera.position_m
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (plane_z - o[2]) / d[:, 2]
    p = o + t[:, None] * d
    u = ((p[:, 0] - origin_xy[0]) / texel_m).astype(np.float32)
    v = ((p[:, 1] - origin_xy[1]) / texel_m).astype(np.float32)
    u[~(t > 0)] = -1e6
    grey = cv2.remap(
        texture,
        u.reshape(camera.height, camera.width),
        v.reshape(camera.height, camera.width),
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=90.0,
    )
    grey = np.clip(grey, 0, 255).astype(np.uint8)
    return np.stack([grey, grey, grey], axis=-1)


def _synthetic_views(plane_z, distorted=False):
    texture = _texture()
    cams = [
        _look_at([0.0, -0.75, plane_z + 0.55], [0.0, -0.3, plane_z], name="far"),
        _look_at(
            [0.2, -0.2, plane_z + 0.3],
            [0.05, -0.35, plane_z],
            f=400.0,
            distortion=(-0.08, 0.02, 0.0, 0.0, 0.0) if distorted else None,
            name="near",
        ),
        _look_at([-0.25, -0.15, plane_z + 0.35], [-0.05, -0.35, plane_z], name="side"),
    ]
    return [(_render_plane(c, plane_z, texture), c) for c in cams]


@pytest.mark.parametrize("plane_z", [0.765, 0.8123, 0.6])
@pytest.mark.parametrize("distorted", [False, True])
def test_synthetic_textured_plane_exact(plane_z, distorted):
    views = _synthetic_views(plane_z, distorted)
    result = measure_table_height(views)
    assert result.found, result.reason
    assert abs(result.height_m - plane_z) < 0.5e-3, result
    assert len(result.pair_heights_m) == 3
    assert result.spread_mm < 1.0
    assert result.agreement > 0.5
    two = measure_table_height(views[:2])
    assert two.found and abs(two.height_m - plane_z) < 0.5e-3, two


# -- the embedded world -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_world():
    settings = load_sim_settings()
    world = EmbeddedWorld(
        "dual_arx_x5", settings=replace(settings, render=replace(settings.render, table_texture="plain"))
    )
    yield world
    world.close()


def _measure(world, task, variant, seed) -> TableHeight:
    """The plane sweep on one layout's three cameras (its time per call is benchmarks/perception.py's figure)."""
    obs = world.reset(task, seed=seed, variant=variant)
    views = [(f.rgb, CameraModel.from_calibration(name, f.calibration)) for name, f in obs.cameras.items()]
    return measure_table_height(views)


def test_world_with_wood_grain_table_within_a_millimetre(dual_world):
    truth = dual_world.robot.table.top_z_m  # ground truth: tests only
    errors = []
    for task, variant, seed in WORLD_CASES:
        result = _measure(dual_world, task, variant, seed)
        assert result.found, (task, variant, seed, result.reason)
        errors.append(abs(result.height_m - truth) * 1e3)
        assert errors[-1] <= 1.0, (task, variant, seed, result)
        assert len(result.pair_heights_m) >= 2 and result.spread_mm <= 1.5, result
        # the two wrist cameras at home see disjoint parts of the table: that pair must not count
        assert any(not p.found and {p.camera_a, p.camera_b} == {"left_wrist", "right_wrist"} for p in result.pairs)
    assert np.median(errors) < 0.5


def test_world_plain_table_never_misleads(plain_world):
    """A plain single-colour table (render.table_texture: plain): few pairs find it, and any height reported is
    still within 1 mm."""
    truth = plain_world.robot.table.top_z_m
    for task, variant, seed in WORLD_CASES:
        result = _measure(plain_world, task, variant, seed)
        if result.found:
            assert abs(result.height_m - truth) <= 1e-3, (task, variant, seed, result)
        else:
            assert result.reason, (task, variant, seed)


# -- bad input --------------------------------------------------------------------------------------------------
def test_one_view_is_not_enough():
    views = _synthetic_views(0.765)
    result = measure_table_height(views[:1])
    assert not result.found and "at least two views" in result.reason
    assert not measure_table_height([]).found


def test_image_size_must_match_its_camera():
    views = _synthetic_views(0.765)
    small = cv2.resize(views[1][0], (320, 240))
    result = measure_table_height([views[0], (small, views[1][1])])
    assert not result.found
    assert "320x240" in result.reason and "640x480" in result.reason and "near" in result.reason


def test_views_without_a_common_plane():
    texture = _texture()
    a = _look_at([0.0, -0.75, 1.3], [0.0, -0.3, 0.765], name="a")
    b = _look_at([5.0, -0.75, 1.3], [5.0, -1.2, 0.765], name="b")  # 5 m away, looking the other way
    views = [(_render_plane(a, 0.765, texture), a), (_render_plane(b, 0.765, texture), b)]
    result = measure_table_height(views)
    assert not result.found and "no pair of views sees a common part" in result.reason


def test_flat_textureless_views_give_no_height():
    views = [(np.full((480, 640, 3), 170, dtype=np.uint8), cam) for _, cam in _synthetic_views(0.765)]
    result = measure_table_height(views)
    assert not result.found and "textureless" in result.reason


def test_malformed_input_never_raises():
    views = _synthetic_views(0.765)
    assert "sequence" in measure_table_height(None).reason  # type: ignore[arg-type]
    assert "(image, CameraModel)" in measure_table_height([views[0], (views[1][0], "cam")]).reason  # type: ignore[list-item]
    assert "z_min_m < z_max_m" in measure_table_height(views, z_min_m=1.0, z_max_m=0.5).reason
    assert "z_min_m < z_max_m" in measure_table_height(views, z_min_m=float("nan")).reason


def _pair(height_m, agreement, found=False):
    return PairHeight("a", "b", found=found, height_m=height_m, agreement=agreement, tiles=50,
                      reason="" if found else "the views agree poorly")  # fmt: skip


def test_a_consensus_of_weak_pairs_at_one_plane_is_accepted():
    def found(*pairs):
        return [p.found for p in _consensus(list(pairs))]

    assert found(_pair(0.7651, 0.17), _pair(0.7646, 0.20), _pair(None, None)) == [True, True, False]
    assert found(_pair(0.7651, 0.17), _pair(0.7700, 0.20)) == [False, False]  # 4.9 mm apart: no consensus
    assert found(_pair(0.7651, 0.17)) == [False]  # one pair is no consensus
    assert found(_pair(0.7651, 0.05), _pair(0.7650, 0.20)) == [False, False]  # one is below the floor


def test_a_cluttered_layout_found_by_consensus(dual_world):
    """bowl_on_plate, cluttered, seed 14: clutter under both wrists; each pair agrees poorly, but at the same plane."""
    dual_world.reset("bowl_on_plate", seed=14, variant="cluttered")
    obs = dual_world.observe()
    views = [(f.rgb, CameraModel.from_calibration(n, f.calibration)) for n, f in obs.cameras.items()]
    result = measure_table_height(views, 0.5, 1.2)
    assert result.found and abs(result.height_m - dual_world.robot.table.top_z_m) < 0.001
    assert any("accepted by consensus" in p.reason for p in result.pairs)
