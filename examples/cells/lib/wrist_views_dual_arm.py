"""Looking closer with the wrist camera of the arm on an object's side (dual ARX X5, robo API only).

Included after lib/colour_objects.py by the dual-arm scripted cells; needs ``HOME_QUAT`` (arm -> the home grasp
orientation) defined by the including cell before it is called.
"""

def look_closer(colour, xy, heights=(0.015, 0.1), view_height=0.14):
    """Bring the wrist camera of the arm on that side over a table point (grasp point ``view_height`` above the
    table, lower if the arm cannot reach that high; the camera looks down and back, ~25 deg from vertical) and find
    the object there."""
    arm = "left" if xy[0] < 0 else "right"
    table_z = robo.table_height().z
    for height in np.arange(view_height, 0.1399, -0.03):
        back = 0.465 * (height + 0.054) - 0.045  # the camera's view centre is this far behind the grasp point
        view = robo.move_to(arm, (xy[0], xy[1] + back, table_z + height), HOME_QUAT[arm])
        print(f"{arm} wrist {height:.2f} m over {np.round(xy, 3)}: {view}")
        if view.planned:
            return find(colour, (f"{arm}_wrist",), heights)[0]
    return None


def locate(colour, heights=(0.015, 0.1), view_height=0.14):
    """Head camera first, then the wrist cameras from where they are; a blob that cannot be measured from there (cut
    off, occluded) is looked at again from above with the wrist camera of the arm on its side."""
    seg, hints = find(colour, ("head",), heights)
    if seg is None:
        seg, more = find(colour, ("left_wrist", "right_wrist"), heights)
        hints += more
    for xy in hints[:3]:
        if seg is None:
            seg = look_closer(colour, xy, heights, view_height)
    return seg
