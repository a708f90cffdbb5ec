"""Scripted code cells for fr3_push_to_pad (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy:
1. The instruction names the block's colour first and the target square's (pad's) second.
2. Find the block with robo.segment (lib/colour_objects.py: a hue/saturation mask, blobs, clicks on the top face; the
   wrist camera looks closer when the head camera cannot measure it) and the square's centre from its blob put on
   the table plane (it is flat: its outline on the table is its footprint).
3. Push in strokes: the fingers nearly closed (2.4 cm apart, so the two fingertips side by side make a pusher about
   5 cm wide), turned across the line from the block to the square's centre, the grasp point 1.5 cm above the table
   (the pads' lower edge 6 mm above it), starting 7 cm behind the block's centre and moving straight on until the
   block's centre would reach the square's centre (shorter strokes when the planner refuses the long one).
4. After each stroke the hand lifts and goes home, out of the head camera's view, and the block is measured again;
   the next stroke starts from behind it on the new line. The episode ends by itself once the block's centre is
   inside the square.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_push_to_pad --seed 0 --agent code_cell --llm replay:examples/cells/fr3_push_to_pad.py
"""

# %% helpers: colours, finding objects, the FR3's moves
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/fr3_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py

TABLE_Z = measure_table()
block_colour, pad_colour = colours_named()[:2]
BLOCK = {"heights": (0.03, 0.07)}
print(robo.task.instruction, f"-> the {block_colour} block onto the {pad_colour} square; table at {TABLE_Z:.4f}")


# %% find the block and the square
def find_pad():
    """The square's centre (x, y) from its blob on the table plane (head camera, else the wrist camera), or None."""
    for camera in ("head", "wrist"):
        blobs = colour_blobs(robo.image(camera), pad_colour)
        if blobs:
            centre, (long_side, short_side), _ = rect_on_plane(camera, blobs[0], TABLE_Z + 0.001)
            print(f"square in {camera}: centre {np.round(centre, 4)}, outline {long_side:.3f} x {short_side:.3f} m")
            return centre
    return None


pad = find_pad()
block = locate(block_colour, **BLOCK)
print("square:", pad, "\nblock:", block)


# %% push in strokes towards the square's centre, measuring the block again after each
PUSH_Z = TABLE_Z + 0.015  # the pads' lower edge 6 mm above the table
SAFE_Z = TABLE_Z + 0.10
BEHIND_M = 0.07  # start this far behind the block's centre (half a turned block, half a fingertip, a gap)
CONTACT_M = 0.04  # the grasp point stays this far behind the block's centre while it pushes
PUSH_OPENING = 0.3  # fingers 2.4 cm apart: both fingertips touch the block's face
FRACTIONS = (1.0, 0.7, 0.45)  # of the stroke to the square's centre, tried in turn when the long one is refused
# The fingers' opening direction [rad] at home with the last wrist joint turned to the middle of its range (0 rad):
# the fingers turn clockwise seen from above as that joint's angle grows.
MID_WRIST_YAW = finger_yaw(HOME_QUAT[ARM]) + robo.state().arm(ARM).joints[6]


def push_quats(direction, points):
    """Fingers down, opening across the push direction (the fingertips side by side); both ways round, first the
    one that keeps the last wrist joint nearest the middle of its range (at the end of it, the next motion out is
    refused), estimated from the base's turn towards the points."""
    quats = [quat_from_axes((-direction[1], direction[0], 0.0)), quat_from_axes((direction[1], -direction[0], 0.0))]
    base = BASE_XY[ARM]  # at home the hand points along +y from it
    turn = np.mean([math.atan2(p[1] - base[1], p[0] - base[0]) - math.pi / 2 for p in points])
    natural = MID_WRIST_YAW + turn

    def wrist_turn(quat):
        return abs((finger_yaw(quat) - natural + math.pi) % (2 * math.pi) - math.pi)

    return sorted(quats, key=wrist_turn)


def stroke(block_xy, pad_xy):
    """One push along the line from the block to the square's centre; False when no stroke could be planned."""
    to_pad = pad_xy - block_xy
    dist = float(np.linalg.norm(to_pad))
    direction = to_pad / dist
    start = block_xy - direction * BEHIND_M
    for quat in push_quats(direction, (start, pad_xy)):
        above = robo.move_to(ARM, (start[0], start[1], SAFE_Z), quat, gripper=PUSH_OPENING)
        print(f"  above the start {np.round(start, 3)}: {above}")
        if not above.planned:
            continue
        down = robo.move_to(ARM, (start[0], start[1], PUSH_Z))
        print("  down:", down)
        if not down.planned:
            continue
        for fraction in FRACTIONS:
            end = block_xy + direction * (fraction * dist - CONTACT_M)
            push = robo.move_to(ARM, (end[0], end[1], PUSH_Z))
            print(f"  push {fraction * dist:.3f} m: {push}")
            if push.planned:
                return True
        print("  up again:", robo.move_to(ARM, (start[0], start[1], SAFE_Z)))
    return False


for n in range(8):
    if robo.done or robo.steps_left < 40 or block is None or pad is None:
        break
    block_xy = np.array(block.world_xyz[:2])
    print(f"stroke {n}: block at {np.round(block_xy, 3)}, {np.linalg.norm(pad - block_xy):.3f} m from the centre")
    pushed = stroke(block_xy, pad)
    if robo.done:
        break
    park()
    if not pushed:
        print("no stroke along this line can be planned")
        break
    block = locate(block_colour, **BLOCK)
    print("block now:", block)
print("done:", robo.done, "steps left:", robo.steps_left)
