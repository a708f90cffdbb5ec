"""Scripted code cells for restore_moved_block, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the three colours.
2. Before anything moves (the world moves one block at the robot's first env step), measure where each block stands
   from the cameras as they are at home (lib/colour_objects.py: a hue/saturation mask of the rendered colour, blobs,
   clicks on the top face, robo.segment): the head camera, else the wrist cameras; a blob seen but not measured
   gives the point where its middle meets the plane half way up a block. These points are the only record. Orange's
   mask also takes the lit top face where the light pales it (saturation ~190, below the lib's band).
3. robo.wait(0.1) lets robot time pass (the change happens), then the arms park at the table's sides and every block
   is measured again (a wrist camera looks closer at blobs the head camera cannot measure). The block farthest from
   its first point is the moved one (a block not seen at first is the moved one when the others stayed). The head
   camera's depth gives every point standing on the table (distractors too), to keep set-down spots clear of.
4. It is picked from above by the arm on its side (the other arm steps aside), carried high over the others to its
   first point, lowered until it is 3 mm above the table, released, and the hand is lifted away. A point that arm
   cannot reach: the block is set down on a clear spot in the middle (|x| <= 6 cm, both arms reach it) and the
   other arm takes it on.
5. The head camera checks it stands within 1.2 cm of its first point; if not, it is picked and placed again (aiming
   past the point by the error seen when it was set down near it), up to three tries.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task restore_moved_block --seed 0 --agent code_cell \
        --llm replay:examples/cells/restore_moved_block.py
"""

# %% helpers: find blocks by colour, pick and place with either arm (nothing moves in this cell)
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py

COLOURS = list(dict.fromkeys(colours_named()))[:3]
TABLE_Z = measure_table()
BLOCK = {"heights": (0.02, 0.06)}  # plausible measured heights of a 4 cm block standing on the table
# Spots in the middle of the table that both arms reach (|x| <= 6 cm).
MIDDLE_SPOTS = [(x, round(-0.12 - 0.02 * i, 2)) for x in (0.0, -0.03, 0.03, -0.06, 0.06) for i in range(12)]
LIB_COLOUR_MASK = colour_mask


def colour_mask(rgb, colour):
    """lib/colour_objects.py's mask, plus for orange the lit top face where the light pales it (saturation ~190,
    below the band's 198; brown objects that saturated are much darker)."""
    mask = LIB_COLOUR_MASK(rgb, colour)
    if colour == "orange":
        hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(np.int16)
        hue_lo, hue_hi, _, _ = COLOUR_HSV["orange"]
        lit = (hsv[..., 0] >= hue_lo) & (hsv[..., 0] <= hue_hi) & (hsv[..., 1] >= 170) & (hsv[..., 2] >= 215)
        mask = mask | lit.astype(np.uint8)
    return mask


print(robo.task.instruction, "-> colours", COLOURS, "; table at", round(TABLE_Z, 4))
print("robot time", robo.state().time_s, "s; steps left", robo.steps_left)

# %% the first look: where each block stands, before any env step
START = {}
for colour in COLOURS:
    seg, hints = find(colour, ("head", "left_wrist", "right_wrist"), BLOCK["heights"])
    if seg is not None:
        START[colour] = tuple(float(v) for v in seg.world_xyz[:2])
    else:  # seen but not measured: where its blob's middle meets the plane half way up a block (within ~1 cm)
        START[colour] = tuple(float(v) for v in hints[0][:2]) if hints else None
print("first look:", START, "; steps left", robo.steps_left)

# %% let the change happen, then look again with the arms parked
print("wait:", robo.wait(0.1))
park()
NOW = {colour: locate(colour, **BLOCK) for colour in COLOURS}
park()
# What stands on the table (head camera depth, arms parked): points over 1.2 cm above it, to keep spots clear of.
xyz = robo.world_map("head").xyz.reshape(-1, 3)
xyz = xyz[np.isfinite(xyz).all(axis=1)]
OBSTACLES = xyz[(xyz[:, 2] > TABLE_Z + 0.012) & (xyz[:, 2] < TABLE_Z + 0.3) & (np.abs(xyz[:, 0]) < 0.4), :2][::4]
print(len(OBSTACLES), "obstacle points")


def shift(colour):
    seg = NOW[colour]
    if seg is None or START[colour] is None:
        return None
    return math.dist(seg.world_xyz[:2], START[colour])


shifts = {colour: shift(colour) for colour in COLOURS}
print("moved by:", shifts)
unseen = [c for c in COLOURS if START[c] is None]
measured = {c: s for c, s in shifts.items() if s is not None}
if measured and max(measured.values()) >= 0.06:
    MOVED = max(measured, key=measured.get)
elif len(unseen) == 1:
    MOVED = unseen[0]
else:
    MOVED = max(measured, key=measured.get) if measured else None
print("moved block:", MOVED, "; its place:", START.get(MOVED))


# %% move helpers
def spots_in_middle(seg):
    """Middle spots clear of everything standing on the table but the moved block (``seg``, where it stood when it
    was picked): those 6.5 cm clear (else 5.5 cm), nearest its place first; else the three roomiest."""
    points = OBSTACLES[np.linalg.norm(OBSTACLES - np.asarray(seg.world_xyz[:2]), axis=1) > 0.04]

    def room(p):
        return float(np.min(np.linalg.norm(points - np.asarray(p), axis=1))) if len(points) else 1.0

    for clearance in (0.065, 0.055):
        good = sorted((p for p in MIDDLE_SPOTS if room(p) >= clearance), key=lambda p: math.dist(p, START[MOVED]))
        if good:
            return good[:12]
    return sorted(MIDDLE_SPOTS, key=room)[-3:][::-1]


def move_block(colour, seg, goal):
    """Carry the block onto ``goal`` (x, y), via a spot in the middle when its arm cannot reach the goal; the arm
    that set it down last, or None."""

    def place(arm, below):
        return put_down(arm, [goal], TABLE_Z, below, carry_z=TABLE_Z + 0.085 + below) is not None

    return relay(colour, seg, place, spots_in_middle(seg), TABLE_Z + 0.11, 0.085, BLOCK["heights"], squared=False)


# %% put the moved block back where it stood; check with the head camera and correct
if MOVED is not None and START[MOVED] is not None and NOW[MOVED] is not None:
    goal = np.array(START[MOVED])
    aim = goal.copy()
    seg = NOW[MOVED]
    for _attempt in range(3):
        if robo.done or robo.steps_left < 60 or seg is None:
            break
        print(f"{MOVED} block at {np.round(seg.world_xyz, 3)} -> {np.round(aim, 3)} (its place {np.round(goal, 3)})")
        arm = move_block(MOVED, seg, tuple(aim))
        print("  set down with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done:
            break
        park()
        seg = locate_again(MOVED, BLOCK["heights"])
        if seg is None:
            break
        error = goal - np.array(seg.world_xyz[:2])
        print(f"  now at {np.round(seg.world_xyz, 3)}: {np.linalg.norm(error) * 100:.1f} cm off")
        if np.linalg.norm(error) < 0.012:
            break
        # Set down near its place: aim past it by the error seen; else (not set down there) at the place again.
        aim = aim + error if arm is not None and np.linalg.norm(error) < 0.04 else goal.copy()
print("done:", robo.done, "steps left:", robo.steps_left)
