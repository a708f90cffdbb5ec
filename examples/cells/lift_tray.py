"""Scripted code cells for lift_tray, written only against the robo API (no privileged state).

The tray is handled like lift_bar's bar (lib/two_hand_lift.py serves both); the block standing on it only needs
the tray kept level and the grippers clear of it.

Strategy:
1. Park both arms at the sides of the table (at home their grippers hide the tray's ends from the head camera), and
   only then measure the table's height.
2. Find the tray by the first colour word of the instruction: its blobs in the head camera (a hue/saturation mask;
   the block on it may cut it in two), its height from robo.segment, and its top face (the lit part of the blobs)
   back-projected onto the plane of that face: the smallest rectangle around it gives the tray's centre, length
   and direction.
3. Each arm grasps it from above, the left one 20 cm left of its middle and the right one 20 cm right of it (the
   same distance, so it hangs level between them, and well clear of the block near the middle), fingers opening
   across the tray, the grasp point 1.5 cm under the top face; both close (holding must be True, else the gripper
   opens, backs off and re-aims once).
4. The hands rise in alternate 1 cm steps (a 1 cm difference over 40 cm tilts the tray 1.5 deg, which the block
   rides out) to 12 cm above where they closed; the task is judged a success on the way, once the tray is 8 cm up,
   level, in both hands, the block on it.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task lift_tray --seed 0 --agent code_cell --llm replay:examples/cells/lift_tray.py
"""

# %% helpers: colours, both arms, lifting a long object level with both hands
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/two_hand_lift.py

# From home the tray under both wrist cameras can spoil the table's measurement: the arms park first.
TABLE_Z = measure_table(park_first=True)
colour, cargo_colour = colours_named()[:2]
HALF_SPAN_M = 0.20  # each hand this far from the tray's middle
# Plausible measured heights (taller: the block on it counted in), and the height if it does not segment; the block
# standing on it may cut its blob in two.
TRAY = {"heights": (0.02, 0.05), "clip": (0.025, 0.05), "guess_height": 0.035, "parts": True}
print(robo.task.instruction, "-> the", colour, "tray, the", cargo_colour, "block; table at z =", round(TABLE_Z, 4))

# %% park the arms, find the tray in the head camera
park()
tray = find_long_object(colour, **TRAY)
tray

# %% grasp the tray with both hands, the same distance either side of its middle (once more after a miss)
points, grips = grasp_level(tray, lambda: find_long_object(colour, **TRAY), HALF_SPAN_M)

# %% lift in alternate 1 cm steps to 12 cm
if points is not None:
    lift_level(points, step=0.01, height=0.12)
