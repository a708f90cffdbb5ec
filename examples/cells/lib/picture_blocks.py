"""Reading pictures: the flat white card's and every coloured block's top face (robo API only).

Included after lib/colour_objects.py, lib/camera_plane.py, lib/dual_arm.py, lib/wrist_views.py and lib/top_faces.py by
the scripted cells of pick_matching_picture and match_tile. ``card_glyph`` reads the card: the light blob that makes a
square of a card's size on the table between the parked arms (the arms' silver links are light blobs too, of a card's
size in the head camera) and shows a picture. ``blocks_seen`` reads, for every task colour, the first blob of that
colour whose top face shows a picture (the cluttered variant adds plain blocks in the task's colours): each blob is
measured with robo.segment in the head camera (clicked around its face's middle too, which may lie inside a ring), or
from above with the wrist camera of the arm on its side, and its top face read in the camera that measured it.
``ranked_by_picture`` orders them by how well they match the card; ``find_near`` finds a block again where it was seen.
"""

CARD_SIDES = (0.05, 0.12)  # what the card's side may plausibly measure [m]
CARD_MAX_X = min(abs(PARK_POS[arm][0]) for arm in ARMS) - 0.09  # the card lies between the parked arms (0.36 m)
BLOCK = {"heights": (0.02, 0.08)}


def is_square_on_plane(camera, blob, z, max_aspect=1.3, min_fill=0.8):
    """Whether a blob's pixels make a square on the plane at height z: sides within max_aspect of each other and
    filling min_fill of their rectangle (the card does; the arms' silver links, light too, mostly do not)."""
    rows, cols = np.nonzero(blob)
    points = on_plane(camera, rows, cols, z)[:, :2].astype(np.float32)
    _, (w, h), _ = cv2.minAreaRect(points)
    hull = cv2.convexHull(points)
    return max(w, h) <= max_aspect * max(min(w, h), 1e-6) and cv2.contourArea(hull) >= min_fill * w * h


def card_glyph():
    """(centre (x, y), picture (a glyph)) of the card, or (None, None): the first light blob that makes a square of a
    card's size on the table, between the parked arms (their silver links are light too), showing a picture."""
    rgb = robo.image("head")
    for blob in light_blobs(rgb):
        centre, side, x_axis = square_on_plane("head", blob, TABLE_Z + 0.002)
        if not (CARD_SIDES[0] < side < CARD_SIDES[1] and abs(centre[0]) < CARD_MAX_X):
            continue
        if not is_square_on_plane("head", blob, TABLE_Z + 0.002):
            continue
        g = glyph(face_patch("head", rgb, centre, side, x_axis, TABLE_Z + 0.002))
        if g is not None:
            print(f"card at {np.round(centre, 3)}, side {side:.3f} m")
            return centre, g
    return None, None


def face_clicks(rgb, blob):
    """Clicks on a blob's top face: lib/colour_objects.py's (its middle), then one in each quarter around the middle
    of its brighter half, two thirds of the way out (the middle may lie inside a ring or a circle of the picture)."""
    clicks = top_face_pixels(rgb, blob)
    value = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)[..., 2]
    rows, cols = np.nonzero(blob & (value >= np.median(value[blob])))
    dr, dc = rows - np.median(rows), cols - np.median(cols)
    dist = np.hypot(dr, dc)
    sector = ((np.arctan2(dr, dc) + math.pi) // (math.pi / 2)).astype(int) % 4
    for k in range(4):
        sel = np.nonzero(sector == k)[0]
        if len(sel):
            i = sel[np.argmin(np.abs(dist[sel] - 0.67 * dist[sel].max()))]
            clicks.append((int(rows[i]), int(cols[i])))
    return clicks


def segment_blob(camera, rgb, blob, heights):
    """The segment of one colour blob (clicked on its top face) measured as a whole upright object of a plausible
    height, most of the blob, or None (cut off, occluded, not a block)."""
    for click in face_clicks(rgb, blob):
        seg = robo.segment(click, camera)
        whole = seg.area_px >= 0.4 * blob.sum()  # not just the part of the face inside the picture (a ring's)
        if seg.found and whole and not seg.touches_border and heights[0] <= seg.height_m <= heights[1]:
            return seg
    return None


def top_picture(camera, seg):
    """The glyph of a measured block's top face, resampled in that camera and aligned with its edges, or None when
    nothing dark lies inside the face (a plain block: the cluttered variant adds some in the task's colours)."""
    footprint = np.asarray(seg.footprint_xy, np.float32)
    (cx, cy), (w, h), angle = cv2.minAreaRect(footprint)
    a = (math.radians(angle) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    x_axis = np.array([math.cos(a), math.sin(a)])
    patch = face_patch(camera, robo.image(camera), np.array([cx, cy]), math.sqrt(w * h), x_axis, seg.top_z)
    return glyph(patch, inside_only=True)


def read_block(colour, blob, rgb):
    """(segment, glyph of its top face) of the block one head-camera blob shows, or None when it shows no picture:
    measured in the head camera, else looked at from above with the wrist camera of the arm on its side (which then
    parks again) when the head camera cannot measure it (cut off, occluded)."""
    seg, camera = segment_blob("head", rgb, blob, BLOCK["heights"]), "head"
    if seg is None:
        rows, cols = np.nonzero(blob)
        hint = robo.back_project(rows.mean(), cols.mean(), "head", plane_z=TABLE_Z + 0.02)
        if not hint.found:
            return None
        seg = look_closer(colour, hint.xyz, BLOCK["heights"])
        camera = SEEN_IN.get(colour, "head")
        if seg is not None and math.dist(seg.world_xyz[:2], hint.xyz[:2]) > 0.05:
            seg = None  # another block of that colour
        g = None if seg is None else top_picture(camera, seg)
        park()
    else:
        g = top_picture(camera, seg)
    if seg is not None:
        print(f"{colour} block at {np.round(seg.world_xyz, 3)} ({camera}), picture: {g is not None}")
    return None if g is None else (seg, g)


def blocks_seen():
    """colour -> (segment, glyph) of the block of every task colour that shows a picture in the head camera's view
    (the first blob of the colour that does: blocks without a picture may share its colour)."""
    rgb = robo.image("head")
    found = {}
    for colour in COLOUR_HSV:
        for blob in colour_blobs(rgb, colour)[:4]:
            if blob.sum() < 150:  # smaller than a block's top face seen from the head camera
                break
            block = read_block(colour, blob, rgb)
            if block is not None:
                found[colour] = block
                break
    return found


def find_near(colour, xy, heights=BLOCK["heights"], within=0.06):
    """The block of that colour in the head camera nearest a table point (where it was seen before, so a plain
    block of the same colour is not taken for it), or None when none lies within ``within`` [m]."""
    rgb = robo.image("head")
    near = []
    for blob in colour_blobs(rgb, colour)[:4]:
        seg = segment_blob("head", rgb, blob, heights)
        if seg is not None and math.dist(seg.world_xyz[:2], xy[:2]) <= within:
            near.append(seg)
    return min(near, key=lambda seg: math.dist(seg.world_xyz[:2], xy[:2]), default=None)


def ranked_by_picture(card, blocks):
    """The colours of ``blocks`` (colour -> (segment, glyph)), the best match for the card's picture (a glyph) first:
    the pictures compared turned by each quarter turn (lib/top_faces.py's best_overlap)."""
    ranking = sorted(blocks, key=lambda c: -best_overlap(card, blocks[c][1]))
    for colour in ranking:
        print(f"{colour}: overlap {best_overlap(card, blocks[colour][1]):.2f} with the card's picture")
    return ranking
