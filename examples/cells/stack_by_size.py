"""Scripted code cells for stack_by_size, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the three colours (in no particular order).
2. Park both arms out at the table's sides and find the three blocks by colour (lib/colour_objects.py: a
   hue/saturation mask of the rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks
   closer at blobs the head camera cannot measure). Their measured heights rank them: the largest goes at the
   bottom, the smallest on top.
3. The tower goes in the middle of the table, where both arms reach over it: the first free one of a few spots
   around (0, -0.26). The largest block is carried there, turned (at most 45 deg) so its faces are square to the
   world axes, and measured again.
4. The middle-sized block, then the smallest: picked by the arm on its side (the other arm steps aside), lifted so
   its underside clears the tower, carried over the largest block's centre square to the same axes, lowered until
   it is 6 mm above the tower's top (the sum of the measured heights below, which read ~1.5 mm short), released,
   the hand lifted away.
5. After each release the head camera checks the block did not fall: a block of that colour standing on the table
   away from the tower is picked and placed again (up to twice).

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task stack_by_size --seed 0 --agent code_cell --llm replay:examples/cells/stack_by_size.py
"""

# %% helpers: find blocks by colour, pick and place with either arm
import dataclasses

# include: lib/colour_objects.py
# include: lib/wrist_views_dual_arm.py
# include: lib/pick_place_dual_arm.py

words = robo.task.instruction.lower().replace(".", "").replace(",", "").replace(":", "").split()
COLOURS = [word for word in words if word in COLOUR_HSV][:3]
HOME_QUAT = {arm: robo.state().arm(arm).tcp_quat for arm in ("left", "right")}
TABLE_Z = robo.table_height().z
BLOCK = {"heights": (0.015, 0.06)}  # plausible measured heights of a block standing on the table
OPENING = 0.75  # ~6.6 cm between the finger pads: room around a 4.5 cm block, the fingers off a tower close by
TOWER_SPOTS = [(0.0, -0.26), (0.0, -0.23), (0.04, -0.26), (-0.04, -0.26), (0.0, -0.29), (0.04, -0.22), (-0.04, -0.22)]
print(robo.task.instruction, "-> colours", COLOURS, "; table at", round(TABLE_Z, 4))

# %% find the blocks, rank them by size, choose the tower spot
park()
blocks = {colour: locate(colour, **BLOCK) for colour in COLOURS}
for colour, seg in blocks.items():
    print(colour, None if seg is None else (np.round(seg.world_xyz, 3), round(seg.height_m, 4)))


def side_of(seg):
    """A cube's size [m]: its measured height, or the side of its top face's outline (the square root of the
    outline's area) when that is larger. The head camera measures a small cube's height short (an orange 2.5 cm cube
    as 1.85 cm), its top face closer; too short a block is grasped too low and set down into the block below."""
    xs, ys = np.asarray(seg.footprint_xy, float).T
    area = 0.5 * abs(np.dot(xs, np.roll(ys, 1)) - np.dot(ys, np.roll(xs, 1)))
    return max(float(seg.height_m), math.sqrt(area))


def standing(seg, size):
    """The segment of a cube of that size standing on the table, its top at TABLE_Z + size."""
    x, y, _ = seg.world_xyz
    return dataclasses.replace(seg, world_xyz=(x, y, TABLE_Z + size), top_z=TABLE_Z + size, height_m=size)


SIZE = {c: (side_of(seg) if seg is not None else 0.035) for c, seg in blocks.items()}
ORDER = sorted(COLOURS, key=lambda c: -SIZE[c])
others = [seg.world_xyz for colour, seg in blocks.items() if seg is not None and colour != ORDER[0]]
TOWER_XY = free_xy(TOWER_SPOTS, others, 0.09)
print("bottom to top:", ORDER, "heights", [round(SIZE[c], 4) for c in ORDER], "; tower at", TOWER_XY)


# %% the largest block to the tower spot, square to the world axes
def top_of(level):
    """Height of the tower's top with ``level`` blocks standing."""
    return TABLE_Z + sum(SIZE[c] for c in ORDER[:level])


def place_on_tower(colour, seg, level):
    """Pick the block and set it down as level ``level`` (0 = on the table at the tower spot), square to the world
    axes; the arm that carried it, or None if it was not set down."""
    seg = standing(seg, SIZE[colour])
    arm = arm_for(seg.world_xyz)
    step_aside(other_arm(arm))
    clear = max(top_of(level), TABLE_Z + SIZE[ORDER[0]]) + 0.02  # carry the block's underside this high
    outcome, below = pick(seg, arm, clear + 0.03, colour, opening=OPENING)
    if outcome == "unplanned":  # out of that arm's reach: the other one
        arm = other_arm(arm)
        step_aside(other_arm(arm))
        outcome, below = pick(seg, arm, clear + 0.03, colour, opening=OPENING)
    if outcome != "held":
        return None
    target = TOWER_XY if level == 0 else BASE_XY
    placed = put_down(arm, [target], top_of(level), below, square_quat(arm), gap=0.006, carry_z=clear + below)
    return arm if placed is not None else None


def fell_off(colour):
    """The block of that colour, if the head camera sees it standing on the table away from the tower."""
    seg, _ = find(colour, ("head",), (0.015, 0.05))
    if seg is not None and math.dist(seg.world_xyz[:2], BASE_XY) > 0.03:
        return seg
    return None


BASE_XY = TOWER_XY
if blocks[ORDER[0]] is not None:
    arm = place_on_tower(ORDER[0], blocks[ORDER[0]], 0)
    print("bottom block placed with:", arm)
    if arm is not None:
        step_aside(arm)
    base, _ = find(ORDER[0], ("head",), BLOCK["heights"])
    if base is None:
        park()
        base = locate(ORDER[0], **BLOCK)
    print("bottom block now:", base)
    if base is not None:
        BASE_XY = tuple(float(v) for v in base.world_xyz[:2])
print("tower base at", np.round(BASE_XY, 4), "steps left:", robo.steps_left)


# %% the middle-sized block, then the smallest, each checked after its release
def stack(level):
    colour = ORDER[level]
    seg = blocks[colour]
    for _attempt in range(3):
        if seg is None:
            park()
            seg = locate(colour, **BLOCK)
            if seg is None:
                print("cannot find the", colour, "block")
                return False
        print(f"level {level}: {colour} from {np.round(seg.world_xyz, 3)}")
        arm = place_on_tower(colour, seg, level)
        print("placed with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
        if robo.done or robo.steps_left < 40:
            return arm is not None
        step_aside(arm or arm_for(seg.world_xyz))
        fallen = fell_off(colour)
        if fallen is None and arm is not None:
            return True
        print("the", colour, "block is not on the tower:", fallen)
        seg = fallen
    return False


for level in range(1, len(ORDER)):
    if robo.done or robo.steps_left < 60:
        break
    print(f"level {level} stacked:", stack(level))
print("done:", robo.done, "steps left:", robo.steps_left)
