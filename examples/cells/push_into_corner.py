"""Scripted code cells for push_into_corner, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the block's colour first and the fence's second. Park both arms at the table's sides so
   the head camera sees the whole table.
2. Measure both top faces from the head camera's depth (robo.world_map) and the colour masks (lib/depth_faces.py).
   The fence's top face is an L inside a square: the square's corner nearest the L's middle is where the walls
   meet outside; each wall's thickness is the L's width across it, so the spot where the block touches both walls
   (its centre half a block from each wall's inner face) follows.
3. Push in two straight strokes square to the walls (a diagonal push would turn the block's corner into the
   corner): first towards the nearer wall, then along that wall into the corner. For each, the arm on the
   objects' side, gripper closed, fingers pointing down and side by side across the push (a flat face that squares
   the block), comes down behind the block with the fingertips 5 mm above the table and moves straight on, ending
   4 mm past where the block would meet the wall; then it backs off, lifts and parks.
4. The head camera measures the block after each stroke; if it is still more than 5 mm from either wall, both
   strokes are repeated once. The task is judged once the gripper has left the block.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task push_into_corner --seed 0 --agent code_cell --llm replay:examples/cells/push_into_corner.py
"""

# %% helpers: colours, both arms, faces measured from depth
# include: lib/colour_objects.py
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/depth_faces.py

TABLE_Z = measure_table()

block_colour, fence_colour = colours_named()[:2]
PUSH_Z = TABLE_Z + 0.025  # the grasp point; the closed fingertips 5 mm above the table
SAFE_Z = TABLE_Z + 0.1
BEHIND_M = 0.055  # start this far behind the block's centre
CONTACT_M = 0.03  # the gripper's centre ends this far behind the block's centre (half a block, half a finger)
PAST_M = 0.004  # push this far past where the block would touch both walls
GOOD_ENOUGH_M = 0.005
print(robo.task.instruction, "-> the", block_colour, "block into the", fence_colour, "fence's corner")


# %% park the arms, measure the block and the fence's corner
def corner_frame(fence):
    """The L's outer corner, its two inward directions along the walls (a1, a2) and the thicknesses of the walls
    that the block meets moving back along a1 and along a2, from the top face's points."""
    e1 = fence.axis
    e2 = np.array([-e1[1], e1[0]])
    side = fence.size[0]
    corners = [fence.centre + s1 * e1 * side / 2 + s2 * e2 * side / 2 for s1 in (-1, 1) for s2 in (-1, 1)]
    middle = fence.points[:, :2].mean(axis=0)
    vertex = min(corners, key=lambda c: np.linalg.norm(c - middle))
    a1 = e1 if np.dot(fence.centre - vertex, e1) > 0 else -e1
    a2 = e2 if np.dot(fence.centre - vertex, e2) > 0 else -e2
    local = (fence.points[:, :2] - vertex) @ np.column_stack([a1, a2])
    thick_1 = float(np.percentile(local[local[:, 1] > side / 2, 0], 98))  # the wall along a2
    thick_2 = float(np.percentile(local[local[:, 0] > side / 2, 1], 98))  # the wall along a1
    print(f"fence: outer corner {np.round(vertex, 4)}, walls {thick_1:.4f} and {thick_2:.4f} m thick")
    return vertex, a1, a2, (thick_1, thick_2)


park()
block = top_face(block_colour)
fence = top_face(fence_colour)
print("block:", block, "\nfence:", fence)
half = block.size[1] / 2
vertex, a1, a2, thick = corner_frame(fence)
spot = vertex + a1 * (thick[0] + half) + a2 * (thick[1] + half)  # the block's centre against both walls
arm = arm_for(spot)
print("spot:", np.round(spot, 4), "arm:", arm)


# %% push towards one wall, then along it into the corner; measure, repeat once
def stroke(xy, axis, i):
    """Push the block at xy back along ``axis`` (a1 or a2, index i) until it meets the wall across it; the gripper
    lifts away after it. False if it cannot plan."""
    d = -axis
    across = np.array([-d[1], d[0]])
    start = xy - d * BEHIND_M
    along = float(np.dot(xy - vertex, axis))
    end = xy + d * (along - (thick[i] + half)) - d * (CONTACT_M - PAST_M)
    here = robo.state().arm(arm).tcp_pos
    if here[2] < SAFE_Z - 0.01:
        print("up:", robo.move_to(arm, (here[0], here[1], SAFE_Z)))
    for _direction, quat in opening_pair(arm, start, across):
        above = robo.move_to(arm, (start[0], start[1], SAFE_Z), quat, gripper=robo.CLOSED)
        print(f"{arm} above the start {np.round(start, 4)}: {above}")
        if above.planned:
            break
    else:
        return False
    print("down:", robo.move_to(arm, (start[0], start[1], PUSH_Z)))
    print("push:", robo.move_to(arm, (end[0], end[1], PUSH_Z)))
    back = end - d * 0.02
    print("back off:", robo.move_to(arm, (back[0], back[1], PUSH_Z + 0.005)))
    print("up:", robo.move_to(arm, (back[0], back[1], SAFE_Z)))
    return True


def measure():
    park(arm)
    now = top_face(block_colour)
    print("block now:", now)
    return None if now is None else now.centre


xy = block.centre
for _round in range(2):
    gaps = [float(np.dot(xy - vertex, a)) - (t + half) for a, t in zip((a1, a2), thick, strict=True)]
    print(f"block {1000 * gaps[0]:.1f} and {1000 * gaps[1]:.1f} mm from the walls")
    if max(gaps) < GOOD_ENOUGH_M or robo.done:
        break
    # The nearer wall first (a short push), then along it into the corner.
    for i in sorted((0, 1), key=lambda k: gaps[k]):
        if robo.done or robo.steps_left < 100:
            break
        if float(np.dot(xy - vertex, (a1, a2)[i])) - (thick[i] + half) < GOOD_ENOUGH_M:
            continue
        if not stroke(xy, (a1, a2)[i], i):
            print("no stroke can be planned")
            break
        if robo.done:
            break
        xy = measure()
        if xy is None:
            break
    if robo.done or xy is None:
        break
print("done:", robo.done, "steps left:", robo.steps_left)
