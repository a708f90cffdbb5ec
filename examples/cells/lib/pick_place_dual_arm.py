"""Pick and place with either arm of the dual ARX X5 (robo API only): grasp an upright object from above, carry it,
set it down or drop it, turn a held object square to the world axes, and keep the idle arm out of the way.

Included after lib/colour_objects.py and lib/wrist_views_dual_arm.py by the scripted cells of build_tower,
sort_by_color and sort_into_bowls; needs ``HOME_QUAT`` (arm -> the home grasp orientation) and ``TABLE_Z`` (the
measured table height) defined by the including cell before it is called.
"""

PAD_REACH_M = 0.02  # the finger pads reach this far below the grasp point (they span -2 cm .. +3.8 cm around it)
ABOVE_M = 0.05  # hover this far above an object's top before going down to grasp it


def arm_for(xy):
    """The arm on a table point's side (each arm reaches only a little past the middle)."""
    return "left" if xy[0] < 0 else "right"


def other_arm(arm):
    return "right" if arm == "left" else "left"


def finger_yaw(quat):
    """Direction [rad] in the table plane that a fingers-down grasp's fingers open along (the TCP y axis)."""
    w, x, y, z = quat
    return math.atan2(1 - 2 * (x * x + z * z), 2 * (x * y - w * z))


def square_quat(arm):
    """The arm's current fingers-down orientation turned (at most 45 deg) so the fingers open along a world axis: a
    held block then has its faces square to x and y."""
    quat = robo.state().arm(arm).tcp_quat
    yaw = finger_yaw(quat)
    return turn_quat(quat, -((yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4))


def home_square_quat(arm):
    """The home orientation turned to the nearest world axis (the orientation an arm reaches best, squared)."""
    quat = HOME_QUAT[arm]
    yaw = finger_yaw(quat)
    return turn_quat(quat, -((yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4))


def park(arm=None):
    """Move an arm (or both) out to its side of the table, where the head camera sees past it."""
    for a, x in (("left", -0.45), ("right", 0.45)):
        if arm not in (None, a):
            continue
        here = robo.state().arm(a).tcp_pos
        if abs(here[0] - x) < 0.02 and abs(here[1] + 0.2) < 0.02:
            continue
        if here[2] < TABLE_Z + 0.1:
            print(f"  {a} up:", robo.move_to(a, (here[0], here[1], TABLE_Z + 0.12)))
        print(f"  park {a}:", robo.move_to(a, (x, -0.2, TABLE_Z + 0.185), HOME_QUAT[a]))


def step_aside(arm):
    """Lift an arm and move it over its own side of the table, clear of the middle (cheaper than parking)."""
    here = robo.state().arm(arm).tcp_pos
    x = -0.25 if arm == "left" else 0.25
    if (here[0] <= x + 0.01 if arm == "left" else here[0] >= x - 0.01) and here[2] > TABLE_Z + 0.1:
        return
    print(f"  {arm} aside:", robo.move_to(arm, (x, here[1], max(here[2], TABLE_Z + 0.14))))


def grasp_depth(height):
    """How far below an object's top to put the grasp point: the pads' lower edge at the object's underside when it
    is short, at most half way down a tall one."""
    return float(min(max(height - PAD_REACH_M, 0.008), max(height / 2, 0.02)))


def pick(seg, arm, clear_z, label="object", opening=None):
    """Grasp an upright object (a Segment) from above with one arm and lift the grasp point to clear_z.

    ``opening``: how far to open the fingers on the way down (default robo.OPEN, ~8.8 cm between the pads; less keeps
    the fingers off close neighbours).

    Returns ('held', the grasp point's height above the object's underside), ('unplanned', None) when the arm
    cannot reach it (nothing moved, or it backed off), or ('missed', None). When something blocks the fingers on
    the way down (a neighbour), it backs up and tries again with the fingers turned 90 degrees."""
    x, y, top_z = seg.world_xyz
    height = seg.height_m
    depth = grasp_depth(height)
    grasp_z = max(top_z - depth, TABLE_Z + 0.012)
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
        print("  lift away:", robo.move_to(arm, (xy[0], xy[1], rest_z + 0.04)))
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
