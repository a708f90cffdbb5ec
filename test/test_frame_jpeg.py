"""robodojo.episodes.frame_jpeg: a picture the record encoded is not encoded again for the live view."""

from __future__ import annotations

import cv2
import numpy as np

from robodojo.episodes import frame_jpeg as fj


def _picture(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (48, 64, 3), dtype=np.uint8)


def test_one_picture_is_encoded_once_and_decodes_to_itself():
    rgb = _picture(0)
    first = fj.frame_jpeg(rgb)
    assert fj.frame_jpeg(rgb) is first  # the same bytes object: remembered, not encoded again
    decoded = cv2.cvtColor(cv2.imdecode(np.frombuffer(first, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert decoded.shape == rgb.shape
    smooth = cv2.GaussianBlur(rgb, (0, 0), 3)  # noise does not survive JPEG; its low frequencies do
    assert np.abs(cv2.GaussianBlur(decoded, (0, 0), 3).astype(int) - smooth).mean() < 8


def test_another_array_or_quality_is_encoded_anew_and_memory_stays_bounded():
    rgb = _picture(1)
    first = fj.frame_jpeg(rgb)
    assert fj.frame_jpeg(rgb.copy()) is not first  # equal pixels, another picture: never taken by its content
    assert fj.frame_jpeg(rgb, 50) != first
    for seed in range(2, 2 + 3 * fj._REMEMBERED):
        fj.frame_jpeg(_picture(seed))
    assert len(fj._encoded) == fj._REMEMBERED
    assert fj.frame_jpeg(rgb) is not first  # pushed out by newer pictures: encoded again, the same bytes
    assert fj.frame_jpeg(rgb) == first
