"""Scripted code cells for fr3_stack_two (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy:
1. The instruction names the top block's colour first and the bottom block's second.
2. Find both blocks by colour (lib/colour_objects.py: a hue/saturation mask of the rendered colour, blobs, clicks
   on the top face, robo.segment; the wrist camera looks closer at blobs the head camera cannot measure).
3. Pick the top block: hover, fingers turned across its faces, lower to 2 cm under its top, close; holding must be
   True, else back off, look again and retry. Lift it so its underside clears the bottom block by 4 cm.
4. Place: carry it over the bottom block's top-face centre with the fingers turned to the bottom block's faces (the
   held block turns with them), lower until its underside is 3 mm above the bottom block's top, open, lift away.
5. If the task is not solved, go home, look again and repeat pick and place (at most twice more); a top block found
   standing on the bottom one (off centre, or tilted) is picked up there and set down again.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_stack_two --seed 0 --agent code_cell --llm replay:examples/cells/fr3_stack_two.py
"""

# %% helpers: colours, finding blocks, the FR3's pick and place
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/fr3_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
top_colour, bottom_colour = colours_named()[:2]
BLOCK = {"heights": (0.02, 0.1)}  # up to two blocks high (one on the other)
print(robo.task.instruction, f"-> the {top_colour} block on the {bottom_colour} block; table at {TABLE_Z:.4f}")

# %% find both blocks
top = locate(top_colour, **BLOCK)
print("top block:", top)
bottom = locate(bottom_colour, **BLOCK)
print("bottom block:", bottom)


# %% pick the top block, set it down on the bottom block
def stack(top, bottom):
    """Pick the top block and put it down on the bottom one; True if it was let go over the bottom block."""
    for _attempt in range(3):
        # A top block already standing on the bottom one measures the height of both from the table.
        own_height = top.height_m if top.height_m < 0.06 else top.top_z - bottom.top_z
        clear_z = bottom.top_z + own_height + 0.04
        outcome, below = pick(top, ARM, clear_z, f"{top_colour} block")
        if outcome == "held":
            below -= top.height_m - own_height
            quat = grasp_quat(robo.state().arm(ARM), bottom.footprint_xy)
            return put_down(ARM, [bottom.world_xyz[:2]], bottom.top_z, below, quat, carry_z=clear_z) is not None
        park()
        top = locate(top_colour, **BLOCK)
        print("top block now:", top)
        if top is None:
            break
    return False


if top is not None and bottom is not None:
    print("stacked:", stack(top, bottom))
print("done:", robo.done, "steps left:", robo.steps_left)

# %% check: if it is not stacked, look again and repeat pick and place
for _retry in range(2):
    if robo.done or robo.steps_left < 120:
        break
    park()
    top = locate(top_colour, **BLOCK)
    print("top block:", top)
    if top is None:
        break
    if top.height_m < 0.06:  # it is on the table: the bottom block may have moved too
        bottom = locate(bottom_colour, **BLOCK) or bottom
        print("bottom block:", bottom)
    print("stacked:", stack(top, bottom))
print("done:", robo.done, "steps left:", robo.steps_left)
