"""Scripted code cells for build_tower, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the four colours bottom to top.
2. Park both arms out at the table's sides and find the four blocks by colour (lib/colour_objects.py: a
   hue/saturation mask of the rendered colour, blobs, clicks on the top face, robo.segment; a wrist camera looks
   closer at blobs the head camera cannot measure). Their measured heights give the block size (~3 cm).
3. The tower goes in the middle of the table, where both arms reach over it (the X5 holds a block top-down only up
   to ~16 cm above the table there): the first free one of a few spots around (0, -0.26).
4. The bottom block is picked with the arm on its side and set down on the tower spot, turned (at most 45 deg)
   so its faces are square to the world axes. Its position is measured again.
5. Each next block, in order: picked by the arm on its side (the other arm steps aside first; the fingers open
   only ~5.7 cm, so they stay off the tower when a block stands close to it), lifted so its underside clears the
   tower, carried over the bottom block's centre square to the same axes, lowered until it is 6 mm above the
   tower's top (levels times the measured block size, which reads ~1.5 mm short), released, the hand lifted away.
   Every block aims at the bottom block's centre, so the errors do not add up.
6. After each release, the head camera checks the block did not fall: a block of that colour that segments as an
   upright block on the table away from the tower fell off; it is picked and placed again (up to twice).

The tower's skills (placing, the check, the retries) are lib/tower.py's, shared with stack_by_size.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task build_tower --seed 0 --agent code_cell --llm replay:examples/cells/build_tower.py
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
ORDER = colours_named()[:4]
BLOCK = {"heights": (0.015, 0.06)}  # plausible measured heights of a block standing on the table
OPENING = 0.65  # ~5.7 cm between the finger pads: room around a 3 cm block, the fingers off a tower close by
# Tower spots both arms reach over up high, the preferred one first.
TOWER_SPOTS = [(0.0, -0.26), (0.0, -0.23), (0.03, -0.26), (-0.03, -0.26), (0.0, -0.29), (0.03, -0.23), (-0.03, -0.23)]
print(robo.task.instruction, "-> bottom to top:", ORDER, "; table at", round(TABLE_Z, 4))

# %% find the blocks; choose the tower spot
park()
blocks = {colour: locate(colour, **BLOCK) for colour in ORDER}
for colour, seg in blocks.items():
    print(colour, None if seg is None else (np.round(seg.world_xyz, 3), round(seg.height_m, 4)))
heights = [seg.height_m for seg in blocks.values() if seg is not None]
SIZE = float(np.median(heights)) if heights else 0.03
others = [seg.world_xyz for colour, seg in blocks.items() if seg is not None and colour != ORDER[0]]
tower = Tower(ORDER, {c: SIZE for c in ORDER}, free_xy(TOWER_SPOTS, others, 0.08), OPENING, BLOCK["heights"])
print(f"block size {SIZE:.4f} m; tower at {tower.xy}")

# %% the bottom block to the tower spot, square to the world axes
if blocks[ORDER[0]] is not None:
    tower.place_bottom(blocks[ORDER[0]])

# %% the next blocks in order, each checked after its release
for level in range(1, len(ORDER)):
    if robo.done or robo.steps_left < 60:
        break
    print(f"level {level} stacked:", tower.stack(level, blocks[ORDER[level]]))
print("done:", robo.done, "steps left:", robo.steps_left)
