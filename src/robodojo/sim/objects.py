"""Task objects built from primitives: blocks, cylinders, balls, bowls, plates, flat target pads, push buttons,
fixtures, conveyor belts and lab ware (mugs, test tubes and tube racks).

An :class:`ObjectSpec` is plain data (what a layout holds); :func:`object_parts` resolves it into the primitive shapes
of a scene description (robodojo.sim.description), which the simulators build. A block, pad or button may carry a
``label`` (robodojo.sim.labels: a digit or a picture) shown on its top face.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from robodojo.geometry import Wxyz
from robodojo.sim.description import Rgba, SceneObject, Shape

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.12, 0.12, 1.0),
    "green": (0.15, 0.65, 0.2, 1.0),
    "blue": (0.15, 0.3, 0.85, 1.0),
    "yellow": (0.95, 0.85, 0.1, 1.0),
    "orange": (0.95, 0.5, 0.1, 1.0),
    "purple": (0.5, 0.2, 0.7, 1.0),
    "cyan": (0.1, 0.75, 0.8, 1.0),
    "pink": (0.95, 0.5, 0.7, 1.0),
    "white": (0.92, 0.92, 0.9, 1.0),
    "black": (0.08, 0.08, 0.08, 1.0),
    "brown": (0.45, 0.28, 0.12, 1.0),
    "grey": (0.5, 0.5, 0.52, 1.0),
}

KINDS = (
    "block",
    "cylinder",
    "ball",
    "bowl",
    "plate",
    "pad",
    "slot_fixture",
    "hole_fixture",
    "corner_fixture",
    "button",
    "belt",
    "mug",
    "tube",
    "rack",
)
BOWL_WALL_SEGMENTS = 16
LABELLED_KINDS = ("block", "pad", "button")  # box-shaped: the label covers the top face once
# A block's or button's label is a visual-only decal this thick on its top face (MuJoCo would paint the image on
# every face of the box itself); a pad is thin enough to carry it directly.
LABEL_DECAL_M = 0.001
# A push button: a square cap floating BUTTON_TRAVEL_M above the table over a dark housing (visual only), held by a
# latch (the cap's joint friction, gravity compensated) until a push of more than BUTTON_LATCH_N moves it; it stays
# where it is pushed, down to the table at most. Layouts keep the cap's rest position, so a press is the cap's
# drop below it.
BUTTON_TRAVEL_M = 0.008
BUTTON_LATCH_N = 2.0
BUTTON_HOUSING_MARGIN_M = 0.003  # the housing shows this far around the cap
BUTTON_HOUSING_RGBA = (0.18, 0.18, 0.2, 1.0)
# Fixtures: static bodies of box geoms (clamped to the table: they never move). ``size_m`` is (outer x, outer y,
# opening x, opening y, height) full extents in the fixture's frame, the opening centred; origin at the geometric
# centre. A slot fixture is a tray: a floor, and walls around a pocket with a notch in the middle of each x wall
# for the fingers of a gripper holding a block across its x faces; a hole fixture is a frame around a through hole;
# a corner fixture is an L of two walls along its -x and -y sides, the opening the open part in +x, +y.
FIXTURE_KINDS = ("slot_fixture", "hole_fixture", "corner_fixture")
SLOT_FLOOR_M = 0.005  # the tray's floor: the pocket's bottom is this far above the table
SLOT_NOTCH_M = 0.034  # length (along y) of the finger notch in each x wall (the ARX X5's fingers are 2 cm wide)
# A conveyor belt: a static slab on the table whose top surface carries what rests on it at the belt's velocity
# (robodojo.sim.dynamics drives the objects: MuJoCo has no moving surfaces). ``size_m`` (length x, width y, height z).
BELT_KINDS = ("belt",)
# Lab ware, each a few primitives so it renders cheaply on a software renderer.
# A mug: ``size_m`` (outer radius, height); a base disc, a ring of MUG_WALL_SEGMENTS wall boxes and a handle of three
# boxes (two arms out of the wall and the grip between them) on its +x side; origin at the base's underside, like a
# bowl's. Proportions of a common 300 ml ceramic mug (8 cm across, 9 cm tall, 5 mm walls).
MUG_WALL_SEGMENTS = 10
MUG_WALL_M = 0.005
MUG_BASE_M = 0.008
MUG_HANDLE_REACH_M = 0.025  # how far the handle's outer face stands out of the wall
MUG_HANDLE_WIDTH_M = 0.012  # across the handle (tangential to the wall)
MUG_HANDLE_BAR_M = 0.008  # thickness of the handle's bars
MUG_HANDLE_SPAN = (0.2, 0.8)  # the handle's arms at these fractions of the height above the base
# A test tube: ``size_m`` (radius, length); a body of ``TUBE_BODY_RGBA`` (clear plastic, rendered opaque: depth
# cameras and segmentation see it) under a cap in the tube's colour, TUBE_CAP_M tall and TUBE_CAP_LIP_M wider than
# the body; origin at its geometric centre. A 16 x 100 mm culture tube.
TUBE_CAP_M = 0.014
TUBE_CAP_LIP_M = 0.001
TUBE_BODY_RGBA = (0.86, 0.9, 0.92, 1.0)
# A tube rack: ``size_m`` (holes, hole side, pitch, width y, height z): a row of square holes along its x axis, in a
# top plate held over a base plate by two end walls, static like a fixture (a rack stands heavy and rubber-footed).
# The holes are RACK_PITCH apart, centred; the top plate is RACK_PLATE_M thick, the base plate RACK_BASE_M.
RACK_PLATE_M = 0.01
RACK_BASE_M = 0.008


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a layout. ``size_m``: block (x, y, z) full extents; cylinder/plate/bowl/mug/tube/pad/button
    (radius or half side, height; a button's height is its cap's, a tube's is its length); ball (radius,); belt
    (length x, width y, height z); rack (holes, hole side, pitch, width y, height z). ``pos_m`` is the body origin
    at rest (geometric centre; a bowl's or mug's is its base; a button's is its cap's centre, BUTTON_TRAVEL_M above
    the table). ``label``: what the top face of a block, pad or button shows (one of
    robodojo.sim.labels.LABELS), None for a plain face. ``velocity_m_s``: a free object's velocity [m/s, world
    frame] once the layout has settled (a ball rolls with it), or a belt's surface velocity; zero for most."""

    name: str
    kind: str
    color: str
    size_m: tuple[float, ...]
    pos_m: tuple[float, float, float]
    yaw_rad: float = 0.0
    mass_kg: float = 0.08
    label: str | None = None
    velocity_m_s: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def footprint_radius_m(self) -> float:
        if self.kind == "block" or self.kind in FIXTURE_KINDS or self.kind in BELT_KINDS:
            return math.hypot(self.size_m[0], self.size_m[1]) / 2
        if self.kind == "button":
            return (self.size_m[0] + BUTTON_HOUSING_MARGIN_M) * math.sqrt(2)
        if self.kind == "mug":
            return self.size_m[0] + MUG_HANDLE_REACH_M
        if self.kind == "tube":
            return self.size_m[0] + TUBE_CAP_LIP_M
        if self.kind == "rack":
            return math.hypot(rack_length_m(self.size_m), self.size_m[3]) / 2
        return self.size_m[0] if self.kind != "pad" else self.size_m[0] * math.sqrt(2)

    @property
    def height_m(self) -> float:
        return 2 * self.size_m[0] if self.kind == "ball" else self.size_m[-1]

    @property
    def movable(self) -> bool:
        return self.kind not in ("pad", "rack") and self.kind not in FIXTURE_KINDS and self.kind not in BELT_KINDS

    @property
    def moving(self) -> bool:
        """Set in motion by the world: launched with a velocity (a rolling ball) or a belt carrying things."""
        return any(self.velocity_m_s)


def object_rest_z(kind: str, size_m: tuple[float, ...], table_z_m: float) -> float:
    """Height of the body origin of an object resting on the table."""
    if kind in ("bowl", "mug"):  # their origin is the underside of the base
        return table_z_m
    if kind == "button":
        return table_z_m + BUTTON_TRAVEL_M + size_m[-1] / 2
    if kind == "ball":
        return table_z_m + size_m[0]
    return table_z_m + size_m[-1] / 2


def object_parts(obj: ObjectSpec, rgba: Sequence[float] | None = None) -> tuple[SceneObject, ...]:
    """``obj`` as the scene objects it is made of (a push button is its cap and a fixed housing; everything else one
    object), drawn in ``rgba`` (default: its named colour's; a label's white tinted with it)."""
    if obj.label is not None and obj.kind not in LABELLED_KINDS:
        raise ValueError(f"object {obj.name!r}: a {obj.kind} cannot show a label; labelled kinds: {LABELLED_KINDS}")
    if obj.kind not in KINDS:
        raise ValueError(f"unknown object kind {obj.kind!r}; available: {', '.join(KINDS)}")
    color = _rgba(COLORS[obj.color] if rgba is None else rgba)
    half_yaw = obj.yaw_rad / 2
    quat = (math.cos(half_yaw), 0.0, 0.0, math.sin(half_yaw))
    latch_n = 0.0
    shapes: tuple[Shape, ...]
    extra: tuple[SceneObject, ...] = ()
    if obj.kind == "pad":  # a flat decal: no contact, fixed
        s, h = obj.size_m
        shapes = (Shape(f"{obj.name}_geom", "box", (2 * s, 2 * s, h), color, contact="none", label=obj.label),)
    elif obj.kind in FIXTURE_KINDS:
        shapes = tuple(
            Shape(f"{obj.name}_part{i}", "box", tuple(2 * h for h in half), color, pos_m=pos)
            for i, (half, pos) in enumerate(fixture_boxes(obj.kind, obj.size_m))
        )
    elif obj.kind in BELT_KINDS:
        shapes = (Shape(f"{obj.name}_geom", "box", obj.size_m, color, contact="frictionless"),)
    elif obj.kind == "block":
        shapes = (
            Shape(f"{obj.name}_geom", "box", obj.size_m, color, mass_kg=obj.mass_kg),
            *_label_decal(obj, (obj.size_m[0], obj.size_m[1]), obj.size_m[2] / 2, color),
        )
    elif obj.kind == "button":
        s, h = obj.size_m
        latch_n = BUTTON_LATCH_N
        shapes = (
            Shape(f"{obj.name}_geom", "box", (2 * s, 2 * s, h), color, mass_kg=obj.mass_kg),
            *_label_decal(obj, (2 * s, 2 * s), h / 2, color),
        )
        extra = (_button_housing(obj, quat),)
    elif obj.kind in ("cylinder", "plate"):
        shapes = (Shape(f"{obj.name}_geom", "cylinder", obj.size_m, color, mass_kg=obj.mass_kg),)
    elif obj.kind == "ball":
        shapes = (Shape(f"{obj.name}_geom", "sphere", obj.size_m[:1], color, contact="rolling", mass_kg=obj.mass_kg),)
    elif obj.kind == "mug":
        shapes = _mug_shapes(obj, color)
    elif obj.kind == "tube":
        shapes = _tube_shapes(obj, color)
    elif obj.kind == "rack":
        shapes = tuple(
            Shape(f"{obj.name}_part{i}", "box", tuple(2 * h for h in half), color, pos_m=pos)
            for i, (half, pos) in enumerate(rack_boxes(obj.size_m))
        )
    else:  # bowl
        shapes = _bowl_shapes(obj, color)
    main = SceneObject(
        name=obj.name,
        kind=obj.kind,
        pos_m=obj.pos_m,
        quat_wxyz=quat,
        shapes=shapes,
        movable=obj.movable,
        latch_force_n=latch_n,
        velocity_m_s=obj.velocity_m_s,
    )
    return (main, *extra)


def _rgba(values: Sequence[float]) -> Rgba:
    r, g, b, a = (float(v) for v in values)
    return (r, g, b, a)


def _label_decal(obj: ObjectSpec, size_xy: tuple[float, float], top_z: float, rgba: Rgba) -> tuple[Shape, ...]:
    """The label's decal on the top face (at ``top_z`` in the object's frame, ``size_xy`` its sides): massless and
    without contacts."""
    if obj.label is None:
        return ()
    return (
        Shape(
            f"{obj.name}_label",
            "box",
            (*size_xy, LABEL_DECAL_M),
            rgba,
            pos_m=(0.0, 0.0, top_z + LABEL_DECAL_M / 2),
            contact="none",
            mass_kg=0.0,
            label=obj.label,
        ),
    )


def _button_housing(obj: ObjectSpec, quat: Wxyz) -> SceneObject:
    """The dark housing a button's cap floats over: fixed to the table, visual only."""
    s, h = obj.size_m
    x, y, z = obj.pos_m
    table_z = z - h / 2 - BUTTON_TRAVEL_M
    side = 2 * (s + BUTTON_HOUSING_MARGIN_M)
    housing = Shape(f"{obj.name}_housing", "box", (side, side, BUTTON_TRAVEL_M), BUTTON_HOUSING_RGBA, contact="none")
    return SceneObject(
        name=f"{obj.name}_housing",
        kind="button_housing",
        pos_m=(x, y, table_z + BUTTON_TRAVEL_M / 2),
        quat_wxyz=quat,
        shapes=(housing,),
        movable=False,
    )


def _bowl_shapes(obj: ObjectSpec, rgba: Rgba) -> tuple[Shape, ...]:
    """An open bowl: a base disc and a ring of wall boxes, origin at the centre of the base's underside."""
    radius, height = obj.size_m
    wall = 0.006
    base_h = 0.008
    n = BOWL_WALL_SEGMENTS
    part_mass = obj.mass_kg / (n + 2)
    base = Shape(
        f"{obj.name}_base", "cylinder", (radius - wall / 2, base_h), rgba, pos_m=(0.0, 0.0, base_h / 2),
        mass_kg=2 * part_mass,
    )  # fmt: skip
    seg_len = 2 * (radius * math.tan(math.pi / n) + 0.001)
    walls = []
    for i in range(n):
        a = 2 * math.pi * i / n
        walls.append(
            Shape(
                f"{obj.name}_wall{i}",
                "box",
                (wall, seg_len, height - base_h),
                rgba,
                pos_m=(
                    (radius - wall / 2) * math.cos(a),
                    (radius - wall / 2) * math.sin(a),
                    base_h + (height - base_h) / 2,
                ),
                quat_wxyz=(math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)),
                mass_kg=part_mass,
            )
        )
    return (base, *walls)


def fixture_boxes(
    kind: str, size_m: tuple[float, ...]
) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """(half extents, centre) of each box of a fixture, in its frame (origin at its geometric centre)."""
    outer_x, outer_y, open_x, open_y, height = size_m
    if kind == "corner_fixture":
        thick_x, thick_y = outer_x - open_x, outer_y - open_y
        return [
            ((thick_x / 2, outer_y / 2, height / 2), (-outer_x / 2 + thick_x / 2, 0.0, 0.0)),
            ((open_x / 2, thick_y / 2, height / 2), (outer_x / 2 - open_x / 2, -outer_y / 2 + thick_y / 2, 0.0)),
        ]
    wall_x, wall_y = (outer_x - open_x) / 2, (outer_y - open_y) / 2
    floor = SLOT_FLOOR_M if kind == "slot_fixture" else 0.0
    wall_h = height - floor
    wall_z = -height / 2 + floor + wall_h / 2
    x_wall, y_wall = open_x / 2 + wall_x / 2, open_y / 2 + wall_y / 2
    boxes = [((outer_x / 2, wall_y / 2, wall_h / 2), (0.0, s * y_wall, wall_z)) for s in (-1, 1)]
    if kind == "hole_fixture":
        boxes += [((wall_x / 2, open_y / 2, wall_h / 2), (s * x_wall, 0.0, wall_z)) for s in (-1, 1)]
    elif kind == "slot_fixture":
        boxes.append(((outer_x / 2, outer_y / 2, floor / 2), (0.0, 0.0, -height / 2 + floor / 2)))
        seg_half = (open_y / 2 - SLOT_NOTCH_M / 2) / 2
        seg_y = (open_y / 2 + SLOT_NOTCH_M / 2) / 2
        boxes += [
            ((wall_x / 2, seg_half, wall_h / 2), (sx * x_wall, sy * seg_y, wall_z)) for sx in (-1, 1) for sy in (-1, 1)
        ]
    else:
        raise ValueError(f"unknown fixture kind {kind!r}; available: {', '.join(FIXTURE_KINDS)}")
    return boxes


def _mug_shapes(obj: ObjectSpec, rgba: Rgba) -> tuple[Shape, ...]:
    """A mug: a base disc, a ring of wall boxes and a handle on +x; origin at the centre of the base's underside.
    The wall boxes overlap a little at their edges so the ring has no gaps a fingertip could catch in."""
    radius, height = obj.size_m
    n = MUG_WALL_SEGMENTS
    part_mass = obj.mass_kg / (n + 5)  # the base counts twice, the handle's three bars once each
    base = Shape(
        f"{obj.name}_base", "cylinder", (radius - MUG_WALL_M / 2, MUG_BASE_M), rgba, pos_m=(0.0, 0.0, MUG_BASE_M / 2),
        mass_kg=2 * part_mass,
    )  # fmt: skip
    wall_h = height - MUG_BASE_M
    seg_len = 2 * radius * math.tan(math.pi / n) + 0.001
    mid = radius - MUG_WALL_M / 2
    walls = tuple(
        Shape(
            f"{obj.name}_wall{i}",
            "box",
            (MUG_WALL_M, seg_len, wall_h),
            rgba,
            pos_m=(mid * math.cos(a), mid * math.sin(a), MUG_BASE_M + wall_h / 2),
            quat_wxyz=(math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)),
            mass_kg=part_mass,
        )
        for i, a in ((i, 2 * math.pi * i / n) for i in range(n))
    )
    # The handle: two arms from inside the wall out to the grip, and the grip joining their outer ends.
    bar, width = MUG_HANDLE_BAR_M, MUG_HANDLE_WIDTH_M
    low, high = (MUG_BASE_M + f * wall_h for f in MUG_HANDLE_SPAN)
    arm_in, arm_out = radius - MUG_WALL_M / 2, radius + MUG_HANDLE_REACH_M
    arm_x = (arm_in + arm_out) / 2
    handle = (
        *(
            Shape(
                f"{obj.name}_handle{i}",
                "box",
                (arm_out - arm_in, width, bar),
                rgba,
                pos_m=(arm_x, 0.0, z),
                mass_kg=part_mass,
            )
            for i, z in enumerate((low, high))
        ),
        Shape(
            f"{obj.name}_handle2",
            "box",
            (bar, width, high - low + bar),
            rgba,
            pos_m=(arm_out - bar / 2, 0.0, (low + high) / 2),
            mass_kg=part_mass,
        ),
    )
    return (base, *walls, *handle)


def _tube_shapes(obj: ObjectSpec, rgba: Rgba) -> tuple[Shape, ...]:
    """A test tube: its clear body and the coloured cap on top; origin at the tube's geometric centre."""
    radius, length = obj.size_m
    body_len = length - TUBE_CAP_M
    body_mass = obj.mass_kg * 0.7  # the cap is the lighter part
    return (
        Shape(
            f"{obj.name}_body",
            "cylinder",
            (radius, body_len),
            TUBE_BODY_RGBA,
            pos_m=(0.0, 0.0, -TUBE_CAP_M / 2),
            mass_kg=body_mass,
        ),
        Shape(
            f"{obj.name}_cap",
            "cylinder",
            (radius + TUBE_CAP_LIP_M, TUBE_CAP_M),
            rgba,
            pos_m=(0.0, 0.0, length / 2 - TUBE_CAP_M / 2),
            mass_kg=obj.mass_kg - body_mass,
        ),
    )


def rack_length_m(size_m: tuple[float, ...]) -> float:
    """A rack's length along its row of holes: the holes at their pitch, with a bar as wide as those between holes
    at each end."""
    holes, hole, pitch = size_m[:3]
    return holes * pitch + (pitch - hole)


def rack_hole_centres(size_m: tuple[float, ...]) -> list[tuple[float, float]]:
    """(x, y) of each hole's centre in the rack's frame, from -x to +x."""
    holes, _, pitch = size_m[:3]
    n = int(holes)
    return [((i - (n - 1) / 2) * pitch, 0.0) for i in range(n)]


def rack_boxes(size_m: tuple[float, ...]) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """(half extents, centre) of each box of a tube rack in its frame (origin at its geometric centre): the base
    plate, two end walls from the base to the top, the top plate's two long strips and the bars between its
    holes."""
    holes, hole, pitch, width, height = size_m
    if holes != int(holes) or holes < 1 or not 0 < hole < pitch or hole >= width:
        raise ValueError(f"a rack needs a whole number of holes, each narrower than the pitch and width: {size_m}")
    length = rack_length_m(size_m)
    bar = pitch - hole
    top_z = height / 2 - RACK_PLATE_M / 2
    strip = (width - hole) / 2
    wall_h = height - RACK_BASE_M
    boxes = [
        ((length / 2, width / 2, RACK_BASE_M / 2), (0.0, 0.0, -height / 2 + RACK_BASE_M / 2)),
        *(((bar / 2, width / 2, wall_h / 2), (s * (length / 2 - bar / 2), 0.0, -height / 2 + RACK_BASE_M + wall_h / 2))
          for s in (-1, 1)),
        *(((length / 2 - bar, strip / 2, RACK_PLATE_M / 2), (0.0, s * (hole / 2 + strip / 2), top_z)) for s in (-1, 1)),
    ]  # fmt: skip
    centres = [x for x, _ in rack_hole_centres(size_m)]
    boxes += [
        ((bar / 2, hole / 2, RACK_PLATE_M / 2), ((a + b) / 2, 0.0, top_z)) for a, b in itertools.pairwise(centres)
    ]
    return boxes
