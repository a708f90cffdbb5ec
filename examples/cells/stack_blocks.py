"""Scripted code cells for stack_blocks, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the top block's colour first and the bottom block's second.
2. Find both blocks by colour (as in general_pickup.py: a hue/saturation mask of the rendered colour, blobs,
   clicks on the top face, robo.segment; a wrist camera looks closer at blobs the head camera cannot measure).
3. Stack with the arm on the bottom block's side (each arm reaches only a little past the middle of the table).
   If that arm cannot reach the top block (its move_to is not planned), the other arm picks the top block and
   sets it down on a free spot in the middle of the table (table-coloured in the head image), then the first arm
   picks it there.
4. Pick (lib/pick_place.py): hover, turn the fingers across the block's faces, lower until the finger pads reach
   its underside (at most half way down), close; holding must be True, else back off, look again and retry. Lift
   the grasp point so the block clears the bottom block.
5. Place: carry it over the bottom block (its measured top-face centre), turned to its faces, lower until the held
   block's underside is 3 mm above the bottom block's top (bottom top_z + the grasp point's height above the held
   top + 3 mm), open, lift the hand straight away.
6. If the task is not solved, send the arms home, look again and repeat pick and place once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task stack_blocks --seed 0 --agent code_cell --llm replay:examples/cells/stack_blocks.py
"""

# %% helpers: find a block by colour, pick and place with either arm, bare table in the head image
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
top_colour, bottom_colour = colours_named()[:2]
print(robo.task.instruction, "-> put the", top_colour, "block on the", bottom_colour, "block")

# %% find both blocks
top = locate(top_colour)
print("top block:", top)
bottom = locate(bottom_colour)
print("bottom block:", bottom)


# %% pick the top block with the arm on the bottom block's side (via a hand-over spot if it cannot reach it)
def pick_for_stacking(top, bottom):
    """Hold the top block with an arm that reaches the bottom block: (arm, grasp height above the block's underside)
    or (None, None)."""
    arm = arm_for(bottom.world_xyz)
    other = other_arm(arm)
    clear_z = bottom.top_z + top.height_m + 0.06
    for _attempt in range(3):
        outcome, below = pick(top, arm, clear_z, f"{top_colour} block")
        if outcome == "held":
            return arm, below
        if outcome == "unplanned":  # out of this arm's reach: the other arm brings it to the middle
            spots = bare_table_spots(HAND_OVER_SPOTS, radius=0.045)
            print("hand-over spot:", spots[:1])
            if not spots:
                break
            outcome, below = pick(top, other, top.top_z + 0.05, f"{top_colour} block")
            if outcome == "held":
                put_down(other, spots[:1], TABLE_Z, below)
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


def stack_on(bottom):
    """Carry the held block over the bottom block, turned to its faces, and set it down there."""
    quat = grasp_quat(robo.state().arm(held_arm), bottom.footprint_xy)
    put_down(held_arm, [bottom.world_xyz[:2]], bottom.top_z, below, quat)


if held_arm is not None:
    stack_on(bottom)
print("done:", robo.done, "steps left:", robo.steps_left)

# %% check: if it is not stacked, look again and repeat pick and place once
if not robo.done and robo.steps_left > 150:
    print("home:", robo.home())
    top, bottom = locate(top_colour), locate(bottom_colour)
    print("top block:", top, "\nbottom block:", bottom)
    if top is not None and bottom is not None:
        held_arm, below = pick_for_stacking(top, bottom)
        if held_arm is not None:
            stack_on(bottom)
print("done:", robo.done, "steps left:", robo.steps_left)
