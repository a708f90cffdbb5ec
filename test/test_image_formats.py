"""image_formats: frames a test makes in every encoding (with OpenCV or by the encoding's definition) decode to the
pixels they were made from; bad frames raise FrameError with a kind."""

from __future__ import annotations

import struct
import zlib

import cv2
import numpy as np
import pytest

from robodojo.perception.image_formats import (
    MAX_FRAME_PIXELS,
    FrameError,
    compressed_codec,
    compressed_size,
    compressed_to_rgb,
    raw_to_rgb,
)

W, H = 64, 48


def blocks(width: int = W, height: int = H, block: int = 16, seed: int = 0) -> np.ndarray:
    """Uniform colour blocks: demosaicing and chroma subsampling are exact inside them."""
    rng = np.random.default_rng(seed)
    colours = rng.integers(20, 236, size=(height // block + 1, width // block + 1, 3), dtype=np.uint8)
    return np.repeat(np.repeat(colours, block, axis=0), block, axis=1)[:height, :width].copy()


def interior(mask_shape: tuple[int, int], block: int = 16, margin: int = 3) -> np.ndarray:
    """Pixels at least ``margin`` from every block edge and the image border."""
    rows = np.arange(mask_shape[0]) % block
    cols = np.arange(mask_shape[1]) % block
    r = (rows >= margin) & (rows < block - margin)
    c = (cols >= margin) & (cols < block - margin)
    return r[:, None] & c[None, :]


def padded(pixels: np.ndarray, pad: int = 7) -> tuple[bytes, int]:
    """Rows padded by ``pad`` bytes, as drivers align them; (data, step)."""
    rows = pixels.reshape(pixels.shape[0], -1)
    step = rows.shape[1] + pad
    out = np.zeros((rows.shape[0], step), dtype=np.uint8)
    out[:, : rows.shape[1]] = rows
    return out.tobytes(), step


@pytest.mark.parametrize(
    "encoding, make",
    [
        ("rgb8", lambda rgb: rgb),
        ("bgr8", lambda rgb: rgb[..., ::-1]),
        ("rgba8", lambda rgb: np.dstack([rgb, np.full(rgb.shape[:2], 99, np.uint8)])),
        ("bgra8", lambda rgb: np.dstack([rgb[..., ::-1], np.full(rgb.shape[:2], 99, np.uint8)])),
    ],
)
def test_rgb_family_decodes_exactly_with_padded_rows(encoding, make) -> None:
    rgb = np.random.default_rng(1).integers(0, 256, size=(H, W, 3), dtype=np.uint8)
    data, step = padded(np.ascontiguousarray(make(rgb)))
    out = raw_to_rgb(encoding, W, H, step, data)
    np.testing.assert_array_equal(out, rgb)
    assert out.flags.writeable and out.dtype == np.uint8


def test_mono8_becomes_grey_rgb() -> None:
    grey = np.random.default_rng(2).integers(0, 256, size=(H, W), dtype=np.uint8)
    out = raw_to_rgb("mono8", W, H, W, grey.tobytes())
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], grey)


def bt601_limited_yuv(rgb: np.ndarray) -> np.ndarray:
    """Y, U, V (float) of RGB by ITU-R BT.601, limited range: what V4L2/UVC cameras send as YUYV."""
    r, g, b = (rgb[..., i].astype(float) for i in range(3))
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    return np.stack([y, u, v], axis=-1)


def pack_422(rgb: np.ndarray, order: str) -> np.ndarray:
    """Packed 4:2:2 (HxWx2 bytes) of an image whose horizontal pixel pairs share a colour (chroma from the pair)."""
    yuv = np.clip(np.round(bt601_limited_yuv(rgb)), 0, 255).astype(np.uint8)
    h, w = rgb.shape[:2]
    y = yuv[..., 0].reshape(h, w // 2, 2)
    u = yuv[:, 0::2, 1]
    v = yuv[:, 0::2, 2]
    groups = {
        "yuyv": np.stack([y[..., 0], u, y[..., 1], v], axis=-1),
        "uyvy": np.stack([u, y[..., 0], v, y[..., 1]], axis=-1),
    }[order]
    return groups.reshape(h, w, 2)


# Encoding rounds Y, U and V to integers (+-0.5 each); BT.601's inverse turns that into at most
# 1.164*0.5 + 1.596*0.5 = 1.38 (R), 1.164*0.5 + 0.392*0.5 + 0.813*0.5 = 1.18 (G), 1.164*0.5 + 2.017*0.5 = 1.59 (B),
# plus OpenCV's fixed-point rounding of 0.5: 2 levels covers both. A swapped byte order or full-range read is off by
# tens of levels.
YUV_TOLERANCE = 2


@pytest.mark.parametrize(
    "encoding, order", [("yuyv", "yuyv"), ("yuv422_yuy2", "yuyv"), ("uyvy", "uyvy"), ("yuv422", "uyvy")]
)
def test_yuv422_decodes_bt601_limited_range(encoding, order) -> None:
    rgb = blocks(block=8, seed=3)
    data, step = padded(pack_422(rgb, order), pad=4)
    out = raw_to_rgb(encoding, W, H, step, data)
    err = np.abs(out.astype(int) - rgb.astype(int))
    assert err.max() <= YUV_TOLERANCE, err.max()


def test_yuyv_and_uyvy_differ() -> None:  # the test above could fail: the two byte orders are not interchangeable
    rgb = blocks(seed=4)
    out = raw_to_rgb("uyvy", W, H, 2 * W, pack_422(rgb, "yuyv").tobytes())
    assert np.abs(out.astype(int) - rgb.astype(int)).max() > 20


def mosaic(rgb: np.ndarray, pattern: str) -> np.ndarray:
    """A Bayer mosaic by its definition: ``pattern`` names the colours of the top-left 2x2 block, row by row."""
    channel = {"r": 0, "g": 1, "b": 2}
    out = np.zeros(rgb.shape[:2], dtype=np.uint8)
    for k, letter in enumerate(pattern):
        dr, dc = divmod(k, 2)
        out[dr::2, dc::2] = rgb[dr::2, dc::2, channel[letter]]
    return out


@pytest.mark.parametrize("pattern", ["rggb", "bggr", "gbrg", "grbg"])
def test_bayer_demosaics_each_pattern(pattern) -> None:
    # Inside a uniform block, bilinear demosaicing interpolates equal values, so it is exact there; near block edges it
    # mixes neighbours, so only pixels 3 or more from an edge are compared (1 level for OpenCV's rounding).
    rgb = blocks(seed=5)
    out = raw_to_rgb(f"bayer_{pattern}8", W, H, W, mosaic(rgb, pattern).tobytes())
    inside = interior((H, W))
    err = np.abs(out.astype(int) - rgb.astype(int))[inside]
    assert err.max() <= 1, err.max()
    wrong = raw_to_rgb("bayer_rggb8" if pattern != "rggb" else "bayer_bggr8", W, H, W, mosaic(rgb, pattern).tobytes())
    assert np.abs(wrong.astype(int) - rgb.astype(int))[inside].max() > 20  # a wrong pattern table would be caught


def smooth(width: int = 160, height: int = 120) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width]
    return np.stack([xx * 255 // width, yy * 255 // height, (xx + yy) * 255 // (width + height)], -1).astype(np.uint8)


@pytest.mark.parametrize(
    "fmt",
    ["rgb8; jpeg compressed bgr8", "bgr8; jpeg compressed bgr8", "jpeg", "rgb8; png compressed bgr8", "png"],
)
def test_compressed_decodes_as_image_transport_writes_it(fmt) -> None:
    rgb = smooth()
    ext = ".png" if "png" in fmt else ".jpg"
    ok, buf = cv2.imencode(ext, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    out = compressed_to_rgb(fmt, buf.tobytes())
    assert out.shape == rgb.shape
    err = np.abs(out.astype(int) - rgb.astype(int))
    if ext == ".png":
        assert err.max() == 0
    else:  # JPEG at quality 95 on a smooth image: a few levels, never a swapped channel (that is ~100 off)
        assert err.mean() < 2 and err.max() < 12, (err.mean(), err.max())


def test_compressed_rgb_bytes_keep_their_order() -> None:
    rgb = smooth()
    _, buf = cv2.imencode(".png", rgb)  # rgb bytes stored as they are
    np.testing.assert_array_equal(compressed_to_rgb("rgb8; png compressed rgb8", buf.tobytes()), rgb)
    assert compressed_codec("rgb8; jpeg compressed bgr8") == ("jpeg", False)
    assert compressed_codec("mono8; png compressed ") == ("png", False)


def test_compressed_size_reads_headers_without_decoding() -> None:
    rgb = smooth(96, 40)
    for ext in (".png", ".jpg"):
        _, buf = cv2.imencode(ext, rgb)
        assert compressed_size(buf.tobytes()) == (96, 40)
    assert compressed_size(b"not an image") is None


def png_header_claiming(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk


@pytest.mark.parametrize(
    "call, kind",
    [
        (lambda: raw_to_rgb("rgb16", W, H, 6 * W, bytes(6 * W * H)), "encoding"),
        (lambda: raw_to_rgb("rgb8", W, H, 3 * W - 1, bytes(3 * W * H)), "data"),  # step shorter than a row
        (lambda: raw_to_rgb("rgb8", W, H, 3 * W, bytes(3 * W * H - 1)), "data"),  # truncated
        (lambda: raw_to_rgb("yuyv", W + 1, H, 2 * W + 2, bytes((2 * W + 2) * H)), "data"),  # odd width
        (lambda: raw_to_rgb("rgb8", 100_000, 100_000, 300_000, b""), "size"),  # huge header, no bytes
        (lambda: raw_to_rgb("rgb8", 0, H, 0, b""), "size"),
        (lambda: compressed_to_rgb("tiff", b"II*\x00"), "encoding"),
        (lambda: compressed_to_rgb("jpeg", b"\xff\xd8\xff\xe0garbage"), "decode"),
        (lambda: compressed_to_rgb("png", png_header_claiming(60_000, 60_000) + bytes(100)), "size"),  # a PNG bomb
        (lambda: compressed_to_rgb("png", png_header_claiming(32, 32) + bytes(100)), "decode"),
    ],
)
def test_bad_frames_raise_frame_error_with_a_kind(call, kind) -> None:
    with pytest.raises(FrameError) as info:
        call()
    assert info.value.kind == kind, str(info.value)


def test_max_frame_pixels_takes_8k() -> None:
    assert MAX_FRAME_PIXELS >= 7680 * 4320
