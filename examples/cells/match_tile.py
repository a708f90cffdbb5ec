"""Scripted code cells for match_tile, written only against the robo API (no privileged state).

Strategy:
1. Park both arms at the table's sides so the head camera sees the whole table.
2. Read the white tile's picture and every coloured tile's (lib/picture_blocks.py: the white tile is the light
   square of a card's size between the parked arms, whose silver links are light too; each coloured tile is the
   first blob of its colour, measured with robo.segment, whose top face resampled as seen from above shows a
   picture, as plain blocks of the same colours lie around in the cluttered variant; pictures compared turned by
   quarter turns). The best overlap is the tile to place.
3. A spot beside the white tile: 7.5 cm in front of its centre, else to the side of the arm that carries, else the
   other side (the first one 7 cm clear of the other tiles).
4. The arm on the tile's side grasps it from above (lib/pick_place.py), lifts it, carries it over the spot,
   lowers it until it is 3 mm above the table and opens; a missed grasp looks again (the tile of that colour nearest
   where it was, not a plain block) and retries once.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task match_tile --seed 0 --agent code_cell --llm replay:examples/cells/match_tile.py
"""

# %% helpers: colours, both arms, reading top faces, pick and place
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_place.py
# include: lib/top_faces.py
# include: lib/picture_blocks.py

TABLE_Z = measure_table()
BESIDE_M = 0.075  # from the white tile's centre to the spot's
CLEAR_M = 0.07  # the spot's distance from the other tiles
print(robo.task.instruction)


# %% park the arms, read the white tile's picture and every coloured tile's
park()
card_xy, card = card_glyph()
blocks = blocks_seen()
colour = ranked_by_picture(card, blocks)[0]
tile = blocks[colour][0]
arm = arm_for(tile.world_xyz)
side = SIDE[arm]
spots = [card_xy + np.array(d) for d in ((0.0, -BESIDE_M), (side * BESIDE_M, 0.0), (-side * BESIDE_M, 0.0))]
others = [blocks[c][0].world_xyz for c in blocks if c != colour]
first = free_xy(spots, others, CLEAR_M)
spots = [first] + [s for s in spots if s is not first]
print(f"the {colour} tile goes to {np.round(first, 3)} with the {arm} arm")


# %% pick it and set it down beside the white tile
for _attempt in range(2):
    status, below = pick(tile, arm, TABLE_Z + 0.1, label=f"{colour} tile")
    if status == "unplanned":
        arm = other_arm(arm)
        status, below = pick(tile, arm, TABLE_Z + 0.1, label=f"{colour} tile")
    if status == "held":
        print("set down at", put_down(arm, spots, TABLE_Z, below))
        break
    park()
    tile = find_near(colour, tile.world_xyz)
    if tile is None:
        break
print("done:", robo.done, "steps left:", robo.steps_left)
