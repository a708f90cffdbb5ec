"""Scripted code cells for lift_tray, written only against the robo API (no privileged state).

The tray is handled like lift_bar's bar (these cells follow examples/cells/lift_bar.py); the block standing on it
only needs the tray kept level and the grippers clear of it.

Strategy:
1. Park both arms at the sides of the table (at home their grippers hide the tray's ends from the head camera), and
   only then measure the table's height.
2. Find the tray by the first colour word of the instruction: its blobs in the head camera (a hue/saturation mask;
   the block on it may cut it in two), its height from robo.segment, and its top face (the lit part of the blobs)
   back-projected onto the plane of that face: the smallest rectangle around it gives the tray's centre, length
   and direction.
3. Each arm grasps it from above, the left one 20 cm left of its middle and the right one 20 cm right of it (the
   same distance, so it hangs level between them, and well clear of the block near the middle), fingers opening
   across the tray, the grasp point 1.5 cm under the top face; both close (holding must be True, else the gripper
   opens, backs off and re-aims once).
4. The hands rise in alternate 1 cm steps (a 1 cm difference over 40 cm tilts the tray 1.5 deg, which the block
   rides out) to 12 cm above where they closed; the task is judged a success on the way, once the tray is 8 cm up,
   level, in both hands, the block on it.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task lift_tray --seed 0 --agent code_cell --llm replay:examples/cells/lift_tray.py
"""

# %% helpers: colours, both arms, rectangles on a plane
# include: lib/colour_objects.py
# The table is measured (once per episode) when lib/two_arms.py is included: from home the tray under both wrist
# cameras can spoil the measurement, so the arms move out to the sides first (lib/two_arms.py's park, by hand), and
# the home pose is put back afterwards.
_home = {arm: (np.array(robo.state().arm(arm).tcp_pos), robo.state().arm(arm).tcp_quat) for arm in ("left", "right")}
for _arm, _x in (("left", -0.45), ("right", 0.45)):
    print(f"park {_arm}:", robo.move_to(_arm, (_x, -0.2, _home[_arm][0][2] + 0.05), _home[_arm][1]))
# include: lib/two_arms.py
HOME_POS = {arm: pos for arm, (pos, _) in _home.items()}
HOME_QUAT = {arm: quat for arm, (_, quat) in _home.items()}

words = robo.task.instruction.lower().replace(".", "").replace(",", "").split()
colour, cargo_colour = [word for word in words if word in COLOUR_HSV][:2]
HALF_SPAN_M = 0.20  # each hand this far from the tray's middle
print(robo.task.instruction, "-> the", colour, "tray, the", cargo_colour, "block; table at z =", round(TABLE_Z, 4))


# %% park the arms, find the tray in the head camera
def find_tray():
    """(centre (x, y), direction (unit, x >= 0), top_z, length) of the tray from the head camera, or None."""
    rgb = robo.image("head")
    blobs = colour_blobs(rgb, colour)
    if not blobs:
        print("no", colour, "blob in the head camera")
        return None
    big = [b for b in blobs if b.sum() >= 0.1 * blobs[0].sum()]  # the block on the tray may cut it in two
    top_z = TABLE_Z + 0.035
    seg, _ = find(colour, ("head",), heights=(0.02, 0.05))  # taller: the block on it counted in
    if seg is not None:  # its height above the measured table (its top_z can be off where the block stands on it)
        top_z = TABLE_Z + float(np.clip(seg.height_m, 0.025, 0.05))
    bright = np.logical_or.reduce([bright_part(rgb, b) for b in big])
    centre, (length, width), axis = rect_on_plane("head", bright, top_z)
    print(f"tray top face: centre {np.round(centre, 4)}, {length:.3f} x {width:.3f} m, direction {np.round(axis, 3)}")
    return centre, axis, top_z, length


park()
tray = find_tray()
tray


# %% grasp the tray with both hands, the same distance either side of its middle
def grasp_points(tray):
    centre, axis, top_z, _ = tray
    z = top_z - 0.015
    return {"left": np.append(centre - HALF_SPAN_M * axis, z), "right": np.append(centre + HALF_SPAN_M * axis, z)}


def hover_and_grasp(arm, point, across):
    """Open above the grasp point, fingers across the tray, go down and close; the MoveResult of the grasp or None."""
    for quat in down_quats(arm, point, across):
        above = robo.move_to(arm, point + (0, 0, 0.08), quat, gripper=robo.OPEN)
        print(f"{arm} above {np.round(point, 3)}:", above)
        if above.planned:
            break
    else:
        return None
    print(f"{arm} down:", robo.move_to(arm, point))
    grip = robo.grasp(arm)
    print(f"{arm} grasp:", grip)
    return grip


def grasp_both(tray):
    points = grasp_points(tray)
    across = (-tray[1][1], tray[1][0])
    grips = {arm: hover_and_grasp(arm, points[arm], across) for arm in ARMS}
    return points, grips


points, grips = grasp_both(tray)
if not all(g is not None and g.holding for g in grips.values()):  # a miss: let go, look again, grasp again
    for arm in ARMS:
        robo.release(arm)
        here = robo.state().arm(arm).tcp_pos
        print(f"{arm} back off:", robo.move_to(arm, (here[0], here[1], here[2] + 0.08)))
    park()
    tray = find_tray()
    points, grips = grasp_both(tray)
print({arm: (g.holding if g is not None else "unplanned") for arm, g in grips.items()})

# %% lift in alternate 1 cm steps to 12 cm
STEP_M = 0.01
for k in range(1, 13):
    for arm in ARMS:
        if robo.done:
            break
        target = points[arm] + (0, 0, STEP_M * k)
        lift = robo.move_to(arm, target)
        print(f"{arm} to {STEP_M * k * 100:.0f} cm:", lift)
        if lift.terminated:
            break
print("done:", robo.done, "steps left:", robo.steps_left)
for arm in ARMS:
    s = robo.state().arm(arm)
    print(arm, np.round(s.tcp_pos, 3), "gripper", round(s.gripper, 3))
