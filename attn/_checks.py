"""Input validation: the checks every public function of ``attn`` makes at its door.

Each check raises ``ValueError`` with a message that names the argument and what is wrong: for a
shape, the shape it has and the shape expected, written with the symbols of the docstrings
(``n_q``, ``n_k``, ``d_k``, ``d_v`` ...).
:func:`array` and :func:`boolean` read that shape from the docstring's own notation, e.g.
``array(K, "K", "(..., n_k, d_k)", dims)``. A check returns its input, converted only where the
docstring says so (an integer array becomes float64); the meaning of a function (the default score
factor, how a mask is broadcast) is written in the function itself. Nothing is broadcast silently.
"""
from __future__ import annotations

import sys

import numpy as np


def shape_str(shape) -> str:
    """Format a shape tuple the way NumPy prints it, e.g. ``(2, 3)``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def positive_int(value, name: str) -> int:
    """Return ``value`` as an int, or raise ``ValueError`` unless it is a whole number >= 1."""
    if not (_finite_real(value) and value >= 1 and value == int(value)):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def positive_number(value, name: str, hint: str = "") -> float:
    """Return ``value`` as a float, or raise ``ValueError`` unless it is a finite number > 0."""
    if not (_finite_real(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0{hint}, got {value!r}")
    return float(value)


def _finite_real(value) -> bool:
    """An int or a float (Python or NumPy), not a bool, neither NaN nor infinite."""
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    return real and abs(value) <= sys.float_info.max  # False for inf, NaN and ints beyond float64


def _match(arr: np.ndarray, name: str, spec: str, dims: dict) -> np.ndarray:
    """Require ``arr.shape`` to match ``spec``, e.g. ``"(..., n_k, d_k)"``; record new sizes in ``dims``.

    ``...`` stands for any number of leading (batch) axes. A symbol already in ``dims`` (from an earlier
    argument, or given by the caller) must have that size; the others are added to ``dims``.
    """
    axes = spec.strip("()").replace(" ", "").rstrip(",").split(",")  # "(..., n_k, d_k)": [..., n_k, d_k]
    batched = axes[0] == "..."
    named = axes[1:] if batched else axes
    found, lead = dict(dims), arr.ndim - len(named)  # lead: number of batch axes
    ok = lead >= 0 and (batched or lead == 0)
    for axis, size in zip(named, arr.shape[max(lead, 0):], strict=False):  # shorter when arr has too few axes
        ok = ok and found.setdefault(axis, size) == size
    if batched and ok:
        ok = found.setdefault("...", arr.shape[:lead]) == arr.shape[:lead]
    if not ok:
        known = ", ".join(f"{a} = {shape_str(dims[a]) if a == '...' else dims[a]}"
                          for a in dict.fromkeys(axes) if a in dims)  # each symbol once
        known = f" with {known}" if known else ""
        raise ValueError(f"{name} has shape {shape_str(arr.shape)}; expected {spec}{known}")
    dims.update(found)
    return arr


def array(x, name: str, spec: str, dims: dict, *, neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a float array of shape ``spec`` (see :func:`_match`), refusing NaN and infinities.

    float32 and float64 are kept, other real numbers become float64; ``neg_inf`` accepts ``-inf``
    (softmax logits).
    """
    return _match(as_float(x, name, allow_neg_inf=neg_inf), name, spec, dims)


def boolean(mask, name: str, spec: str, dims: dict) -> np.ndarray:
    """Return ``mask`` as a boolean array of shape ``spec`` (see :func:`_match`); other dtypes are refused."""
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise ValueError(f"{name} must be a boolean array (True = may attend), got dtype {arr.dtype} "
                         f"with shape {shape_str(arr.shape)}")
    return _match(arr, name, spec, dims)


def attention_mask(mask, dims: dict, name: str = "mask") -> np.ndarray:
    """An attention mask: shape (n_q, n_k), the same for every batch element, or (..., n_q, n_k)."""
    return boolean(mask, name, "(n_q, n_k)" if np.ndim(mask) == 2 else "(..., n_q, n_k)", dims)


def generator(rng, name: str = "rng"):
    """The source of random draws: None = NumPy's global generator (``np.random.seed`` fixes it), an int =
    a new ``np.random.default_rng(seed)``, a ``Generator`` or ``RandomState`` = itself."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))  # a seed
    if rng is None or isinstance(rng, (np.random.Generator, np.random.RandomState)):
        return np.random if rng is None else rng  # the np.random module draws from the global generator
    raise ValueError(f"{name} must be None, an int seed >= 0 or a NumPy generator, got {rng!r}")


def as_float(x, name: str, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating array (float32 and float64 kept, others -> float64).

    Raises ``ValueError`` if the array holds NaN or infinities (``-inf`` is
    accepted when ``allow_neg_inf`` is true, as in softmax logits).
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":  # signed, unsigned, float: not bool, complex, text, objects
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype} "
                         f"with shape {shape_str(arr.shape)}")
    arr = arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)
    bad = np.isnan(arr) | (arr == np.inf if allow_neg_inf else np.isinf(arr))  # (same shape)
    if bad.any():
        what, first = "NaN or +inf" if allow_neg_inf else "NaN or inf", tuple(map(int, np.argwhere(bad)[0]))
        raise ValueError(f"{name} with shape {shape_str(arr.shape)} contains {what} (first at index {first})")
    return arr


def check_ndim(arr: np.ndarray, name: str, expected: str, min_ndim: int, max_ndim: int | None = None):
    """Refuse arrays with too few (or too many) dimensions; return ``arr``."""
    if arr.ndim < min_ndim or (max_ndim is not None and arr.ndim > max_ndim):
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)} ({arr.ndim} dimensions); expected {expected}"
        )
    return arr


def check_dim(arr: np.ndarray, name: str, axis: int, size: int, expected: str, why: str = ""):
    """Require ``arr.shape[axis] == size``; ``expected`` is the shape in symbols. Return ``arr``."""
    if arr.shape[axis] != size:
        extra = f" ({why})" if why else ""
        raise ValueError(f"{name} has shape {shape_str(arr.shape)}; expected {expected}{extra}")
    return arr


def check_shape(arr: np.ndarray, name: str, shape: tuple, expected: str, why: str = ""):
    """Require an exact shape (no broadcasting); return ``arr``."""
    if tuple(arr.shape) != tuple(shape):
        extra = f" ({why})" if why else ""
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)}; expected {expected} = {shape_str(shape)}{extra}"
        )
    return arr


def check_type(obj, name: str, cls):
    """Require ``isinstance(obj, cls)``; return ``obj``."""
    if not isinstance(obj, cls):
        raise ValueError(f"{name} must be a {cls.__name__}, got {type(obj).__name__}")
    return obj


def as_bool_mask(mask, name: str = "mask", shapes: dict | None = None) -> np.ndarray:
    """Return ``mask`` as a boolean array; any other dtype is refused.

    ``shapes`` maps the accepted shapes in symbols to their values, e.g.
    ``{"(n_q, n_k)": (2, 3), "(..., n_q, n_k)": (4, 2, 3)}``; any other shape is refused.
    """
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise ValueError(
            f"{name} must be a boolean array (True = may attend), got dtype {arr.dtype} "
            f"with shape {shape_str(arr.shape)}"
        )
    if shapes is not None and arr.shape not in [tuple(s) for s in shapes.values()]:
        distinct = {}  # one entry per shape, under its first name
        for symbols, s in shapes.items():
            distinct.setdefault(tuple(s), symbols)
        options = [f"{symbols} = {shape_str(s)}" for s, symbols in distinct.items()]
        expected = options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]
        raise ValueError(f"{name} has shape {shape_str(arr.shape)}; expected {expected}")
    return arr
