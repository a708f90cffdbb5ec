"""Scripted code cells for pick_matching_picture, written only against the robo API (no privileged state).

Strategy:
1. Park both arms at the table's sides so the head camera sees the whole table.
2. The card: the largest light (white, unsaturated) blob that makes a square of a card's size on the table plane
   between the parked arms (their silver links are light too) and shows a picture; its top face resampled as seen
   from above and its dark picture cut out (lib/top_faces.py).
3. The blocks: blobs of every task colour (lib/colour_objects.py), measured with robo.segment (top height and
   footprint); a blob the head camera cannot measure is looked at from above with the wrist camera of the arm on
   its side. Each block's top face is resampled the same way (in the camera that measured it), aligned with its
   edges; per colour the first block whose face shows a picture is kept (the cluttered variant adds plain blocks
   of the same colours), and its picture compared with the card's turned by each quarter turn (the blocks lie
   turned any way).
4. The best match first: grasp it from above with the arm on its side, fingers across two faces, at half its
   height, and lift it 15 cm; a missed grasp backs off, looks again (the block of that colour nearest where it
   was) and retries once; a lift that does not solve
   the task puts the block back and tries the next best match.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task pick_matching_picture --seed 0 --agent code_cell \
        --llm replay:examples/cells/pick_matching_picture.py
"""

# %% helpers: colours, both arms, reading top faces, picking up
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/top_faces.py
# include: lib/picture_blocks.py
# include: lib/pick_up.py

TABLE_Z = measure_table()
print(robo.task.instruction)


# %% park the arms, read the card's picture and every block's
park()
_, card = card_glyph()
blocks = blocks_seen()
ranking = ranked_by_picture(card, blocks)


# %% grasp it from above with the arm on its side, lift 15 cm; on a miss back off, look again and retry
def pick_matching(colour):
    """Up to two attempts to pick up the block of that colour: True once the task is solved, False to try the next
    block."""
    target = blocks[colour][0]
    for _attempt in range(2):
        arm = arm_for(target.world_xyz)
        outcome = pick_up(target, arm, f"{colour} block")
        if outcome == "unplanned":
            outcome = pick_up(target, other_arm(arm), f"{colour} block")
        if outcome == "lifted" or robo.done:
            return True
        park()
        if outcome == "wrong":
            return False
        target = find_near(colour, target.world_xyz)
        if target is None:
            return False
    return False


for colour in ranking:  # the best match first; the next one if lifting it does not solve the task
    if robo.done or pick_matching(colour):
        break
print("done:", robo.done, "steps left:", robo.steps_left)
