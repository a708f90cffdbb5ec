"""Scripted code cells for sort_into_bowls, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the objects' colours, then the blocks' bowl, then the cylinders' bowl.
2. Park both arms out at the table's sides and find the bowls and the objects by colour (lib/colour_objects.py: a
   hue/saturation mask of the rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks
   closer at blobs the head camera cannot measure). The bowls' segment centres are good to ~5 mm.
3. Tell blocks from cylinders by the top face's outline (footprint_xy): a square fills its smallest enclosing
   rectangle (ratio ~0.97), a circle fills pi/4 of it (~0.79); where that is unclear, the height decides (the
   cylinders stand ~5.5 cm, the blocks ~4 cm).
4. Where two objects go into one bowl, the first is dropped 2.4 cm behind the bowl's centre (towards the robot) and
   the second 2.4 cm beyond it, side by side; a single object goes to the centre.
5. Each object: picked from above by the arm on its side (the other arm steps aside; fingers opened to ~7.5 cm,
   off the neighbours), lifted so its underside clears the bowl rims and anything standing in a bowl, carried over
   its drop point with a block's faces square to the world axes, lowered until its underside is ~1 cm above the
   rim, released (it drops in), the hand lifted. If that arm cannot reach over the bowl, it sets the object down on
   a free spot in the middle and the other arm takes it on.
6. After each drop the head camera checks the object is not standing on the table outside its bowl; if it is,
   it is picked and dropped again.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task sort_into_bowls --seed 0 --agent code_cell --llm replay:examples/cells/sort_into_bowls.py
"""

# %% helpers: find objects by colour, pick and place with either arm
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py

TABLE_Z = measure_table()
named = colours_named()
OBJECT_COLOURS, BLOCK_BOWL, CYLINDER_BOWL = named[:-2], named[-2], named[-1]
BOWL_HEIGHT_M = 0.04  # the bowls' rim above the table (measured tops come out ~1 cm low: the click lands inside)
BOWL_INNER_M = 0.054  # inside radius
OBJECT = {"heights": (0.015, 0.08)}
BOWL = {"heights": (0.015, 0.07), "view_height": 0.25}
SPREAD_M = 0.024  # two objects in one bowl: this far either side of its centre along y
print(robo.task.instruction)
print("objects:", OBJECT_COLOURS, "; blocks ->", BLOCK_BOWL, "bowl; cylinders ->", CYLINDER_BOWL, "bowl")


def squareness(footprint):
    """Area of a top-face outline over that of its smallest enclosing rectangle: ~1 for a square, ~0.79 a circle."""
    outline = np.asarray(footprint, np.float32)
    (_, _), (w, h), _ = cv2.minAreaRect(outline)
    return float(cv2.contourArea(outline) / max(w * h, 1e-9))


def kind_of(seg):
    fill = squareness(seg.footprint_xy)
    if fill > 0.93:
        return "block"
    if fill < 0.86:
        return "cylinder"
    return "cylinder" if seg.height_m > 0.047 else "block"


# %% find the bowls and the objects, sort them into the bowls' drop points
park()
bowls = {colour: locate(colour, **BOWL) for colour in (BLOCK_BOWL, CYLINDER_BOWL)}
for colour, seg in bowls.items():
    print(colour, "bowl:", None if seg is None else np.round(seg.world_xyz, 3))
objects = {colour: locate(colour, **OBJECT) for colour in OBJECT_COLOURS}
jobs = []  # (colour, segment, bowl colour)
for colour, seg in objects.items():
    if seg is None:
        print(colour, "object: not found")
        continue
    kind = kind_of(seg)
    print(
        f"{colour}: {kind} (fill {squareness(seg.footprint_xy):.3f}, height {seg.height_m:.3f}) at "
        f"{np.round(seg.world_xyz, 3)}"
    )
    jobs.append((colour, seg, BLOCK_BOWL if kind == "block" else CYLINDER_BOWL))
jobs.sort(key=lambda job: job[1].world_xyz[0])  # left to right


def drop_points(bowl_colour):
    """Drop points for the objects going into one bowl, in order."""
    centre = np.array(bowls[bowl_colour].world_xyz[:2])
    count = sum(1 for job in jobs if job[2] == bowl_colour)
    if count <= 1:
        return [tuple(centre)]
    return [tuple(centre + (0.0, -SPREAD_M)), tuple(centre + (0.0, SPREAD_M))] + [tuple(centre)] * (count - 2)


DROPS = {colour: drop_points(colour) for colour in bowls if bowls[colour] is not None}
print("drop points:", {c: [np.round(p, 3) for p in points] for c, points in DROPS.items()})


# %% put each object into its bowl, checking each drop
CLEAR_Z = TABLE_Z + 0.075  # carry the underside over rims (4 cm) and objects standing in a bowl (~6.3 cm)
# Table points both arms reach (best around (0, -0.25)), for an object its arm cannot carry over its bowl: the other
# arm takes it on there.
MIDDLE_SPOTS = [(x, y) for x in (0.0, -0.05, 0.05, -0.1, 0.1, -0.14, 0.14) for y in (-0.17, -0.21, -0.25, -0.29, -0.32)]


def drop(arm, point, below):
    """Carry the held object over ``point`` (or a little towards the arm's side if that is out of reach), lower it
    until its underside is ~1 cm above the rim, open and lift the hand; False if no point could be reached (the
    object is still held)."""
    inward = -0.02 if arm == "left" else 0.02
    points = [point, (point[0] + inward, point[1]), (point[0] + inward, point[1] - 0.02)]
    # Far across, the wrist reaches only some turns about the vertical: square first, then 45 and 90 deg either way.
    square = square_quat(arm)
    for turn in (0.0, math.pi / 4, -math.pi / 4, math.pi / 2, -math.pi / 2):
        xy = carry_over(arm, points, CLEAR_Z + below, turn_quat(square, turn))
        if xy is not None:
            break
    else:
        return False
    release_z = TABLE_Z + BOWL_HEIGHT_M + 0.012 + below
    print("  lower:", robo.move_to(arm, (xy[0], xy[1], release_z)))
    print("  release:", robo.release(arm))
    if not robo.done:
        print("  lift away:", robo.move_to(arm, (xy[0], xy[1], CLEAR_Z + below)))
    return True


def middle_spot(colour):
    """A free table point both arms reach: clear of the bowls and the other objects, nearest the middle."""
    bowl_xys = [seg.world_xyz[:2] for seg in bowls.values() if seg is not None]
    object_xys = [seg.world_xyz[:2] for c, seg, _ in jobs if c != colour]

    def room(p):
        return min(
            min((math.dist(p, b) - 0.1 for b in bowl_xys), default=1.0),
            min((math.dist(p, o) - 0.06 for o in object_xys), default=1.0),
        )

    free = [p for p in MIDDLE_SPOTS if room(p) >= 0]
    return min(free, key=lambda p: math.hypot(p[0], p[1] + 0.25)) if free else max(MIDDLE_SPOTS, key=room)


def into_bowl(colour, seg, point):
    """Pick the object and drop it into its bowl at ``point`` (through a spot in the middle, to the other arm, when
    the picking arm cannot carry it there); the arm that dropped it, or None."""

    def place(arm, below):
        return drop(arm, point, below)

    carry_m = CLEAR_Z - TABLE_Z
    return relay(colour, seg, place, [middle_spot(colour)], CLEAR_Z + 0.03, carry_m, OBJECT["heights"], squared=False)


def outside(colour, bowl_colour):
    """The object, if the head camera sees it standing on the table away from its bowl."""
    seg, _ = find(colour, ("head",), (0.015, 0.065))
    if seg is not None and math.dist(seg.world_xyz[:2], bowls[bowl_colour].world_xyz[:2]) > BOWL_INNER_M + 0.01:
        return seg
    return None


for colour, seg, bowl_colour in jobs:
    if robo.done or robo.steps_left < 60 or bowl_colour not in DROPS:
        break
    point = DROPS[bowl_colour].pop(0)
    for _attempt in range(3):
        print(f"{colour} -> {bowl_colour} bowl at {np.round(point, 3)}")
        arm = into_bowl(colour, seg, point)
        print("dropped with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done or robo.steps_left < 60:
            break
        step_aside(arm or arm_for(seg.world_xyz))
        missed = outside(colour, bowl_colour)
        if missed is None and arm is not None:
            break
        if missed is None:
            park()
            missed = locate(colour, **OBJECT)
            if missed is None:
                break
        print(colour, "is not in its bowl:", missed)
        seg = missed
print("done:", robo.done, "steps left:", robo.steps_left)
