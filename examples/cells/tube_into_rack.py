"""Scripted code cells for tube_into_rack, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the tube's cap colour, the rack's colour and the hole (1 to 5 from the left). Park both
   arms at the table's sides so the head camera sees the whole table.
2. Measure the rack's top from the head camera's depth and the colour mask (lib/depth_faces.py): its centre is the
   middle hole's, its long side the row's direction (turned to point to +x, the right), so hole k lies
   (k - 3) * 3.5 cm along it from the centre. The tube's cap gives the tube's centre and its top.
3. The arm on the rack's side (the rack lies on one side of the table) comes down over the cap with its fingers
   opening across the row (between the neighbouring tubes), closes 2 cm below the cap's top and lifts the tube
   straight up until its bottom is 1.5 cm above the rack's top.
4. It carries the tube beside the row (its bottom is only above the rack's top, lower than the other tubes' caps)
   to the named hole, over it, lowers it straight down until its bottom is 2 mm above the rack's base
   plate, opens and lifts away; the task is judged on the way. If the tube stopped on the top plate (its bottom
   still above it), it grasps it again and retries shifted a millimetre or two.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task tube_into_rack --seed 0 --agent code_cell --llm replay:examples/cells/tube_into_rack.py
"""

# %% helpers: colours, both arms, faces measured from depth
# include: lib/colour_objects.py
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/pick_place.py
# include: lib/depth_faces.py

TABLE_Z = measure_table()

words = instruction_words()
cap_colour, rack_colour = colours_named()[:2]
hole_number = int(words[words.index("hole") + 1])
PITCH = 0.035  # hole to hole along the rack (the recipe)
TUBE_LENGTH = 0.10
RACK_BASE = 0.008  # the base plate the tubes stand on
GRASP_BELOW_TOP = 0.027  # the grasp point under the cap's top: the fingertips stay 1 cm above the rack
print(robo.task.instruction, "->", cap_colour, "tube into hole", hole_number, "of the", rack_colour, "rack")

# %% park the arms, measure the rack and the tube
park()
rack = top_face(rack_colour)
cap = top_face(cap_colour)
print("rack:", rack, "\ncap:", cap)
row = rack.axis if rack.axis[0] > 0 else -rack.axis  # along the row of holes, left to right
target = rack.centre + (hole_number - 3) * PITCH * row
arm = arm_for(rack.centre)
across = np.array([-row[1], row[0]])
below_grasp = TUBE_LENGTH - GRASP_BELOW_TOP  # from the grasp point down to the tube's bottom
carry_z = rack.z + 0.012 + below_grasp
# The carried tube's bottom only clears the rack's top, not the other tubes: it travels beside the row, ASIDE from it
# on the robot's side, where its fingers and body pass the standing tubes.
ASIDE = 0.05
SIDE = across if across[1] < 0 else -across
print(f"arm {arm}, target hole at {np.round(target, 4)}, rack top {rack.z:.4f}")


# %% take the tube out of its hole
def pick_tube(xy, top_z):
    """Grasp the tube by its upper end and lift it until its bottom clears the rack; True if held."""
    quats = [quat for _direction, quat in opening_pair(arm, xy, across)]
    if grasp_at(arm, (xy[0], xy[1], top_z - GRASP_BELOW_TOP), quats, top_z + 0.05) != "held":
        return False
    print("lift:", robo.move_to(arm, (xy[0], xy[1], carry_z)))
    return True


held = pick_tube(cap.centre, cap.z)
print("held:", held)


# %% beside the row to the named hole, over it, straight down, let go
def carry_to(xy):
    """Carry the held tube from where it was picked over xy, beside the row: on the robot's side of it first, else
    the far side; either way round for the fingers (the tube turns about its own axis). True if it got there."""
    for side in (SIDE, -SIDE):
        for _direction, quat in opening_pair(arm, xy, across):
            path = [cap.centre + ASIDE * side, xy + ASIDE * side, xy]
            for i, point in enumerate(path):
                step = robo.move_to(arm, (point[0], point[1], carry_z), quat)
                print(f"carry {i}:", step)
                if not step.planned:
                    break
            else:
                return True
    return False


def insert(offset=(0.0, 0.0)):
    """Carry the held tube over the hole (+ offset), lower it onto the base plate and let go; True if the tube
    went down into the hole."""
    xy = target + np.asarray(offset)
    here = robo.state().arm(arm).tcp_pos[:2]
    if np.linalg.norm(here - xy) > 0.01 and not carry_to(xy):
        return False
    print("to the rim:", robo.move_to(arm, (xy[0], xy[1], rack.z + 0.005 + below_grasp)))
    down = robo.move_to(arm, (xy[0], xy[1], TABLE_Z + RACK_BASE + 0.002 + below_grasp))
    print("into the hole:", down)
    inside = robo.done or robo.state().arm(arm).tcp_pos[2] < rack.z - 0.02 + below_grasp
    if inside:
        print("release:", robo.release(arm))
        print("away:", robo.move_to(arm, (xy[0], xy[1], carry_z + 0.03)))
    return inside


if held:
    for offset in [(0.0, 0.0), *[0.002 * np.array(d) for d in (row, -row, across, -across)]]:
        if insert(offset) or robo.done:
            break
        print("stopped on the rim: up and shift")
        here = robo.state().arm(arm).tcp_pos
        robo.move_to(arm, (here[0], here[1], carry_z))
print("done:", robo.done, "steps left:", robo.steps_left)
