"""Moving an object with whichever arm of the dual ARX X5 reaches (robo API only): picking it with the arm on its
side or else the other one, set-down points at the edge of an arm's reach, and a relay through the middle of the
table (each arm reaches only a little past the middle; both reach there) when the picking arm cannot reach the
place.

Included after lib/colour_objects.py, lib/grasp_orientations.py, lib/dual_arm.py, lib/wrist_views.py and
lib/pick_place.py by the dual-arm scripted cells that carry objects across the table; uses the cell's ``TABLE_Z``.
"""


def pick_either(seg, clear_z, label="object", opening=None):
    """Pick the object with the arm on its side, else (out of that arm's reach) the other one, the idle arm
    stepping aside first; (arm, grasp height above the underside) or (None, None)."""
    arm = arm_for(seg.world_xyz)
    for a in (arm, other_arm(arm)):
        step_aside(other_arm(a))
        outcome, below = pick(seg, a, clear_z, label, opening)
        if outcome == "held":
            return a, below
        if outcome != "unplanned":
            return None, None
    return None, None


def set_down_points(goals, arm, shift=0.025):
    """Where to try setting a block down on goal points (x, y): each goal, then ``shift`` nearer the arm's
    side, then nearer the robot as well (a block's centre there stays well inside a 9-10 cm square), for goals at
    the edge of the arm's reach."""
    return [p for x, y in goals for p in ((x, y), (x + SIDE[arm] * shift, y), (x + SIDE[arm] * shift, y - shift))]


def relay(colour, seg, place, spots, clear_z, carry_m, heights, opening=0.85, squared=True):
    """Pick the object with the arm that reaches it and ``place(arm, below)`` it (True when it was set down; below:
    the grasp point's height above the object's underside). When that arm cannot reach the place, it sets the
    object down on the first reachable of ``spots`` in the middle (or back where it was), steps aside, and the
    other arm picks it there and places it.

    ``clear_z``: the grasp point's height when lifted; ``carry_m``: the object's underside this far above the table
    while carried to a spot; ``heights``: plausible measured heights of the object; ``squared``: set down with its
    faces square to the world axes. The arm that placed it, or None."""
    arm, below = pick_either(seg, clear_z, colour, opening)
    if arm is None:
        return None
    if place(arm, below):
        return arm
    quat = square_quat(arm) if squared else None
    carry_z = TABLE_Z + carry_m + below
    print(f"  {arm} cannot reach the place: set the {colour} object down in the middle, at one of {spots}")
    if put_down(arm, spots, TABLE_Z, below, quat, carry_z=carry_z) is None:
        print("  nowhere: back where it was")
        put_down(arm, [seg.world_xyz[:2]], TABLE_Z, below, carry_z=carry_z)
        return None
    step_aside(arm)
    seg = locate_again(colour, heights)
    if seg is None:
        return None
    arm = other_arm(arm)
    step_aside(other_arm(arm))
    outcome, below = pick(seg, arm, clear_z, colour, opening)
    if outcome != "held":
        return None
    return arm if place(arm, below) else None
