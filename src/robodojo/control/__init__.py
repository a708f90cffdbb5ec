"""Controller-side pieces a robot backend runs (the simulator node now, hardware drivers later)."""
