"""Finding coloured blocks by their lit top faces (robo API only): the colours as the lit faces render, masks and
blobs of them, and a pixel on a blob's top face.

Included by the scripted cells of handover and push_to_pad, and by lib/depth_faces.py's users (``# include:
lib/colour_tops.py`` in a cell stands for this file's code). Uses the cell namespace's ``np``.
"""

import cv2

# Hue [deg] of each colour's lit top face in the cameras, hue tolerance [deg], minimum saturation and value (0..1).
# Measured on the images: the wooden table is hue ~32, saturation ~0.38 (so orange needs a high saturation, and a
# high value to tell it from brown); pink tops render pale (saturation ~0.3) and bluish (hue 300..335).
LIT_TOPS = {
    "red": (0, 12, 0.5, 0.3),
    "orange": (36, 8, 0.6, 0.8),
    "yellow": (60, 10, 0.5, 0.3),
    "green": (127, 12, 0.4, 0.3),
    "cyan": (182, 12, 0.4, 0.3),
    "blue": (225, 12, 0.4, 0.3),
    "purple": (276, 12, 0.4, 0.3),
    "pink": (318, 20, 0.18, 0.7),
}


def lit_top_mask(rgb, colour):
    """Pixels of a colour's lit top face (bool)."""
    hue, tol, min_sat, min_val = LIT_TOPS[colour]
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(float)
    hue_diff = np.abs((hsv[..., 0] * 360 / 256 - hue + 180) % 360 - 180)
    return (hue_diff < tol) & (hsv[..., 1] > min_sat * 255) & (hsv[..., 2] > min_val * 255)


def lit_top_blobs(rgb, colour, max_fraction=0.3):
    """Connected regions of a colour's lit top faces, largest first, none larger than max_fraction of the image."""
    n, labels, stats, _ = cv2.connectedComponentsWithStats(lit_top_mask(rgb, colour).astype(np.uint8))
    order = sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    max_area = max_fraction * rgb.shape[0] * rgb.shape[1]
    return [labels == i for i in order if 30 <= stats[i, cv2.CC_STAT_AREA] <= max_area]


def lit_top_pixel(rgb, blob):
    """A pixel near the middle of the blob's brightest (top) face."""
    rows, cols = np.nonzero(blob)
    upper = rows <= np.median(rows)
    rows, cols = rows[upper], cols[upper]
    value = rgb[rows, cols].astype(float).sum(axis=1)
    bright = value >= np.quantile(value, 0.5)
    r, c = np.median(rows[bright]), np.median(cols[bright])
    k = int(np.argmin((rows[bright] - r) ** 2 + (cols[bright] - c) ** 2))
    return int(rows[bright][k]), int(cols[bright][k])
