"""Scripted code cells for push_to_pad, written only against the robo API (no privileged state).

Strategy:
1. Find the block and the flat target square (pad) by the two colour words of the instruction: the block with
   robo.segment in the head camera (a wrist camera looks when the head camera cannot), the pad by back-projecting
   its blob onto the table plane (it is flat: its outline on the table is its footprint).
2. Push in strokes: the closed gripper, fingers down, 2.5 cm above the table (fingertips 5 mm above it), starts
   behind the block on the far side from the pad and moves straight towards the pad centre; a stroke is at most
   15 cm (shorter ones when the planner refuses it). The arm whose base is nearer the stroke pushes, turned so its
   wrist reaches the table there; when it cannot, the other arm pushes (the idle arm waits at home).
3. After each stroke the block is measured again (the gripper backs off upwards if it hides the block); if the
   block is still in line the next stroke continues from where the gripper is, otherwise the gripper lifts and
   comes down behind the block on the new line.
The episode ends by itself once the block's centre is inside the square.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task push_to_pad --seed 0 --agent code_cell --llm replay:examples/cells/push_to_pad.py
"""

# %% helpers: colours, finding objects, both arms, orientations as quaternions
import types

# include: lib/colour_tops.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py

CAMERAS = ("head", "left_wrist", "right_wrist")
TABLE_Z = measure_table()
block_colour, pad_colour = [w for w in robo.task.instruction.lower().replace(".", "").split() if w in LIT_TOPS][:2]
print("instruction:", robo.task.instruction)
print(f"block: {block_colour}, pad: {pad_colour}; table at z = {TABLE_Z:.3f}")


# %% find the block and the pad
def find_block(cameras=CAMERAS):
    """(x, y, top_z) of the block's top face, from the first camera that measures it, or None."""
    for camera in cameras:
        rgb = robo.image(camera)
        for blob in lit_top_blobs(rgb, block_colour)[:2]:
            pixel = lit_top_pixel(rgb, blob)
            for second in [c for c in CAMERAS if c != camera] + [None]:
                try:
                    seg = robo.segment(pixel, camera, second_view=second)
                except ValueError:
                    continue
                if seg.found and seg.height_m > 0.03 and not seg.touches_border:
                    return np.array(seg.world_xyz)
            rows, cols = np.nonzero(blob)  # cut off or unmeasurable: the centre of its blob at half height
            return np.append(on_plane(camera, rows, cols, TABLE_Z + 0.025).mean(axis=0)[:2], TABLE_Z + 0.05)
    return None


def find_pad(cameras=CAMERAS):
    """(x, y) of the pad's centre: its blob on the table plane (the centre of its outline's rectangle), or None."""
    for camera in cameras:
        blobs = lit_top_blobs(robo.image(camera), pad_colour)
        if blobs:
            rows, cols = np.nonzero(blobs[0])
            points = on_plane(camera, rows, cols, TABLE_Z)[:, :2].astype(np.float32)
            (cx, cy), size, _ = cv2.minAreaRect(points)
            print(f"  pad in {camera}: {len(rows)} px, outline {size[0]:.3f} x {size[1]:.3f} m")
            return np.array([cx, cy])
    return None


block = find_block()
pad = find_pad()
print("block:", block, " pad:", pad)

# %% push in strokes towards the pad centre, re-measuring the block after each stroke
PUSH_Z = TABLE_Z + 0.025  # fingertips 5 mm above the table
SAFE_Z = TABLE_Z + 0.10
STROKES_M = (0.15, 0.10, 0.06, 0.03)  # stroke lengths to try, longest first (a long one may be out of reach)
BEHIND_M = 0.065  # start this far behind the block's centre (half a yawed block, half the fingers, a gap)
CONTACT_M = 0.04  # the gripper's centre stays this far behind the block's centre while it pushes
PAST_MIDDLE_M = 0.06  # a pusher's grasp point ends a stroke at most this far past the middle (x = 0) of the table:
# further over, at the edge of its reach, the wrist turns on the way and the fingers slide past the block
LIFTS_Z = (SAFE_Z, TABLE_Z + 0.075, TABLE_Z + 0.065)  # lifting off the table, lower where the arm cannot reach higher
came_from = {}  # arm -> where its last stroke started (the path back along the stroke is clear)


def move(arm, xyz, quat=None, **kwargs):
    """robo.move_to, with a refused command taken as a result: after a push the arm may lag its last target, and a
    plan from there can ask a joint to jump faster than it may (InvalidCommandError, a ValueError; nothing moved):
    it settles a moment and tries once more. A MoveResult, or an object with planned False."""
    for _attempt in range(2):
        try:
            return robo.move_to(arm, xyz, quat, **kwargs)
        except ValueError as exc:
            print(f"  {arm}: the move was refused ({exc}); let the arm settle")
            robo.wait(0.3)
            refused = str(exc)
    return types.SimpleNamespace(planned=False, reached=False, reason=refused)


def push_quat(arm, points, direction):
    """The closed-gripper orientation for a push along `direction` that the arm's wrist reaches best at `points`.
    With the fingers down, an arm reaches the table only with the fingers opening within about 60 deg of its
    preferred opening (the wrist turns at most 115 deg from its home angle); the closed fingers are symmetric, so
    either sign is fine."""
    across, along = np.array([-direction[1], direction[0]]), np.array(direction)
    preferred = [preferred_opening(arm, p) for p in points]
    best = max((across, -across, along, -along), key=lambda v: min(np.dot(v, u) for u in preferred))
    return quat_from_axes((best[0], best[1], 0.0), DOWN)


def lift(arm):
    """Lift the arm's hand off the table, straight up (lower where it cannot reach that high); where it cannot lift
    at all (far over, at the edge of its reach), it first goes back along its last stroke. False if it stays low."""
    for attempt in range(2):
        here = robo.state().arm(arm).tcp_pos
        if here[2] >= LIFTS_Z[-1] - 0.005:
            return True
        for z in LIFTS_Z:
            up = move(arm, (here[0], here[1], z))
            print(f"  {arm} up to z {z:.3f}:", up)
            if up.planned:
                return True
        if attempt == 0 and arm in came_from:
            back = came_from[arm]
            print(f"  {arm} back along its stroke:", move(arm, (back[0], back[1], here[2])))
    return False


def clear(arm):
    """Lift an arm and send it home, out of the other arm's way (an arm that cannot lift stays: going home low over
    the table would sweep the block along)."""
    if not lift(arm):
        print(f"  {arm} cannot lift: it stays where it is")
        return
    if np.linalg.norm(robo.state().arm(arm).tcp_pos - HOME_POS[arm]) > 0.02:
        print(f"  {arm} home:", move(arm, HOME_POS[arm]))


def stroke_length(arm, direction, length):
    """The stroke shortened so the grasp point stays at most PAST_MIDDLE_M past the table's middle."""
    goal = block[:2] + direction * (length - CONTACT_M)
    over = -SIDE[arm] * goal[0] - PAST_MIDDLE_M  # how far the goal lies beyond that line
    if over > 0 and SIDE[arm] * direction[0] < 0:
        length -= over / abs(direction[0])
    return length


def stroke_from_here(arm, direction, dist):
    """Push along the line from where the gripper is; the longest stroke the arm can plan (None when none is, or
    the block is already at the arm's limit past the middle)."""
    result = None
    for length in STROKES_M:
        length = stroke_length(arm, direction, min(length, dist))
        if length < 0.02:
            print(f"  {arm}: the block is at the edge of its side of the table")
            return None
        goal = block[:2] + direction * (length - CONTACT_M)
        result = move(arm, (goal[0], goal[1], PUSH_Z))
        if result.planned:
            print(f"  {arm} push {length:.2f} m:", result)
            return result
    print(f"  {arm}: no stroke along this line can be planned ({result.reason})")
    return None


pusher, in_line = None, False
for stroke in range(14):
    if robo.done or robo.steps_left < 30:
        break
    to_pad = pad - block[:2]
    dist = float(np.linalg.norm(to_pad))
    direction = to_pad / dist
    print(f"stroke {stroke}: block at {np.round(block[:2], 3)}, {dist:.3f} m from the pad centre")
    moved = stroke_from_here(pusher, direction, dist) if in_line else None
    if moved is None:
        start = block[:2] - direction * BEHIND_M
        end = block[:2] + direction * (min(STROKES_M[0], dist) - CONTACT_M)
        for arm in sorted(("left", "right"), key=lambda a: np.linalg.norm(BASE_XY[a] - (start + end) / 2)):
            for other in ("left", "right"):
                if other != arm:
                    clear(other)
            if stroke_length(arm, direction, min(STROKES_M[0], dist)) < 0.02:
                continue  # the block is at the edge of this arm's side of the table
            if not lift(arm):
                continue
            quat = push_quat(arm, (start, end), direction)
            for z in (SAFE_Z, TABLE_Z + 0.075):  # far from the base the arm reaches only lower down
                above = move(arm, (start[0], start[1], z), quat, gripper=robo.CLOSED)
                print(f"  {arm} above the start at z {z:.3f}:", above)
                if above.planned:
                    break
            if not above.planned:
                continue
            print(f"  {arm} down:", move(arm, (start[0], start[1], PUSH_Z)))
            came_from[arm] = start
            moved = stroke_from_here(arm, direction, dist)
            if moved is not None:
                pusher = arm
                break
            print(f"  {arm} up again:", move(arm, (start[0], start[1], z)))
    if moved is None:
        print("  no arm can push along this line")
        break
    if robo.done:
        break
    tcp = np.array(robo.state().arm(pusher).tcp_pos[:2])
    new = find_block()
    if new is None:  # the pushing arm hides it: back off upwards, then out of the way, looking each time
        back = tcp - direction * 0.04
        print("  block not seen; backing off:", move(pusher, (back[0], back[1], SAFE_Z)))
        new = find_block()
    if new is None:
        clear(pusher)
        new = find_block()
    if new is None:
        print("  block not found after the stroke")
        break
    new_direction = (pad - new[:2]) / max(1e-6, float(np.linalg.norm(pad - new[:2])))
    ahead = float(np.dot(new[:2] - tcp, new_direction))
    offset = new[:2] - tcp
    lateral = float(new_direction[0] * offset[1] - new_direction[1] * offset[0])  # 2-D cross (np.cross wants 3-D)
    print(f"  block now at {np.round(new[:2], 3)}: {ahead:.3f} m ahead of the gripper, {lateral:+.3f} m off its line")
    in_line = 0.02 < ahead < 0.07 and abs(lateral) < 0.012
    block = new
print("done:", robo.done, "steps left:", robo.steps_left)
