"""Finding coloured blocks by their lit top faces, and grasp orientations from axes (robo API only).

Included by the scripted cells of handover and push_to_pad (``# include: lib/colour_tops.py`` in a cell stands for
this file's code). Uses the cell namespace's ``robo``, ``np`` and ``math``.
"""

import cv2

# Hue [deg] of each colour's lit top face in the cameras, hue tolerance [deg], minimum saturation and value (0..1).
# Measured on the images: the wooden table is hue ~32, saturation ~0.38 (so orange needs a high saturation, and a
# high value to tell it from brown); pink tops render pale (saturation ~0.3) and bluish (hue 300..335).
COLOURS = {
    "red": (0, 12, 0.5, 0.3),
    "orange": (36, 8, 0.6, 0.8),
    "yellow": (60, 10, 0.5, 0.3),
    "green": (127, 12, 0.4, 0.3),
    "cyan": (182, 12, 0.4, 0.3),
    "blue": (225, 12, 0.4, 0.3),
    "purple": (276, 12, 0.4, 0.3),
    "pink": (318, 20, 0.18, 0.7),
}


def colour_blobs(rgb, colour, max_fraction=0.3):
    """Connected regions of the colour, largest first."""
    hue, tol, min_sat, min_val = COLOURS[colour]
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(float)
    hue_diff = np.abs((hsv[..., 0] * 360 / 256 - hue + 180) % 360 - 180)
    match = (hue_diff < tol) & (hsv[..., 1] > min_sat * 255) & (hsv[..., 2] > min_val * 255)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(match.astype(np.uint8))
    order = sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    max_area = max_fraction * rgb.shape[0] * rgb.shape[1]
    return [labels == i for i in order if 30 <= stats[i, cv2.CC_STAT_AREA] <= max_area]


def top_face_pixel(rgb, blob):
    """A pixel near the middle of the blob's brightest (top) face."""
    rows, cols = np.nonzero(blob)
    upper = rows <= np.median(rows)
    rows, cols = rows[upper], cols[upper]
    value = rgb[rows, cols].astype(float).sum(axis=1)
    bright = value >= np.quantile(value, 0.5)
    r, c = np.median(rows[bright]), np.median(cols[bright])
    k = int(np.argmin((rows[bright] - r) ** 2 + (cols[bright] - c) ** 2))
    return int(rows[bright][k]), int(cols[bright][k])


def quat_from_axes(opening, approach):
    """TCP quaternion (w, x, y, z) whose y axis is `opening` (fingers open along it) and z axis is `approach`."""
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


DOWN = (0.0, 0.0, -1.0)
