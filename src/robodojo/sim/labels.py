"""Label textures for task objects: a digit or a simple picture, drawn procedurally, shown on an object's top face.

Tasks of the "open" axis whose choice depends on what an object shows (press the button showing 7, pick the block
with the card's picture) give an :class:`~robodojo.sim.objects.ObjectSpec` a ``label``: one of :data:`DIGITS` or
:data:`SYMBOLS`. The image is drawn here with OpenCV (no downloaded assets): a black glyph on white, inside a white
margin. robodojo.sim.objects shows it on a thin decal over the top face (a textured box would show the image on
every face) drawn in the object's colour, so the background takes the object's colour and the glyph stays black.

Orientation: :func:`apply_label` maps image row 0 to the face's +y edge and column 0 to its -x edge (the geom's own
frame), so a label on an unrotated object reads upright from the robot's side of the table (looking along +y).
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import mujoco
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import UnknownNameError

LABEL_PX = 128  # side of the square label image
MARGIN_PX = 20  # white border kept clear of the glyph
GLYPH_STROKE_PX = 11  # line thickness of digits, rings and crosses
DIGITS = tuple("0123456789")
SYMBOLS = ("circle", "ring", "triangle", "star", "cross")
LABELS = DIGITS + SYMBOLS
DIGIT_FONT = cv2.FONT_HERSHEY_SIMPLEX
STAR_POINTS = 5
STAR_INNER_RATIO = 0.45  # inner radius of the star over its outer radius


def label_material_name(label: str) -> str:
    return f"label_{label}"


@lru_cache(maxsize=len(LABELS))
def label_image(label: str) -> NDArray[np.uint8]:
    """The label's LABEL_PX x LABEL_PX x 3 image (RGB): a black glyph centred on white. Deterministic."""
    if label in DIGITS:
        gray = _digit(label)
    elif label in SYMBOLS:
        gray = _symbol(label)
    else:
        raise UnknownNameError("label", label, LABELS)
    rgb = np.repeat(gray[..., None], 3, axis=2)
    rgb.setflags(write=False)
    return rgb


def _blank() -> NDArray[np.uint8]:
    return np.full((LABEL_PX, LABEL_PX), 255, np.uint8)


def _digit(digit: str) -> NDArray[np.uint8]:
    """The digit in DIGIT_FONT, as tall as the space inside the margin allows, centred."""
    image = _blank()
    room = LABEL_PX - 2 * MARGIN_PX
    (w, h), _ = cv2.getTextSize(digit, DIGIT_FONT, 1.0, GLYPH_STROKE_PX)
    scale = room / max(w, h)
    (w, h), _ = cv2.getTextSize(digit, DIGIT_FONT, scale, GLYPH_STROKE_PX)
    origin = ((LABEL_PX - w) // 2, (LABEL_PX + h) // 2)  # putText's origin is the baseline's left end
    cv2.putText(image, digit, origin, DIGIT_FONT, scale, 0, GLYPH_STROKE_PX, cv2.LINE_AA)
    return image


def _symbol(symbol: str) -> NDArray[np.uint8]:
    image = _blank()
    c = LABEL_PX / 2
    r = LABEL_PX / 2 - MARGIN_PX
    if symbol == "circle":
        cv2.circle(image, _px((c, c)), round(r * 0.9), 0, cv2.FILLED, cv2.LINE_AA)
    elif symbol == "ring":
        cv2.circle(image, _px((c, c)), round(r - GLYPH_STROKE_PX / 2), 0, GLYPH_STROKE_PX, cv2.LINE_AA)
    elif symbol == "triangle":  # pointing up (to the image's row 0)
        corners = [(c + r * math.sin(a), c + r * 0.1 - r * math.cos(a)) for a in (0, 2 * math.pi / 3, 4 * math.pi / 3)]
        cv2.fillPoly(image, [np.array([_px(p) for p in corners], np.int32)], 0, cv2.LINE_AA)
    elif symbol == "star":
        points = []
        for i in range(2 * STAR_POINTS):
            radius = r if i % 2 == 0 else r * STAR_INNER_RATIO
            a = math.pi * i / STAR_POINTS
            points.append(_px((c + radius * math.sin(a), c + r * 0.05 - radius * math.cos(a))))
        cv2.fillPoly(image, [np.array(points, np.int32)], 0, cv2.LINE_AA)
    elif symbol == "cross":
        half = round(r * 0.28)
        lo, hi = round(c - r), round(c + r)
        cv2.rectangle(image, (lo, round(c) - half), (hi, round(c) + half), 0, cv2.FILLED)
        cv2.rectangle(image, (round(c) - half, lo), (round(c) + half, hi), 0, cv2.FILLED)
    else:  # pragma: no cover - SYMBOLS and this function change together
        raise UnknownNameError("symbol", symbol, SYMBOLS)
    return image


def _px(point: tuple[float, float]) -> tuple[int, int]:
    return round(point[0]), round(point[1])


def apply_label(spec: mujoco.MjSpec, geom: mujoco.MjsGeom, label: str) -> None:
    """Give ``geom`` (a box: its top face shows the whole image once) the label's material; the texture and the
    material are added to ``spec`` the first time a label is used and shared by every geom showing it."""
    name = label_material_name(label)
    if not any(m.name == name for m in spec.materials):
        image = label_image(label)
        texture = spec.add_texture(
            name=name,
            type=mujoco.mjtTexture.mjTEXTURE_2D,
            width=image.shape[1],
            height=image.shape[0],
            nchannel=3,
        )
        texture.data = image.tobytes()
        material = spec.add_material(name=name)
        material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
        material.texuniform = False  # the image spans the face, whatever its size
        material.texrepeat = [1.0, 1.0]
    geom.material = name
