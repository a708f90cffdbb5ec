"""Scripted code cells for pick_from_conveyor, written only against the robo API (no privileged state).

Strategy:
1. Read the colour and the belt's direction (the side the blocks ride towards) off the instruction.
2. Measure the block in the head camera's depth (robo.world_map; observing costs no robot time): its colour's blob
   (lib/colour_objects.py) gives its top face roughly (the highest layer of the blob's readings); every reading at
   that height within 4 cm is the whole top face, and the smallest rectangle around them its centre. A rectangle
   smaller than the block's 4 cm square means something (a gripper, an arm) hides part of it: not used.
3. Look again every 0.32 s (robo.wait) until three views span 0.6 s: a straight-line fit x(t) over the robot clock
   (state().time_s) is the belt's velocity (along x only); later views join the fit when they agree with it.
4. Intercept: the point of the block's line where it will be once a gripper got over it (the motion's time estimated
   from its length and the wrist's 90 deg turn) plus 0.6 s to spare; the arm whose top-down reach holds that point
   (its own side first) brings its open gripper 2 cm over the block tops there, turned 90 deg about the vertical so
   the fingers open across the belt (along y) and the block rides in between them along x.
5. Hold (robo.wait) until the block is one descent plus the fingers' closing lag short of the grasp point, go straight
   down to 1.2 cm under the block's top (the fingertips 8 mm over the belt), wait out the rest and close (robo.grasp):
   the finger that touches the block stops it on the belt. A block that would pass before the gripper is down makes
   the gripper chase it further downstream first.
6. Lift 9 cm, 2 cm downstream as well (the next block on the belt comes up behind); straight up, or towards the arm's
   own side, where that is out of reach. A miss (holding False, or no success) opens the gripper, lifts it clear,
   measures the block's motion afresh and intercepts it again (three attempts in all).

Run them as an episode with the code-cell agent (each `# %%` cell is one python tool call, then finish):
    robodojo run --task pick_from_conveyor --seed 0 --agent code_cell --llm replay:examples/cells/pick_from_conveyor.py
"""

# %% helpers: find the named block in the head camera's depth, and the belt's direction
# include: lib/colour_objects.py
# include: lib/grasp_orientations.py
# include: lib/dual_arm.py


TABLE_Z = measure_table()
words = instruction_words()
colour = next(word for word in words if word in COLOUR_HSV)
direction = 1.0 if "right" in words else -1.0  # the belt carries blocks towards +x (the right arm's side) or -x
# Turned 90 deg about the vertical, the fingers open along y; each arm's wrist turns this way over the belt from
# its outer end to 6 cm past the middle (turned the other way it reaches only its outer part).
ACROSS_QUAT = {"left": turn_quat(HOME_QUAT["left"], -math.pi / 2), "right": turn_quat(HOME_QUAT["right"], math.pi / 2)}
REACH_X = {"left": (-0.38, 0.03), "right": (-0.03, 0.38)}  # x each arm's turned grasp point reaches over the belt
SIGHTINGS = []  # (robot time [s], x, y, top z) of every accepted measurement of the block
print(robo.task.instruction, "->", colour, "block, belt towards", "+x" if direction > 0 else "-x")


def measure(min_px=30):
    """(x, y, top z, whole) of the named block's top face from the head camera's depth, or None when it is not seen.

    The colour's blob with the most depth readings gives a rough top face (its highest 2 mm layer holding a fifth of
    its readings: a few pixels on the edge of a gripper in front of the block read the gripper's depth); then every
    reading at that height within 4 cm of it is the top face (the colour mask can miss a lit or shaded part of it),
    and the smallest rectangle around them gives its centre. ``whole``: the rectangle is the block's 4 cm square, so
    nothing hides part of the face."""
    rgb = robo.image("head")
    xyz = robo.world_map("head").xyz
    best = None
    for blob in colour_blobs(rgb, colour, min_px=min_px)[:4]:
        points = xyz[blob]
        points = points[np.isfinite(points).all(axis=1)]
        if len(points) < 10 or (best is not None and len(points) <= best[0]):
            continue
        bins = np.arange(points[:, 2].min(), points[:, 2].max() + 0.004, 0.002)
        counts, edges = np.histogram(points[:, 2], bins=bins)
        layer = max((i for i in range(len(counts)) if counts[i] >= max(8, 0.2 * counts.max())), default=None)
        if layer is None:
            continue
        top = points[np.abs(points[:, 2] - (edges[layer] + 0.001)) <= 0.002]
        best = (len(points), np.mean(top, axis=0))
    if best is None:
        return None
    x, y, z = best[1]
    with np.errstate(invalid="ignore"):
        face = (np.abs(xyz[..., 2] - z) <= 0.002) & (np.hypot(xyz[..., 0] - x, xyz[..., 1] - y) <= 0.04)
    if face.sum() < 20:
        return float(x), float(y), float(z), False
    (cx, cy), (w, h), _ = cv2.minAreaRect(xyz[face][:, :2].astype(np.float32))
    whole = min(w, h) >= 0.034 and max(w, h) <= 0.046
    return float(cx), float(cy), float(np.mean(xyz[face][:, 2])), bool(whole)


def fit():
    """(x at robot time 0, velocity along x, y, top z) from the sightings: a straight line x(t) when they span 0.3 s
    or more (the belt's velocity; its sign checked against the instruction), else the nominal 3 cm/s."""
    data = np.array(SIGHTINGS[-8:])
    t, x = data[:, 0], data[:, 1]
    speed = direction * 0.03
    if len(data) >= 2 and np.ptp(t) >= 0.3:
        slope = float(np.polyfit(t, x, 1)[0])
        if 0.01 <= slope * direction <= 0.06:
            speed = slope
    x0 = float(np.mean(x - speed * t))
    return x0, speed, float(np.median(data[:, 2])), float(np.median(data[:, 3]))


def sight(partial=False):
    """Measure the block now and keep the sighting with the robot time, unless part of its top face is hidden (by a
    gripper or an arm between it and the head camera; kept anyway with ``partial``) or it disagrees with the line
    fitted so far; True when kept."""
    now = robo.state().time_s
    seen = measure()
    if seen is None or not (seen[3] or partial):
        return False
    seen = seen[:3]
    if len(SIGHTINGS) >= 2 and np.ptp([s[0] for s in SIGHTINGS]) >= 0.3:
        x0, v, y, top_z = fit()
        if abs(seen[0] - (x0 + v * now)) > 0.006 or abs(seen[1] - y) > 0.006 or abs(seen[2] - top_z) > 0.003:
            print(f"  sighting at t={now:.2f} {np.round(seen, 3)} disagrees with the fit: not used")
            return False
    SIGHTINGS.append((now, *seen))
    return True


def watch(looks=10):
    """Look 0.32 s apart until three whole views span 0.6 s (the belt's velocity from a straight-line fit); a block
    that stays partly hidden is measured from what shows of it. True when it was seen."""
    for look in range(looks):
        if look:
            robo.wait(0.32)
        kept = sight(partial=look >= 6 and len(SIGHTINGS) < 2)
        print(f"look {look + 1}: kept {kept}", np.round(SIGHTINGS[-1], 4) if SIGHTINGS else None)
        if len(SIGHTINGS) >= 3 and SIGHTINGS[-1][0] - SIGHTINGS[0][0] >= 0.6:
            break
    return bool(SIGHTINGS)


watch()


# %% intercept the block: the gripper over a point ahead of it, down as it arrives, close, lift
def motion_s(arm, xyz, turn=True):
    """Rough robot time [s] of a move_to from the arm's grasp point now to xyz: about 6 mm per env step plus 8 to
    speed up and slow down, and at least 34 steps when the wrist turns 90 deg."""
    here = np.array(robo.state().arm(arm).tcp_pos)
    steps = np.linalg.norm(np.asarray(xyz) - here) / 0.006 + 8
    return 0.04 * (max(steps, 34) if turn else steps)


DESCENT_S = 0.48  # 4-5 cm straight down: 12 env steps
CLOSE_LAG_S = 0.25  # from robo.grasp to the fingers touching the block
SPARE_S = 0.6  # the gripper waits over the belt this long for the block (the motion's estimate is rough)


def intercept_arm(x, v, y, hover_z):
    """(arm, intercept x): the arm that can be over the block's line ahead of it in time (its own side first)."""
    first = arm_for((x + v * 2.0, y))
    for arm in (first, other_arm(first)):
        x_i = x + v * (motion_s(arm, (x + v * 2.0, y, hover_z)) + DESCENT_S + CLOSE_LAG_S + SPARE_S)
        lo, hi = REACH_X[arm]
        if lo <= x_i <= hi:
            return arm, float(x_i)
    return None, None


def attempt():
    """One intercept: 'lifted', 'missed' or 'lost' (the block is no longer seen or reachable)."""
    x0, v, y, top_z = fit()
    now = robo.state().time_s
    x = x0 + v * now
    hover_z, grasp_z = top_z + 0.04, top_z - 0.012  # fingertips 2 cm over the block tops; 0.8 cm over the belt
    arm, x_i = intercept_arm(x, v, y, hover_z)
    print(f"block at x={x:.3f} y={y:.3f} top {top_z:.3f}, belt {v * 100:.2f} cm/s; intercept with {arm} at {x_i}")
    if arm is None:
        return "lost"
    r = robo.move_to(arm, (x_i, y, hover_z), ACROSS_QUAT[arm], gripper=robo.OPEN)
    print(f"{arm} over x={x_i:.3f}: planned {r.planned} reached {r.reached} steps {r.steps_used} {r.reason}")
    if not r.planned:
        return "lost"
    for _ in range(4):
        sight()
        x0, v, y, top_z = fit()
        now = robo.state().time_s
        tcp_x = robo.state().arm(arm).tcp_pos[0]
        lead = (tcp_x - x0) / v - now - DESCENT_S - CLOSE_LAG_S  # until the gripper must start down
        print(f"  t={now:.2f}: block at x={x0 + v * now:.3f}, gripper at {tcp_x:.3f}: go down in {lead:.2f} s")
        if lead > 10.0:
            robo.wait(10.0)
            continue
        if lead >= 0:
            robo.wait(lead)
            break
        # Too late to go down here: chase it further downstream.
        ahead = x0 + v * now + v * (DESCENT_S + CLOSE_LAG_S + 0.3)
        x_c = ahead + v * motion_s(arm, (ahead, y, hover_z), turn=False)
        lo, hi = REACH_X[arm]
        if not lo <= x_c <= hi:
            return "lost"
        r = robo.move_to(arm, (x_c, y, hover_z))
        print(f"  chase to x={x_c:.3f}: planned {r.planned} steps {r.steps_used}")
        if not r.planned:
            return "lost"
    else:
        return "lost"
    tcp_x = robo.state().arm(arm).tcp_pos[0]
    down = robo.move_to(arm, (tcp_x, y, grasp_z))
    print(f"  down to z={grasp_z:.3f}: reached {down.reached} steps {down.steps_used}")
    remaining = (tcp_x - x0) / v - robo.state().time_s - CLOSE_LAG_S
    if remaining > 0:
        robo.wait(min(remaining, 10.0))
    grip = robo.grasp(arm)
    print(f"  grasp: holding {grip.holding} opening {grip.gripper:.3f}")
    if grip.holding or robo.done:
        # Up 9 cm and 2 cm downstream (clear of the next block coming up behind); straight up, or towards the arm's
        # own side, where that is out of reach.
        own = -1.0 if arm == "left" else 1.0
        for dx, dz in ((direction * 0.02, 0.09), (0.0, 0.09), (own * 0.03, 0.09), (0.0, 0.07)):
            lift = robo.move_to(arm, (tcp_x + dx, y, grasp_z + dz))
            print(f"  lift by {dx:+.2f}, {dz:.2f}: planned {lift.planned} steps {lift.steps_used} done {robo.done}")
            if lift.planned or robo.done:
                break
        if robo.done:
            return "lifted"
    robo.release(arm)
    robo.move_to(arm, (robo.state().arm(arm).tcp_pos[0], y, hover_z + 0.03))
    return "missed"


for attempt_no in range(3):
    if robo.done:
        break
    if attempt_no > 0:  # the block may have stood still against a finger: measure its motion afresh
        SIGHTINGS.clear()
        watch()
    if not SIGHTINGS:
        print("the block is not seen")
        break
    outcome = attempt()
    print(f"attempt {attempt_no + 1}: {outcome}")
    if outcome in ("lifted", "lost"):
        break
print("done:", robo.done, "steps left:", robo.steps_left)
