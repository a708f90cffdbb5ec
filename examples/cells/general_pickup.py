"""Scripted code cells for general_pickup, written only against the robo API (no privileged state).

Strategy:
1. Read the colour and shape words of the instruction.
2. Find the object in the head camera by colour: a per-pixel mask of the colour's rendered hue and saturation (the
   saturation band separates orange from the wood-coloured table and from brown objects, and keeps the pale pink),
   connected blobs, largest first; for each blob a few candidate clicks on its top face go to robo.segment until
   one is a whole (not cut off by the image border) upright object of a plausible height. If the head camera has
   nothing usable, the wrist cameras look from where they are, then from above the blobs that were seen but could
   not be measured (cut off at the image border, behind an arm).
3. Grasp from above with the arm on the object's side (lib/pick_up.py): hover 8 cm over the top face with the
   fingers turned to close across the faces, lower to half the object's height (at most 2 cm under its top), close,
   lift 15 cm; a blocked descent backs up and turns the fingers 90 degrees.
   Every MoveResult is checked: an unplanned approach switches to the other arm; a missed grasp (holding False), or
   a lift not judged a success within 10 s (put the object back down), opens the gripper, backs off, sends the arms
   home, looks again and retries, up to three attempts.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task general_pickup --seed 0 --agent code_cell --llm replay:examples/cells/general_pickup.py
"""

# %% helpers: find an object by the colour word of the instruction, pick it up
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/pick_up.py

TABLE_Z = measure_table()
words = instruction_words()
colour = next(word for word in words if word in COLOUR_HSV)
shape = next((word for word in words if word in ("block", "cylinder", "cube")), "object")
print(robo.task.instruction, "-> looking for a", colour, shape)

# %% find the object (head camera first, the wrist cameras if the head does not see it)
target = locate(colour)
target

# %% grasp it from above with the arm on its side, lift 15 cm; on a miss back off, look again and retry
for _attempt in range(3):
    if target is None or robo.done:
        break
    arm = arm_for(target.world_xyz)
    outcome = pick_up(target, arm, f"{colour} {shape}")
    if outcome == "unplanned":
        outcome = pick_up(target, other_arm(arm), f"{colour} {shape}")
    if outcome == "lifted" or robo.done:
        break
    print("home:", robo.home())
    target = locate(colour)
print("done:", robo.done, "steps left:", robo.steps_left)
