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

The tower's skills (placing, the check, the retries) are lib/tower.py's, shared with build_tower.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task stack_by_size --seed 0 --agent code_cell --llm replay:examples/cells/stack_by_size.py
"""

# %% helpers: find blocks by colour, pick and place with either arm, build a tower
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/relay.py
# include: lib/tower.py

TABLE_Z = measure_table()
COLOURS = colours_named()[:3]
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


SIZE = {c: (side_of(seg) if seg is not None else 0.035) for c, seg in blocks.items()}
ORDER = sorted(COLOURS, key=lambda c: -SIZE[c])
others = [seg.world_xyz for colour, seg in blocks.items() if seg is not None and colour != ORDER[0]]
tower = Tower(ORDER, SIZE, free_xy(TOWER_SPOTS, others, 0.09), OPENING, BLOCK["heights"], cubes=True)
print("bottom to top:", ORDER, "heights", [round(SIZE[c], 4) for c in ORDER], "; tower at", tower.xy)

# %% the largest block to the tower spot, square to the world axes
if blocks[ORDER[0]] is not None:
    tower.place_bottom(blocks[ORDER[0]])

# %% the middle-sized block, then the smallest, each checked after its release
for level in range(1, len(ORDER)):
    if robo.done or robo.steps_left < 60:
        break
    print(f"level {level} stacked:", tower.stack(level, blocks[ORDER[level]]))
print("done:", robo.done, "steps left:", robo.steps_left)
