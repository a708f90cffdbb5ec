"""robodojo calibrate's library: its settings, the capture folder, calibration motions, the solving steps, check, the
board a simulator shows and a rendered rehearsal (the command itself: robodojo/calibrate.py)."""
