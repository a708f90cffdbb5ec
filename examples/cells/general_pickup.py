"""Scripted code cells for general_pickup, written only against the robo API (no privileged state).

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task general_pickup --seed 0 --agent code_cell --llm replay:examples/cells/general_pickup.py
"""

# %% helpers: find an object by the colour word of the instruction, and turn the gripper to grasp it
import cv2

COLOUR_RGB = {
    "red": (217, 31, 31),
    "green": (38, 166, 51),
    "blue": (38, 77, 217),
    "yellow": (242, 217, 26),
    "orange": (242, 128, 26),
    "purple": (128, 51, 179),
    "cyan": (26, 191, 204),
    "pink": (242, 128, 179),
}


def colour_blobs(rgb, colour, hue_tol_deg=12.0, min_sat=0.35, max_fraction=0.03):
    """Connected regions with the colour's hue, largest first."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL).astype(float)
    want = cv2.cvtColor(np.uint8([[COLOUR_RGB[colour]]]), cv2.COLOR_RGB2HSV_FULL)[0, 0].astype(float)
    hue_diff = np.abs((hsv[..., 0] - want[0] + 128) % 256 - 128) * 360 / 256
    match = (hue_diff < hue_tol_deg) & (hsv[..., 1] > min_sat * 255) & (hsv[..., 2] > 40)
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


def grasp_quat(arm_state, footprint):
    """The current grasp orientation turned about the vertical so the fingers close across the footprint's faces."""
    edges = np.roll(footprint, -1, axis=0) - footprint
    longest = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
    yaw = (math.atan2(longest[1], longest[0]) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    w, x, y, z = arm_state.tcp_quat
    finger_yaw = math.atan2(1 - 2 * (x * x + z * z), 2 * (x * y - w * z))  # the TCP y axis: fingers open along it
    turn = (yaw - finger_yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
    c, s = math.cos(turn / 2), math.sin(turn / 2)
    return (c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w)


colour = next(word for word in robo.task.instruction.lower().replace(".", "").split() if word in COLOUR_RGB)
print("looking for", colour)

# %% find the object in the head camera and measure it
rgb = robo.image("head")
target = None
for blob in colour_blobs(rgb, colour)[:3]:
    seg = robo.segment(top_face_pixel(rgb, blob), "head")
    print(seg)
    if seg.found:
        target = seg
        break
target

# %% grasp it from above with the arm on its side, then lift 15 cm
x, y, top_z = target.world_xyz
grasp_z = top_z - min(target.height_m / 2, 0.02)
state = robo.state()
arm = min(state.arms, key=lambda a: abs(state.arm(a).tcp_pos[0] - x))
quat = grasp_quat(state.arm(arm), target.footprint_xy)
print(robo.move_to(arm, (x, y, top_z + 0.10), quat, gripper=robo.OPEN))
print(robo.move_to(arm, (x, y, grasp_z)))
print(robo.grasp(arm))
print(robo.move_to(arm, (x, y, grasp_z + 0.15)))
print("done:", robo.done)
