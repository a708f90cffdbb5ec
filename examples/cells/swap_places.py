"""Scripted code cells for swap_places, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the two colours.
2. Park both arms out at the table's sides and find the two blocks by colour (lib/colour_objects.py: a
   hue/saturation mask of the rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks
   closer at blobs the head camera cannot measure). Where each one stands now is where the other one belongs: the
   squares are all the same grey, so these two points are remembered before anything moves.
3. The first block is set aside on a free spot near the middle of the table on its own side, at least 11 cm from
   both remembered points (off both squares that matter), the one nearest where it goes last.
4. The second block is carried onto the first one's remembered point, then the first block from its spot onto the
   second one's. Each move: picked from above by the arm on its side (the other arm steps aside), carried with its
   faces square to the world axes, lowered until it is 3 mm above the table, released, the hand lifted. A point
   that arm cannot reach: the block is set down in the middle (|x| <= 5 cm, both arms reach it) and the other arm
   takes it on.
5. After each release the head camera checks the block stands within 3 cm of its target; if not, it is moved again.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task swap_places --seed 0 --agent code_cell --llm replay:examples/cells/swap_places.py
"""

# %% helpers: find blocks by colour, pick and place with either arm
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py

COLOURS = colours_named()[:2]
TABLE_Z = measure_table()  # when the view from home does not agree (too little texture seen), the arms park first
BLOCK = {"heights": (0.015, 0.06)}
# Spots in the middle of the table that both arms reach, nearest the middle first.
MIDDLE_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.05, 0.05, -0.1, 0.1, -0.15, 0.15) for y in (-0.14, -0.18, -0.22, -0.26, -0.30)],
    key=lambda p: math.hypot(p[0], p[1] + 0.22),
)
print(robo.task.instruction, "-> colours", COLOURS, "; table at", round(TABLE_Z, 4))

# %% find the blocks and remember where each one stands
park()
blocks = {colour: locate(colour, **BLOCK) for colour in COLOURS}
START = {c: (None if s is None else tuple(float(v) for v in s.world_xyz[:2])) for c, s in blocks.items()}
GOAL = {COLOURS[0]: START[COLOURS[1]], COLOURS[1]: START[COLOURS[0]]}
print("start:", START, "-> goal:", GOAL)


# %% move helpers
def spots_in_middle(avoid, clearance, max_x=0.15):
    """Middle spots (|x| <= max_x) at least ``clearance`` from every point of ``avoid``, nearest the middle first;
    else the roomiest one."""
    points = [p for p in avoid if p is not None]

    def room(p):
        return min((math.dist(p, o) for o in points), default=1.0)

    spots = [p for p in MIDDLE_SPOTS if abs(p[0]) <= max_x + 1e-9]
    good = [p for p in spots if room(p) >= clearance]
    return good or [max(spots, key=room)]


def move_block(colour, seg, goals, avoid):
    """Carry the block onto the first reachable of ``goals`` (x, y), via a spot in the middle (|x| <= 5 cm, both arms
    reach it) away from ``avoid`` when its arm cannot reach them; the arm that set it down last, or None."""

    def place(arm, below):
        points = set_down_points(goals, arm)
        return put_down(arm, points, TABLE_Z, below, square_quat(arm), carry_z=TABLE_Z + 0.065 + below) is not None

    spots = spots_in_middle(avoid + list(goals), 0.08, max_x=0.05)
    return relay(colour, seg, place, spots, TABLE_Z + 0.095, 0.065, BLOCK["heights"])


def move_checked(colour, goals, avoid, tolerance=0.03):
    """Move the block onto one of ``goals`` and check it there with the head camera; up to three tries."""
    seg = blocks[colour]
    for _attempt in range(3):
        if robo.done or robo.steps_left < 60 or seg is None:
            return False
        print(f"{colour} block at {np.round(seg.world_xyz, 3)} -> {np.round(goals, 3)}")
        arm = move_block(colour, seg, goals, avoid)
        print("  set down with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done:
            return True
        step_aside(arm or arm_for(seg.world_xyz))
        seg = locate_again(colour, BLOCK["heights"])
        blocks[colour] = seg
        if seg is not None and min(math.dist(seg.world_xyz[:2], g) for g in goals) < tolerance:
            return True
        print("  the", colour, "block is not there:", seg)
    return False


# %% the first block aside, the second onto the first's place, the first onto the second's
first, second = COLOURS
if START[first] is not None and START[second] is not None:
    # Aside: off both squares, on the first block's side of the middle (its arm reaches it), nearest where it goes
    # last, so that the middle stays free for a block passed from one arm to the other.
    side = SIDE[arm_for(START[first])]
    spots = [p for p in spots_in_middle([START[first], START[second]], 0.11) if p[0] * side >= -0.05]
    spots.sort(key=lambda p: math.dist(p, START[second]))
    print("aside at one of", spots[:4], ":", move_checked(first, spots[:4], [START[first], START[second]]))
    aside = tuple(blocks[first].world_xyz[:2]) if blocks[first] is not None else spots[0]
    print("second:", move_checked(second, [GOAL[second]], [aside, START[second]]))
    print("first:", move_checked(first, [GOAL[first]], [START[first], GOAL[second]]))
print("done:", robo.done, "steps left:", robo.steps_left)
