"""Scripted code cells for sort_by_color, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the three colours.
2. Park both arms out at the table's sides and find, per colour, the block (lib/colour_objects.py: a hue/saturation
   mask of the rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks closer at blobs the
   head camera cannot measure) and the flat square: the blob of that colour whose pixels, put on the table plane,
   span ~10 cm both ways (a block's blob spans 4-6 cm). Its centre is the middle of that outline's rectangle; a
   square cut off in the head image is looked at again from above with the wrist camera of the arm on its side.
3. Each block: picked from above by the arm on its side (the other arm steps aside), carried over its square (the
   centre, or a point 2.5 cm nearer the arm's side if the centre is out of reach) with its faces square to the
   world axes, lowered until it is 3 mm above the table, released, the hand lifted.
4. A square the arm cannot reach at all (it lies far on the other side): the block is set down on a free spot in
   the middle of the table (away from every block and square), measured again, and the other arm takes it on.
5. After each release the head camera checks the block stands inside its square; if not, it is picked again.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task sort_by_color --seed 0 --agent code_cell --llm replay:examples/cells/sort_by_color.py
"""

# %% helpers: find blocks and squares by colour, pick and place with either arm
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py
# include: lib/flat_squares.py

TABLE_Z = measure_table()
COLOURS = colours_named()[:3]
BLOCK = {"heights": (0.015, 0.06)}
SQUARE_M = 0.10  # the squares' side
# Spots in the middle of the table that both arms reach, nearest the middle first.
MIDDLE_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.04, 0.04, -0.08, 0.08) for y in (-0.14, -0.18, -0.22, -0.26, -0.30)],
    key=lambda p: math.hypot(p[0], p[1] + 0.22),
)
print(robo.task.instruction, "-> colours", COLOURS, "; table at", round(TABLE_Z, 4))


def find_square_of(colour):
    """The centre (x, y) of the square of that colour (lib/flat_squares.py), not its block."""
    block = blocks.get(colour)
    return find_square(colour, SQUARE_M, None if block is None else tuple(block.world_xyz[:2]))


# %% find the blocks and the squares
park()
blocks = {colour: locate(colour, **BLOCK) for colour in COLOURS}
squares = {colour: find_square_of(colour) for colour in COLOURS}
for colour in COLOURS:
    seg, square = blocks[colour], squares[colour]
    print(f"{colour}: block {None if seg is None else np.round(seg.world_xyz, 3)}, square {square}")


# %% carry each block to its square (through the middle when its arm cannot reach the square)
CLEAR_Z = TABLE_Z + 0.065  # carry the underside over the other blocks


def spot_in_middle(colour):
    """A free table point in the middle: away from the other blocks and from every square but this block's own."""
    others = [np.array(s.world_xyz[:2]) for c, s in blocks.items() if c != colour and s is not None]
    pads = [np.array(p) for c, p in squares.items() if c != colour and p is not None]

    def room(p):
        near_block = min((math.dist(p, o) for o in others), default=1.0) - 0.07
        near_pad = min((math.dist(p, o) for o in pads), default=1.0) - 0.09
        return min(near_block, near_pad)

    return max(MIDDLE_SPOTS, key=lambda p: (room(p) >= 0, -math.hypot(p[0], p[1] + 0.22) if room(p) >= 0 else room(p)))


def move_block(colour, seg):
    """Pick the block with the arm on its side and set it down on its square, via the middle if that arm cannot
    reach the square; the arm that set it down last, or None."""

    def place(arm, below):
        points = set_down_points([squares[colour]], arm)
        return put_down(arm, points, TABLE_Z, below, square_quat(arm), carry_z=CLEAR_Z + below) is not None

    return relay(colour, seg, place, [spot_in_middle(colour)], CLEAR_Z + 0.03, CLEAR_Z - TABLE_Z, BLOCK["heights"])


def on_square(colour):
    """Whether the head camera sees the block inside its square (its centre within 4 cm of the square's centre);
    the block's segment when it stands elsewhere."""
    seg, _ = find(colour, ("head",), BLOCK["heights"])
    if seg is None:
        return True, None
    inside = np.all(np.abs(np.array(seg.world_xyz[:2]) - squares[colour]) < SQUARE_M / 2 - 0.01)
    return bool(inside), seg


order = sorted(
    (c for c in COLOURS if blocks[c] is not None and squares[c] is not None),
    key=lambda c: arm_for(blocks[c].world_xyz) != arm_for(squares[c]),
)  # no hand-over first
for colour in order:
    seg = blocks[colour]
    for _attempt in range(3):
        if robo.done or robo.steps_left < 60:
            break
        print(f"{colour} block at {np.round(seg.world_xyz, 3)} -> square at {np.round(squares[colour], 3)}")
        arm = move_block(colour, seg)
        print("set down with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done or robo.steps_left < 60:
            break
        step_aside(arm or arm_for(seg.world_xyz))
        inside, now = on_square(colour)
        if now is not None:
            blocks[colour] = now
        if inside and arm is not None:
            break
        if now is None:
            park()
            now = locate(colour, **BLOCK)
            if now is None:
                break
        print("the", colour, "block is not on its square:", now)
        seg = now
print("done:", robo.done, "steps left:", robo.steps_left)
