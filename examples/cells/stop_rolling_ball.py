"""Scripted code cells for stop_rolling_ball, written only against the robo API (no privileged state).

Strategy:
1. The instruction names the ball's colour and the side it rolls towards (right: +x, the right arm's side).
2. Watch it in the head camera: a hue/saturation mask of the colour (lib/colour_objects.py), the blob in the lane
   band of the table, its centre back-projected onto the plane of the ball's centre (table + 2.5 cm). The first
   look waits 0.3 s so the ball has rolled out from under the arm on its starting side (that arm hides part of it
   at first); then sightings 0.4 s apart (robo.wait) until two in a row show the whole ball (the earlier blob not
   much smaller than the later one). Their difference over the robot clock (state().time_s) is the velocity; the
   lane is the last sighting's y.
3. The arm on the side it rolls towards closes its gripper and goes above the lane (18.5 cm over the table), then
   straight down until the closed fingertips are 5 mm over the table: a wall in the ball's path. The wall goes at
   |x| = 0.20, or further out (up to 0.35, still well within the 0.45 the ball must rest inside) when the ball,
   at its measured speed, would get there before the arm (estimated at 0.1 m/s along its two lines plus 0.5 s).
   A wall the arm cannot plan tries the next place out.
4. The arm holds still (robo.wait) while the ball runs into the fingers and comes to rest against them; the
   episode ends by itself once it is at rest.

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task stop_rolling_ball --seed 0 --agent code_cell --llm replay:examples/cells/stop_rolling_ball.py
"""

# %% helpers: the ball's colour and direction, seeing it in the head camera
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py

words = instruction_words()
colour = next(word for word in words if word in COLOUR_HSV)
direction = 1.0 if "right" in words else -1.0  # the side it rolls towards: +x is the right arm's side
TABLE_Z = measure_table()
BALL_R = 0.025
LANE_Y = (-0.32, -0.10)  # where a rolling ball can be seen (its lane band, with a margin)
print(robo.task.instruction)
print(f"-> a {colour} ball rolling towards {'+' if direction > 0 else '-'}x; table at z = {TABLE_Z:.3f}")


def see_ball(near=None):
    """(xy of the ball's centre, robot time, blob pixels) from the head camera, or None when it is not seen."""
    rgb = robo.image("head")
    t = robo.state().time_s
    for blob in colour_blobs(rgb, colour)[:6]:
        rows, cols = np.nonzero(blob)
        hit = robo.back_project(rows.mean(), cols.mean(), "head", plane_z=TABLE_Z + BALL_R)
        if not hit.found:
            continue
        xy = np.array(hit.xyz[:2])
        if not (LANE_Y[0] <= xy[1] <= LANE_Y[1] and abs(xy[0]) < 0.6):
            continue
        if near is not None and np.linalg.norm(xy - near) > 0.15:
            continue
        return xy, t, int(blob.sum())
    return None


# %% watch the ball a moment apart: where it is, its lane and its speed
robo.wait(0.3)  # let it roll out from under the arm on its starting side
seen = []
for _look in range(6):
    sighting = see_ball(near=seen[-1][0] if seen else None)
    if sighting is not None:
        seen.append(sighting)
        print(f"  t = {sighting[1]:.2f} s: ball at {np.round(sighting[0], 3)}, {sighting[2]} px")
    # two sightings of the whole ball in a row (a part-hidden ball shows a smaller blob, off its centre)
    if len(seen) >= 2 and seen[-2][2] >= 0.85 * seen[-1][2]:
        break
    robo.wait(0.4)
if len(seen) >= 2:
    (p0, t0, _), (p1, t1, _) = seen[-2], seen[-1]
    vx = (p1[0] - p0[0]) / (t1 - t0)
elif seen:
    (p1, t1, _), vx = seen[-1], 0.0
else:  # never seen: the middle of the lane band, where it starts
    p1, t1, vx = np.array([-0.40 * direction, -0.21]), robo.state().time_s, 0.0
    print("  the ball was not seen: guessing the middle of its lane")
lane_y = float(p1[1])
print(f"ball at x {p1[0]:+.3f} in the lane y {lane_y:.3f}, rolling at {vx:+.3f} m/s")
if not 0.04 < vx * direction < 0.25:
    print("  no plausible speed measured: assuming the fastest launch")
    vx = 0.12 * direction

# %% put the closed gripper down in its path, well ahead of it, and hold still until it rests
arm = "right" if direction > 0 else "left"  # the arm on the side the ball rolls towards
ABOVE_Z = TABLE_Z + 0.185
WALL_Z = TABLE_Z + BALL_R  # the grasp point at the ball's centre height: the fingertips ~5 mm above the table
ARM_SPEED = 0.1  # m/s, a conservative speed of move_to's straight lines
here = np.array(robo.state().arm(arm).tcp_pos)
ball_x = p1[0] + vx * (robo.state().time_s - t1)
walls = [x * direction for x in (0.20, 0.25, 0.30, 0.35)]
first = len(walls) - 1  # the furthest out if none is reached in time
for i, x in enumerate(walls):
    arm_s = (np.linalg.norm(np.array([x, lane_y, ABOVE_Z]) - here) + (ABOVE_Z - WALL_Z)) / ARM_SPEED
    ball_s = ((x - ball_x) * direction - BALL_R - 0.03) / abs(vx)  # until it reaches the fingers
    print(f"  wall at x {x:+.2f}: the arm needs ~{arm_s:.1f} s, the ball gets there in ~{ball_s:.1f} s")
    if ball_s > arm_s + 0.5:
        first = i
        break
walls = walls[first:]  # the first place the arm reaches in time, then the ones further out

down = None
for x in walls:
    above = robo.move_to(arm, (x, lane_y, ABOVE_Z), HOME_QUAT[arm], gripper=robo.CLOSED)
    print(f"{arm} above the lane at x {x:+.2f}:", above)
    if not above.planned:
        continue
    for z in (WALL_Z, WALL_Z + 0.01):
        down = robo.move_to(arm, (x, lane_y, z))
        print(f"{arm} down to z {z:.3f}:", down)
        if down.planned:
            break
    if down.planned:
        break
while not robo.done and robo.steps_left > 0:
    robo.wait(1.0)
print("ball at rest:", robo.done, "steps left:", robo.steps_left)
