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
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py
# include: lib/flat_squares.py

TABLE_Z = measure_table()
colour, pad_colour = colours_named()[:2]
BLOCK = {"heights": (0.015, 0.06)}
PAD_M = 0.10  # the pad's side
# Spots in the middle of the table that both arms reach, nearest the middle first.
MIDDLE_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.03, 0.03) for y in (-0.18, -0.22, -0.14, -0.26)],
    key=lambda p: math.hypot(p[0], p[1] + 0.20),
)
print(robo.task.instruction, "-> the", colour, "block, the", pad_colour, "pad; table at", round(TABLE_Z, 4))


# %% find the block and the pad
park()
block = locate(colour, **BLOCK)
pad = find_square(pad_colour, PAD_M)
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
    placed = put_down(arm, set_down_points([pad], arm), TABLE_Z, below, square_quat(arm), carry_z=CLEAR + below)
    print("set down on the pad at", placed, "done:", robo.done)
    if robo.done:
        break
    step_aside(arm)
    inside, _ = on_pad()
    print("on the pad:", inside)
    if inside:
        break
print("done:", robo.done, "steps left:", robo.steps_left)
