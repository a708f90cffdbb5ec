"""Scripted code cells for fill_held_bowl, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the bowl's colour first and the block's second. Park both arms at the table's sides and
   find both by colour (lib/colour_objects.py: hue/saturation blobs, clicks on the top face, robo.segment; a wrist
   camera looks closer at what the head camera cannot measure). The bowl is open, so its segment centre is good to
   1-2 cm and its measured height a little low.
2. The arm on the bowl's side holds it: it grasps the rim on the bowl's outer side, away from the middle (6.2 cm
   from the bowl's centre, the middle of its 6 mm wall), fingers opening along the radius so one goes inside and
   one outside, 1.8 cm above the table, closes (holding must be True), lifts it and carries it so the bowl's centre
   hangs in the middle of the table with its underside 8.5 cm above the table (the first of a few such spots it
   reaches; the other arm reaches highest on its own side of the middle).
3. The other arm picks the block from above (fingers across its faces, at half its height), lifts it, turns its
   fingers to open at right angles to the line towards the holding gripper (so they stay clear of it), and carries
   it over the bowl, 2 cm past the centre away from the holding gripper, the block's underside 1 cm above the
   rim; it opens and the block drops in. The task is judged at once.
4. If it is not solved (the block missed, or fell out), the filling arm parks, looks for the block again (head
   camera, then wrist cameras) and repeats once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fill_held_bowl --seed 0 --agent code_cell --llm replay:examples/cells/fill_held_bowl.py
"""

# %% helpers: colours, both arms, the wrist views
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
bowl_colour, block_colour = colours_named()[:2]
RIM_RADIUS = 0.062  # the middle of the bowl's wall from its centre (outer radius ~6.5 cm, wall 6 mm)
GRASP_ABOVE_UNDERSIDE = 0.018  # the holding grasp point above the bowl's underside: the fingertips near its base
# (8 mm thick) hold it steadier than higher up the 4 cm wall: it tilts ~6 deg in the grip
BOWL_HEIGHT = 0.04
HOLD_UNDERSIDE = 0.085  # the held bowl's underside above the table, as commanded (it sags ~1.5 cm in the grip)
BOWL = {"heights": (0.02, 0.07), "view_height": 0.25}
BLOCK = {"heights": (0.015, 0.05), "view_height": 0.2}
print(robo.task.instruction, "-> the", block_colour, "block into the", bowl_colour, "bowl; table at", round(TABLE_Z, 4))

# %% park the arms, find the bowl and the block
park()
bowl = locate(bowl_colour, **BOWL)
print("bowl:", bowl)
block = locate(block_colour, **BLOCK)
print("block:", block)
holder = arm_for(bowl.world_xyz)
filler = other_arm(holder)
print("holder:", holder, "filler:", filler)


# %% the holding arm grasps the bowl by its rim and holds it up near the middle
def hold_bowl(bowl, arm):
    """Grasp the rim on its outer side, lift, carry the bowl's centre to a spot near the middle; the grasp point's
    offset from the bowl's centre (dx, dy), or None."""
    cx, cy, _ = bowl.world_xyz
    side = SIDE[arm]
    offset = np.array([side * RIM_RADIUS, 0.0])  # the rim's outer side: the other arm comes from the middle
    grasp = np.array([cx + offset[0], cy + offset[1], TABLE_Z + GRASP_ABOVE_UNDERSIDE])
    if grasp_at(arm, grasp, down_quats(arm, grasp, offset), grasp[2] + 0.1) != "held":
        return None
    print("lift:", robo.move_to(arm, grasp + (0, 0, HOLD_UNDERSIDE)))
    # In the middle, a little away from the robot: the filling arm reaches highest on its own side of the middle.
    for x, y in ((0.0, -0.23), (0.03 * side, -0.23), (0.0, -0.2), (0.05 * side, -0.26)):
        spot = np.array([x + offset[0], y + offset[1], TABLE_Z + GRASP_ABOVE_UNDERSIDE + HOLD_UNDERSIDE])
        carry = robo.move_to(arm, spot)
        print(f"carry the bowl's centre to ({x:.2f}, {y:.2f}):", carry)
        if carry.planned:
            return offset
    return offset


offset = None
for _attempt in range(2):
    offset = hold_bowl(bowl, holder)
    if offset is not None:
        break
    park(holder)
    bowl = locate(bowl_colour, **BOWL)
held_at = np.array(robo.state().arm(holder).tcp_pos)
if offset is not None:
    bowl_centre = held_at[:2] - offset
    print("bowl held: centre", np.round(bowl_centre, 3), "grasp point", np.round(held_at, 3))
else:
    print("the bowl is not held")


# %% the other arm picks the block and drops it into the bowl
def pick_block(block, arm):
    """Grasp the block from above and lift it; the grasp point's height above the block's underside, or None."""
    x, y, top_z = block.world_xyz
    height = block.height_m if 0.02 < block.height_m < 0.05 else 0.03
    grasp_z = top_z - min(height / 2, 0.015)
    quat = grasp_quat(robo.state().arm(arm), block.footprint_xy)
    if grasp_at(arm, (x, y, grasp_z), [quat], top_z + 0.08) != "held":
        return None
    for lift_z in (0.17, 0.15, 0.14):  # above the held bowl's rim; lower if the arm cannot reach that high here
        lift = robo.move_to(arm, (x, y, TABLE_Z + lift_z))
        print(f"lift to {lift_z:.2f} m above the table:", lift)
        if lift.planned:
            break
    return grasp_z - (top_z - height)


def drop_into_bowl(arm, above_block_bottom):
    """Carry the held block over the bowl (2 cm past its centre, away from the holding gripper), its underside
    1 cm above the rim (as if the bowl hung level, so a little more), and let go."""
    away = -offset / np.linalg.norm(offset)
    target_xy = bowl_centre + 0.02 * away
    rim_z = held_at[2] - GRASP_ABOVE_UNDERSIDE + BOWL_HEIGHT
    z = rim_z + 0.01 + above_block_bottom
    for quat in down_quats(arm, target_xy, (-away[1], away[0])):
        over = robo.move_to(arm, (target_xy[0], target_xy[1], z + 0.015), quat)
        print(f"{arm} over the bowl at {np.round(target_xy, 3)}:", over)
        if over.planned:
            break
    else:
        return False
    print("lower:", robo.move_to(arm, (target_xy[0], target_xy[1], z)))
    print("release:", robo.release(arm))
    if not robo.done:
        print("up:", robo.move_to(arm, (target_xy[0], target_xy[1], z + 0.05)))
    return True


for _attempt in range(2):
    if robo.done or block is None or offset is None:
        break
    above_bottom = pick_block(block, filler)
    if above_bottom is not None:
        drop_into_bowl(filler, above_bottom)
    if robo.done:
        break
    print("not solved yet; looking for the block again")
    park(filler)
    block = locate(block_colour, **BLOCK)
print("done:", robo.done, "steps left:", robo.steps_left)
