"""Scripted code cells for fr3_pick_cube (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy (as general_pickup.py, for one arm named 'arm' and the cameras 'head' and 'wrist'):
1. Read the colour word of the instruction.
2. Find the cube in the head camera by colour: a per-pixel mask of the colour's rendered hue and saturation (the
   saturation band separates orange from the wood-coloured table and keeps the pale pink), connected blobs, largest
   first; for each blob a few candidate clicks on its top face go to robo.segment until one is an upright object of
   a plausible height. If the head camera has nothing usable, the wrist camera looks from where it is, then from
   above the blobs the head camera saw but could not measure.
3. Grasp from above: hover 8 cm over the top face with the fingers turned to close across the cube's faces, lower
   to half its height (at most 2 cm under its top), close, lift 15 cm. Every MoveResult is checked; a missed grasp
   (holding False) opens the gripper, backs off, goes home, looks again and retries, up to three attempts; a
   blocked descent (reached False, a neighbour under the fingers) backs up and turns the fingers 90 degrees.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_pick_cube --seed 0 --agent code_cell --llm replay:examples/cells/fr3_pick_cube.py
"""

# %% helpers: find the cube by the colour word of the instruction, and turn the gripper to grasp it
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


def look_closer(colour, xy, heights=(0.015, 0.1), view_height=0.25):
    """Bring the wrist camera over a table point (grasp point ``view_height`` above the table, lower if the arm
    cannot reach that high; the camera looks down and back, ~18 deg from vertical) and find the object there."""
    table_z = robo.table_height().z
    for height in np.arange(view_height, 0.1399, -0.03):
        back = 0.325 * (height + 0.053) - 0.055  # the camera's view centre is this far behind the grasp point
        view = robo.move_to("arm", (xy[0], xy[1] + back, table_z + height), HOME_QUAT)
        print(f"wrist {height:.2f} m over {np.round(xy, 3)}: {view}")
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


def turn_quat(quat, angle):
    """A fingers-down orientation turned by ``angle`` [rad] about the approach axis (the vertical)."""
    w, x, y, z = quat
    c, s = math.cos(angle / 2), math.sin(angle / 2)
    return (c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w)


def grasp_quat(arm_state, footprint):
    """The current grasp orientation turned about the vertical so the fingers close across the footprint's faces."""
    edges = np.roll(footprint, -1, axis=0) - footprint
    longest = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
    yaw = (math.atan2(longest[1], longest[0]) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    w, x, y, z = arm_state.tcp_quat
    finger_yaw = math.atan2(1 - 2 * (x * x + z * z), 2 * (x * y - w * z))  # the TCP y axis: fingers open along it
    return turn_quat(arm_state.tcp_quat, (yaw - finger_yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4)


colour = next(word for word in robo.task.instruction.lower().replace(".", "").split() if word in COLOUR_HSV)
HOME_QUAT = robo.state().tcp_quat
print(robo.task.instruction, "-> looking for the", colour, "cube; table at", robo.table_height().z)

# %% find the cube (head camera first, then the wrist camera)
target = locate(colour)
target


# %% grasp it from above, lift 15 cm; on a miss back off, look again and retry
def try_pick(target):
    """One grasp attempt: 'lifted', 'unplanned' (nothing moved) or 'missed'."""
    x, y, top_z = target.world_xyz
    grasp_z = top_z - min(target.height_m / 2, 0.02)
    quat = grasp_quat(robo.state().arm(), target.footprint_xy)
    for turn in (0.0, math.pi / 2):
        above = robo.move_to("arm", (x, y, top_z + 0.08), turn_quat(quat, turn), gripper=robo.OPEN)
        print(f"above the {colour} cube (fingers turned {math.degrees(turn):.0f} deg): {above}")
        if not above.planned:
            return "unplanned"
        down = robo.move_to("arm", (x, y, grasp_z))
        print("down:", down)
        if down.reached:
            break
        print("blocked on the way down: back up")
        robo.move_to("arm", (x, y, top_z + 0.08))
    grip = robo.grasp("arm")
    print("grasp:", grip)
    if not grip.holding and not robo.done:
        print("missed: open and back off")
        robo.release("arm")
        robo.move_to("arm", (x, y, top_z + 0.08))
        return "missed"
    for lift_xyz in ((x, y, grasp_z + 0.15), (x, y, grasp_z + 0.12)):
        lift = robo.move_to("arm", lift_xyz)  # straight up; lower if that is out of reach
        print(f"lift to {np.round(lift_xyz, 3)}:", lift)
        if lift.planned:
            break
    else:
        print("lift by going home:", robo.home())
    if robo.done:
        return "lifted"
    print("lifted, but the task is not solved (another object, or it slipped): put it back down")
    robo.move_to("arm", (x, y, grasp_z + 0.01))
    robo.release("arm")
    robo.move_to("arm", (x, y, top_z + 0.08))
    return "missed"


for _attempt in range(3):
    if target is None or robo.done:
        break
    outcome = try_pick(target)
    if outcome == "lifted" or robo.done:
        break
    print("home:", robo.home())
    target = locate(colour)
print("done:", robo.done, "steps left:", robo.steps_left)
