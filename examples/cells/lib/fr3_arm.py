"""The single-arm Franka FR3 (one arm named 'arm', cameras 'head' and 'wrist'): the table's height, looking closer
with the wrist camera, flat coloured regions on the table, fingers-down orientations from axes, and pick and place
(robo API only).

Included after lib/colour_objects.py by the scripted cells of fr3_push_to_pad, fr3_stack_two and fr3_sort_two;
defines ``ARM``, ``HOME_QUAT`` (the ready pose's grasp orientation: fingers down) and ``TABLE_Z``. Uses the cell
namespace's ``robo``, ``np``, ``math`` and ``cv2``.
"""

ARM = "arm"
DOWN = (0.0, 0.0, -1.0)
PAD_REACH_M = 0.0086  # the finger pads reach this far below the grasp point (hand z 0.066..0.112, TCP at 0.1034)
ABOVE_M = 0.06  # hover this far above an object's top before going down to grasp it
HOME_QUAT = robo.state().tcp_quat
TABLE_Z = robo.table_height().z


def look_closer(colour, xy, heights=(0.015, 0.1), view_height=0.25):
    """Bring the wrist camera over a table point (grasp point ``view_height`` above the table, lower if the arm
    cannot reach that high; the camera looks down and back, ~18 deg from vertical) and find the object there."""
    for height in np.arange(view_height, 0.1399, -0.03):
        back = 0.325 * (height + 0.053) - 0.055  # the camera's view centre is this far behind the grasp point
        view = robo.move_to(ARM, (xy[0], xy[1] + back, TABLE_Z + height), HOME_QUAT)
        print(f"  wrist {height:.2f} m over {np.round(xy, 3)}: {view}")
        if view.planned:
            return find(colour, ("wrist",), heights)[0]
    return None


def locate(colour, heights=(0.015, 0.1), view_height=0.25):
    """Head camera first, then the wrist camera from where it is; a blob that cannot be measured from there (cut
    off, occluded) is looked at again from above with the wrist camera."""
    seg, hints = find(colour, ("head",), heights)
    if seg is None:
        seg, more = find(colour, ("wrist",), heights)
        hints += more
    for xy in hints[:3]:
        if seg is None:
            seg = look_closer(colour, xy, heights, view_height)
    return seg


def clear_view():
    """Lift the hand straight up from low over the table, then go home: the head camera sees the table again."""
    here = robo.state().tcp_pos
    if here[2] < TABLE_Z + 0.1:
        print("  up:", robo.move_to(ARM, (here[0], here[1], TABLE_Z + 0.12)))
    print("  home:", robo.home())


def on_plane(camera, rows, cols, z):
    """World points seen at pixels (rows, cols) of a camera, on the horizontal plane at height z (Nx3)."""
    info = robo.camera(camera)
    pixels = np.stack([np.asarray(cols, float), np.asarray(rows, float), np.ones(len(rows))])
    rays = info.T_world_cam[:3, :3] @ (np.linalg.inv(info.K) @ pixels)
    origin = info.T_world_cam[:3, 3]
    return (origin[:, None] + rays * (z - origin[2]) / rays[2]).T


def flat_region(camera, pixels):
    """The smallest rectangle around pixels (a bool mask) of something flat on the table: centre (x, y) and size
    (long, short) [m]."""
    rows, cols = np.nonzero(pixels)
    points = on_plane(camera, rows, cols, TABLE_Z + 0.001)[:, :2].astype(np.float32)
    (cx, cy), (w, h), _ = cv2.minAreaRect(points)
    return np.array([cx, cy]), (max(w, h), min(w, h))


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


def grasp_depth(height):
    """How far below an object's top to put the grasp point: the pads' lower edge 1 cm above the table for a short
    object, at most 2 cm down a tall one."""
    return float(min(max(height - PAD_REACH_M - 0.01, 0.008), 0.02))


def pick(seg, clear_z, label="object"):
    """Grasp an upright object (a Segment) from above and lift the grasp point to clear_z.

    Returns ('held', the grasp point's height above the object's underside), ('unplanned', None) when the arm
    cannot reach it (nothing moved, or it backed off), or ('missed', None). When something blocks the fingers on the
    way down, it backs up and tries again with the fingers turned 90 degrees."""
    x, y, top_z = seg.world_xyz
    depth = grasp_depth(seg.height_m)
    grasp_z = top_z - depth
    quat = grasp_quat(robo.state().arm(ARM), seg.footprint_xy)
    for turn in (0.0, math.pi / 2):
        above = robo.move_to(ARM, (x, y, top_z + ABOVE_M), turn_quat(quat, turn), gripper=robo.OPEN)
        print(f"  above the {label} (turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned", None
        down = robo.move_to(ARM, (x, y, grasp_z))
        print("  down:", down)
        if not down.planned:
            return "unplanned", None
        if down.reached:
            break
        print("  blocked on the way down: back up")
        robo.move_to(ARM, (x, y, top_z + ABOVE_M))
    else:
        return "missed", None
    grip = robo.grasp(ARM)
    print("  grasp:", grip)
    if not grip.holding:
        print("  missed: open and back off")
        robo.release(ARM)
        robo.move_to(ARM, (x, y, top_z + ABOVE_M))
        return "missed", None
    print("  lift:", robo.move_to(ARM, (x, y, max(clear_z, grasp_z + 0.03))))
    return "held", grasp_z - (top_z - seg.height_m)


def put_down(xy, surface_z, below, quat=None, carry_z=None, gap=0.003):
    """Set the held object down on a surface at xy: carry it over (the grasp point at carry_z, default 4 cm above
    its resting height), lower it until its underside is ``gap`` above surface_z (the grasp point is ``below``
    above the underside), open, and lift the hand straight up. False when the arm cannot carry it there."""
    rest_z = surface_z + below + gap
    carry_z = carry_z or rest_z + 0.04
    here = robo.state().tcp_pos
    if here[2] < carry_z - 0.005:
        print("  up:", robo.move_to(ARM, (here[0], here[1], carry_z)))
    over = robo.move_to(ARM, (xy[0], xy[1], carry_z), quat)
    print(f"  over {np.round(xy, 3)}: {over}")
    if not over.planned:
        return False
    print("  lower:", robo.move_to(ARM, (xy[0], xy[1], rest_z)))
    print("  release:", robo.release(ARM))
    if not robo.done:
        print("  lift away:", robo.move_to(ARM, (xy[0], xy[1], rest_z + 0.05)))
    return True
