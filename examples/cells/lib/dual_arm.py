"""The dual ARX X5's two arms (robo API only): home poses and bases, which arm serves a table point, parking the
arms out of the head camera's view or stepping one aside, the table's height, the fingers-down orientations a wrist
reaches and how deep a gripper grasps.

Included by every dual-arm scripted cell in its first cell, after lib/grasp_orientations.py. The robot's facts are
read from robo when this file runs, with the arms at home (before anything moves):
  * HOME_POS, HOME_QUAT: each arm's home grasp point and orientation (fingers down, opening along x): robo.state().
  * WRIST_CAMERA: each wrist camera's offset from the grasp point and its viewing direction at home: robo.camera().
    With the home orientation they tell where the camera looks from a grasp point at any height (lib/wrist_views.py).
  * PARK_POS: each arm out at its side of the table, PARK_OUT_M further out and PARK_UP_M higher than home, where
    the head camera sees past the arms and their wrist cameras look at bare table.
  * BASE_XY: each arm's base. robo does not tell where the bases are; the home grasp point stands straight in front
    of its base (config/robots/dual_arx_x5.yaml: "grasp point at (base x, -0.2, 0.90)"), BASE_BEHIND_HOME_M behind
    it (the bases at y -0.45 there).
The cell measures the table's height itself, ``TABLE_Z = measure_table()`` (``park_first=True`` where something under
both wrist cameras spoils the view from home); the functions here use that ``TABLE_Z``. Uses the cell namespace's
``robo``, ``np`` and ``math``.
"""

ARMS = ("left", "right")
_at_home = robo.state()
HOME_POS = {arm: np.array(_at_home.arm(arm).tcp_pos) for arm in ARMS}
HOME_QUAT = {arm: _at_home.arm(arm).tcp_quat for arm in ARMS}
SIDE = {arm: math.copysign(1.0, HOME_POS[arm][0]) for arm in ARMS}  # -1 for the left arm (x < 0), +1 the right
BASE_BEHIND_HOME_M = 0.25
BASE_XY = {arm: HOME_POS[arm][:2] - (0.0, BASE_BEHIND_HOME_M) for arm in ARMS}
PARK_OUT_M = 0.15
PARK_UP_M = 0.05
PARK_POS = {arm: HOME_POS[arm] + (SIDE[arm] * PARK_OUT_M, 0.0, PARK_UP_M) for arm in ARMS}
ASIDE_X_M = 0.25  # step_aside: the hand this far from the table's middle, over its own side
LOW_M = 0.1  # a hand lower than this above the table goes straight up to CLEAR_M before moving across
CLEAR_M = 0.12
PAD_REACH_M = 0.02  # the finger pads reach this far below the grasp point (they span -2 cm .. +3.8 cm around it)
ABOVE_M = 0.05  # hover this far above an object's top before going down to grasp it
VIEW_HEIGHT_M = 0.14  # a wrist camera looks closer from its grasp point this high above the table (or lower)
WRIST_CAMERA = {}  # arm -> (camera, its offset from the grasp point, its viewing direction) at home
for _arm in ARMS:
    _T_world_cam = robo.camera(f"{_arm}_wrist").T_world_cam
    WRIST_CAMERA[_arm] = (f"{_arm}_wrist", _T_world_cam[:3, 3] - HOME_POS[_arm], _T_world_cam[:3, 2])


def arm_for(xy):
    """The arm on a table point's side (each arm reaches only a little past the middle)."""
    return "left" if xy[0] < 0 else "right"


def other_arm(arm):
    return "right" if arm == "left" else "left"


def measure_table(park_first=False):
    """The table's height [m] from the cameras (robo remembers the first measurement), with the arms at home; when
    it fails from there, or ``park_first``, the arms move to their park poses first."""
    table = None if park_first else robo.table_height()
    if table is None or not table.found:
        if table is not None:
            print("table not measured from home:", table.reason[:100], "...")
        for arm in ARMS:
            print(f"park {arm}:", robo.move_to(arm, PARK_POS[arm], HOME_QUAT[arm]))
        table = robo.table_height()
    print("table at z =", table.z)
    return table.z


def up_from_low(arm):
    """Lift an arm's hand straight up to CLEAR_M above the table when it is lower than LOW_M."""
    here = robo.state().arm(arm).tcp_pos
    if here[2] < TABLE_Z + LOW_M:
        print(f"  {arm} up:", robo.move_to(arm, (here[0], here[1], TABLE_Z + CLEAR_M)))


def park(*arms):
    """Move arms (default: both) to their park poses, fingers down, out of the head camera's view; a hand low over
    the table goes straight up first. An arm already there stays."""
    for arm in arms or ARMS:
        here = robo.state().arm(arm).tcp_pos
        if math.dist(here[:2], PARK_POS[arm][:2]) < 0.02:
            continue
        up_from_low(arm)
        print(f"  park {arm}:", robo.move_to(arm, PARK_POS[arm], HOME_QUAT[arm]))


def step_aside(arm):
    """Lift an arm and move it over its own side of the table, clear of the middle (cheaper than parking)."""
    here = robo.state().arm(arm).tcp_pos
    if SIDE[arm] * here[0] >= ASIDE_X_M - 0.01 and here[2] > TABLE_Z + LOW_M:
        return
    print(f"  {arm} aside:", robo.move_to(arm, (SIDE[arm] * ASIDE_X_M, here[1], max(here[2], TABLE_Z + 0.14))))


def preferred_opening(arm, xy):
    """The fingers-down opening direction the arm's wrist reaches most easily over a table point: 90 deg left of
    the line from its base (an arm at home opens along x), reachable to about 60 deg either side."""
    d = np.asarray(xy[:2], float) - BASE_XY[arm]
    angle = math.atan2(d[1], d[0]) + math.pi / 2
    return np.array([math.cos(angle), math.sin(angle)])


def down_quats(arm, xy, opening_xy):
    """Fingers-down orientations opening along a horizontal direction (either sign: the fingers are symmetric),
    the one nearer the arm's preferred opening over xy first."""
    d = np.array([opening_xy[0], opening_xy[1], 0.0]) / math.hypot(opening_xy[0], opening_xy[1])
    if np.dot(d[:2], preferred_opening(arm, xy)) < 0:
        d = -d
    return [quat_from_axes(d), quat_from_axes(-d)]


def square_quat(arm):
    """The arm's current fingers-down orientation squared to the world axes (see squared_to_axes)."""
    return squared_to_axes(robo.state().arm(arm).tcp_quat)


def grasp_depth(height):
    """How far below an object's top to put the grasp point: the pads' lower edge at the object's underside when it
    is short, at most half way down a tall one."""
    return float(min(max(height - PAD_REACH_M, 0.008), max(height / 2, 0.02)))
