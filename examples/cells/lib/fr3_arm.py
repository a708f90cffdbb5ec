"""The single-arm Franka FR3 (one arm named 'arm', cameras 'head' and 'wrist'), robo API only: its home pose and
base, getting the hand out of the head camera's view, the table's height and how deep its gripper grasps.

Included by the FR3's scripted cells in their first cell, after lib/colour_objects.py and
lib/grasp_orientations.py, before lib/wrist_views.py and lib/pick_place.py (the same names as lib/dual_arm.py
defines for the dual ARX X5, so those files serve both robots). The robot's facts are read from robo when this file
runs, with the arm at home (its ready pose, before anything moves): HOME_POS and HOME_QUAT (fingers down) from
robo.state(), WRIST_CAMERA (the wrist camera's offset from the grasp point and its viewing direction) from
robo.camera(). robo does not tell where the base is: the ready pose's grasp point stands straight in front of it,
BASE_BEHIND_HOME_M ahead (config/robots/fr3.yaml: "TCP 0.307 m in front of the base"). The cell measures the table
with ``TABLE_Z = measure_table()``. Uses the cell namespace's ``robo``, ``np`` and ``math``.
"""

ARM = "arm"
ARMS = (ARM,)
_at_home = robo.state()
HOME_POS = {ARM: np.array(_at_home.arm(ARM).tcp_pos)}
HOME_QUAT = {ARM: _at_home.arm(ARM).tcp_quat}
BASE_BEHIND_HOME_M = 0.307
BASE_XY = {ARM: HOME_POS[ARM][:2] - (0.0, BASE_BEHIND_HOME_M)}
PAD_REACH_M = 0.0086  # the finger pads reach this far below the grasp point (hand z 0.066..0.112, TCP at 0.1034)
PAD_CLEARANCE_M = 0.01  # the pads' lower edge stays this far above a short object's underside
MAX_GRASP_DEPTH_M = 0.02
ABOVE_M = 0.06  # hover this far above an object's top before going down to grasp it
VIEW_HEIGHT_M = 0.25  # the wrist camera looks closer from its grasp point this high above the table (or lower)
_T_world_cam = robo.camera("wrist").T_world_cam
WRIST_CAMERA = {ARM: ("wrist", _T_world_cam[:3, 3] - HOME_POS[ARM], _T_world_cam[:3, 2])}


def arm_for(xy):
    """The arm that serves a table point: the only one."""
    return ARM


def measure_table():
    """The table's height [m] from the cameras (robo remembers the first measurement)."""
    table = robo.table_height()
    if not table.found:
        print("table not measured:", table.reason[:100], "...")
        return None
    print("table at z =", table.z)
    return table.z


def park(*arms):
    """Lift the hand straight up from low over the table, then go home: the head camera sees the table again."""
    here = robo.state().tcp_pos
    if here[2] < TABLE_Z + 0.1:
        print("  up:", robo.move_to(ARM, (here[0], here[1], TABLE_Z + 0.12)))
    print("  home:", robo.home())


def grasp_depth(height):
    """How far below an object's top to put the grasp point: the pads' lower edge PAD_CLEARANCE_M above a short
    object's underside, at most MAX_GRASP_DEPTH_M down a tall one."""
    return float(min(max(height - PAD_REACH_M - PAD_CLEARANCE_M, 0.008), MAX_GRASP_DEPTH_M))
