"""Scripted code cells for handover, written only against the robo API (no privileged state).

Strategy:
1. Find the block by the colour word of the instruction in the head camera and measure it with robo.segment.
2. The left arm grasps it top-down near its top (the grasp point 1.2 cm below the top face), with the fingers
   closing across the pair of faces nearest to the world y axis, and lifts it.
3. The left arm carries it to the middle (x -0.02, y -0.20, grasp point 13.5 cm above the table, a top-down pose
   the X5 reaches) and turns it so its faces line up with the world axes (fingers closing along y).
4. The right arm turns horizontal (approach along -x, fingers opening vertically: a pose it reaches there),
   comes in from the right half open below the left gripper's housing, and closes on the block's top and bottom
   faces (the left fingers hold the y faces, so the two grips do not meet).
5. The left gripper opens and the left arm moves up and away; the block hangs in the right gripper.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task handover --seed 0 --agent code_cell --llm replay:examples/cells/handover.py
"""

# %% helpers: find the block by its colour word, orientations as quaternions
# include: lib/colour_tops.py
# include: lib/grasp_orientations.py


colour = next(word for word in robo.task.instruction.lower().replace(".", "").split() if word in LIT_TOPS)
print("instruction:", robo.task.instruction)
print("looking for the", colour, "block; table at z =", robo.table_height())


# %% find the block roughly in the head camera (segment it; if that fails, back-project the blob's centre)
def rough_position(camera):
    """(x, y) of the block seen by a camera, or None: a segment if it measures well, else the blob's centre."""
    rgb = robo.image(camera)
    blobs = lit_top_blobs(rgb, colour, max_fraction=0.3)
    if not blobs:
        return None
    seg = robo.segment(lit_top_pixel(rgb, blobs[0]), camera)
    print(f"  {camera}: {len(blobs)} blob(s); segment found={seg.found} at {seg.world_xyz} height {seg.height_m}")
    if seg.found and not seg.touches_border and seg.height_m > 0.02:
        return seg.world_xyz[0], seg.world_xyz[1]
    rows, cols = np.nonzero(blobs[0])
    hit = robo.back_project(float(np.mean(rows)), float(np.mean(cols)), camera, plane_z=robo.table_height().z + 0.02)
    return (hit.xyz[0], hit.xyz[1]) if hit.found else None


rough = rough_position("head") or rough_position("left_wrist")
if rough is None:  # the left arm may hide it from the head camera: move the arm aside and look again
    print("not seen; moving the left arm aside:", robo.move_to("left", (-0.55, -0.2, 0.9)))
    rough = rough_position("head")
for view in [(-0.38, -0.26, 0.88), (-0.22, -0.26, 0.88), (-0.30, -0.12, 0.88)]:
    if rough is not None:
        break
    # out of the head camera's view (the table's left corners): look down with the left wrist camera
    print("looking from", view, robo.move_to("left", view))
    rough = rough_position("left_wrist")
print("rough block position:", rough)

# %% look from above with the left wrist camera (head as the second view when it sees the block too) and measure
block = None
for dy in (0.015, -0.01, 0.03):  # the wrist camera looks down just behind the grasp point; another view if needed
    print("left above the block:", robo.move_to("left", (rough[0], rough[1] + dy, 0.88)))
    rgb = robo.image("left_wrist")
    for blob in lit_top_blobs(rgb, colour, max_fraction=0.3)[:2]:
        pixel = lit_top_pixel(rgb, blob)
        for second in ("head", None):
            seg = robo.segment(pixel, "left_wrist", second_view=second)
            print(f"  left_wrist + {second}: found={seg.found} at {seg.world_xyz} height {seg.height_m} {seg.reason}")
            if seg.found and seg.height_m > 0.02:
                block = seg
                break
        if block is not None:
            break
    if block is not None:
        break
bx, by, top_z = block.world_xyz
edges = np.roll(block.footprint_xy, -1, axis=0) - block.footprint_xy
edge = edges[int(np.argmax(np.linalg.norm(edges, axis=1)))]
yaw = math.atan2(edge[1], edge[0])
normals = [np.array([math.cos(yaw + k * math.pi / 2), math.sin(yaw + k * math.pi / 2)]) for k in range(4)]
# At the handover the left fingers open along +y (the pose the left arm reaches in the middle), so grasp across the
# faces whose normal is nearest to +y; the wrist may not turn that far here, so the others follow in order.
normals.sort(key=lambda n: -n[1])
print(f"block at ({bx:.3f}, {by:.3f}), top z {top_z:.3f}, height {block.height_m:.3f}, yaw {math.degrees(yaw):.0f} deg")

# %% left arm: grasp the block top-down near its top and lift it
grasp_z = top_z - 0.012
for opening in normals:
    pick_quat = quat_from_axes((opening[0], opening[1], 0.0), DOWN)
    try:
        above = robo.move_to("left", (bx, by, top_z + 0.08), pick_quat, gripper=robo.OPEN)
    except Exception as exc:  # a motion error is a result to react to, like a refused plan
        print(f"above (fingers opening along {np.round(opening, 2)}): error {exc}")
        continue
    print(f"above (fingers opening along {np.round(opening, 2)}):", above)
    if above.planned:
        break
print("down:", robo.move_to("left", (bx, by, grasp_z)))
held = robo.grasp("left")
print("grasp:", held)
print("lift:", robo.move_to("left", (bx, by, grasp_z + 0.10)))

# %% left arm: carry the block to the middle, fingers closing along world y (the block's faces on the world axes)
HAND = np.array([-0.02, -0.20, 0.90])  # the left grasp point at the handover
for y_sign in (1.0, -1.0):
    middle = robo.move_to("left", HAND, quat_from_axes((0.0, y_sign, 0.0), DOWN))
    print(f"to the middle (fingers opening along {y_sign:+.0f} y):", middle)
    if middle.planned:
        break
left = robo.state().left
print("left grasp point", np.round(left.tcp_pos, 3), "gripper", round(left.gripper, 3))

# %% right arm: turn horizontal (approach along -x, fingers opening vertically) beside the block, then come in
# (with the opening axis pointing down the wrist turns without a flip; 14 cm out is as far as that pose reaches)
block_centre = left.tcp_pos - np.array([0.0, 0.0, block.height_m / 2 - 0.012])
side_quat = quat_from_axes((0.0, 0.0, -1.0), (-1.0, 0.0, 0.0))
print("right up:", robo.move_to("right", (0.25, block_centre[1], block_centre[2] + 0.02), gripper=0.6))
print("right turn:", robo.move_to("right", (block_centre[0] + 0.14, block_centre[1], block_centre[2]), side_quat))
print("right in:", robo.move_to("right", (block_centre[0] + 0.006, block_centre[1], block_centre[2])))
print("right grasp:", robo.grasp("right"))

# %% hand over: the left gripper lets go and the left arm moves up and away
print("left release:", robo.release("left"))
# the open fingers straddle the block's y faces with room to spare: slide out along -x
print("left away:", robo.move_to("left", left.tcp_pos + np.array([-0.12, 0.0, 0.02])))
print("right gripper", round(robo.state().right.gripper, 3), "done:", robo.done)
