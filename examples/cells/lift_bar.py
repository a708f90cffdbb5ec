"""Scripted code cells for lift_bar, written only against the robo API (no privileged state).

Strategy:
1. Park both arms at the sides of the table (at home their grippers hide the bar's ends from the head camera).
2. Find the bar by the colour word of the instruction: its blob in the head camera (a hue/saturation mask), its
   height from robo.segment, and its top face (the lit part of the blob) back-projected onto the plane of that
   face: the smallest rectangle around it gives the bar's centre, length and direction.
3. Each arm grasps it from above, the left one 20 cm left of its middle and the right one 20 cm right of it (the
   same distance, so it hangs level between them), fingers opening across the bar, the grasp point 1.5 cm under
   the top face; both close (holding must be True, else the gripper opens, backs off and re-aims once).
4. The hands rise in alternate 2 cm steps (a 2 cm difference over 40 cm tilts the bar 3 deg) to 12 cm above where
   they closed; the task is judged a success on the way, once the bar is 8 cm up, level, in both hands.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task lift_bar --seed 0 --agent code_cell --llm replay:examples/cells/lift_bar.py
"""

# %% helpers: colours, both arms, rectangles on a plane
# include: lib/colour_objects.py
# include: lib/two_arms.py

words = robo.task.instruction.lower().replace(".", "").replace(",", "").split()
colour = next(word for word in words if word in COLOUR_HSV)
HALF_SPAN_M = 0.20  # each hand this far from the bar's middle
print(robo.task.instruction, "-> the", colour, "bar; table at z =", round(TABLE_Z, 4))


# %% park the arms, find the bar in the head camera
def find_bar():
    """(centre (x, y), direction (unit, x >= 0), top_z, length) of the bar from the head camera, or None."""
    rgb = robo.image("head")
    blobs = colour_blobs(rgb, colour)
    if not blobs:
        print("no", colour, "blob in the head camera")
        return None
    blob = blobs[0]
    top_z = TABLE_Z + 0.04
    seg, _ = find(colour, ("head",), heights=(0.02, 0.07))
    if seg is not None:
        top_z = seg.top_z
    centre, (length, width), axis = rect_on_plane("head", bright_part(rgb, blob), top_z)
    print(f"bar top face: centre {np.round(centre, 4)}, {length:.3f} x {width:.3f} m, direction {np.round(axis, 3)}")
    return centre, axis, top_z, length


park()
bar = find_bar()
bar


# %% grasp the bar with both hands, the same distance either side of its middle
def grasp_points(bar):
    centre, axis, top_z, _ = bar
    z = top_z - 0.015
    return {"left": np.append(centre - HALF_SPAN_M * axis, z), "right": np.append(centre + HALF_SPAN_M * axis, z)}


def hover_and_grasp(arm, point, across):
    """Open above the grasp point, fingers across the bar, go down and close; the MoveResult of the grasp or None."""
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


def grasp_both(bar):
    points = grasp_points(bar)
    across = (-bar[1][1], bar[1][0])
    grips = {arm: hover_and_grasp(arm, points[arm], across) for arm in ARMS}
    return points, grips


points, grips = grasp_both(bar)
if not all(g is not None and g.holding for g in grips.values()):  # a miss: let go, look again, grasp again
    for arm in ARMS:
        robo.release(arm)
        here = robo.state().arm(arm).tcp_pos
        print(f"{arm} back off:", robo.move_to(arm, (here[0], here[1], here[2] + 0.08)))
    park()
    bar = find_bar()
    points, grips = grasp_both(bar)
print({arm: (g.holding if g is not None else "unplanned") for arm, g in grips.items()})

# %% lift in alternate 2 cm steps to 12 cm
STEP_M = 0.02
for k in range(1, 7):
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
