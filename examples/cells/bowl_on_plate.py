"""Scripted code cells for bowl_on_plate, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the bowl's colour first and the plate's second.
2. Park both arms out at the table's sides (at home they hide part of the table from the head camera), then find
   both by colour (as in general_pickup.py: a hue/saturation mask of the rendered colour, blobs, clicks on the top
   face, robo.segment; a wrist camera looks from 25 cm above at blobs the head camera cannot measure or that touch
   the image border). The bowl is open, so its segment centre is good to 1-2 cm and its measured height is a little
   low (~3.7 of 4.5 cm). The plate's shaded top can fool the top-face fit, so its centre is taken from its whole
   outline back-projected onto its top plane (a plate is ~1 cm thick; its measured height may come out as 0).
3. Grasp the bowl by its rim wall: on the rim side facing the arm, 5.2 cm from the bowl's centre (the wall is
   6 mm thick at radius 5.5 cm), fingers opening along the radius so one goes inside the bowl and one outside,
   lowered to 2.5-3.5 cm above the table (under the rim, above the 8 mm base), closed (holding must be True).
   The arm is the one on the plate's side; if it cannot reach the bowl, the other arm takes it to the plate, or,
   if it cannot reach the plate either, sets it down on a free spot in the middle (bare table in the head image)
   and the first arm tries again from there.
4. Lift it 12 cm, carry it with the same orientation so the bowl's centre comes over the plate's centre (the grasp
   point keeps its offset from the bowl's centre), lower until the bowl's underside is 4 mm above the plate's
   top, open, lift the hand straight up.
5. If the task is not solved, park, look again and repeat once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task bowl_on_plate --seed 0 --agent code_cell --llm replay:examples/cells/bowl_on_plate.py
"""

# %% helpers: find the bowl and the plate by colour, both arms, bare table in the head image
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py


def disc_centre(seg, camera, z):
    """Centre (x, y) of a round object from its whole mask: the mask's outline back-projected onto the plane z (its
    top), then the centroid of that polygon. For a thin plate this does not depend on which part of its shaded top
    the segment's top face was."""
    contours, _ = cv2.findContours(seg.mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    hull = cv2.convexHull(max(contours, key=cv2.contourArea)).reshape(-1, 2)
    points = [robo.back_project(float(r), float(c), camera, plane_z=z) for c, r in hull]
    xy = np.array([p.xyz[:2] for p in points if p.found])
    x, y = xy[:, 0], xy[:, 1]
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    six_area = 3 * cross.sum()
    return float(((x + x1) * cross).sum() / six_area), float(((y + y1) * cross).sum() / six_area)


def find_plate():
    """The plate's segment and its centre (x, y) and top height (a plate is ~1 cm thick; a thin disc's measured
    height can come out as 0)."""
    seg = locate(plate_colour, **PLATE)
    if seg is None:
        return None, None, None
    top = max(seg.top_z, TABLE_Z + 0.01)
    centre = disc_centre(seg, SEEN_IN[plate_colour], top)
    print(f"plate centre from its outline: {np.round(centre, 4)} (segment: {np.round(seg.world_xyz[:2], 4)})")
    return seg, centre, top


TABLE_Z = measure_table()
bowl_colour, plate_colour = colours_named()[:2]
RIM_RADIUS = 0.052  # the middle of the bowl's wall from its centre (outer radius ~5.5 cm, wall 6 mm)
BOWL = {"heights": (0.02, 0.07), "view_height": 0.25}  # plausible measured heights; wrist views from 25 cm up
PLATE = {"heights": (0.0, 0.03), "view_height": 0.25}  # a thin disc: its measured height may come out as 0
print(robo.task.instruction, "-> the", bowl_colour, "bowl onto the", plate_colour, "plate; table at", TABLE_Z)

# %% move the arms out of the head camera's view, find the bowl and the plate
park()
bowl = locate(bowl_colour, **BOWL)
print("bowl:", bowl)
plate, plate_xy, plate_top = find_plate()
print("plate:", plate)


# %% grasp the bowl by its rim with an arm that reaches the plate, set it down centred on the plate
def grasp_rim(bowl, arm):
    """Grasp the bowl's wall on the side facing the arm and lift it 12 cm.

    Returns ('held', grasp point minus bowl centre (dx, dy), grasp height above the bowl's underside),
    ('unplanned', None, None) when the arm cannot reach (nothing moved, or it backed off), or ('missed', ...)."""
    cx, cy, rim_z = bowl.world_xyz
    towards = HOME_POS[arm][:2] - (cx, cy)
    offset = RIM_RADIUS * towards / np.linalg.norm(towards)
    gx, gy = cx + offset[0], cy + offset[1]
    grasp_z = TABLE_Z + min(max(bowl.height_m - 0.01, 0.025), 0.035)  # ~1-2 cm under the rim, above the base
    quat = opening_along(robo.state().arm(arm).tcp_quat, offset)
    above = robo.move_to(arm, (gx, gy, rim_z + 0.08), quat, gripper=robo.OPEN)
    print(f"{arm} above the rim at {np.round((gx, gy), 3)}: {above}")
    if not above.planned:
        return "unplanned", None, None
    down = robo.move_to(arm, (gx, gy, grasp_z))
    print("down:", down)
    if not down.planned:
        return "unplanned", None, None
    grip = robo.grasp(arm)
    print("grasp:", grip)
    if not grip.holding:
        print("missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (gx, gy, rim_z + 0.08))
        return "missed", None, None
    print("lift:", robo.move_to(arm, (gx, gy, grasp_z + 0.12)))
    return "held", offset, grasp_z - TABLE_Z


def set_down(arm, centres, surface_z, offset, below):
    """Carry the held bowl so its centre is over the first reachable of ``centres`` (x, y), lower it until its
    underside is 4 mm above surface_z, open and lift the hand away; True if it was set down."""
    rest_z = surface_z + below + 0.004
    for centre in centres:
        gx, gy = centre[0] + offset[0], centre[1] + offset[1]
        over = robo.move_to(arm, (gx, gy, max(rest_z + 0.06, robo.state().arm(arm).tcp_pos[2])))
        print(f"{arm} carries the bowl over {np.round(centre, 3)}: {over}")
        if over.planned:
            break
    else:
        return False
    print("lower:", robo.move_to(arm, (gx, gy, rest_z)))
    print("release:", robo.release(arm))
    print("lift away:", robo.move_to(arm, (gx, gy, rest_z + 0.1)))
    return True


# Table points in the middle that both arms reach, nearest the middle first.
HAND_OVER_SPOTS = sorted(
    [(x, y) for x in (0.0, -0.04, 0.04, -0.08, 0.08) for y in (-0.13, -0.17, -0.21, -0.25, -0.29, -0.33)],
    key=lambda p: math.hypot(p[0], p[1] + 0.23),
)


def bring_to_plate(bowl, plate_xy, plate_top):
    """Grasp the bowl with an arm that reaches the plate, set it down centred on the plate; True if it was set down.

    The arm on the plate's side first; if it cannot reach the bowl, the other arm takes it and carries it to the
    plate, or, if it cannot reach the plate either, sets it down on a free spot in the middle for the first arm."""
    arm = arm_for(plate_xy)
    other = other_arm(arm)
    for _attempt in range(3):
        outcome, offset, below = grasp_rim(bowl, arm)
        if outcome == "held":
            return set_down(arm, [plate_xy], plate_top, offset, below)
        if outcome == "unplanned":  # out of this arm's reach: the other arm takes it
            spots = bare_table_spots(HAND_OVER_SPOTS, radius=0.065)  # before the arm holds the bowl into the view
            spots.sort(key=lambda p: abs(p[0] - (0.03 if other == "right" else -0.03)))  # a little on its side
            outcome, offset, below = grasp_rim(bowl, other)
            if outcome == "held":
                if set_down(other, [plate_xy], plate_top, offset, below):
                    return True
                print("the other arm cannot reach the plate; free hand-over spots:", spots[:4])
                set_down(other, [*spots[:4], bowl.world_xyz[:2]], TABLE_Z, offset, below)
        park()
        bowl = locate(bowl_colour, **BOWL)
        print("bowl now:", bowl)
        if bowl is None:
            return False
    return False


print("set down:", bring_to_plate(bowl, plate_xy, plate_top) if bowl is not None and plate is not None else False)
print("done:", robo.done, "steps left:", robo.steps_left)

# %% check: if the bowl is not on the plate, look again and repeat once
if not robo.done and robo.steps_left > 150:
    park()
    bowl = locate(bowl_colour, **BOWL)
    plate, plate_xy, plate_top = find_plate()
    print("bowl:", bowl, "\nplate:", plate)
    if bowl is not None and plate is not None:
        print("set down:", bring_to_plate(bowl, plate_xy, plate_top))
print("done:", robo.done, "steps left:", robo.steps_left)
