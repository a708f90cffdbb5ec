"""Reading what the top face of a flat square object shows (a digit, a picture), robo API only.

Included by the scripted cells of press_by_number, pick_matching_picture and match_tile, after lib/camera_plane.py
(``on_plane``).
A square top face seen by a camera is resampled onto a grid of world points on its plane (a view from straight
above, aligned with the face's edges), the dark glyph on it is cut out (Otsu's threshold) and scaled to a fixed
box, and glyphs are compared by their overlap (IoU). Digits are read against templates the cell draws itself with
cv2.putText in a few fonts. Uses the cell namespace's ``robo``, ``np``, ``math`` and ``cv2``.
"""

PATCH_PX = 64  # the resampled face
GLYPH_PX = 32  # glyphs are compared in a box this big
INSET = 0.85  # of the face's outline kept when resampling (its edge pixels may be the sides or the housing)


def light_blobs(rgb, min_px=150):
    """Connected regions of white or pale grey (caps, cards) as bool masks with their holes (the glyphs) filled,
    largest first."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)
    mask = ((hsv[..., 1] < 45) & (hsv[..., 2] > 150)).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
    blobs = []
    for i in sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA]):
        if stats[i, cv2.CC_STAT_AREA] < min_px:
            break
        blob = (labels == i).astype(np.uint8)
        contours, _ = cv2.findContours(blob, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        filled = np.zeros_like(blob)
        cv2.drawContours(filled, contours, -1, 1, cv2.FILLED)
        blobs.append(filled > 0)
    return blobs


def square_on_plane(camera, blob, z):
    """The square a blob's pixels make on the plane at height z: centre (x, y), side [m], and the unit direction of
    the edge nearest the world x axis."""
    rows, cols = np.nonzero(blob)
    points = on_plane(camera, rows, cols, z)[:, :2].astype(np.float32)
    (cx, cy), (w, h), angle = cv2.minAreaRect(points)
    a = (math.radians(angle) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    return np.array([cx, cy]), math.sqrt(w * h), np.array([math.cos(a), math.sin(a)])


def face_patch(camera, rgb, centre, side, x_axis, z):
    """The square face (centre, side, edge direction x_axis) on the plane at height z, resampled from a camera's
    image as seen from above: PATCH_PX square, grey, row 0 at the face's +y edge (far from the robot), column 0 at
    its -x edge."""
    info = robo.camera(camera)
    y_axis = np.array([-x_axis[1], x_axis[0]])
    steps = (np.arange(PATCH_PX) + 0.5) / PATCH_PX - 0.5
    u, v = np.meshgrid(steps * side * INSET, -steps * side * INSET)
    world = np.zeros((PATCH_PX, PATCH_PX, 3))
    world[..., :2] = centre + u[..., None] * x_axis + v[..., None] * y_axis
    world[..., 2] = z
    R, t = info.T_world_cam[:3, :3], info.T_world_cam[:3, 3]
    cam = (world - t) @ R  # R^T (p - t), row-wise
    pix = cam @ info.K.T
    map_x = (pix[..., 0] / pix[..., 2]).astype(np.float32)
    map_y = (pix[..., 1] / pix[..., 2]).astype(np.float32)
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    return cv2.remap(grey, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def glyph(patch, inside_only=False):
    """The dark glyph of a face patch (Otsu's split of its brightness), cut to its bounding square and scaled to
    GLYPH_PX (bool), or None when the face shows nothing dark. Dark regions touching the patch's edge (a side face,
    the table, where the outline was a little off) are left out unless nothing else is dark (or ``inside_only``:
    then the face shows no picture)."""
    smooth = cv2.GaussianBlur(patch, (3, 3), 0)
    if int(smooth.max()) - int(smooth.min()) < 40:
        return None
    _, dark = cv2.threshold(smooth, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(dark.astype(np.uint8))
    if n < 2:
        return None
    last = PATCH_PX - 1
    inside = [
        i
        for i in range(1, n)
        if stats[i, cv2.CC_STAT_LEFT] > 0
        and stats[i, cv2.CC_STAT_TOP] > 0
        and stats[i, cv2.CC_STAT_LEFT] + stats[i, cv2.CC_STAT_WIDTH] - 1 < last
        and stats[i, cv2.CC_STAT_TOP] + stats[i, cv2.CC_STAT_HEIGHT] - 1 < last
    ]
    parts = inside or ([] if inside_only else list(range(1, n)))
    if not parts:
        return None
    largest = max(stats[i, cv2.CC_STAT_AREA] for i in parts)
    keep = [i for i in parts if stats[i, cv2.CC_STAT_AREA] >= 0.1 * largest]
    return boxed(np.isin(labels, keep).astype(np.uint8))


def boxed(mask):
    """A binary mask's foreground cut to a square around its bounding box (centred) and scaled to GLYPH_PX."""
    rows, cols = np.nonzero(mask)
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    side = max(r1 - r0, c1 - c0)
    square = np.zeros((side, side), np.uint8)
    dr, dc = (side - (r1 - r0)) // 2, (side - (c1 - c0)) // 2
    square[dr : dr + r1 - r0, dc : dc + c1 - c0] = mask[r0:r1, c0:c1]
    return cv2.resize(square.astype(np.float32), (GLYPH_PX, GLYPH_PX), interpolation=cv2.INTER_AREA) > 0.5


def overlap(a, b):
    """Intersection over union of two glyphs."""
    return float((a & b).sum()) / max(1.0, float((a | b).sum()))


def best_overlap(a, b):
    """The overlap of glyph a with glyph b turned by each quarter turn, the best of the four."""
    return max(overlap(a, np.rot90(b, k)) for k in range(4))


DIGIT_FONTS = (  # (font, stroke [px] at about 55 px tall)
    (cv2.FONT_HERSHEY_SIMPLEX, 4),
    (cv2.FONT_HERSHEY_SIMPLEX, 7),
    (cv2.FONT_HERSHEY_DUPLEX, 5),
    (cv2.FONT_HERSHEY_PLAIN, 6),
)


def digit_templates():
    """digit -> glyphs of it drawn with cv2.putText in a few fonts and strokes."""
    templates = {}
    for digit in "0123456789":
        templates[digit] = []
        for font, stroke in DIGIT_FONTS:
            image = np.zeros((96, 96), np.uint8)
            cv2.putText(image, digit, (20, 76), font, 2.5 if font != cv2.FONT_HERSHEY_PLAIN else 5.0, 1, stroke)
            templates[digit].append(boxed(image))
    return templates


DIGIT_TEMPLATES = digit_templates()


def digit_scores(g):
    """digit -> how well the glyph matches its best template (IoU)."""
    return {d: max(overlap(g, t) for t in ts) for d, ts in DIGIT_TEMPLATES.items()}
