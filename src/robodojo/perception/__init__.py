"""Perception without depth: calibrated camera models, back-projection onto planes, triangulation, the table plane,
segmentation from a pixel, and world maps from depth where a camera has it.

Agent-side only: everything here works from images, camera calibration and the robot's own state; nothing reads
privileged object poses. Functions return result objects with ``found``/``ok`` and a human-readable ``reason``
instead of raising on bad input. Pixels are (row, col) at the API, as in numpy images; (u, v) = (col, row) inside.
"""
