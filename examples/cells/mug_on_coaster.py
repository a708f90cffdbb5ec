"""Scripted code cells for mug_on_coaster, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the mug's colour first and the coaster's second. Park both arms at the table's sides so the
   head camera sees the whole table.
2. Measure from the head camera's depth and the colour masks (lib/depth_faces.py): the mug's rim (the highest ring
   of its colour) gives its centre (a circle fitted to the ring) and height; the points of its colour that stand out
   of the wall below the rim are the handle, and give its direction; the coaster's top gives its centre.
3. The arm on the coaster's side comes down over the mug's centre with the gripper open, the fingers opening at
   right angles to the handle (then 30 deg either way, where the wrist cannot turn that far), to 3 cm below the
   rim, closes across the body (holding must be True) and lifts the mug until its underside is 10 cm above the
   table (over the clutter), lower if the arm cannot reach that high.
4. It carries the mug over the coaster's centre (the grasp point is the mug's axis, so the hand may turn on the
   way where the wrist cannot reach with the grasp's orientation), lowers it until its underside is 4 mm above the
   coaster, opens and lifts the hand straight up.
5. If the task is not solved, park, look again and repeat once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task mug_on_coaster --seed 0 --agent code_cell --llm replay:examples/cells/mug_on_coaster.py
"""

# %% helpers: colours, both arms, faces measured from depth
# include: lib/colour_objects.py
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/depth_faces.py

TABLE_Z = measure_table()

mug_colour, coaster_colour = colours_named()[:2]
MUG_RADIUS = 0.0385  # outer radius (the recipe: 7.7 cm across)
GRASP_BELOW_RIM = 0.03
print(robo.task.instruction, "-> the", mug_colour, "mug onto the", coaster_colour, "coaster; table at", TABLE_Z)


def fit_circle(xy):
    """Centre (x, y) and radius of the circle through points (Nx2), least squares."""
    A = np.column_stack([2 * xy[:, 0], 2 * xy[:, 1], np.ones(len(xy))])
    b = (xy**2).sum(axis=1)
    (cx, cy, c), *_ = np.linalg.lstsq(A, b, rcond=None)
    return np.array([cx, cy]), math.sqrt(max(c + cx * cx + cy * cy, 0.0))


def measure_mug():
    """(centre (x, y), rim height z, handle direction (unit x, y) or None) of the mug, or None if not seen."""
    points = colour_points(mug_colour)
    if len(points) < 30:
        print(f"mug: only {len(points)} points")
        return None
    rim_z = float(np.percentile(points[:, 2], 98))
    ring = points[points[:, 2] > rim_z - 0.004]
    centre, radius = fit_circle(ring[:, :2])
    if not 0.025 < radius < 0.05:  # the ring seen too partially: the middle of the rim's outline instead
        (cx, cy), _, _ = cv2.minAreaRect(ring[:, :2].astype(np.float32))
        centre = np.array([cx, cy])
    out = points[(points[:, 2] < rim_z - 0.01) & (points[:, 2] > TABLE_Z + 0.015)]
    out = out[np.linalg.norm(out[:, :2] - centre, axis=1) > MUG_RADIUS + 0.007]
    handle = None
    if len(out) >= 8:
        d = np.mean(out[:, :2] - centre, axis=0)
        handle = d / np.linalg.norm(d)
    print(f"mug: centre {np.round(centre, 4)} (ring radius {radius:.4f}), rim at {rim_z:.4f}, "
          f"handle {None if handle is None else np.round(handle, 2)} ({len(out)} points)")  # fmt: skip
    return centre, rim_z, handle


def openings(centre, handle, arm):
    """Directions for the fingers to open along, best first: at right angles to the handle, then 30 deg either way
    (the fingers still pass beside it); the arm's preferred opening when the handle was not seen."""
    if handle is None:
        return [preferred_opening(arm, centre)]
    across = np.array([-handle[1], handle[0]])
    turned = [np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ across for a in (0.5, -0.5)]
    return [across, *turned]


# %% park the arms, measure the mug and the coaster
park()
mug = measure_mug()
coaster = top_face(coaster_colour)
print("coaster:", coaster)


# %% grasp the mug across its body, beside the handle
def grasp_mug(mug, arm):
    """Grasp the mug across its body with ``arm`` and lift it: ('held', grasp height above the mug's underside),
    ('unplanned', None) when the arm cannot reach it (nothing moved) or ('missed', None)."""
    centre, rim_z, handle = mug
    grasp_z = rim_z - GRASP_BELOW_RIM
    x, y = centre
    for direction in openings(centre, handle, arm):
        for _d, quat in opening_pair(arm, centre, direction):
            above = robo.move_to(arm, (x, y, rim_z + 0.025), quat, gripper=robo.OPEN)
            print(f"{arm} above the mug, opening along {np.round(direction, 2)}: {above}")
            if above.planned:
                break
        else:
            continue
        print("down:", robo.move_to(arm, (x, y, grasp_z)))
        grip = robo.grasp(arm)
        print("grasp:", grip)
        if grip.holding:
            for lift in (0.1, 0.08, 0.06, 0.04):
                up = robo.move_to(arm, (x, y, grasp_z + lift))
                print(f"lift {lift}:", up)
                if up.planned:
                    break
            return "held", grasp_z - TABLE_Z
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, rim_z + 0.025))
        return "missed", None
    return "unplanned", None


def set_down(arm, below):
    """Carry the held mug over the coaster's centre, lower it onto the coaster, open and lift away; True if it was
    set down there. Where the wrist cannot reach with the grasp's orientation the hand turns about the vertical on
    the way (about the mug's axis); if no turn reaches, the mug is set down where it is."""
    state = robo.state().arm(arm)
    here, quat = state.tcp_pos, state.tcp_quat
    gx, gy = coaster.centre
    rest_z = coaster.z + below + 0.004
    for turn_deg in (0, 30, -30, 60, -60, 90, -90):
        over = robo.move_to(arm, (gx, gy, max(here[2], rest_z + 0.02)), turn_quat(quat, math.radians(turn_deg)))
        print(f"{arm} carries the mug over the coaster, hand turned {turn_deg} deg: {over}")
        if over.planned:
            break
    else:
        print("cannot reach the coaster: set the mug down here")
        robo.move_to(arm, (here[0], here[1], TABLE_Z + below + 0.004))
        robo.release(arm)
        robo.move_to(arm, (here[0], here[1], here[2]))
        return False
    print("lower:", robo.move_to(arm, (gx, gy, rest_z)))
    print("release:", robo.release(arm))
    print("lift away:", robo.move_to(arm, (gx, gy, rest_z + 0.1)))
    return True


def mug_to_coaster(mug):
    """The arm on the coaster's side takes the mug there; if it cannot reach the mug, the other arm first moves the
    mug 8 cm towards it."""
    arm = arm_for(coaster.centre)
    status, below = grasp_mug(mug, arm)
    if status == "unplanned":
        other = other_arm(arm)
        status, below = grasp_mug(mug, other)
        print(f"{arm} cannot reach the mug; {other} moves it towards it: {status}")
        if status != "held":
            return False
        here = robo.state().arm(other).tcp_pos
        step = SIDE[arm] * 0.08
        robo.move_to(other, (here[0] + step, here[1], here[2]))
        robo.move_to(other, (here[0] + step, here[1], TABLE_Z + below + 0.004))
        robo.release(other)
        robo.move_to(other, (here[0] + step, here[1], here[2]))
        park(other)
        mug = measure_mug()
        if mug is None:
            return False
        status, below = grasp_mug(mug, arm)
    print("held:", status)
    return status == "held" and set_down(arm, below)


if mug is not None and coaster is not None:
    print("set down:", mug_to_coaster(mug))
print("done:", robo.done, "steps left:", robo.steps_left)

# %% check: if the mug is not on the coaster, look again and repeat once
if not robo.done and robo.steps_left > 150:
    park()
    mug = measure_mug()
    coaster = top_face(coaster_colour)
    if mug is not None and coaster is not None:
        print("set down:", mug_to_coaster(mug))
print("done:", robo.done, "steps left:", robo.steps_left)
