"""The layout variants of every task (a light module: the CLI lists them without importing the simulator).

- ``standard``: the task's own objects, seeded placement, the nominal scene.
- ``cluttered``: the same kinds of objects plus distractors (robodojo.sim.tasks.base.CLUTTER_DISTRACTORS).
- ``randomized``: the standard layout's objects in a scene whose look is drawn per (task, seed) within sim.yaml's
  ``randomized`` bounds: lights, the table's grain and tint, small jitter of object colours within their names, and
  each camera's mount shifted by a few millimetres and turned by a few tenths of a degree (the reported calibration
  follows the camera). For generalization tests; see robodojo.sim.appearance.
"""

from __future__ import annotations

VARIANTS = ("standard", "cluttered", "randomized")
