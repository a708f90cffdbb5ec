"""Scripted code cells for fr3_pick_cube (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy (as general_pickup.py, for one arm named 'arm' and the cameras 'head' and 'wrist'):
1. Read the colour word of the instruction.
2. Find the cube in the head camera by colour: a per-pixel mask of the colour's rendered hue and saturation (the
   saturation band separates orange from the wood-coloured table and keeps the pale pink), connected blobs, largest
   first; for each blob a few candidate clicks on its top face go to robo.segment until one is an upright object of
   a plausible height. If the head camera has nothing usable, the wrist camera looks from where it is, then from
   above the blobs the head camera saw but could not measure.
3. Grasp from above: hover 8 cm over the top face with the fingers turned to close across the cube's faces, lower
   to half its height (at most 2 cm under its top), close, lift 15 cm. Every MoveResult is checked; a missed grasp
   (holding False) opens the gripper, backs off, goes home, looks again and retries, up to three attempts; a
   blocked descent (reached False, a neighbour under the fingers) backs up and turns the fingers 90 degrees.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_pick_cube --seed 0 --agent code_cell --llm replay:examples/cells/fr3_pick_cube.py
"""

# %% helpers: find the cube by the colour word of the instruction, and turn the gripper to grasp it
# include: lib/colour_objects.py


def look_closer(colour, xy, heights=(0.015, 0.1), view_height=0.25):
    """Bring the wrist camera over a table point (grasp point ``view_height`` above the table, lower if the arm
    cannot reach that high; the camera looks down and back, ~18 deg from vertical) and find the object there."""
    table_z = robo.table_height().z
    for height in np.arange(view_height, 0.1399, -0.03):
        back = 0.325 * (height + 0.053) - 0.055  # the camera's view centre is this far behind the grasp point
        view = robo.move_to("arm", (xy[0], xy[1] + back, table_z + height), HOME_QUAT)
        print(f"wrist {height:.2f} m over {np.round(xy, 3)}: {view}")
        if view.planned:
            return find(colour, ("wrist",), heights)[0]
    return None


def locate(colour, heights=(0.015, 0.1), view_height=0.25):
    """Head camera first, then the wrist camera from where it is; a blob that cannot be measured from there (cut
    off, occluded) is looked at again from above with the wrist camera."""
    seg, hints = find(colour, ("head",), heights)
    if seg is None:
        seg, more = find(colour, ("wrist",), heights)
        hints += more
    for xy in hints[:3]:
        if seg is None:
            seg = look_closer(colour, xy, heights, view_height)
    return seg


colour = next(word for word in robo.task.instruction.lower().replace(".", "").split() if word in COLOUR_HSV)
HOME_QUAT = robo.state().tcp_quat
print(robo.task.instruction, "-> looking for the", colour, "cube; table at", robo.table_height().z)

# %% find the cube (head camera first, then the wrist camera)
target = locate(colour)
target


# %% grasp it from above, lift 15 cm; on a miss back off, look again and retry
def try_pick(target):
    """One grasp attempt: 'lifted', 'unplanned' (nothing moved) or 'missed'."""
    x, y, top_z = target.world_xyz
    grasp_z = top_z - min(target.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(), target.footprint_xy)
    for turn in (0.0, math.pi / 2):
        above = robo.move_to("arm", (x, y, top_z + 0.08), turn_quat(quat, turn), gripper=robo.OPEN)
        print(f"above the {colour} cube (fingers turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned"
        down = robo.move_to("arm", (x, y, grasp_z))
        print("down:", down)
        if down.reached:
            break
        print("blocked on the way down: back up")
        robo.move_to("arm", (x, y, top_z + 0.08))
    grip = robo.grasp("arm")
    print("grasp:", grip)
    if not grip.holding and not robo.done:
        print("missed: open and back off")
        robo.release("arm")
        robo.move_to("arm", (x, y, top_z + 0.08))
        return "missed"
    for lift_xyz in ((x, y, grasp_z + 0.15), (x, y, grasp_z + 0.12)):
        lift = robo.move_to("arm", lift_xyz)  # straight up; lower if that is out of reach
        print(f"lift to {np.round(lift_xyz, 3)}:", lift)
        if lift.planned:
            break
    else:
        print("lift by going home:", robo.home())
    if robo.done:
        return "lifted"
    print("lifted, but the task is not solved (another object, or it slipped): put it back down")
    robo.move_to("arm", (x, y, grasp_z + 0.01))
    robo.release("arm")
    robo.move_to("arm", (x, y, top_z + 0.08))
    return "missed"


for _attempt in range(3):
    if target is None or robo.done:
        break
    outcome = try_pick(target)
    if outcome == "lifted" or robo.done:
        break
    print("home:", robo.home())
    target = locate(colour)
print("done:", robo.done, "steps left:", robo.steps_left)
