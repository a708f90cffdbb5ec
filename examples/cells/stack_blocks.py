"""Scripted code cells for stack_blocks, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the top block's colour first and the bottom block's second.
2. Find both blocks by colour (as in general_pickup.py: a hue/saturation mask of the rendered colour, blobs,
   clicks on the top face, robo.segment; a wrist camera looks closer at blobs the head camera cannot measure).
3. Stack with the arm on the bottom block's side (each arm reaches only a little past the middle of the table).
   If that arm cannot reach the top block (its move_to is not planned), the other arm picks the top block and
   sets it down on a free spot in the middle of the table (table-coloured in the head image), then the first arm
   picks it there.
4. Pick: hover, turn the fingers across the block's faces, lower to its middle, close; holding must be True, else
   back off, look again and retry. Lift the grasp point so the block clears the bottom block.
5. Place: carry it over the bottom block (its measured top-face centre), turned to its faces, lower until the held
   block's underside is 3 mm above the bottom block's top (bottom top_z + the grasp point's height above the held
   top + 3 mm), open, lift the hand straight away.
6. If the task is not solved, send the arms home, look again and repeat pick and place once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task stack_blocks --seed 0 --agent code_cell --llm replay:examples/cells/stack_blocks.py
"""

# %% helpers: find a block by colour (hue/saturation mask, blobs, segment), turn the gripper to its faces
# include: lib/colour_objects.py
# include: lib/wrist_views_dual_arm.py


def pixel_of(xyz, camera="head"):
    """Where a world point shows in a camera: (row, col), from its calibration (K, T_world_cam)."""
    info = robo.camera(camera)
    p = np.linalg.inv(info.T_world_cam) @ np.append(np.asarray(xyz, float), 1.0)
    u = info.K @ (p[:3] / p[2])
    return u[1], u[0]


def free_spot(candidates, radius=0.045):
    """The first table point (x, y) whose disc of ``radius`` looks like bare table in the head image (wood: hue
    ~24/255, saturation ~96), or None."""
    hsv = cv2.cvtColor(robo.image("head"), cv2.COLOR_RGB2HSV_FULL).astype(np.int16)
    table_z = robo.table_height().z
    bare = (np.abs(hsv[..., 0] - 24) <= 8) & (hsv[..., 1] >= 70) & (hsv[..., 1] <= 125)
    for x, y in candidates:
        angles = np.linspace(0, 2 * math.pi, 16, endpoint=False)
        ring = [pixel_of((x + radius * math.cos(a), y + radius * math.sin(a), table_z)) for a in angles]
        disc = np.zeros(bare.shape, np.uint8)
        cv2.fillConvexPoly(disc, np.round(np.array(ring)[:, ::-1]).astype(np.int32), 1)
        if disc.any() and bare[disc > 0].mean() > 0.98:
            return x, y
    return None


words = robo.task.instruction.lower().replace(".", "").split()
top_colour, bottom_colour = [word for word in words if word in COLOUR_HSV][:2]
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ("left", "right")}
print(robo.task.instruction, "-> put the", top_colour, "block on the", bottom_colour, "block")

# %% find both blocks
top = locate(top_colour)
print("top block:", top)
bottom = locate(bottom_colour)
print("bottom block:", bottom)


# %% pick the top block with the arm on the bottom block's side (via a hand-over spot if it cannot reach it)
def pick(block, colour, arm, clear_z):
    """Grasp a block from above with one arm and lift the grasp point to clear_z.

    Returns ('held', height of the grasp point above the block's underside), ('unplanned', None) when the arm cannot
    reach it (nothing moved, or it backed off), or ('missed', None). When something blocks the fingers on the way
    down (a neighbour), it backs up and tries again with the fingers turned 90 degrees."""
    x, y, top_z = block.world_xyz
    depth = min(block.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(arm), block.footprint_xy)
    for turn in (0.0, math.pi / 2):
        above = robo.move_to(arm, (x, y, top_z + 0.08), turn_quat(quat, turn), gripper=robo.OPEN)
        print(f"{arm} above the {colour} block (fingers turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned", None
        down = robo.move_to(arm, (x, y, top_z - depth))
        print("down:", down)
        if not down.planned:
            return "unplanned", None
        if down.reached:
            break
        print("blocked on the way down: back up")
        robo.move_to(arm, (x, y, top_z + 0.08))
    else:
        return "missed", None
    grip = robo.grasp(arm)
    print("grasp:", grip)
    if not grip.holding:
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, top_z + 0.08))
        return "missed", None
    print("lift:", robo.move_to(arm, (x, y, max(clear_z, top_z - depth + 0.05))))
    return "held", block.height_m - depth


def put_down(arm, xy, surface_z, below, footprint):
    """Lower the held block until its underside is 3 mm above surface_z at xy (the grasp point is ``below`` above
    the block's underside), open, lift away; True if the motion was planned."""
    rest_z = surface_z + below + 0.003
    quat = grasp_quat(robo.state().arm(arm), footprint) if footprint is not None else None
    over = robo.move_to(arm, (xy[0], xy[1], rest_z + 0.05), quat)
    print(f"{arm} over {np.round(xy, 3)}: {over}")
    if not over.planned:
        return False
    print("lower:", robo.move_to(arm, (xy[0], xy[1], rest_z)))
    print("release:", robo.release(arm))
    print("lift away:", robo.move_to(arm, (xy[0], xy[1], rest_z + 0.08)))
    return True


def pick_for_stacking(top, bottom):
    """Hold the top block with an arm that reaches the bottom block: (arm, grasp height above the block's underside)
    or (None, None)."""
    arm = "left" if bottom.world_xyz[0] < 0 else "right"
    other = "right" if arm == "left" else "left"
    clear_z = bottom.top_z + top.height_m + 0.06
    for _attempt in range(3):
        outcome, below = pick(top, top_colour, arm, clear_z)
        if outcome == "held":
            return arm, below
        if outcome == "unplanned":  # out of this arm's reach: the other arm brings it to the middle
            spot = free_spot(HAND_OVER_SPOTS)
            print("hand-over spot:", spot)
            if spot is None:
                break
            outcome, below = pick(top, top_colour, other, top.top_z + 0.05)
            if outcome == "held":
                put_down(other, spot, robo.table_height().z, below, None)
        print("home:", robo.home())
        top = locate(top_colour)
        print("top block now:", top)
        if top is None:
            break
    return None, None


# Table points in the middle that both arms reach, nearest the middle first.
HAND_OVER_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.04, 0.04, -0.08, 0.08) for y in (-0.15, -0.19, -0.23, -0.27, -0.31)],
    key=lambda p: math.hypot(p[0], p[1] + 0.23),
)
held_arm, below = pick_for_stacking(top, bottom) if top is not None and bottom is not None else (None, None)
print("holding with:", held_arm)

# %% carry it over the bottom block, lower until it rests there, release and lift away
if held_arm is not None:
    put_down(held_arm, bottom.world_xyz[:2], bottom.top_z, below, bottom.footprint_xy)
print("done:", robo.done, "steps left:", robo.steps_left)

# %% check: if it is not stacked, look again and repeat pick and place once
if not robo.done and robo.steps_left > 150:
    print("home:", robo.home())
    top, bottom = locate(top_colour), locate(bottom_colour)
    print("top block:", top, "\nbottom block:", bottom)
    if top is not None and bottom is not None:
        held_arm, below = pick_for_stacking(top, bottom)
        if held_arm is not None:
            put_down(held_arm, bottom.world_xyz[:2], bottom.top_z, below, bottom.footprint_xy)
print("done:", robo.done, "steps left:", robo.steps_left)
