"""The embedded MuJoCo world: scene built from the URDFs, 25 Hz joint-position control, cameras, tasks."""
