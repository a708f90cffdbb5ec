"""Scripted code cells for fr3_pick_cube (single-arm Franka FR3), written only against the robo API (no privileged
state).

Strategy (as general_pickup.py, for one arm named 'arm' and the cameras 'head' and 'wrist'):
1. Read the colour word of the instruction.
2. Find the cube in the head camera by colour: a per-pixel mask of the colour's rendered hue and saturation (the
   saturation band separates orange from the wood-coloured table and keeps the pale pink), connected blobs, largest
   first; for each blob a few candidate clicks on its top face go to robo.segment until one is an upright object of
   a plausible height. If the head camera has nothing usable, the wrist camera looks from where it is, then from
   above the blobs the head camera saw but could not measure.
3. Grasp from above (lib/pick_up.py): hover 8 cm over the top face with the fingers turned to close across the cube's
   faces, lower to half its height (at most 2 cm under its top), close, lift 15 cm. Every MoveResult is checked; a
   missed grasp (holding False) opens the gripper, backs off, goes home, looks again and retries, up to three attempts;
   a blocked descent (reached False, a neighbour under the fingers) backs up and turns the fingers 90 degrees.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task fr3_pick_cube --seed 0 --agent code_cell --llm replay:examples/cells/fr3_pick_cube.py
"""

# %% helpers: find the cube by the colour word of the instruction, pick it up
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/fr3_arm.py
# include: lib/wrist_views.py
# include: lib/pick_up.py

TABLE_Z = measure_table()
colour = colours_named()[0]
print(robo.task.instruction, "-> looking for the", colour, "cube")

# %% find the cube (head camera first, then the wrist camera)
target = locate(colour)
target

# %% grasp it from above, lift 15 cm; on a miss back off, look again and retry
for _attempt in range(3):
    if target is None or robo.done:
        break
    outcome = pick_up(target, ARM, f"{colour} cube")
    if outcome == "lifted" or robo.done:
        break
    print("home:", robo.home())
    target = locate(colour)
print("done:", robo.done, "steps left:", robo.steps_left)
