"""Scripted code cells for pass_through_middle, written only against the robo API (no privileged state).

Strategy (the relay of examples/cells/sort_by_color.py, for one block and a pad of another colour):
1. The instruction names the block's colour, then the pad's.
2. Park both arms out at the table's sides and find the block (lib/colour_objects.py: a hue/saturation mask of the
   rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks closer at a blob the head camera
   cannot measure) and the pad: the blob of its colour, put on the table plane (about 10 cm both ways); a pad cut off
   in the head image is looked at again from above with the wrist camera of the arm on its side.
3. The arm on the block's side picks it from above and sets it down on a free spot in the middle of the table (both
   arms reach there), then steps aside; the block is measured again with the head camera.
4. The arm on the pad's side picks it, carries it over the pad (its centre, or a point 2.5 cm nearer the arm if the
   centre is out of reach) with its faces square to the world axes, lowers it until it is 3 mm above the table,
   releases it and lifts the hand; the head camera checks it stands on the pad, else it is picked again.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task pass_through_middle --seed 0 --agent code_cell \
        --llm replay:examples/cells/pass_through_middle.py
"""

# %% helpers: find the block and the pad by colour, pick and place with either arm
# include: lib/colour_objects.py
# include: lib/wrist_views_dual_arm.py
# include: lib/pick_place_dual_arm.py

words = robo.task.instruction.lower().replace(".", "").replace(",", "").split()
colour, pad_colour = [word for word in words if word in COLOUR_HSV][:2]
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ("left", "right")}
TABLE_Z = robo.table_height().z
BLOCK = {"heights": (0.015, 0.06)}
PAD_M = 0.10  # the pad's side
# Spots in the middle of the table that both arms reach, nearest the middle first.
MIDDLE_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.03, 0.03) for y in (-0.18, -0.22, -0.14, -0.26)],
    key=lambda p: math.hypot(p[0], p[1] + 0.20),
)
print(robo.task.instruction, "-> the", colour, "block, the", pad_colour, "pad; table at", round(TABLE_Z, 4))


def on_table(camera, rows, cols):
    """World points (x, y) seen at pixels (rows, cols) of a camera, on the table plane."""
    info = robo.camera(camera)
    pixels = np.stack([np.asarray(cols, float), np.asarray(rows, float), np.ones(len(rows))])
    rays = info.T_world_cam[:3, :3] @ (np.linalg.inv(info.K) @ pixels)
    origin = info.T_world_cam[:3, 3]
    return (origin[:, None] + rays * (TABLE_Z + 0.001 - origin[2]) / rays[2]).T[:, :2]


def pad_in(camera):
    """(centre (x, y), whole) of the pad seen by a camera, or (None, False): the largest blob of its colour spanning
    more than 3.5 cm on the table plane; whole when it spans the pad's 10 cm both ways and does not touch the border."""
    rgb = robo.image(camera)
    for blob in colour_blobs(rgb, pad_colour)[:4]:
        rows, cols = np.nonzero(blob)
        points = on_table(camera, rows, cols).astype(np.float32)
        (cx, cy), (w, h), _ = cv2.minAreaRect(points)
        if max(w, h) < 0.035:
            continue
        border = rows.min() == 0 or cols.min() == 0 or rows.max() == rgb.shape[0] - 1 or cols.max() == rgb.shape[1] - 1
        whole = not border and min(w, h) > PAD_M - 0.012 and max(w, h) < PAD_M + 0.03
        print(f"  {pad_colour} pad in {camera}: centre ({cx:.3f}, {cy:.3f}), {w:.3f} x {h:.3f} m, whole={whole}")
        return (float(cx), float(cy)), whole
    return None, False


def find_pad():
    """The pad's centre (x, y): from the head camera, else (cut off or partly hidden there) from above with the wrist
    camera of the arm on its side."""
    centre, whole = pad_in("head")
    if centre is None or whole:
        return centre
    arm = arm_for(centre)
    for height in (0.25, 0.22, 0.19):
        back = 0.465 * (height + 0.054) - 0.045  # the wrist camera's view centre is this far behind the grasp point
        view = robo.move_to(arm, (centre[0], centre[1] + back, TABLE_Z + height), HOME_QUAT[arm])
        print(f"  {arm} wrist {height:.2f} m over the pad: {view}")
        if view.planned:
            closer, _ = pad_in(f"{arm}_wrist")
            park(arm)
            return closer if closer is not None else centre
    return centre


# %% find the block and the pad
park()
block = locate(colour, **BLOCK)
pad = find_pad()
print(f"block {None if block is None else np.round(block.world_xyz, 3)}, pad {pad}")


# %% the arm on the block's side sets it down in the middle
def spot_in_middle():
    """A middle spot away from the pad (its own arm's side of the middle first)."""
    return [p for p in MIDDLE_SPOTS if abs(p[0] - pad[0]) > 0.12]


CLEAR = TABLE_Z + 0.065
first = arm_for(block.world_xyz)
step_aside(other_arm(first))
outcome, below = pick(block, first, CLEAR + 0.03, colour, opening=0.85)
print("picked:", outcome)
if outcome == "held":
    spot = put_down(first, spot_in_middle(), TABLE_Z, below, square_quat(first), carry_z=CLEAR + below)
    print("set down in the middle at", spot)
park(first)


# %% the arm on the pad's side takes it on and sets it down on the pad
def targets(arm):
    """The pad's centre, then points 2.5 cm nearer the arm's side (the block's centre stays inside)."""
    x, y = pad
    inward = 0.025 if arm == "left" else -0.025
    return [(x, y), (x - inward, y), (x - inward, y - 0.025)]


def on_pad():
    """Whether the head camera sees the block on the pad (its centre within 4 cm of the pad's centre), and the
    block's segment."""
    seg, _ = find(colour, ("head",), BLOCK["heights"])
    if seg is None:
        return False, None
    return bool(np.all(np.abs(np.array(seg.world_xyz[:2]) - pad) < PAD_M / 2 - 0.01)), seg


second = arm_for(pad)
for _attempt in range(3):
    if robo.done or robo.steps_left < 60:
        break
    seg, _ = find(colour, ("head",), BLOCK["heights"])
    if seg is None:
        seg = locate(colour, **BLOCK)
    if seg is None:
        print("the block is not seen")
        break
    arm = arm_for(seg.world_xyz) if abs(seg.world_xyz[0]) > 0.12 else second
    step_aside(other_arm(arm))
    outcome, below = pick(seg, arm, CLEAR + 0.03, colour, opening=0.85)
    print(arm, "picked:", outcome)
    if outcome != "held":
        continue
    if arm != second:  # picked up again on the far side: back to the middle
        put_down(arm, spot_in_middle(), TABLE_Z, below, square_quat(arm), carry_z=CLEAR + below)
        park(arm)
        continue
    placed = put_down(arm, targets(arm), TABLE_Z, below, square_quat(arm), carry_z=CLEAR + below)
    print("set down on the pad at", placed, "done:", robo.done)
    if robo.done:
        break
    step_aside(arm)
    inside, _ = on_pad()
    print("on the pad:", inside)
    if inside:
        break
print("done:", robo.done, "steps left:", robo.steps_left)
