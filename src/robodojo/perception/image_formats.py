"""Camera frames as drivers send them -> HxWx3 uint8 RGB, with OpenCV doing the pixel work.

Raw frames (sensor_msgs/Image's fields) in the encodings of sensor_msgs/image_encodings that colour cameras use:
rgb8, bgr8, rgba8, bgra8, mono8, packed YUV 4:2:2 (``yuyv`` / deprecated ``yuv422_yuy2``: Y0 U Y1 V; ``uyvy`` /
deprecated ``yuv422``: U Y0 V Y1) and 8-bit Bayer mosaics (bayer_rggb8, bayer_bggr8, bayer_gbrg8, bayer_grbg8).
Compressed frames (sensor_msgs/CompressedImage) in JPEG or PNG, with ``format`` as image_transport's compressed
plugin writes it (``"rgb8; jpeg compressed bgr8"``: the source encoding, then what the bytes hold) or a bare
``"jpeg"`` / ``"png"``.

YUV is read as V4L2 and UVC cameras send it: ITU-R BT.601, limited range (Y 16..235), which is what OpenCV's
COLOR_YUV2RGB_YUYV / _UYVY assume. Bayer mosaics are demosaiced bilinearly (cv2.cvtColor); the ROS pattern names the
top-left 2x2 block, OpenCV's names the second row's pair, hence the table below (cv_bridge maps them the same way).

A frame that is not what its header says (rows shorter than the width needs, fewer bytes than step x height, an
unknown encoding, a size beyond :data:`MAX_FRAME_PIXELS`, compressed bytes that do not decode) raises
:class:`FrameError` with a ``kind`` for counting and a message for the log; nothing here trusts the header's numbers
before checking them against the bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import InvalidCommandError

#: The largest frame taken: 8K UHD (7680x4320), the largest video format cameras deliver; a larger header is a
#: corrupt or hostile frame, refused before any buffer of that size is made.
MAX_FRAME_PIXELS = 7680 * 4320
#: The largest compressed frame taken [bytes]: an 8K frame as PNG at 3 bytes per pixel, uncompressed, is below this.
MAX_COMPRESSED_BYTES = 3 * MAX_FRAME_PIXELS + (1 << 20)


class FrameError(InvalidCommandError):
    """A frame that cannot be taken; ``kind`` groups the reasons for counting (encoding, size, data, decode)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class _Layout:
    """How a raw encoding lays out pixels: bytes per pixel and its conversion to RGB (None: already RGB)."""

    bytes_per_pixel: int
    to_rgb: Callable[[NDArray[np.uint8]], NDArray[np.uint8]] | None
    even_width: bool = False  # 4:2:2 packs two pixels into one 4-byte group


def _cvt(code: int) -> Callable[[NDArray[np.uint8]], NDArray[np.uint8]]:
    return lambda a: cv2.cvtColor(a, code)


_YUYV = _Layout(2, _cvt(cv2.COLOR_YUV2RGB_YUYV), even_width=True)
_UYVY = _Layout(2, _cvt(cv2.COLOR_YUV2RGB_UYVY), even_width=True)
RAW_LAYOUTS: dict[str, _Layout] = {
    "rgb8": _Layout(3, None),
    "bgr8": _Layout(3, _cvt(cv2.COLOR_BGR2RGB)),
    "rgba8": _Layout(4, _cvt(cv2.COLOR_RGBA2RGB)),
    "bgra8": _Layout(4, _cvt(cv2.COLOR_BGRA2RGB)),
    "mono8": _Layout(1, _cvt(cv2.COLOR_GRAY2RGB)),
    "yuyv": _YUYV,
    "yuv422_yuy2": _YUYV,
    "uyvy": _UYVY,
    "yuv422": _UYVY,
    # ROS pattern (top-left 2x2 block, row-major) -> OpenCV's code for it
    "bayer_rggb8": _Layout(1, _cvt(cv2.COLOR_BayerBG2RGB)),
    "bayer_bggr8": _Layout(1, _cvt(cv2.COLOR_BayerRG2RGB)),
    "bayer_gbrg8": _Layout(1, _cvt(cv2.COLOR_BayerGR2RGB)),
    "bayer_grbg8": _Layout(1, _cvt(cv2.COLOR_BayerGB2RGB)),
}
#: Raw encodings taken, for messages and docs.
RAW_ENCODINGS = tuple(RAW_LAYOUTS)
COMPRESSED_CODECS = ("jpeg", "png")


def check_frame_size(width: int, height: int) -> None:
    """Refuse an empty frame or one beyond MAX_FRAME_PIXELS (kind ``size``)."""
    if width <= 0 or height <= 0 or width * height > MAX_FRAME_PIXELS:
        raise FrameError("size", f"a {width}x{height} frame is outside 1x1 .. {MAX_FRAME_PIXELS} pixels")


def raw_to_rgb(encoding: str, width: int, height: int, step: int, data: bytes | bytearray | memoryview) -> NDArray:
    """A raw frame (sensor_msgs/Image's fields; rows may be padded to ``step`` bytes) as an HxWx3 RGB array.

    Always a new array: the message's buffer is never aliased.
    """
    layout = RAW_LAYOUTS.get(encoding)
    if layout is None:
        raise FrameError(
            "encoding", f"image encoding {encoding!r} is not supported; encodings: {', '.join(RAW_ENCODINGS)}"
        )
    check_frame_size(width, height)
    if layout.even_width and width % 2:
        raise FrameError("data", f"a {encoding} frame needs an even width, got {width}")
    row_bytes = width * layout.bytes_per_pixel
    if step < row_bytes:
        raise FrameError("data", f"{encoding} frame {width}x{height}: step {step} is shorter than a row ({row_bytes})")
    if len(data) < step * height:
        raise FrameError(
            "data", f"{encoding} frame {width}x{height} with step {step} needs {step * height} bytes, got {len(data)}"
        )
    rows = np.frombuffer(data, dtype=np.uint8, count=step * height).reshape(height, step)[:, :row_bytes]
    pixels = rows if layout.bytes_per_pixel == 1 else rows.reshape(height, width, layout.bytes_per_pixel)
    if layout.to_rgb is None:
        return pixels.copy()
    return layout.to_rgb(np.ascontiguousarray(pixels))


def compressed_codec(fmt: str) -> tuple[str, bool]:
    """The codec of a CompressedImage ``format`` and whether its bytes hold RGB (not OpenCV's BGR) order.

    image_transport writes ``"<source encoding>; <codec> compressed <stored encoding>"``; the stored encoding is bgr8
    for colour (what OpenCV encodes) unless a publisher compressed rgb8 bytes as they were.
    """
    text = fmt.strip().lower()
    if ";" in text:
        _, _, text = text.partition(";")
    words = text.replace("compressed", " ").split()
    codec = next((w for w in words if w in COMPRESSED_CODECS or w in ("jpg", "mjpeg")), None)
    if codec is None:
        raise FrameError(
            "encoding", f"compressed format {fmt!r} is not supported; codecs: {', '.join(COMPRESSED_CODECS)}"
        )
    stored = words[-1] if words and words[-1] != codec else "bgr8"
    return ("png" if codec == "png" else "jpeg"), stored in ("rgb8", "rgba8")


def compressed_size(data: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR or a JPEG's start-of-frame header, without decoding; None if neither."""
    head = bytes(data[:33])
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24 and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        return width, height
    if not head.startswith(b"\xff\xd8"):
        return None
    buf = memoryview(data)
    i = 2
    while i + 4 <= len(buf):
        if buf[i] != 0xFF:
            return None
        marker = buf[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = (buf[i + 2] << 8) | buf[i + 3]
        # SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if i + 9 > len(buf):
                return None
            height = (buf[i + 5] << 8) | buf[i + 6]
            width = (buf[i + 7] << 8) | buf[i + 8]
            return width, height
        i += 2 + length
    return None


def compressed_to_rgb(fmt: str, data: bytes | bytearray | memoryview) -> NDArray[np.uint8]:
    """A CompressedImage (JPEG or PNG) as an HxWx3 RGB array; the header's size is checked before decoding."""
    _, rgb_order = compressed_codec(fmt)
    if len(data) > MAX_COMPRESSED_BYTES:
        raise FrameError("size", f"a compressed frame of {len(data)} bytes is over {MAX_COMPRESSED_BYTES}")
    size = compressed_size(data)
    if size is None:
        raise FrameError("decode", f"compressed frame ({fmt!r}, {len(data)} bytes) has no PNG or JPEG header")
    check_frame_size(*size)
    bgr = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FrameError("decode", f"compressed frame ({fmt!r}, {len(data)} bytes) does not decode")
    return bgr if rgb_order else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
