"""An episode at a glance: the first, middle and last frame of each camera, read from the record's episode.mcap
(:func:`robodojo.episodes.mcap_record.camera_frames`, the one reader of that file) and written as small JPEG files
next to the report (:func:`write_strip`).

Every agent style records its frames there: move_eef each observation's cameras, code cells and the MCP robo tools
the pictures they took, the shell harness what ``robo obs`` rendered, and, in process, every camera at
config/record.yaml's rate whatever the agent did. Thumbnails rather than the record's own JPEGs or base64 in the
page: a strip is three small files per camera (a few kilobytes each), so a campaign page of many episodes stays light.
An episode whose record holds no frame (no episode.mcap, recorded with ``--no-mcap``, a try killed before its first
picture) gets a strip that says why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from robodojo.campaigns.report.settings import StripSettings
from robodojo.episodes.mcap_record import MCAP_FILE, NS_PER_S, camera_frames
from robodojo.episodes.record import RecordMeta
from robodojo.errors import RobodojoError

POSITIONS = ("first", "middle", "last")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class StripFrame:
    """One thumbnail of a strip: the ``camera``, where in the episode (``position``: first, middle, last), its
    simulated time [s], the JPEG written, its alt text and its size [px]."""

    camera: str
    position: str
    stamp_s: float
    path: Path
    alt: str
    width_px: int
    height_px: int


@dataclass(frozen=True)
class ImageStrip:
    """An episode's strip: ``frames`` by camera, then position; ``note`` says why there are none, or that the
    file was cut short and the strip stops there ("" otherwise)."""

    frames: tuple[StripFrame, ...]
    note: str = ""

    @property
    def cameras(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.camera for f in self.frames))


def strip_cameras(meta: RecordMeta) -> tuple[str, ...]:
    """The cameras to look for in a record: the robot's (config/robots/<robot>.yaml), then any other the agent
    took (meta.json's ``cameras``); the robot's alone when the record names none, meta's alone for an unknown robot."""
    from robodojo.robots.config import load_robot_config

    try:
        robot = load_robot_config(meta.robot).camera_names if meta.robot else ()
    except RobodojoError:  # a record of a robot this checkout does not know
        robot = ()
    return tuple(dict.fromkeys([*robot, *(meta.cameras or ())]))


def _chosen(count: int) -> list[tuple[str, int]]:
    """(position, index) of the first, middle and last of ``count`` frames, each index once."""
    picks = {"first": 0, "middle": (count - 1) // 2, "last": count - 1}
    seen: set[int] = set()
    out = []
    for position in POSITIONS:
        if picks[position] not in seen:
            seen.add(picks[position])
            out.append((position, picks[position]))
    return out


def _thumbnail(jpeg: bytes, settings: StripSettings) -> tuple[bytes, int, int] | None:
    """``jpeg`` scaled down to the thumbnail width (never up) and re-encoded, with its width and height [px]; None
    when it does not decode."""
    data = np.frombuffer(jpeg, np.uint8)
    # JPEG decodes at half size for about the cost of a quarter (libjpeg scales in the DCT), and the resize after it
    # has a quarter of the pixels: a 640 px frame still gives a 240 px thumbnail without upscaling. A frame too small
    # for that is decoded whole.
    image = cv2.imdecode(data, cv2.IMREAD_REDUCED_COLOR_2)
    if image is None or image.shape[1] < settings.thumbnail_width_px:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image is None:
        return None
    height, width = image.shape[:2]
    if width > settings.thumbnail_width_px:
        size = (settings.thumbnail_width_px, max(1, round(height * settings.thumbnail_width_px / width)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)  # INTER_AREA: no aliasing when shrinking
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, settings.jpeg_quality])
    return (data.tobytes(), image.shape[1], image.shape[0]) if ok else None


def write_strip(
    record_folder: Path, meta: RecordMeta, out_dir: Path, label: str, settings: StripSettings
) -> ImageStrip:
    """Read the frames of ``record_folder``'s episode.mcap and write the strip's thumbnails into ``out_dir``
    (created when there is one), named ``<camera>-<position>.jpg``; ``label`` names the episode in the alt texts.
    Never raises on a record: what could not be read is said in the strip's note."""
    path = record_folder / MCAP_FILE
    if not path.is_file():
        return ImageStrip((), f"no {MCAP_FILE} in the record: no frames to show")
    cameras: Sequence[str] = strip_cameras(meta)
    frames: dict[str, list[tuple[int, bytes]]] = {}
    note = ""
    try:
        for camera, stamp_ns, jpeg in camera_frames(path, cameras):
            frames.setdefault(camera, []).append((stamp_ns, jpeg))
    except Exception as exc:  # a try killed mid-write leaves a file cut short: the frames before the cut still show
        note = f"{MCAP_FILE} could not be read to its end ({type(exc).__name__}): the strip stops at the cut"
    written = []
    for camera in [c for c in cameras if c in frames]:
        for position, index in _chosen(len(frames[camera])):
            stamp_ns, jpeg = frames[camera][index]
            small = _thumbnail(jpeg, settings)
            if small is None:
                continue
            data, width, height = small
            out_dir.mkdir(parents=True, exist_ok=True)
            file = out_dir / f"{_UNSAFE.sub('_', camera)}-{position}.jpg"
            file.write_bytes(data)
            stamp_s = stamp_ns / NS_PER_S
            alt = f"{camera} camera, {position} frame of {label}, at {stamp_s:.1f} s of simulated time"
            written.append(StripFrame(camera, position, stamp_s, file, alt, width, height))
    if not written:
        return ImageStrip((), note or f"{MCAP_FILE} holds no camera frame: nothing to show")
    return ImageStrip(tuple(written), note)


__all__ = ["POSITIONS", "ImageStrip", "StripFrame", "strip_cameras", "write_strip"]
