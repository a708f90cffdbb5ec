"""Label textures (robodojo.sim.labels): deterministic, distinct per label, white-bordered, and attached as a
material that MuJoCo compiles."""

from __future__ import annotations

import itertools

import mujoco
import numpy as np
import pytest

from robodojo.errors import UnknownNameError
from robodojo.sim import labels
from robodojo.sim.labels import DIGITS, LABEL_PX, LABELS, MARGIN_PX, SYMBOLS, apply_label, label_image

MIN_DIFFERENT_PX = 300  # of LABEL_PX**2: two labels differ in at least this many clearly different pixels


def _drawn(label):
    """A fresh drawing, bypassing the cache."""
    return labels.label_image.__wrapped__(label)


@pytest.mark.parametrize("label", LABELS)
def test_a_label_is_a_black_glyph_on_white_and_drawn_the_same_every_time(label):
    image = label_image(label)
    assert image.shape == (LABEL_PX, LABEL_PX, 3) and image.dtype == np.uint8
    np.testing.assert_array_equal(image, _drawn(label))
    gray = image[..., 0]
    assert (image == gray[..., None]).all()  # grey levels only: the object's colour tints it
    dark = gray < 128
    assert 0.04 < dark.mean() < 0.5, dark.mean()
    border = np.ones_like(dark)
    border[MARGIN_PX - 2 : LABEL_PX - MARGIN_PX + 2, MARGIN_PX - 2 : LABEL_PX - MARGIN_PX + 2] = False
    assert (gray[border] == 255).all()  # the edge pixels, which the sides of a box show, stay white


def test_every_label_looks_different_from_every_other():
    for a, b in itertools.combinations(LABELS, 2):
        differ = np.abs(label_image(a)[..., 0].astype(int) - label_image(b)[..., 0].astype(int)) > 128
        assert differ.sum() >= MIN_DIFFERENT_PX, (a, b, int(differ.sum()))


def test_pictures_stay_different_when_turned_by_quarter_turns():
    """A block may lie turned any way: no picture may match another one turned."""
    for a, b in itertools.permutations(SYMBOLS, 2):
        for k in range(4):
            turned = np.rot90(label_image(b)[..., 0], k).astype(int)
            differ = np.abs(label_image(a)[..., 0].astype(int) - turned) > 128
            assert differ.sum() >= MIN_DIFFERENT_PX, (a, b, k, int(differ.sum()))


def test_an_unknown_label_names_the_valid_ones():
    with pytest.raises(UnknownNameError, match=r"unknown label 'seven'; available: .*star"):
        label_image("seven")
    assert set(DIGITS) <= set(LABELS) and set(SYMBOLS) <= set(LABELS)


def test_labels_compile_as_shared_textured_materials():
    spec = mujoco.MjSpec()
    geoms = [
        spec.worldbody.add_geom(name=f"g{i}", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.03, 0.03, 0.01]) for i in range(3)
    ]
    for geom, label in zip(geoms, ("7", "star", "7"), strict=True):
        apply_label(spec, geom, label)
    model = spec.compile()
    assert model.ntex == 2 and model.nmat == 2
    assert model.geom("g0").matid[0] == model.geom("g2").matid[0] != model.geom("g1").matid[0]
    tex = model.texture(model.mat_texid[model.geom("g1").matid[0], mujoco.mjtTextureRole.mjTEXROLE_RGB]).id
    start, size = model.tex_adr[tex], LABEL_PX * LABEL_PX * 3
    np.testing.assert_array_equal(
        model.tex_data[start : start + size].reshape(LABEL_PX, LABEL_PX, 3), label_image("star")
    )
