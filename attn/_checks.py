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



# -- classic (Bahdanau / Luong) attention and single-head self-attention ------------------------
# One call at the top of each public function: it validates every argument in the order the
# function reads them and returns them ready for the math.


def check_query_keys(query, keys):
    """Validate a decoder ``query`` (..., d_s) and encoder ``keys`` (..., T, d_h); same float dtype."""
    query = as_float(query, "query")
    keys = as_float(keys, "keys")
    check_ndim(query, "query", "(..., d_s) with at least 1 dimension", 1)
    check_ndim(keys, "keys", "(..., T, d_h) with at least 2 dimensions", 2)
    if keys.shape[:-2] != query.shape[:-1]:
        raise ValueError(
            f"keys has shape {shape_str(keys.shape)}; expected (..., T, d_h) with batch "
            f"dimensions ... = {shape_str(query.shape[:-1])} from query (no broadcasting)"
        )
    if keys.shape[-2] == 0:
        raise ValueError(
            f"keys has shape {shape_str(keys.shape)}; expected (..., T, d_h) with T >= 1 "
            "(at least one encoder position)"
        )
    dtype = np.result_type(query, keys)
    return query.astype(dtype, copy=False), keys.astype(dtype, copy=False)


def check_position_mask(mask, keys):
    """Validate an optional (..., T) boolean mask over the encoder positions of ``keys``."""
    if mask is None:
        return None
    mask = as_bool_mask(mask)
    check_shape(mask, "mask", keys.shape[:-1], "(..., T)", "True = real position")
    return mask


def check_additive_inputs(query, keys, W_a, U_a, v_a, mask):
    """Validate the arguments of :func:`attn.classic.additive_attention`; return them as arrays."""
    query, keys = check_query_keys(query, keys)
    d_s, d_h = query.shape[-1], keys.shape[-1]
    W_a = as_float(W_a, "W_a")
    check_ndim(W_a, "W_a", "(d_attn, d_s) with 2 dimensions", 2, 2)
    d_attn = W_a.shape[0]
    check_dim(W_a, "W_a", 1, d_s, f"(d_attn, d_s) with d_s = {d_s} from query")
    U_a = as_float(U_a, "U_a")
    check_shape(U_a, "U_a", (d_attn, d_h), "(d_attn, d_h)", "d_attn from W_a, d_h from keys")
    v_a = as_float(v_a, "v_a")
    check_shape(v_a, "v_a", (d_attn,), "(d_attn,)", "d_attn from W_a")
    return query, keys, W_a, U_a, v_a, check_position_mask(mask, keys)


def check_dot_inputs(query, keys, mask):
    """Validate the arguments of :func:`attn.classic.dot_attention` (which needs d_s == d_h)."""
    query, keys = check_query_keys(query, keys)
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"query has shape {shape_str(query.shape)}; expected (..., d_s) with d_s = d_h = "
            f"{keys.shape[-1]} from keys: dot attention needs d_s == d_h, "
            "use general_attention with W of shape (d_s, d_h) instead"
        )
    return query, keys, check_position_mask(mask, keys)


def check_general_inputs(query, keys, W, mask):
    """Validate the arguments of :func:`attn.classic.general_attention`."""
    query, keys = check_query_keys(query, keys)
    W = as_float(W, "W")
    check_shape(W, "W", (query.shape[-1], keys.shape[-1]), "(d_s, d_h)",
                "d_s from query, d_h from keys")
    return query, keys, W, check_position_mask(mask, keys)


def check_multihead_general_inputs(query, keys, W_heads, mask):
    """Validate the arguments of :func:`attn.multihead_luong.multihead_general_attention`."""
    query, keys = check_query_keys(query, keys)
    d_s, d_h = query.shape[-1], keys.shape[-1]
    W_heads = as_float(W_heads, "W_heads")
    check_ndim(W_heads, "W_heads", "(n_heads, d_s, d_head) with 3 dimensions", 3, 3)
    n_heads, d_s_w, d_head = W_heads.shape
    if n_heads == 0 or d_s_w != d_s:
        raise ValueError(
            f"W_heads has shape {shape_str(W_heads.shape)}; expected (n_heads, d_s, d_head) "
            f"with n_heads >= 1 and d_s = {d_s} from query"
        )
    if d_h % n_heads != 0 or d_head != d_h // n_heads:
        wanted = f"d_head = d_h / n_heads = {d_h // n_heads}" if d_h % n_heads == 0 else \
            f"d_h = {d_h} divisible by n_heads = {n_heads}"
        raise ValueError(
            f"W_heads has shape {shape_str(W_heads.shape)}; expected (n_heads, d_s, d_head) with "
            f"{wanted} (d_h from keys)"
        )
    return query, keys, W_heads, check_position_mask(mask, keys)


def check_token_rows(X, d_model: int, name: str = "X") -> np.ndarray:
    """Validate ``X`` of shape (n, d_model) or (..., n, d_model): one row per token."""
    X = as_float(X, name)
    check_ndim(X, name, "(n, d_model) or (..., n, d_model) with at least 2 dimensions", 2)
    if X.shape[-1] != d_model:
        raise ValueError(
            f"{name} has shape {shape_str(X.shape)}; expected (..., n, d_model) with "
            f"d_model = {d_model}"
        )
    return X
