"""Camera frames as JPEG for an episode's record and its live view, each picture encoded once.

episode.mcap (robodojo.episodes.mcap_record) encodes the frames rendered for it on the control thread; the live view
(robodojo.episodes.viewing.live) shows the same pictures a moment later on a thread of its own. Encoding a
640x480 frame takes milliseconds; the second encoding took the control loop's core and GIL share for nothing
(benchmarks/viewer.py). :func:`frame_jpeg` remembers the bytes of the last few pictures, keyed by the image array
itself (a frame's array is not written to after it is rendered), so the view reuses what the record encoded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import cv2
import numpy as np
from numpy.typing import NDArray

#: the agents' own default (config/agents/move_eef.yaml): the record's pictures look like what the model was sent
JPEG_QUALITY = 85
#: pictures remembered, each held with its array: four renders of three cameras (at the record's 5 Hz, 0.8 s of
#: simulation time for the live view's thread to trail the record's; about 11 MB at 640x480)
_REMEMBERED = 12

_lock = threading.Lock()
# (id of the array, quality) -> (the array, held so that its id is not reused while remembered; its JPEG bytes)
_encoded: OrderedDict[tuple[int, int], tuple[NDArray[np.uint8], bytes]] = OrderedDict()


def frame_jpeg(rgb: NDArray[np.uint8], quality: int = JPEG_QUALITY) -> bytes:
    """``rgb`` (HxWx3) as JPEG bytes at ``quality``: encoded once per picture while it is among the last few."""
    key = (id(rgb), quality)
    with _lock:
        hit = _encoded.get(key)
        if hit is not None and hit[0] is rgb:
            _encoded.move_to_end(key)
            return hit[1]
    bgr = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)
    ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError(f"cv2.imencode could not encode a {rgb.shape} image as JPEG")
    encoded = data.tobytes()
    with _lock:
        _encoded[key] = (rgb, encoded)
        while len(_encoded) > _REMEMBERED:
            _encoded.popitem(last=False)
    return encoded
