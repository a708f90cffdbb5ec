"""Scripted code cells for center_on_pad, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the cylinder's colour first and the square's (pad's) second. Park both arms at the
   table's sides so the head camera sees the whole table.
2. Measure the square's centre while nothing covers it: its blob in the head camera back-projected onto the table
   plane (it is flat, so its outline on the table is its footprint), the centre of the smallest rectangle around
   it. Find the cylinder with robo.segment (lib/colour_objects.py: its top face's centre, on its axis).
3. The arm on the objects' side (both lie on one side of the table) grasps the cylinder from above, fingers turned
   the way that arm's wrist reaches best there, at half its height (closing centres it between the fingers), lifts
   it 6 cm, carries it over the square's centre, lowers it until its underside is 3 mm above the table and opens.
4. Check: the arm lifts away and parks, the head camera measures the cylinder again; while it stands more than
   4 mm from the square's centre, the arm grasps it where it stands, lifts it 1 cm, shifts it by the difference,
   sets it down and opens (at most three corrections). The task is judged the moment the gripper lets go.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task center_on_pad --seed 0 --agent code_cell --llm replay:examples/cells/center_on_pad.py
"""

# %% helpers: colours, both arms, rectangles on a plane
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
cylinder_colour, pad_colour = colours_named()[:2]
CYLINDER = {"heights": (0.03, 0.08), "view_height": 0.2}
PAD_TOP_Z = TABLE_Z + 0.001
GOOD_ENOUGH_M = 0.004
print(robo.task.instruction, "-> the", cylinder_colour, "cylinder onto the", pad_colour, "square")


# %% park the arms, measure the square's centre and find the cylinder
def find_pad(camera="head"):
    """The square's centre (x, y) from its blob on the table plane, or None."""
    blobs = colour_blobs(robo.image(camera), pad_colour)
    if not blobs:
        return None
    centre, (long_side, short_side), _ = rect_on_plane(camera, blobs[0], PAD_TOP_Z)
    print(f"square in {camera}: centre {np.round(centre, 4)}, outline {long_side:.3f} x {short_side:.3f} m")
    return centre


park()
pad = find_pad()
cylinder = locate(cylinder_colour, **CYLINDER)
print("square:", pad, "\ncylinder:", cylinder)
arm = arm_for((pad + cylinder.world_xyz[:2]) / 2)
print("arm:", arm)


# %% pick the cylinder and set it down on the square's centre
def opening_for(arm, points):
    """The fingers' opening direction the arm's wrist reaches best over all the given table points (the mean of
    its preferred ones)."""
    mean = np.sum([preferred_opening(arm, p) for p in points], axis=0)
    return mean / np.linalg.norm(mean)


def grasp_here(arm, xy, grasp_z, quat):
    """Hover, go down around the cylinder at xy, close; True if held."""
    return grasp_at(arm, (xy[0], xy[1], grasp_z), [quat, None], grasp_z + 0.07) == "held"


def set_down(arm, xy, grasp_z, lift):
    """Lift the held cylinder ``lift``, carry it over xy, lower it to 3 mm above where it was grasped, open."""
    here = robo.state().arm(arm).tcp_pos
    print("lift:", robo.move_to(arm, (here[0], here[1], grasp_z + lift)))
    print("over:", robo.move_to(arm, (xy[0], xy[1], grasp_z + lift)))
    print("lower:", robo.move_to(arm, (xy[0], xy[1], grasp_z + 0.003)))
    print("open:", robo.release(arm))


x, y, top_z = cylinder.world_xyz
height = cylinder.height_m if 0.03 < cylinder.height_m < 0.08 else 0.05
grasp_z = top_z - height / 2
quat = quat_from_axes(tuple(opening_for(arm, [(x, y), pad])) + (0.0,))
if grasp_here(arm, (x, y), grasp_z, quat):
    set_down(arm, pad, grasp_z, 0.06)
print("done:", robo.done, "steps left:", robo.steps_left)


# %% check: measure the cylinder on the square, correct while it is more than 4 mm off
def measure():
    """The cylinder's centre (x, y) seen by the head camera with the arm parked, or None."""
    here = robo.state().arm(arm).tcp_pos
    print("up:", robo.move_to(arm, (here[0], here[1], here[2] + 0.06)))
    park(arm)
    seg = locate(cylinder_colour, **CYLINDER)
    print("cylinder now:", seg)
    return None if seg is None else np.array(seg.world_xyz[:2])


for _correction in range(3):
    if robo.done or robo.steps_left < 120:
        break
    now = measure()
    if now is None:
        break
    error = pad - now
    print(f"cylinder {1000 * np.linalg.norm(error):.1f} mm from the square's centre: {np.round(1000 * error, 1)} mm")
    if np.linalg.norm(error) < GOOD_ENOUGH_M:
        break
    if grasp_here(arm, now, grasp_z, quat):
        set_down(arm, now + error, grasp_z, 0.01)
print("done:", robo.done, "steps left:", robo.steps_left)
