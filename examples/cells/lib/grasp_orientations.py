"""Fingers-down grasp orientations (robo API only): from the directions the fingers open along and approach, turned
about the vertical, across an object's footprint, squared to the world axes.

Included by the scripted cells that turn a gripper (``# include: lib/grasp_orientations.py`` in a cell stands for
this file's code). Quaternions are (w, x, y, z); a TCP's z axis is its approach direction (out of the fingers), its
y axis the direction the fingers open along. Uses the cell namespace's ``np`` and ``math``.
"""

DOWN = (0.0, 0.0, -1.0)


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


def finger_yaw(quat):
    """Direction [rad] in the table plane that a fingers-down grasp's fingers open along (the TCP y axis)."""
    w, x, y, z = quat
    return math.atan2(1 - 2 * (x * x + z * z), 2 * (x * y - w * z))


def turn_quat(quat, angle):
    """A fingers-down orientation turned by ``angle`` [rad] about the approach axis (the vertical)."""
    w, x, y, z = quat
    c, s = math.cos(angle / 2), math.sin(angle / 2)
    return (c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w)


def grasp_quat(arm_state, footprint):
    """The arm's current grasp orientation turned about the vertical (at most 45 deg) so the fingers close across
    the faces of a footprint (its outline on the table, Nx2)."""
    edges = np.roll(footprint, -1, axis=0) - footprint
    longest = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
    yaw = (math.atan2(longest[1], longest[0]) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    turn = (yaw - finger_yaw(arm_state.tcp_quat) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    return turn_quat(arm_state.tcp_quat, turn)


def squared_to_axes(quat):
    """A fingers-down orientation turned (at most 45 deg) so the fingers open along a world axis: a held block then
    has its faces square to x and y."""
    return turn_quat(quat, -((finger_yaw(quat) + math.pi / 4) % (math.pi / 2) - math.pi / 4))


def opening_along(quat, direction):
    """A fingers-down orientation turned (at most 90 deg) so the fingers open along a horizontal direction (x, y)
    (either sign: the fingers are symmetric)."""
    turn = (math.atan2(direction[1], direction[0]) - finger_yaw(quat) + math.pi / 2) % math.pi - math.pi / 2
    return turn_quat(quat, turn)
