"""Finding objects by colour in the camera images (robo API only): colour masks and blobs, clicks on a blob's top
face, robo.segment of the first blob that measures as a whole upright object, and a blob's lit (top) part.

Included first by most scripted cells: a line ``# include: lib/colour_objects.py`` in a cell stands for this file's
text, so the replayed model sends it as code. Uses the cell namespace's ``robo`` and ``np``.
"""

import cv2

# The colours as rendered (OpenCV HSV_FULL: hue 0..255 around the circle, saturation 0..255), read off the camera
# images: (hue low, hue high, saturation low, saturation high) over lit and shaded faces. The wood table has orange's
# hue but saturation ~96, brown objects saturation ~185 (orange ~220); pink is pale (saturation ~100).
COLOUR_HSV = {
    "red": (-6, 6, 150, 256),
    "orange": (18, 34, 198, 256),
    "yellow": (36, 48, 150, 256),
    "green": (84, 96, 140, 256),
    "cyan": (123, 137, 150, 256),
    "blue": (154, 168, 150, 256),
    "purple": (190, 202, 130, 256),
    "pink": (208, 244, 40, 135),
}


def colour_mask(rgb, colour):
    """Pixels of the colour on any face (lit or shaded): hue and saturation in the colour's band, not dark."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(np.int16)
    hue_lo, hue_hi, sat_lo, sat_hi = COLOUR_HSV[colour]
    hue_diff = np.abs((hsv[..., 0] - (hue_lo + hue_hi) / 2 + 128) % 256 - 128)
    sat, value = hsv[..., 1], hsv[..., 2]
    return ((hue_diff <= (hue_hi - hue_lo) / 2) & (sat >= sat_lo) & (sat < sat_hi) & (value > 50)).astype(np.uint8)


def colour_blobs(rgb, colour, min_px=25):
    """Connected regions of the colour as bool masks, largest first."""
    mask = cv2.morphologyEx(colour_mask(rgb, colour), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
    order = sorted(range(1, n), key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    return [labels == i for i in order if stats[i, cv2.CC_STAT_AREA] >= min_px]


def top_face_pixels(rgb, blob):
    """Candidate clicks on the blob's top face: the middle of its brightest part, of its brighter half, of its upper
    half (the top face is the lit one and the highest in the image)."""
    value = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)[..., 2].astype(float)
    inner = cv2.erode(blob.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    rows, cols = np.nonzero(inner if inner.sum() >= 6 else blob)
    v = value[rows, cols]
    clicks = []
    for sel in (v >= v.max() - 6, v >= np.quantile(v, 0.5), rows <= np.median(rows)):
        r, c = np.median(rows[sel]), np.median(cols[sel])
        k = int(np.argmin((rows[sel] - r) ** 2 + (cols[sel] - c) ** 2))
        click = (int(rows[sel][k]), int(cols[sel][k]))
        if click not in clicks:
            clicks.append(click)
    return clicks


SEEN_IN = {}  # colour -> the camera that found it last


def find(colour, cameras=("head",), heights=(0.015, 0.1)):
    """(segment, hints): the first blob of the colour that segments as a whole upright object of a plausible height,
    else None and the table points under the blobs that did not segment (seen, but cut off or occluded)."""
    table_z = robo.table_height().z
    hints = []
    for camera in cameras:
        rgb = robo.image(camera)
        blobs = colour_blobs(rgb, colour)
        print(f"{camera}: {len(blobs)} {colour} blob(s) of {[int(b.sum()) for b in blobs[:4]]} px")
        for blob in blobs[:4]:
            for click in top_face_pixels(rgb, blob):
                seg = robo.segment(click, camera)
                if seg.found and not seg.touches_border and heights[0] <= seg.height_m <= heights[1]:
                    print(f"  found at {click}: {seg}")
                    SEEN_IN[colour] = camera
                    return seg, hints
                why = seg.reason or ("cut off by the image border" if seg.touches_border else "implausible height")
                print(f"  click {click}: not used ({why}; height {seg.height_m})")
            rows, cols = np.nonzero(blob)
            hit = robo.back_project(rows.mean(), cols.mean(), camera, plane_z=table_z + 0.02)
            if hit.found:
                hints.append(hit.xyz)
    return None, hints


def bright_part(rgb, blob):
    """The lit part of a blob (the brighter of two brightness classes, Otsu's split): an object's top face."""
    value = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)[..., 2]
    inside = value[blob].reshape(-1, 1)
    threshold, _ = cv2.threshold(inside, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return blob & (value > threshold)


def instruction_words():
    """The words of the episode's instruction, lower case, without punctuation."""
    text = robo.task.instruction.lower().replace(".", "").replace(",", "").replace(":", "")
    return text.replace("(", " ").replace(")", " ").split()


def colours_named():
    """The colour words of the instruction, in order."""
    return [word for word in instruction_words() if word in COLOUR_HSV]
