"""Picking an object up to be judged (robo API only): grasp it from above, lift it 15 cm and wait for the task's
judgement; a miss backs off, a lift that is not judged a success puts the object back down.

Included after lib/grasp_orientations.py and the robot's own file (lib/dual_arm.py or lib/fr3_arm.py:
``HOME_POS``) by the scripted cells of general_pickup, pick_matching_picture and fr3_pick_cube.
"""

import time

LIFT_M = 0.15  # the grasp point rises this far (the tasks judge a lift of 10 cm or more)
HOVER_M = 0.08  # open this far above the object's top before going down
SETTLE_S = 0.5  # a real gripper's force builds after its fingers stop: the grip settles this long before the lift
JUDGE_S = 10.0  # on a real robot a person judges the lift a few seconds after it ends (in simulation: at once)


def judged_done(wait_s=JUDGE_S):
    """robo.done, given up to wait_s [s] to come true, holding the object up meanwhile."""
    deadline = time.monotonic() + wait_s
    while not robo.done and time.monotonic() < deadline:
        time.sleep(0.1)
    return robo.done


def pick_up(target, arm, label="object"):
    """One attempt to pick up an upright object (a Segment) with one arm: hover with the fingers turned to close
    across its faces, go down to half its height (at most 2 cm under its top), close, lift LIFT_M (lower, or back
    towards the arm's home, where that is out of reach). A descent that something blocks (a neighbour under the
    fingers) backs up and turns the fingers 90 degrees.

    Returns 'lifted' (judged a success), 'unplanned' (the arm cannot reach it: nothing moved), 'missed' (not held:
    the gripper opened and backed off) or 'wrong' (lifted but not judged a success: put back down)."""
    x, y, top_z = target.world_xyz
    grasp_z = top_z - min(target.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(arm), target.footprint_xy)
    for turn in (0.0, math.pi / 2):
        above = robo.move_to(arm, (x, y, top_z + HOVER_M), turn_quat(quat, turn), gripper=robo.OPEN)
        print(f"{arm} above the {label} (fingers turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned"
        down = robo.move_to(arm, (x, y, grasp_z))
        print("down:", down)
        if down.reached:
            break
        print("blocked on the way down: back up")
        robo.move_to(arm, (x, y, top_z + HOVER_M))
    grip = robo.grasp(arm)
    print("grasp:", grip)
    time.sleep(SETTLE_S)
    if not grip.holding and not robo.done:
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, top_z + HOVER_M))
        return "missed"
    hx, hy, _ = HOME_POS[arm]
    lifts = ((x, y, grasp_z + LIFT_M), (x, y, grasp_z + 0.8 * LIFT_M), ((x + hx) / 2, (y + hy) / 2, grasp_z + LIFT_M))
    for lift_xyz in lifts:
        lift = robo.move_to(arm, lift_xyz)
        print(f"lift to {np.round(lift_xyz, 3)}:", lift)
        if lift.planned:
            break
    else:
        print("lift by going home:", robo.home())
    if judged_done():
        return "lifted"
    print(f"lifted, but the task is not solved (not the {label}, or it slipped): put it back down")
    robo.move_to(arm, (x, y, grasp_z + 0.01))
    robo.release(arm)
    robo.move_to(arm, (x, y, top_z + HOVER_M))
    return "wrong"
