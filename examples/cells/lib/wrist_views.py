"""Looking with the wrist cameras (robo API only): bringing an arm's wrist camera over a table point, and finding an
object by colour with the head camera first, then the wrist cameras, then a wrist camera brought over what was seen
but not measured.

Included after lib/colour_objects.py (``find``) and the robot's own file (lib/dual_arm.py or lib/fr3_arm.py:
``WRIST_CAMERA``, ``HOME_QUAT``, ``VIEW_HEIGHT_M``, ``arm_for``, ``park``) by the scripted cells of either robot; uses
the cell's ``TABLE_Z``.
"""


def wrist_view_point(arm, xy, height):
    """The grasp point, ``height`` above the table, from which the arm's wrist camera (home orientation) has a table
    point in the middle of its image: the camera looks down and back, so the grasp point is ahead of the point."""
    _camera, offset, axis = WRIST_CAMERA[arm]
    along = -(height + offset[2]) / axis[2]  # from the camera down its axis to the table
    seen = offset[:2] + along * axis[:2]  # the view's centre relative to the grasp point
    return (xy[0] - seen[0], xy[1] - seen[1], TABLE_Z + height)


def view_from_above(arm, xy, heights):
    """Bring the arm's wrist camera over a table point, from the first of ``heights`` (of the grasp point above the
    table) the arm reaches; the camera's name, or None when none is reached."""
    for height in heights:
        view = robo.move_to(arm, wrist_view_point(arm, xy, height), HOME_QUAT[arm])
        print(f"  {arm} wrist {height:.2f} m over {np.round(xy, 3)}: {view}")
        if view.planned:
            return WRIST_CAMERA[arm][0]
    return None


def look_closer(colour, xy, heights=(0.015, 0.1), view_height=None):
    """Bring the wrist camera of the arm on that side over a table point (its grasp point ``view_height`` above the
    table, default VIEW_HEIGHT_M, lower in 3 cm steps down to 14 cm where the arm cannot reach that high) and find
    the object there."""
    steps = np.arange(view_height or VIEW_HEIGHT_M, 0.1399, -0.03)
    camera = view_from_above(arm_for(xy), xy, steps)
    return None if camera is None else find(colour, (camera,), heights)[0]


def locate(colour, heights=(0.015, 0.1), view_height=None):
    """Head camera first, then the wrist cameras from where they are; a blob that cannot be measured from there (cut
    off, occluded) is looked at again from above with the wrist camera of the arm on its side."""
    seg, hints = find(colour, ("head",), heights)
    if seg is None:
        seg, more = find(colour, tuple(camera for camera, _, _ in WRIST_CAMERA.values()), heights)
        hints += more
    for xy in hints[:3]:
        if seg is None:
            seg = look_closer(colour, xy, heights, view_height)
    return seg


def locate_again(colour, heights=(0.015, 0.1)):
    """An object's segment now: the head camera from where the arms are, else with the arms parked (locate)."""
    seg, _ = find(colour, ("head",), heights)
    if seg is None:
        park()
        seg = locate(colour, heights)
    return seg
