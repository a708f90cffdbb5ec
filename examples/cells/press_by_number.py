"""Scripted code cells for press_by_number, written only against the robo API (no privileged state).

Strategy:
1. Read the number from the instruction. Park both arms at the table's sides so the head camera sees every button.
2. Find the caps: light (white, unsaturated) blobs in the head image, their holes (the digits) filled. For each,
   robo.segment measures the cap's top height (a plausible one, else 2 cm above the table); the blob's pixels put on
   that plane give the square's centre, side and edges.
3. Read each cap (lib/top_faces.py): the top face resampled as seen from above, its dark glyph cut out and compared
   with digits the cell draws with cv2.putText in a few fonts. The cap read as the number (the best match for it when
   no cap or several caps read as it) is the one to press; a cap the head camera sees too small (the far corners)
   is read again from above with the wrist camera of the arm on its side.
4. The arm on the cap's side closes its gripper over the cap's centre, lowers it until the fingertips (2 cm below
   the grasp point) are 1 cm over the cap, then moves down in 4 mm steps until the task is judged solved (the cap
   pushed down to its stop), at most 2 cm past the cap's top.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task press_by_number --seed 0 --agent code_cell --llm replay:examples/cells/press_by_number.py
"""

# %% helpers: both arms, the table's height, reading the top faces of caps
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/camera_plane.py
# include: lib/dual_arm.py
# include: lib/wrist_views.py
# include: lib/top_faces.py

TABLE_Z = measure_table()
NUMBER = next(word for word in instruction_words() if word.isdigit())
CAP_HEIGHTS = (0.01, 0.04)  # what a cap's top may plausibly measure above the table [m]
GUESS_TOP = 0.02
FINGER_REACH_M = 0.02  # the closed fingertips reach this far below the grasp point
print(robo.task.instruction, "-> pressing the button showing", NUMBER)


# %% park the arms, find the caps in the head camera and read their digits
def caps_in(camera):
    """Every whole cap a camera sees: dicts with its centre, side, edge direction, top height and digit scores."""
    rgb = robo.image(camera)
    caps = []
    for blob in light_blobs(rgb):
        rows, cols = np.nonzero(blob)
        if rows.min() == 0 or cols.min() == 0 or rows.max() == rgb.shape[0] - 1 or cols.max() == rgb.shape[1] - 1:
            continue
        top = TABLE_Z + GUESS_TOP
        seg = robo.segment((int(np.median(rows)), int(np.median(cols))), camera)
        if seg.found and CAP_HEIGHTS[0] <= seg.height_m <= CAP_HEIGHTS[1]:
            top = seg.top_z
        centre, side, x_axis = square_on_plane(camera, blob, top)
        if not 0.03 < side < 0.1:
            continue
        g = glyph(face_patch(camera, rgb, centre, side, x_axis, top))
        if g is None:
            continue
        scores = digit_scores(g)
        best = max(scores, key=scores.get)
        print(
            f"  {camera}: cap at {np.round(centre, 3)}, side {side:.3f} m, top {top - TABLE_Z:.3f} m above the "
            f"table, reads {best} ({scores[best]:.2f}); {NUMBER}: {scores[NUMBER]:.2f}"
        )
        caps.append({"centre": centre, "side": side, "top": top, "scores": scores, "reads": best})
    return caps


def choose(caps):
    """The cap read as the number; among several (or none), the best match for it."""
    reading = [c for c in caps if c["reads"] == NUMBER]
    pool = reading if reading else caps
    return max(pool, key=lambda c: c["scores"][NUMBER]) if pool else None


park()
caps = caps_in("head")
cap = choose(caps)
sure = cap is not None and cap["reads"] == NUMBER and sum(c["reads"] == NUMBER for c in caps) == 1
print("chosen:", None if cap is None else np.round(cap["centre"], 3), "sure:", sure)


# %% not sure: look at the candidates from above with a wrist camera
def wrist_read(xy):
    """The caps the wrist camera of the arm on that side sees from about 20 cm above a table point."""
    arm = arm_for(xy)
    camera = view_from_above(arm, xy, (0.2, 0.17, 0.14))
    if camera is None:
        return []
    found = caps_in(camera)
    park(arm)
    return found


if not sure:
    candidates = sorted(caps, key=lambda c: -c["scores"][NUMBER])[:3]
    closer = []
    for c in candidates:
        seen = wrist_read(c["centre"])
        near = [s for s in seen if np.linalg.norm(s["centre"] - c["centre"]) < 0.03]
        closer += near[:1]
    if closer:
        cap = choose(closer)
    print("chosen after a closer look:", None if cap is None else np.round(cap["centre"], 3))


# %% press it: gripper closed over the cap's centre, then down in small steps until the press counts
x, y = cap["centre"]
arm = arm_for((x, y))
top = cap["top"]
above = robo.move_to(arm, (x, y, top + 0.06), HOME_QUAT[arm], gripper=robo.CLOSED)
print(f"{arm} above the cap:", above)
if not above.planned:
    arm = other_arm(arm)
    print(f"{arm} above the cap:", robo.move_to(arm, (x, y, top + 0.06), HOME_QUAT[arm], gripper=robo.CLOSED))
print("down to the cap:", robo.move_to(arm, (x, y, top + FINGER_REACH_M + 0.01)))
for depth in np.arange(0.004, 0.021, 0.004):
    if robo.done:
        break
    press = robo.move_to(arm, (x, y, top + FINGER_REACH_M - depth))
    print(f"fingertips to {1000 * depth:.0f} mm below the cap's top:", press)
print("done:", robo.done, "steps left:", robo.steps_left)
