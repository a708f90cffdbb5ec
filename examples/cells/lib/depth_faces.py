"""Measuring an object's top face from a camera's depth (robo.world_map) and the colour mask, and choosing a
fingers-down orientation along a face's sides that the arm's wrist reaches (dual ARX X5, robo API only).

Included after lib/colour_objects.py, lib/colour_tops.py, lib/grasp_orientations.py and lib/dual_arm.py by the
scripted cells of block_into_slot, peg_in_hole, push_into_corner, mug_on_coaster and tube_into_rack (they need
``colour_mask``, ``lit_top_mask``, ``quat_from_axes``, ``preferred_opening`` and the cell's ``TABLE_Z``). The depth
gives every pixel's world point, so a face's outline is measured to about a millimetre, which a pocket 2 mm wider
than its block a side needs.
"""

def object_blobs(rgb, colour, min_px=25):
    """Connected regions of a colour on lit or shaded faces (bool masks), largest first: lib/colour_objects.py's
    bands catch the shaded sides, lib/colour_tops.py's a pale lit top (orange, yellow) that can fall outside them."""
    mask = (colour_mask(rgb, colour) > 0) | lit_top_mask(rgb, colour)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    order = sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    return [labels == i for i in order if stats[i, cv2.CC_STAT_AREA] >= min_px]


class Face:
    """A horizontal top face: centre (x, y), z, size (long, short) [m] and the unit direction of its long side."""

    def __init__(self, centre, z, size, axis, points):
        self.centre, self.z, self.size, self.axis, self.points = centre, z, size, axis, points

    def __repr__(self):
        return (
            f"Face(centre={np.round(self.centre, 4)}, z={self.z:.4f}, size={np.round(self.size, 4)}, "
            f"axis={np.round(self.axis, 3)}, {len(self.points)} points)"
        )


def colour_points(colour, camera="head", reach=0.08):
    """World points (Nx3) of the pixels of a colour higher than 2 mm above the table: the largest blob's and those
    of the other blobs within ``reach`` of it (an object's faces may show as separate blobs, e.g. a tray's rim cut
    by its notches)."""
    wm = robo.world_map(camera)
    if not wm.ok:
        print("no depth:", wm.reason)
        return np.zeros((0, 3))
    parts = []
    for blob in object_blobs(robo.image(camera), colour):
        points = wm.xyz[blob]
        points = points[np.isfinite(points).all(axis=1)]
        points = points[points[:, 2] > TABLE_Z + 0.002]
        if len(points) == 0:
            continue
        middle = np.median(points[:, :2], axis=0)
        if not parts:
            anchor = middle
        if np.linalg.norm(middle - anchor) < reach:
            parts.append(points)
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def top_face(colour, camera="head", band=0.003):
    """The highest horizontal face of the largest blob of a colour: the blob's points within ``band`` of its top
    (a pocket's floor and the sides are lower), the smallest rectangle around them; or None."""
    points = colour_points(colour, camera)
    if len(points) < 30:
        print(f"{colour}: only {len(points)} points above the table in {camera}")
        return None
    z = float(np.percentile(points[:, 2], 98))
    face = points[points[:, 2] > z - band]
    (cx, cy), (w, h), angle = cv2.minAreaRect(face[:, :2].astype(np.float32))
    a = math.radians(angle) if w >= h else math.radians(angle + 90)
    axis = np.array([math.cos(a), math.sin(a)])
    return Face(np.array([cx, cy]), float(np.median(face[:, 2])), (max(w, h), min(w, h)), axis, face)


def openings_along(arm, xy, axis):
    """Fingers-down orientations whose fingers open along ``axis`` or across it (the four directions square to a
    face's sides), the ones nearest the arm's preferred opening over xy first: [(opening direction, quat)]."""
    across = np.array([-axis[1], axis[0]])
    directions = [axis, -axis, across, -across]
    directions.sort(key=lambda d: -float(np.dot(d, preferred_opening(arm, xy))))
    return [(d, quat_from_axes((d[0], d[1], 0.0))) for d in directions]


def opening_pair(arm, xy, direction):
    """The two fingers-down orientations opening along ``direction`` (either sign), the preferred one first."""
    d = np.asarray(direction, float)
    options = sorted([d, -d], key=lambda v: -float(np.dot(v, preferred_opening(arm, xy))))
    return [(v, quat_from_axes((v[0], v[1], 0.0))) for v in options]
