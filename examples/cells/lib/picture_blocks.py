"""Reading pictures: the flat white card's and every coloured block's top face (robo API only).

Included after lib/colour_objects.py, lib/two_arms.py, lib/wrist_views_dual_arm.py and lib/top_faces.py by the
scripted cells of pick_matching_picture and match_tile. ``card_glyph`` reads the card (the light blob of a card's
size on the table plane); ``blocks_seen`` finds the block of every task colour (robo.segment in the head camera, or
from above with the wrist camera of the arm on its side) and reads its top face in the camera that measured it.
"""

CARD_SIDES = (0.05, 0.12)  # what the card's side may plausibly measure [m]
BLOCK = {"heights": (0.02, 0.08)}


def card_glyph():
    """(centre (x, y), picture (a glyph)) of the card, or (None, None)."""
    rgb = robo.image("head")
    for blob in light_blobs(rgb):
        centre, side, x_axis = square_on_plane("head", blob, TABLE_Z + 0.002)
        if CARD_SIDES[0] < side < CARD_SIDES[1]:
            print(f"card at {np.round(centre, 3)}, side {side:.3f} m")
            return centre, glyph(face_patch("head", rgb, centre, side, x_axis, TABLE_Z + 0.002))
    return None, None


def read_block(colour):
    """(segment, glyph of its top face) of the block of that colour, or None: measured in the head camera, else
    looked at from above with the wrist camera of the arm on its side (which then parks again)."""
    seg, hints = find(colour, ("head",), BLOCK["heights"])
    if seg is None and hints:
        seg = look_closer(colour, hints[0], BLOCK["heights"])
    if seg is None:
        return None
    camera = SEEN_IN[colour]
    footprint = np.asarray(seg.footprint_xy, np.float32)
    (cx, cy), (w, h), angle = cv2.minAreaRect(footprint)
    a = (math.radians(angle) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    side = math.sqrt(w * h)
    x_axis = np.array([math.cos(a), math.sin(a)])
    g = glyph(face_patch(camera, robo.image(camera), np.array([cx, cy]), side, x_axis, seg.top_z))
    print(f"{colour} block at {np.round(seg.world_xyz, 3)} ({camera}), side {side:.3f} m, picture: {g is not None}")
    if camera != "head":
        park()
    return None if g is None else (seg, g)


def blocks_seen():
    """colour -> (segment, glyph) for every block of a task colour in the head camera's view."""
    rgb = robo.image("head")
    found = {}
    for colour in COLOUR_HSV:
        if any(blob.sum() >= 150 for blob in colour_blobs(rgb, colour)[:2]):
            block = read_block(colour)
            if block is not None:
                found[colour] = block
    return found
