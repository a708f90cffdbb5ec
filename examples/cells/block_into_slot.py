"""Scripted code cells for block_into_slot, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the block's colour first and the tray's second. Park both arms at the table's sides so
   the head camera sees the whole table.
2. Measure both top faces from the head camera's depth (robo.world_map) and the colour masks (lib/depth_faces.py):
   the block's top face gives its centre and long side; the tray's rim (its highest face) gives the pocket's centre
   (the middle of the rim's outline) and the pocket's long side; the pocket's floor is the lowest tray-coloured
   point inside the rim.
3. The arm on the objects' side (both lie on one side of the table) grasps the block from above, the fingers
   closing across its narrow side, the grasp point 3 cm above its underside (the fingertips 1 cm above the table),
   and lifts it until its underside is 2.5 cm above the rim.
4. It turns the block so its long side runs along the pocket's (the fingers then stand over the notches), carries
   it over the pocket's centre, lowers it until its underside is 2 mm above the pocket's floor and opens. If the
   block stops on the rim on the way down, it lifts it and tries again shifted a millimetre or two.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task block_into_slot --seed 0 --agent code_cell --llm replay:examples/cells/block_into_slot.py
"""

# %% helpers: colours, both arms, faces measured from depth
# include: lib/colour_objects.py
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/pick_place.py
# include: lib/depth_faces.py

TABLE_Z = measure_table()

block_colour, tray_colour = colours_named()[:2]
GRASP_ABOVE_UNDERSIDE_M = 0.03  # the grasp point above the block's underside: the fingertips 1 cm above it
print(robo.task.instruction, "-> the", block_colour, "block into the", tray_colour, "tray")

# %% park the arms, measure the block and the tray
park()
block = top_face(block_colour)
tray = top_face(tray_colour)
print("block:", block, "\ntray:", tray)
floor_points = colour_points(tray_colour)
if tray is not None:
    local = (floor_points[:, :2] - tray.centre) @ np.column_stack([tray.axis, [-tray.axis[1], tray.axis[0]]])
    inner = (np.abs(local[:, 0]) < tray.size[0] / 2 - 0.015) & (np.abs(local[:, 1]) < tray.size[1] / 2 - 0.015)
    low = floor_points[inner & (floor_points[:, 2] < tray.z - 0.005), 2]
    floor_z = float(np.median(low)) if len(low) >= 5 else TABLE_Z
    print(f"pocket floor at z = {floor_z:.4f} ({len(low)} points), rim at {tray.z:.4f}")
arm = arm_for((block.centre + tray.centre) / 2)
print("arm:", arm)


# %% pick the block, fingers across its narrow side
def pick_block():
    """Grasp the block and lift it until its underside is 2.5 cm above the rim; True if held."""
    x, y = block.centre
    across = np.array([-block.axis[1], block.axis[0]])
    grasp_z = block.z - block_height + GRASP_ABOVE_UNDERSIDE_M
    quats = [quat for _direction, quat in opening_pair(arm, (x, y), across)]
    # at the far edge of the table the wrist reaches a little higher only
    if grasp_at(arm, (x, y, grasp_z), quats, block.z + 0.05, down_tries=(0.0, 0.004)) != "held":
        return False
    print("lift:", robo.move_to(arm, (x, y, tray.z + 0.025 + GRASP_ABOVE_UNDERSIDE_M)))
    return True


block_height = block.z - TABLE_Z
held = pick_block()
print("held:", held)


# %% turn it along the pocket, carry it over the pocket's centre, lower it in and let go
def insert(offset=(0.0, 0.0)):
    """Over the pocket's centre (+ offset), turned along it, down until the underside is 2 mm above the floor; True
    if it got down there."""
    across = np.array([-tray.axis[1], tray.axis[0]])
    xy = tray.centre + np.asarray(offset)
    carry_z = tray.z + 0.025 + GRASP_ABOVE_UNDERSIDE_M
    here = robo.state().arm(arm).tcp_pos
    if here[2] < carry_z - 0.005:
        print("up:", robo.move_to(arm, (here[0], here[1], carry_z)))
    for _direction, quat in opening_pair(arm, xy, across):
        over = robo.move_to(arm, (xy[0], xy[1], carry_z), quat)
        print(f"{arm} over the pocket {np.round(xy, 4)}: {over}")
        if over.planned:
            break
    else:
        return False
    print("to the rim:", robo.move_to(arm, (xy[0], xy[1], tray.z + 0.004 + GRASP_ABOVE_UNDERSIDE_M)))
    target_z = floor_z + 0.002 + GRASP_ABOVE_UNDERSIDE_M
    down = robo.move_to(arm, (xy[0], xy[1], target_z))
    print("into the pocket:", down)
    return robo.state().arm(arm).tcp_pos[2] < target_z + 0.006


if held:
    for offset in [(0.0, 0.0), (0.002, 0.0), (-0.002, 0.0), (0.0, 0.002), (0.0, -0.002)]:
        if insert(offset):
            break
        print("stopped on the rim: lift and shift")
    print("release:", robo.release(arm))
    here = robo.state().arm(arm).tcp_pos
    if not robo.done:
        print("lift away:", robo.move_to(arm, (here[0], here[1], here[2] + 0.06)))
print("done:", robo.done, "steps left:", robo.steps_left)
