"""Scripted code cells for lift_bar, written only against the robo API (no privileged state).

Strategy:
1. Park both arms at the sides of the table (at home their grippers hide the bar's ends from the head camera).
2. Find the bar by the colour word of the instruction: its blob in the head camera (a hue/saturation mask), its
   height from robo.segment, and its top face (the lit part of the blob) back-projected onto the plane of that
   face: the smallest rectangle around it gives the bar's centre, length and direction.
3. Each arm grasps it from above, the left one 20 cm left of its middle and the right one 20 cm right of it (the
   same distance, so it hangs level between them), fingers opening across the bar, the grasp point 1.5 cm under
   the top face; both close (holding must be True, else the gripper opens, backs off and re-aims once).
4. The hands rise in alternate 2 cm steps (a 2 cm difference over 40 cm tilts the bar 3 deg) to 12 cm above where
   they closed; the task is judged a success on the way, once the bar is 8 cm up, level, in both hands.

The skills (finding the long object, the two-handed grasp, the level lift) are lib/two_hand_lift.py's, shared with
lift_tray.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task lift_bar --seed 0 --agent code_cell --llm replay:examples/cells/lift_bar.py
"""

# %% helpers: colours, both arms, lifting a long object level with both hands
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/two_hand_lift.py

TABLE_Z = measure_table()
colour = colours_named()[0]
HALF_SPAN_M = 0.20  # each hand this far from the bar's middle
BAR = {"heights": (0.02, 0.07), "guess_height": 0.04}  # plausible measured heights; the height if it does not segment
print(robo.task.instruction, "-> the", colour, "bar; table at z =", round(TABLE_Z, 4))

# %% park the arms, find the bar in the head camera
park()
bar = find_long_object(colour, **BAR)
bar

# %% grasp the bar with both hands, the same distance either side of its middle (once more after a miss)
points, grips = grasp_level(bar, lambda: find_long_object(colour, **BAR), HALF_SPAN_M)

# %% lift in alternate 2 cm steps to 12 cm
if points is not None:
    lift_level(points, step=0.02, height=0.12)
