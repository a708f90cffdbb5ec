"""Pick and place with one arm (robo API only): grasp an upright object from above (or at a given point), carry it,
set it down, and choose a free spot.

Included after the robot's own file (lib/dual_arm.py or lib/fr3_arm.py: ``ABOVE_M`` and ``grasp_depth``, how a
gripper grasps) and lib/grasp_orientations.py by the scripted cells that move objects; uses the cell's ``TABLE_Z``.
"""

MIN_GRASP_Z_M = 0.012  # the grasp point never goes lower above the table than this
LIFT_AWAY_M = 0.04  # the hand rises this far after letting go


def pick(seg, arm, clear_z, label="object", opening=None):
    """Grasp an upright object (a Segment) from above with one arm and lift the grasp point to clear_z.

    ``opening``: how far to open the fingers on the way down (default robo.OPEN; less keeps the fingers off close
    neighbours).

    Returns ('held', the grasp point's height above the object's underside), ('unplanned', None) when the arm
    cannot reach it (nothing moved, or it backed off), or ('missed', None). When something blocks the fingers on
    the way down (a neighbour), it backs up and tries again with the fingers turned 90 degrees."""
    x, y, top_z = seg.world_xyz
    height = seg.height_m
    grasp_z = max(top_z - grasp_depth(height), TABLE_Z + MIN_GRASP_Z_M)
    quat = grasp_quat(robo.state().arm(arm), seg.footprint_xy)
    for turn in (0.0, math.pi / 2):
        gripper = robo.OPEN if opening is None else opening
        above = robo.move_to(arm, (x, y, top_z + ABOVE_M), turn_quat(quat, turn), gripper=gripper)
        print(f"  {arm} above the {label} (turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned", None
        down = robo.move_to(arm, (x, y, grasp_z))
        print("  down:", down)
        if not down.planned:
            return "unplanned", None
        if down.reached:
            break
        print("  blocked on the way down: back up")
        robo.move_to(arm, (x, y, top_z + ABOVE_M))
    else:
        return "missed", None
    grip = robo.grasp(arm)
    print("  grasp:", grip)
    if not grip.holding:
        print("  missed: open and back off")
        robo.release(arm)
        robo.move_to(arm, (x, y, top_z + ABOVE_M))
        return "missed", None
    lift = robo.move_to(arm, (x, y, max(clear_z, grasp_z + 0.03)))
    print("  lift:", lift)
    return "held", grasp_z - (top_z - height)


def grasp_at(arm, xyz, quats, hover_z, down_tries=(0.0,)):
    """Grasp at a point: hover over it at hover_z with the fingers open, in the first of the orientations ``quats``
    the arm reaches, go straight down to it and close. ``down_tries``: heights [m] added to the point's, tried in
    turn until the descent is planned (at the edge of its reach a wrist goes a little less low).

    Returns 'held', 'unplanned' (no hover pose reached: nothing moved) or 'missed' (not held: the gripper opened and
    backed off up to hover_z). The hand stays at the grasp point when held: the caller lifts."""
    x, y, z = xyz
    for quat in quats:
        above = robo.move_to(arm, (x, y, hover_z), quat, gripper=robo.OPEN)
        print(f"  {arm} above {np.round((x, y), 3)}: {above}")
        if above.planned:
            break
    else:
        return "unplanned"
    for dz in down_tries:
        down = robo.move_to(arm, (x, y, z + dz))
        print("  down:", down)
        if down.planned:
            break
    grip = robo.grasp(arm)
    print("  grasp:", grip)
    if not grip.holding:
        robo.release(arm)
        print("  missed; back off:", robo.move_to(arm, (x, y, hover_z)))
        return "missed"
    return "held"


def carry_over(arm, xys, z, quat=None):
    """Carry what the arm holds over the first reachable of the table points ``xys``, the grasp point at height z
    (first up to z where it is, then across); the point it reached, or None (nothing planned)."""
    here = robo.state().arm(arm).tcp_pos
    if here[2] < z - 0.005:
        print(f"  {arm} up:", robo.move_to(arm, (here[0], here[1], z)))
    for xy in xys:
        over = robo.move_to(arm, (xy[0], xy[1], z), quat)
        print(f"  {arm} over {np.round(xy, 3)}: {over}")
        if over.planned:
            return xy
    return None


def put_down(arm, xys, surface_z, below, quat=None, gap=0.003, carry_z=None):
    """Set the held object down on a surface at the first reachable of ``xys``: carry it over (at carry_z, default
    4 cm above its resting height), lower it until its underside is ``gap`` above surface_z (the grasp point is
    ``below`` above the underside), open, and lift the hand straight up. Returns the point used, or None."""
    rest_z = surface_z + below + gap
    xy = carry_over(arm, xys, carry_z or rest_z + 0.04, quat)
    if xy is None:
        return None
    print("  lower:", robo.move_to(arm, (xy[0], xy[1], rest_z)))
    print("  release:", robo.release(arm))
    if not robo.done:
        print("  lift away:", robo.move_to(arm, (xy[0], xy[1], rest_z + LIFT_AWAY_M)))
    return xy


def free_xy(candidates, obstacles, clearance):
    """The first candidate (x, y) at least ``clearance`` from every obstacle point, else the one farthest from them."""
    if not obstacles:
        return candidates[0]

    def room(p):
        return min(math.dist(p, o[:2]) for o in obstacles)

    for p in candidates:
        if room(p) >= clearance:
            return p
    return max(candidates, key=room)
