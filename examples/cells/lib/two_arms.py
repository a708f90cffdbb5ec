"""Both arms of the dual ARX X5 on one object: parking them out of the head camera's view, the table's height
(measured again from the parked pose when an object under the wrist cameras spoils it), fingers-down orientations
from axes and the wrist's reach, and where a flat coloured region lies on a horizontal plane (robo API only).

Included after lib/colour_objects.py by the scripted cells of lift_bar, fill_held_bowl and center_on_pad; defines
``HOME_QUAT`` for lib/wrist_views_dual_arm.py and ``TABLE_Z`` (measuring it may park the arms). Uses the cell
namespace's ``robo``, ``np``, ``math`` and ``cv2``.
"""

ARMS = ("left", "right")
DOWN = (0.0, 0.0, -1.0)
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ARMS}  # fingers down, opening along x
HOME_POS = {arm: np.array(robo.state().arm(arm).tcp_pos) for arm in ARMS}
BASE_XY = {"left": np.array([-0.3, -0.45]), "right": np.array([0.3, -0.45])}  # arm bases (robot description)


def quat_from_axes(opening, approach=DOWN):
    """TCP quaternion (w, x, y, z) whose y axis is ``opening`` (fingers open along it) and z axis ``approach``."""
    z = np.asarray(approach, float) / np.linalg.norm(approach)
    y = np.asarray(opening, float) - np.dot(opening, z) * z
    y /= np.linalg.norm(y)
    R = np.column_stack([np.cross(y, z), y, z])
    w = math.sqrt(max(1e-12, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    if w > 0.1:
        return (w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w))
    i = int(np.argmax(np.diag(R)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = math.sqrt(max(1e-12, 1 + R[i, i] - R[j, j] - R[k, k])) * 2
    q = [0.0, 0.0, 0.0, 0.0]
    q[0] = (R[k, j] - R[j, k]) / s
    q[1 + i] = s / 4
    q[1 + j] = (R[j, i] + R[i, j]) / s
    q[1 + k] = (R[k, i] + R[i, k]) / s
    return tuple(q)


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


def park(arms=ARMS):
    """Move arms out to the sides of the table (fingers down, 5 cm above home), where the head camera sees past
    them and their wrist cameras look at bare table."""
    for arm in arms:
        x = -0.45 if arm == "left" else 0.45
        print(f"park {arm}:", robo.move_to(arm, (x, -0.2, HOME_POS[arm][2] + 0.05), HOME_QUAT[arm]))


def measure_table():
    """The table's height [m] from the cameras; when an object under both wrist cameras spoils the measurement,
    the arms park at the sides and the cameras measure again."""
    table = robo.table_height()
    if not table.found:
        print("table not measured from home:", table.reason[:100], "...")
        park()
        table = robo.table_height()
    print("table at z =", table.z)
    return table.z


TABLE_Z = measure_table()


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


def bright_part(rgb, blob):
    """The lit part of a blob (the brighter of two brightness classes, Otsu's split): an object's top face."""
    value = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)[..., 2]
    inside = value[blob].reshape(-1, 1)
    threshold, _ = cv2.threshold(inside, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return blob & (value > threshold)
