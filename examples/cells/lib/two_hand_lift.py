"""Lifting a long object level with both hands of the dual ARX X5 (robo API only): its top face measured in the head
camera, both hands grasping it the same distance either side of its middle, and a lift in alternate steps.

Included after lib/colour_objects.py (``colour_blobs``, ``find``, ``bright_part``), lib/grasp_orientations.py,
lib/camera_plane.py (``rect_on_plane``) and lib/dual_arm.py (``down_quats``, ``park``) by the scripted cells of
lift_bar and lift_tray; uses the cell's ``TABLE_Z``.
"""

GRASP_BELOW_TOP_M = 0.015  # each grasp point this far under the top face
HOVER_M = 0.08  # open this far above a grasp point before going down


class LongObject:
    """A long object's top face seen from above: centre (x, y), the unit direction of its long side (x >= 0), the
    face's height and its length [m]."""

    def __init__(self, centre, axis, top_z, length):
        self.centre, self.axis, self.top_z, self.length = centre, axis, top_z, length

    def __repr__(self):
        return (
            f"LongObject(centre={np.round(self.centre, 4)}, axis={np.round(self.axis, 3)}, top_z={self.top_z:.4f}, "
            f"length={self.length:.3f})"
        )


def find_long_object(colour, heights, guess_height, clip=None, parts=False):
    """The long object of a colour in the head camera (the arms parked), or None: its height above the table from
    robo.segment (a plausible one, within ``heights``, then clipped to ``clip``; ``guess_height`` when it does not
    segment), its top face the lit part of
    its blob back-projected onto that face's plane, the smallest rectangle around it. ``parts``: the blobs of the
    colour at least a tenth of the largest's size count too (something standing on it may cut it in two)."""
    rgb = robo.image("head")
    blobs = colour_blobs(rgb, colour)
    if not blobs:
        print("no", colour, "blob in the head camera")
        return None
    if parts:
        blobs = [b for b in blobs if b.sum() >= 0.1 * blobs[0].sum()]
    height = guess_height
    seg, _ = find(colour, ("head",), heights)
    if seg is not None:  # its height above the measured table (its top_z can be off where something stands on it)
        height = float(np.clip(seg.height_m, *(clip or heights)))
    top_z = TABLE_Z + height
    lit = np.logical_or.reduce([bright_part(rgb, b) for b in (blobs if parts else blobs[:1])])
    centre, (length, width), axis = rect_on_plane("head", lit, top_z)
    print(f"{colour} top face: centre {np.round(centre, 4)}, {length:.3f} x {width:.3f} m, along {np.round(axis, 3)}")
    return LongObject(centre, axis, top_z, length)


def hover_and_grasp(arm, point, across):
    """Open above the grasp point, fingers across the object, go down and close; the grasp's MoveResult, or None
    when no hover pose could be planned."""
    for quat in down_quats(arm, point, across):
        above = robo.move_to(arm, point + (0, 0, HOVER_M), quat, gripper=robo.OPEN)
        print(f"{arm} above {np.round(point, 3)}:", above)
        if above.planned:
            break
    else:
        return None
    print(f"{arm} down:", robo.move_to(arm, point))
    grip = robo.grasp(arm)
    print(f"{arm} grasp:", grip)
    return grip


def grasp_both(obj, half_span):
    """Both hands grasp the object from above, the left one ``half_span`` left of its middle and the right one as
    far right (so it hangs level between them), fingers across it; (grasp points, grasp results) per arm."""
    z = obj.top_z - GRASP_BELOW_TOP_M
    points = {arm: np.append(obj.centre + SIDE[arm] * half_span * obj.axis, z) for arm in ARMS}
    across = (-obj.axis[1], obj.axis[0])
    grips = {arm: hover_and_grasp(arm, points[arm], across) for arm in ARMS}
    return points, grips


def holding_both(grips):
    return all(g is not None and g.holding for g in grips.values())


def grasp_level(obj, find_again, half_span):
    """Grasp the object with both hands; on a miss both let go, back off, park, and the object is found again
    (``find_again()``) and grasped once more. (grasp points, grasp results) per arm, or (None, None) when there is
    nothing to grasp."""
    if obj is None:
        return None, None
    points, grips = grasp_both(obj, half_span)
    if not holding_both(grips):
        for arm in ARMS:
            robo.release(arm)
            here = robo.state().arm(arm).tcp_pos
            print(f"{arm} back off:", robo.move_to(arm, (here[0], here[1], here[2] + HOVER_M)))
        park()
        obj = find_again()
        if obj is None:
            return None, None
        points, grips = grasp_both(obj, half_span)
    print({arm: (g.holding if g is not None else "unplanned") for arm, g in grips.items()})
    return points, grips


def lift_level(points, step, height):
    """Raise both hands from their grasp points in alternate steps of ``step`` [m] up to ``height`` (a step's
    difference over the span tilts the object a little); stops once the task is judged done."""
    for k in range(1, round(height / step) + 1):
        for arm in ARMS:
            if robo.done:
                break
            lift = robo.move_to(arm, points[arm] + (0, 0, step * k))
            print(f"{arm} to {step * k * 100:.0f} cm:", lift)
            if lift.terminated:
                break
    print("done:", robo.done, "steps left:", robo.steps_left)
    for arm in ARMS:
        s = robo.state().arm(arm)
        print(arm, np.round(s.tcp_pos, 3), "gripper", round(s.gripper, 3))
