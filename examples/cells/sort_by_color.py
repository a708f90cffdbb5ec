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
# include: lib/wrist_views_dual_arm.py
# include: lib/pick_place_dual_arm.py

words = robo.task.instruction.lower().replace(".", "").replace(",", "").split()
COLOURS = [word for word in words if word in COLOUR_HSV][:3]
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ("left", "right")}
TABLE_Z = robo.table_height().z
BLOCK = {"heights": (0.015, 0.06)}
SQUARE_M = 0.10  # the squares' side
# Spots in the middle of the table that both arms reach, nearest the middle first.
MIDDLE_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.04, 0.04, -0.08, 0.08) for y in (-0.14, -0.18, -0.22, -0.26, -0.30)],
    key=lambda p: math.hypot(p[0], p[1] + 0.22),
)
print(robo.task.instruction, "-> colours", COLOURS, "; table at", round(TABLE_Z, 4))


def on_table(camera, rows, cols):
    """World points (x, y) seen at pixels (rows, cols) of a camera, on the table plane."""
    info = robo.camera(camera)
    pixels = np.stack([np.asarray(cols, float), np.asarray(rows, float), np.ones(len(rows))])
    rays = info.T_world_cam[:3, :3] @ (np.linalg.inv(info.K) @ pixels)
    origin = info.T_world_cam[:3, 3]
    return (origin[:, None] + rays * (TABLE_Z + 0.001 - origin[2]) / rays[2]).T[:, :2]


def square_in(camera, colour, block_xy=None):
    """(centre (x, y), whole) of the square of that colour seen by a camera, or (None, False): the largest blob that
    is not the block (its pixels put on the table plane centred away from ``block_xy`` and spanning more than 3.5
    cm); whole is True when it spans a square's 10 cm both ways and does not touch the image border."""
    rgb = robo.image(camera)
    for blob in colour_blobs(rgb, colour)[:4]:
        rows, cols = np.nonzero(blob)
        points = on_table(camera, rows, cols).astype(np.float32)
        (cx, cy), (w, h), _ = cv2.minAreaRect(points)
        if max(w, h) < 0.035 or (block_xy is not None and math.dist((cx, cy), block_xy) < 0.05 and min(w, h) < 0.07):
            continue
        border = rows.min() == 0 or cols.min() == 0 or rows.max() == rgb.shape[0] - 1 or cols.max() == rgb.shape[1] - 1
        whole = not border and min(w, h) > SQUARE_M - 0.012 and max(w, h) < SQUARE_M + 0.03
        print(f"  {colour} square in {camera}: centre ({cx:.3f}, {cy:.3f}), {w:.3f} x {h:.3f} m, whole={whole}")
        return (float(cx), float(cy)), whole
    return None, False


def find_square(colour):
    """The square's centre (x, y): from the head camera, else (cut off or partly hidden there) from above with the
    wrist camera of the arm on its side."""
    block = blocks.get(colour)
    block_xy = None if block is None else tuple(block.world_xyz[:2])
    centre, whole = square_in("head", colour, block_xy)
    if centre is None or whole:
        return centre
    arm = arm_for(centre)
    for height in (0.25, 0.22, 0.19):
        back = 0.465 * (height + 0.054) - 0.045  # the wrist camera's view centre is this far behind the grasp point
        view = robo.move_to(arm, (centre[0], centre[1] + back, TABLE_Z + height), HOME_QUAT[arm])
        print(f"  {arm} wrist {height:.2f} m over the {colour} square: {view}")
        if view.planned:
            closer, _ = square_in(f"{arm}_wrist", colour, block_xy)
            park(arm)
            return closer if closer is not None else centre
    return centre


# %% find the blocks and the squares
park()
blocks = {colour: locate(colour, **BLOCK) for colour in COLOURS}
squares = {colour: find_square(colour) for colour in COLOURS}
for colour in COLOURS:
    seg, square = blocks[colour], squares[colour]
    print(f"{colour}: block {None if seg is None else np.round(seg.world_xyz, 3)}, square {square}")


# %% carry each block to its square (through the middle when its arm cannot reach the square)
def spot_in_middle(colour):
    """A free table point in the middle: away from the other blocks and from every square but this block's own."""
    others = [np.array(s.world_xyz[:2]) for c, s in blocks.items() if c != colour and s is not None]
    pads = [np.array(p) for c, p in squares.items() if c != colour and p is not None]

    def room(p):
        near_block = min((math.dist(p, o) for o in others), default=1.0) - 0.07
        near_pad = min((math.dist(p, o) for o in pads), default=1.0) - 0.09
        return min(near_block, near_pad)

    return max(MIDDLE_SPOTS, key=lambda p: (room(p) >= 0, -math.hypot(p[0], p[1] + 0.22) if room(p) >= 0 else room(p)))


def targets(square, arm):
    """The square's centre, then points 2.5 cm nearer the arm's side (the block's centre stays inside)."""
    x, y = square
    inward = 0.025 if arm == "left" else -0.025
    return [(x, y), (x - inward, y), (x - inward, y - 0.025)]


def move_block(colour, seg):
    """Pick the block with the arm on its side and set it down on its square, via the middle if that arm cannot
    reach the square; the arm that set it down last, or None."""
    square = squares[colour]
    arm = arm_for(seg.world_xyz)
    step_aside(other_arm(arm))
    clear = TABLE_Z + 0.065  # carry the underside over the other blocks
    outcome, below = pick(seg, arm, clear + 0.03, colour, opening=0.85)
    if outcome == "unplanned":
        arm = other_arm(arm)
        step_aside(other_arm(arm))
        outcome, below = pick(seg, arm, clear + 0.03, colour, opening=0.85)
    if outcome != "held":
        return None
    if put_down(arm, targets(square, arm), TABLE_Z, below, square_quat(arm), carry_z=clear + below) is not None:
        return arm
    spot = spot_in_middle(colour)
    print(f"  {arm} cannot reach the {colour} square: set it down in the middle at {spot}")
    if put_down(arm, [spot], TABLE_Z, below, square_quat(arm), carry_z=clear + below) is None:
        return None
    step_aside(arm)
    seg, _ = find(colour, ("head",), BLOCK["heights"])
    if seg is None:
        park()
        seg = locate(colour, **BLOCK)
        if seg is None:
            return None
    blocks[colour] = seg
    arm = other_arm(arm)
    outcome, below = pick(seg, arm, clear + 0.03, colour, opening=0.85)
    if outcome != "held":
        return None
    placed = put_down(arm, targets(square, arm), TABLE_Z, below, square_quat(arm), carry_z=clear + below)
    return arm if placed is not None else None


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
