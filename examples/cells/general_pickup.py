"""Scripted code cells for general_pickup, written only against the robo API (no privileged state).

Strategy:
1. Read the colour and shape words of the instruction.
2. Find the object in the head camera by colour: a per-pixel mask of the colour's rendered hue and saturation (the
   saturation band separates orange from the wood-coloured table and from brown objects, and keeps the pale pink),
   connected blobs, largest first; for each blob a few candidate clicks on its top face go to robo.segment until
   one is a whole (not cut off by the image border) upright object of a plausible height. If the head camera has
   nothing usable, the wrist cameras look from where they are, then from above the blobs that were seen but could
   not be measured (cut off at the image border, behind an arm).
3. Grasp from above with the arm on the object's side: hover 8 cm over the top face with the fingers turned to
   close across the faces, lower to half the object's height (at most 2 cm under its top), close, lift 15 cm.
   Every MoveResult is checked: an unplanned approach switches to the other arm; a missed grasp (holding False), or
   a lift not judged a success within 10 s (put the object back down), opens the gripper, backs off, sends the arms
   home, looks again and retries, up to three attempts.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task general_pickup --seed 0 --agent code_cell --llm replay:examples/cells/general_pickup.py
"""

# %% helpers: find an object by the colour word of the instruction, and turn the gripper to grasp it
# include: lib/colour_objects.py
# include: lib/wrist_views_dual_arm.py


import time

words = robo.task.instruction.lower().replace(".", "").split()
colour = next(word for word in words if word in COLOUR_HSV)
shape = next((word for word in words if word in ("block", "cylinder", "cube")), "object")
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ("left", "right")}
HOME_POS = {arm: robo.state().arm(arm).tcp_pos for arm in ("left", "right")}
print(robo.task.instruction, "-> looking for a", colour, shape)

# %% find the object (head camera first, the wrist cameras if the head does not see it)
target = locate(colour)
target


# %% grasp it from above with the arm on its side, lift 15 cm; on a miss back off, look again and retry
def judged_done(wait_s=10.0):
    """robo.done, given up to wait_s to come true: on a real robot a person judges the lift a few seconds after it
    ends, holding the object up meanwhile (in simulation it is true at once)."""
    deadline = time.monotonic() + wait_s
    while not robo.done and time.monotonic() < deadline:
        time.sleep(0.1)
    return robo.done


def try_pick(target, arm):
    """One grasp attempt with one arm: 'lifted', 'unplanned' (nothing moved) or 'missed'."""
    x, y, top_z = target.world_xyz
    grasp_z = top_z - min(target.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(arm), target.footprint_xy)
    above = robo.move_to(arm, (x, y, top_z + 0.08), quat, gripper=robo.OPEN)
    print(f"{arm} above the {colour} {shape}: {above}")
    if not above.planned:
        return "unplanned"
    down = robo.move_to(arm, (x, y, grasp_z))
    print("down:", down)
    grip = robo.grasp(arm)
    print("grasp:", grip)
    time.sleep(0.5)  # the grip settles before the lift (a real gripper's force builds after its fingers stop)
    if not grip.holding and not robo.done:
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, top_z + 0.08))
        return "missed"
    hx, hy, _ = HOME_POS[arm]
    for lift_xyz in ((x, y, grasp_z + 0.15), (x, y, grasp_z + 0.12), ((x + hx) / 2, (y + hy) / 2, grasp_z + 0.15)):
        lift = robo.move_to(arm, lift_xyz)  # straight up; lower, or back towards the arm, if that is out of reach
        print(f"lift to {np.round(lift_xyz, 3)}:", lift)
        if lift.planned:
            break
    else:
        print("lift by going home:", robo.home())
    if judged_done():
        return "lifted"
    print("lifted, but the task is not solved (another object, or it slipped): put it back down")
    robo.move_to(arm, (x, y, grasp_z + 0.01))
    robo.release(arm)
    robo.move_to(arm, (x, y, top_z + 0.08))
    return "missed"


for _attempt in range(3):
    if target is None or robo.done:
        break
    arms = ["left", "right"] if target.world_xyz[0] < 0 else ["right", "left"]
    outcome = try_pick(target, arms[0])
    if outcome == "unplanned":
        outcome = try_pick(target, arms[1])
    if outcome == "lifted" or robo.done:
        break
    print("home:", robo.home())
    target = locate(colour)
print("done:", robo.done, "steps left:", robo.steps_left)
