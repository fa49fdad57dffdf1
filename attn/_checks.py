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

import numbers
import sys

import numpy as np


def positive_int(value, name: str) -> int:
    """Return ``value`` as an int, or raise ``ValueError`` unless it is an int (Python or NumPy, not a bool)
    from 1 to ``sys.maxsize``."""
    if isinstance(value, bool) or not (isinstance(value, numbers.Integral) and 1 <= value <= sys.maxsize):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")  # sys.maxsize: max array size
    return int(value)


def positive_number(value, name: str, hint: str = "") -> float:
    """Return ``value`` as a float, or raise ``ValueError`` unless it is a real number (``numbers.Real``,
    Python or NumPy, not a bool) with 0 < value <= the largest float64. A NumPy float is checked as the
    Python float it becomes: a longdouble below float64's range is 0 there, and refused."""
    number = float(value) if isinstance(value, np.floating) else value  # the float returned, for NumPy floats
    if isinstance(value, bool) or not (isinstance(number, numbers.Real) and 0 < number <= sys.float_info.max):
        raise ValueError(f"{name} must be a finite number > 0{hint}, got {value!r}")  # NaN, inf: False above
    return float(number)


def _match(arr: np.ndarray, name: str, spec: str, dims: dict) -> np.ndarray:
    """Require ``arr.shape`` to match ``spec``, e.g. ``"(..., n_k, d_k)"``; record new sizes in ``dims``.

    ``...`` stands for any number of leading (batch) axes, its size the tuple of their lengths. A symbol
    already in ``dims`` (from an earlier argument, or given by the caller) must have that size; the others
    are added to ``dims``.
    """
    axes = spec.strip("()").replace(" ", "").rstrip(",").split(",")  # "(..., n_k, d_k)": [..., n_k, d_k]
    lead = max(arr.ndim - len(axes) + 1, 0)  # if axes[0] is "...": the batch axes, before the named ones
    sizes = [arr.shape[:lead], *arr.shape[lead:]] if axes[0] == "..." else list(arr.shape)  # one per axis
    found = dict(zip(axes, sizes, strict=False)) | dims  # symbol: size read from arr, or the one in dims
    if list(map(found.get, axes)) != sizes:  # an axis too many or too few, or two sizes for one symbol
        known = ", ".join(f"{a} = {dims[a]}" for a in dict.fromkeys(axes) if a in dims)  # each symbol once
        raise ValueError(f"{name} has shape {arr.shape}; expected {spec}{' with ' + known if known else ''}")
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
        raise ValueError(f"{name}: dtype {arr.dtype}, shape {arr.shape}; expected bool (True = may attend)")
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
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype} with shape {arr.shape}")
    arr = arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)
    bad = np.isnan(arr) | (arr == np.inf if allow_neg_inf else np.isinf(arr))  # (same shape)
    if bad.any():
        raise ValueError(f"{name} with shape {arr.shape} contains NaN or inf at index {np.argwhere(bad)[0]}")
    return arr


def check_ndim(arr: np.ndarray, name: str, expected: str, min_ndim: int, max_ndim: int | None = None):
    """Refuse arrays with too few (or too many) dimensions; return ``arr``."""
    if arr.ndim < min_ndim or (max_ndim is not None and arr.ndim > max_ndim):
        raise ValueError(
            f"{name} has shape {arr.shape} ({arr.ndim} dimensions); expected {expected}"
        )
    return arr


def check_dim(arr: np.ndarray, name: str, axis: int, size: int, expected: str, why: str = ""):
    """Require ``arr.shape[axis] == size``; ``expected`` is the shape in symbols. Return ``arr``."""
    if arr.shape[axis] != size:
        extra = f" ({why})" if why else ""
        raise ValueError(f"{name} has shape {arr.shape}; expected {expected}{extra}")
    return arr


def check_shape(arr: np.ndarray, name: str, shape: tuple, expected: str, why: str = ""):
    """Require an exact shape (no broadcasting); return ``arr``."""
    if tuple(arr.shape) != tuple(shape):
        extra = f" ({why})" if why else ""
        raise ValueError(
            f"{name} has shape {arr.shape}; expected {expected} = {tuple(shape)}{extra}"
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
            f"with shape {arr.shape}"
        )
    if shapes is not None and arr.shape not in [tuple(s) for s in shapes.values()]:
        distinct = {}  # one entry per shape, under its first name
        for symbols, s in shapes.items():
            distinct.setdefault(tuple(s), symbols)
        options = [f"{symbols} = {tuple(s)}" for s, symbols in distinct.items()]
        expected = options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]
        raise ValueError(f"{name} has shape {arr.shape}; expected {expected}")
    return arr
