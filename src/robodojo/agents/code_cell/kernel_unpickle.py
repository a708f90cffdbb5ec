"""Safe unpickling of what the code-cell kernel sends its parent: an allow-list of types and sizes.

The parent never unpickles a kernel message with the plain unpickler: only plain data, sets, complex numbers, slices
and plain numpy arrays and scalars load; any other global is a protocol violation (the parent kills the kernel).
:data:`HEALTH_SAMPLE` goes the other way: the kinds of value robo calls return, which the kernel must still be able to
load after every cell (:mod:`.kernel_health`).
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np

_SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}
_NUMPY_PICKLE_HELPERS = {
    "numpy.core.multiarray": ("scalar", "_reconstruct"),
    "numpy._core.multiarray": ("scalar", "_reconstruct"),
    "numpy.core.numeric": ("_frombuffer",),
    "numpy._core.numeric": ("_frombuffer",),
}


class _ChildUnpickler(pickle.Unpickler):
    """Unpickles the kernel's messages with an allow-list: plain data, sets, complex numbers, numpy arrays/scalars."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[(module, name)]
        if name in _NUMPY_PICKLE_HELPERS.get(module, ()):
            core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
            helper = getattr(core.multiarray if module.endswith("multiarray") else core.numeric, name)
            return _reconstruct_empty if name == "_reconstruct" else helper
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a message from the kernel")


def _reconstruct_empty(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """numpy's _reconstruct, limited to what pickling an ndarray produces (an empty array then filled by setstate),
    so that a forged message cannot make the parent allocate a huge array."""
    if subtype is not np.ndarray or not isinstance(shape, tuple) or shape != (0,):
        raise pickle.UnpicklingError("only plain numpy arrays may be sent from the kernel")
    core = getattr(np, "_core", None) or np.core
    return core.multiarray._reconstruct(subtype, shape, dtype)


def loads_from_child(data: bytes) -> Any:
    """One message from the kernel, unpickled with the allow-list; pickle.UnpicklingError (or another error of a
    malformed pickle) for anything else."""
    return _ChildUnpickler(io.BytesIO(data)).load()


# What the kernel must be able to load after every cell: the kinds of value robo calls return (kernel_health).
HEALTH_SAMPLE = pickle.dumps(
    ("ok", (np.arange(3.0), np.zeros((2, 2), np.float32), np.float64(2.5), np.int64(3), np.bool_(True), {1, 2},
            frozenset({3}), 1j, slice(1, 2), "text", b"bytes", None, [1.5], {"k": (1, 2)})),
    protocol=pickle.HIGHEST_PROTOCOL,
)  # fmt: skip
