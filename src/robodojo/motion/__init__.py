"""Motion: move_eef targets, the native Cartesian planner, and the motion server that executes plans at 25 Hz.

The motion server translates and never decides: it validates a target, plans a straight-line Cartesian path with IK
and a time profile inside the robot's limits, rejects the whole plan with a reason if any point is unsafe, executes
it one 25 Hz point per env step on a :class:`~robodojo.motion.backend.RobotBackend`, and reports what happened.
"""
