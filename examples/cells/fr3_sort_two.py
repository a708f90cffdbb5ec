"""Scripted code cells for fr3_sort_two (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy:
1. The instruction names the two colours; each has a block and a flat square.
2. Per colour, find the block (lib/colour_objects.py: a hue/saturation mask of the rendered colour, blobs, clicks on
   the top face, robo.segment; the wrist camera looks closer at blobs the head camera cannot measure) and then the
   square: the colour's blobs in the head image without the block's own pixels, the largest that spans more than
   6 cm when put on the table plane; its centre is the middle of that outline's rectangle.
3. One block at a time: pick it from above (fingers across its faces, 2 cm under its top), carry it with its
   underside 6 cm above the other block's top, over its square's centre, lower it until it is 3 mm above the table,
   open and lift away.
4. After each block the hand goes home, out of the head camera's view, and the head camera looks for the block: one
   that segments with its centre more than 4 cm from its square's is picked again from where it stands (on its own
   square its blob merges with the square's and does not segment: that counts as inside).

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_sort_two --seed 0 --agent code_cell --llm replay:examples/cells/fr3_sort_two.py
"""

# %% helpers: colours, finding blocks and squares, the FR3's pick and place
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/fr3_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
COLOURS = colours_named()[:2]
BLOCK = {"heights": (0.02, 0.07)}
BLOCK_M = 0.04  # the blocks' side, for the carry height (a block is measured before it is moved)
INSIDE_M = 0.04  # a block whose centre is this close to its square's centre (each way) is inside it
print(robo.task.instruction, "-> colours", COLOURS, f"; table at {TABLE_Z:.4f}")


def find_square(colour, block):
    """The square's centre (x, y): the largest blob of the colour in the head image, without the block's pixels,
    that spans more than 6 cm on the table plane; None if there is none."""
    rgb = robo.image("head")
    others = np.zeros(rgb.shape[:2], bool)
    if block is not None and block.mask is not None and SEEN_IN.get(colour) == "head":
        others = cv2.dilate(block.mask.astype(np.uint8), np.ones((7, 7), np.uint8)) > 0
    for blob in colour_blobs(rgb, colour)[:4]:
        rest = blob & ~others
        if rest.sum() < 25:
            continue
        centre, (long_side, short_side), _ = rect_on_plane("head", rest, TABLE_Z + 0.001)
        if long_side < 0.06:
            continue
        print(f"  {colour} square: centre {np.round(centre, 4)}, outline {long_side:.3f} x {short_side:.3f} m")
        return centre
    return None


# %% find the blocks and the squares
blocks = {colour: locate(colour, **BLOCK) for colour in COLOURS}
if robo.state().tcp_pos[2] < TABLE_Z + 0.3:  # the wrist camera looked closer: the hand is in the head camera's view
    park()
squares = {colour: find_square(colour, blocks[colour]) for colour in COLOURS}
for colour in COLOURS:
    seg = blocks[colour]
    print(f"{colour}: block {None if seg is None else np.round(seg.world_xyz, 3)}, square {squares[colour]}")


# %% carry each block to its square, check it, and try again when it is not inside
def inside(colour, seg):
    return bool(np.all(np.abs(np.array(seg.world_xyz[:2]) - squares[colour]) < INSIDE_M))


def move_block(colour, seg):
    """Pick the block and set it down on its square; True if it was let go there."""
    clear_z = TABLE_Z + 2 * BLOCK_M + 0.04  # the grasp point; the held block's underside clears the other block
    outcome, below = pick(seg, ARM, clear_z, f"{colour} block")
    if outcome != "held":
        return False
    return put_down(ARM, [squares[colour]], TABLE_Z, below, carry_z=clear_z) is not None


for colour in COLOURS:
    seg = blocks[colour]
    for _attempt in range(3):
        if robo.done or robo.steps_left < 60 or seg is None or squares[colour] is None:
            break
        print(f"{colour} block at {np.round(seg.world_xyz, 3)} -> square at {np.round(squares[colour], 3)}")
        print("set down:", move_block(colour, seg), "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done:
            break
        park()
        # On its own square the block's blob merges with the square's and does not segment as an upright object:
        # not found there counts as inside; found elsewhere, it is picked again from where it stands.
        seg, _ = find(colour, ("head",), BLOCK["heights"])
        print(f"{colour} block now:", seg)
        if seg is None or inside(colour, seg):
            break
print("done:", robo.done, "steps left:", robo.steps_left)
