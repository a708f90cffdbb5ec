"""Flat coloured squares (pads) on the table (robo API only): the centre of a square of a known side from its blob on
the table plane, looked at again from above with a wrist camera when the head camera sees it cut off.

Included after lib/colour_objects.py (``colour_blobs``), lib/camera_plane.py (``on_plane``), the robot's own file
and lib/wrist_views.py (``arm_for``, ``park``, ``view_from_above``) by the scripted cells of sort_by_color and
pass_through_middle; uses the cell's ``TABLE_Z``.
"""

SQUARE_VIEW_HEIGHTS = (0.25, 0.22, 0.19)  # a wrist camera looks at a square from this high (the first reached)


def square_in(camera, colour, side, avoid_xy=None):
    """(centre (x, y), whole) of the square of that colour seen by a camera, or (None, False): the largest blob of
    the colour spanning more than 3.5 cm on the table plane and not centred within 5 cm of ``avoid_xy`` (a block of
    the same colour) unless it spans 7 cm; whole when it spans the square's ``side`` both ways and does not touch
    the image's border."""
    rgb = robo.image(camera)
    for blob in colour_blobs(rgb, colour)[:4]:
        rows, cols = np.nonzero(blob)
        points = on_plane(camera, rows, cols, TABLE_Z + 0.001)[:, :2].astype(np.float32)
        (cx, cy), (w, h), _ = cv2.minAreaRect(points)
        if max(w, h) < 0.035 or (avoid_xy is not None and math.dist((cx, cy), avoid_xy) < 0.05 and min(w, h) < 0.07):
            continue
        border = rows.min() == 0 or cols.min() == 0 or rows.max() == rgb.shape[0] - 1 or cols.max() == rgb.shape[1] - 1
        whole = not border and min(w, h) > side - 0.012 and max(w, h) < side + 0.03
        print(f"  {colour} square in {camera}: centre ({cx:.3f}, {cy:.3f}), {w:.3f} x {h:.3f} m, whole={whole}")
        return (float(cx), float(cy)), whole
    return None, False


def find_square(colour, side, avoid_xy=None):
    """The square's centre (x, y) from the head camera, else (cut off or partly hidden there) from above with the
    wrist camera of the arm on its side, which parks again; None when the head camera does not see it."""
    centre, whole = square_in("head", colour, side, avoid_xy)
    if centre is None or whole:
        return centre
    arm = arm_for(centre)
    camera = view_from_above(arm, centre, SQUARE_VIEW_HEIGHTS)
    if camera is None:
        return centre
    closer, _ = square_in(camera, colour, side, avoid_xy)
    park(arm)
    return closer if closer is not None else centre
