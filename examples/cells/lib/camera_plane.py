"""Between a camera's pixels and horizontal planes of the world, from its calibration (robo API only): the points a
camera sees on a plane, the rectangle a flat region makes there, where a world point shows in an image, and which
table spots look like bare table.

Included by the scripted cells that measure flat things (squares, pads, a card) or look for free table; uses the
cell namespace's ``robo``, ``np``, ``math`` and ``cv2`` (lib/colour_objects.py imports it), and ``TABLE_Z`` (the
measured table height) for ``bare_table_spots``.
"""


def on_plane(camera, rows, cols, z):
    """World points seen at pixels (rows, cols) of a camera, on the horizontal plane at height z (Nx3)."""
    info = robo.camera(camera)
    pixels = np.stack([np.asarray(cols, float), np.asarray(rows, float), np.ones(len(rows))])
    rays = info.T_world_cam[:3, :3] @ (np.linalg.inv(info.K) @ pixels)
    origin = info.T_world_cam[:3, 3]
    return (origin[:, None] + rays * (z - origin[2]) / rays[2]).T


def rect_on_plane(camera, pixels, z):
    """The smallest rectangle around pixels (a bool mask) seen on the plane at height z: centre (x, y), size
    (long, short) [m] and the unit direction of the long side (x >= 0)."""
    rows, cols = np.nonzero(pixels)
    points = on_plane(camera, rows, cols, z)[:, :2].astype(np.float32)
    (cx, cy), (w, h), angle = cv2.minAreaRect(points)
    a = math.radians(angle) if w >= h else math.radians(angle + 90)
    axis = np.array([math.cos(a), math.sin(a)])
    if axis[0] < 0:
        axis = -axis
    return np.array([cx, cy]), (max(w, h), min(w, h)), axis


def pixel_of(xyz, camera="head"):
    """Where a world point shows in a camera: (row, col)."""
    info = robo.camera(camera)
    p = np.linalg.inv(info.T_world_cam) @ np.append(np.asarray(xyz, float), 1.0)
    u = info.K @ (p[:3] / p[2])
    return u[1], u[0]


def bare_table_spots(candidates, radius):
    """The table points (x, y) among the candidates whose disc of ``radius`` [m] looks like bare table in the head
    image (wood: hue ~24/255, saturation ~96), in the candidates' order."""
    hsv = cv2.cvtColor(robo.image("head"), cv2.COLOR_RGB2HSV_FULL).astype(np.int16)
    bare = (np.abs(hsv[..., 0] - 24) <= 8) & (hsv[..., 1] >= 70) & (hsv[..., 1] <= 125)
    free = []
    for x, y in candidates:
        angles = np.linspace(0, 2 * math.pi, 16, endpoint=False)
        ring = [pixel_of((x + radius * math.cos(a), y + radius * math.sin(a), TABLE_Z)) for a in angles]
        disc = np.zeros(bare.shape, np.uint8)
        cv2.fillConvexPoly(disc, np.round(np.array(ring)[:, ::-1]).astype(np.int32), 1)
        if disc.any() and bare[disc > 0].mean() > 0.98:
            free.append((x, y))
    return free
