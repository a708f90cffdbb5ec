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

# %% helpers: colours, both arms, reading top faces
# include: lib/colour_objects.py
# include: lib/two_arms.py
# include: lib/wrist_views_dual_arm.py
# include: lib/top_faces.py
# include: lib/picture_blocks.py

import time

print(robo.task.instruction)


# %% park the arms, read the card's picture and every block's
park()
_, card = card_glyph()
blocks = blocks_seen()
ranking = sorted(blocks, key=lambda c: -best_overlap(card, blocks[c][1]))
for colour in ranking:
    print(f"{colour} block: overlap {best_overlap(card, blocks[colour][1]):.2f} with the card")


# %% grasp it from above with the arm on its side, lift 15 cm; on a miss back off, look again and retry
def judged_done(wait_s=10.0):
    """robo.done, given up to wait_s to come true (on a real robot a person judges the lift)."""
    deadline = time.monotonic() + wait_s
    while not robo.done and time.monotonic() < deadline:
        time.sleep(0.1)
    return robo.done


def try_pick(target, arm):
    """One grasp attempt with one arm: 'lifted', 'unplanned' (nothing moved), 'missed' or 'wrong' (lifted, not
    solved)."""
    x, y, top_z = target.world_xyz
    grasp_z = top_z - min(target.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(arm), target.footprint_xy)
    above = robo.move_to(arm, (x, y, top_z + 0.08), quat, gripper=robo.OPEN)
    print(f"{arm} above the {colour} block: {above}")
    if not above.planned:
        return "unplanned"
    print("down:", robo.move_to(arm, (x, y, grasp_z)))
    grip = robo.grasp(arm)
    print("grasp:", grip)
    time.sleep(0.5)  # the grip settles before the lift
    if not grip.holding and not robo.done:
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, top_z + 0.08))
        return "missed"
    hx, hy, _ = HOME_POS[arm]
    for lift_xyz in ((x, y, grasp_z + 0.15), (x, y, grasp_z + 0.12), ((x + hx) / 2, (y + hy) / 2, grasp_z + 0.15)):
        lift = robo.move_to(arm, lift_xyz)
        print(f"lift to {np.round(lift_xyz, 3)}:", lift)
        if lift.planned:
            break
    if judged_done():
        return "lifted"
    print("lifted, but the task is not solved (not the matching block): put it back down")
    robo.move_to(arm, (x, y, grasp_z + 0.01))
    robo.release(arm)
    robo.move_to(arm, (x, y, top_z + 0.08))
    return "wrong"


def pick(colour):
    """Up to two grasps of the block of that colour: True once the task is solved, False to try the next block."""
    target = blocks[colour][0]
    for _attempt in range(2):
        arms = ["left", "right"] if target.world_xyz[0] < 0 else ["right", "left"]
        outcome = try_pick(target, arms[0])
        if outcome == "unplanned":
            outcome = try_pick(target, arms[1])
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
    if robo.done or pick(colour):
        break
print("done:", robo.done, "steps left:", robo.steps_left)
