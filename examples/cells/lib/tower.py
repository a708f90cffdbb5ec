"""Building a tower of blocks with either arm of the dual ARX X5 (robo API only): the bottom block set down on a spot
both arms reach over and measured again, each next block carried over its centre and set down on the tower's top,
and a check after each release that the block did not fall off.

Included after lib/colour_objects.py, lib/grasp_orientations.py, lib/dual_arm.py, lib/wrist_views.py, lib/pick_place.py
and lib/relay.py (``pick_either``) by the scripted cells of build_tower and stack_by_size; uses the cell's ``TABLE_Z``.
"""

import dataclasses


def standing(seg, size):
    """The segment of a cube of that size standing on the table: its top at TABLE_Z + size (a measured height can
    be short, and a block grasped too low is set down into the block below)."""
    x, y, _ = seg.world_xyz
    return dataclasses.replace(seg, world_xyz=(x, y, TABLE_Z + size), top_z=TABLE_Z + size, height_m=size)


class Tower:
    """A tower of the blocks of ``order`` (colours, bottom to top) of ``sizes`` (colour -> height [m]) at ``xy``.

    ``opening``: how far the fingers open (less than fully, so they stay off the tower when a block stands close
    to it); ``heights``: plausible measured heights of a block on the table; ``cubes``: the blocks are cubes of the
    given sizes (a block to pick is taken as standing at its size, see ``standing``)."""

    def __init__(self, order, sizes, xy, opening, heights, cubes=False):
        self.order, self.sizes, self.xy = list(order), dict(sizes), tuple(xy)
        self.opening, self.heights, self.cubes = opening, heights, cubes

    def top_of(self, level):
        """Height of the tower's top with ``level`` blocks standing."""
        return TABLE_Z + sum(self.sizes[c] for c in self.order[:level])

    def place(self, colour, seg, level):
        """Pick the block and set it down as level ``level`` (0: on the table at the tower's spot), square to the
        world axes, 6 mm above the tower's top; the arm that carried it, or None if it was not set down."""
        if self.cubes:
            seg = standing(seg, self.sizes[colour])
        clear = max(self.top_of(level), TABLE_Z + max(self.sizes.values())) + 0.02  # the block's underside this high
        arm, below = pick_either(seg, clear + 0.03, colour, self.opening)
        if arm is None:
            return None
        placed = put_down(arm, [self.xy], self.top_of(level), below, square_quat(arm), gap=0.006, carry_z=clear + below)
        return arm if placed is not None else None

    def fell_off(self, colour):
        """The block of that colour, if the head camera sees it standing on the table away from the tower (a block on
        the tower does not segment as a short block on the table)."""
        seg, _ = find(colour, ("head",), (self.heights[0], max(self.sizes.values()) + 0.01))
        if seg is not None and math.dist(seg.world_xyz[:2], self.xy) > 0.03:
            return seg
        return None

    def place_bottom(self, seg):
        """Set the bottom block down on the tower's spot, then measure where it stands: the tower's ``xy`` from
        then on (every block aims at the bottom block's centre, so the errors do not add up)."""
        arm = self.place(self.order[0], seg, 0)
        print("bottom block placed with:", arm)
        if arm is not None:
            step_aside(arm)
        base = locate_again(self.order[0], self.heights)
        print("bottom block now:", base)
        if base is not None:
            self.xy = tuple(float(v) for v in base.world_xyz[:2])
        print("tower base at", np.round(self.xy, 4), "steps left:", robo.steps_left)

    def stack(self, level, seg):
        """Put the block of level ``level`` on the tower and check it stayed there; a block that fell off is picked
        and placed again (three tries in all). True once it stands on the tower."""
        colour = self.order[level]
        for _attempt in range(3):
            if seg is None:
                park()
                seg = locate(colour, self.heights)
                if seg is None:
                    print("cannot find the", colour, "block")
                    return False
            print(f"level {level}: {colour} from {np.round(seg.world_xyz, 3)}")
            arm = self.place(colour, seg, level)
            print("placed with:", arm, "done:", robo.done, "steps left:", robo.steps_left)
            if robo.done or robo.steps_left < 40:
                return arm is not None
            step_aside(arm or arm_for(seg.world_xyz))
            fallen = self.fell_off(colour)
            if fallen is None and arm is not None:
                return True
            print("the", colour, "block is not on the tower:", fallen)
            seg = fallen
        return False
