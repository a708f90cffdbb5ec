"""Scripted code cells for peg_in_hole, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the peg's colour first and the block's second. Park both arms at the table's sides so the
   head camera sees the whole table.
2. Measure both top faces from the head camera's depth (robo.world_map) and the colour masks (lib/depth_faces.py):
   the peg's top face gives its centre, its sides' direction and its height; the block's top face (a square frame
   around the hole) gives the hole's centre (the middle of its outline), the sides' direction and the rim's height.
3. The arm on the objects' side (both lie on one side of the table) grasps the peg from above near its top, the
   fingers closing across two faces (the orientation its wrist reaches best), the grasp point 1.5 cm below the top,
   and lifts it until its underside is 1.5 cm above the rim.
4. It turns the peg square to the hole (the turn nearest its current orientation), carries it over the hole's
   centre, lowers it to 5 mm above the rim, then straight down until its underside would touch the table through
   the hole; the task is judged on the way. If the peg stops on the rim, it lifts it and tries again shifted a
   millimetre or two, then lets go where it is.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task peg_in_hole --seed 0 --agent code_cell --llm replay:examples/cells/peg_in_hole.py
"""

# %% helpers: colours, both arms, faces measured from depth
# include: lib/colour_objects.py
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/pick_place.py
# include: lib/depth_faces.py

TABLE_Z = measure_table()

peg_colour, block_colour = colours_named()[:2]
GRASP_BELOW_TOP_M = 0.015
print(robo.task.instruction, "-> the", peg_colour, "peg into the", block_colour, "block")

# %% park the arms, measure the peg and the block with the hole
park()
peg = top_face(peg_colour)
hole = top_face(block_colour)
print("peg:", peg, "\nblock:", hole)
arm = arm_for((peg.centre + hole.centre) / 2)
peg_height = peg.z - TABLE_Z
below_grasp = peg_height - GRASP_BELOW_TOP_M  # from the grasp point down to the peg's underside
print("arm:", arm, f"peg height {peg_height:.4f} m")


# %% pick the peg near its top
def pick_peg():
    """Grasp the peg across two faces and lift it until its underside is 1.5 cm above the rim; True if held."""
    x, y = peg.centre
    quats = [quat for _direction, quat in openings_along(arm, (x, y), peg.axis)[:2]]
    if grasp_at(arm, (x, y, peg.z - GRASP_BELOW_TOP_M), quats, peg.z + 0.05) != "held":
        return False
    print("lift:", robo.move_to(arm, (x, y, hole.z + 0.015 + below_grasp)))
    return True


held = pick_peg()
print("held:", held)


# %% square to the hole, over its centre, straight down
def insert(offset=(0.0, 0.0)):
    """Over the hole's centre (+ offset), square to it, then down until the underside would touch the table; True
    if the peg went down into the hole."""
    xy = hole.centre + np.asarray(offset)
    carry_z = hole.z + 0.015 + below_grasp
    here = robo.state().arm(arm).tcp_pos
    if here[2] < carry_z - 0.005:
        print("up:", robo.move_to(arm, (here[0], here[1], carry_z)))
    for _direction, quat in openings_along(arm, xy, hole.axis):
        over = robo.move_to(arm, (xy[0], xy[1], carry_z), quat)
        print(f"{arm} over the hole {np.round(xy, 4)}: {over}")
        if over.planned:
            break
    else:
        return False
    print("to the rim:", robo.move_to(arm, (xy[0], xy[1], hole.z + 0.005 + below_grasp)))
    target_z = TABLE_Z + 0.002 + below_grasp
    print("into the hole:", robo.move_to(arm, (xy[0], xy[1], target_z)))
    return robo.done or robo.state().arm(arm).tcp_pos[2] < hole.z - 0.015 + below_grasp


if held:
    for offset in [(0.0, 0.0), (0.002, 0.0), (-0.002, 0.0), (0.0, 0.002), (0.0, -0.002)]:
        if insert(offset) or robo.done:
            break
        print("stopped on the rim: lift and shift")
    if not robo.done:
        print("release:", robo.release(arm))
print("done:", robo.done, "steps left:", robo.steps_left)
