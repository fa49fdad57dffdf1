"""Input validation shared by every public function of ``attn``.

All checks raise ``ValueError`` with a message that names the argument, the
shape it has and the shape expected, written with the symbols used in the
docstrings (``n_q``, ``n_k``, ``d_k``, ``d_v`` ...). Nothing is broadcast
silently: a caller who wants broadcasting must build the full shape.
"""
from __future__ import annotations

import numpy as np


def shape_str(shape) -> str:
    """Format a shape tuple the way NumPy prints it, e.g. ``(2, 3)``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def positive_int(value, name: str) -> int:
    """Return ``value`` as an int, or raise ``ValueError`` unless it is a whole number >= 1."""
    ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
          and bool(np.isfinite(value)) and value == int(value) and value >= 1)
    if not ok:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def as_float(x, name: str, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating array (float32 and float64 kept, others -> float64).

    Raises ``ValueError`` if the array holds NaN or infinities (``-inf`` is
    accepted when ``allow_neg_inf`` is true, as in softmax logits).
    """
    arr = np.asarray(x)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    bad = np.isnan(arr) | (np.isposinf(arr) if allow_neg_inf else np.isinf(arr))
    if bad.any():
        what = "NaN or +inf" if allow_neg_inf else "NaN or inf"
        raise ValueError(
            f"{name} with shape {shape_str(arr.shape)} contains {what} "
            f"(first at index {tuple(int(i) for i in np.argwhere(bad)[0])})"
        )
    return arr


def check_ndim(arr: np.ndarray, name: str, expected: str, min_ndim: int, max_ndim: int | None = None):
    """Refuse arrays with too few (or too many) dimensions."""
    if arr.ndim < min_ndim or (max_ndim is not None and arr.ndim > max_ndim):
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)} ({arr.ndim} dimensions); expected {expected}"
        )


def check_dim(arr: np.ndarray, name: str, axis: int, size: int, expected: str, why: str = ""):
    """Require ``arr.shape[axis] == size``; ``expected`` is the shape in symbols."""
    if arr.shape[axis] != size:
        extra = f" ({why})" if why else ""
        raise ValueError(f"{name} has shape {shape_str(arr.shape)}; expected {expected}{extra}")


def check_shape(arr: np.ndarray, name: str, shape: tuple, expected: str, why: str = ""):
    """Require an exact shape (no broadcasting)."""
    if tuple(arr.shape) != tuple(shape):
        extra = f" ({why})" if why else ""
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)}; expected {expected} = {shape_str(shape)}{extra}"
        )


def as_bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a boolean array; any other dtype is refused."""
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise ValueError(
            f"{name} must be a boolean array (True = may attend), got dtype {arr.dtype} "
            f"with shape {shape_str(arr.shape)}"
        )
    return arr

