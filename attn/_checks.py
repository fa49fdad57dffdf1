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
    if np.isfinite(arr).all():  # one pass in the usual case (the training loops call this every step)
        return arr
    bad = np.isnan(arr) | (arr == np.inf if allow_neg_inf else np.isinf(arr))
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



# ---------------------------------------------------------------- one call per public function
# Each helper below does all the validation of one function of core / multihead / encoder, so that
# the function itself reads like its formula. The checks run in the order the messages document.


def check_softmax_input(x) -> np.ndarray:
    """Validate softmax logits: a real array of at least 1 dimension; ``-inf`` allowed."""
    x = as_float(x, "x", allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError("x has shape () (0 dimensions); expected at least 1 dimension")
    return x


def check_masked_softmax_inputs(scores, mask):
    """Validate ``masked_softmax``'s inputs: real scores (``-inf`` allowed), a mask of their exact shape."""
    scores = as_float(scores, "scores", allow_neg_inf=True)
    if mask is not None:
        mask = as_bool_mask(mask)
        check_shape(mask, "mask", scores.shape, "the shape of scores")
    return scores, mask


def attention_mask(mask, batch: tuple, n_q: int, n_k: int) -> np.ndarray:
    """Validate an attention mask and return it with the full ``batch + (n_q, n_k)`` shape."""
    mask = as_bool_mask(mask)
    full = batch + (n_q, n_k)
    if mask.shape == (n_q, n_k):
        return np.broadcast_to(mask, full)  # documented: the same mask for every batch element
    if mask.shape != full:
        expected = f"(n_q, n_k) = {shape_str((n_q, n_k))}"
        if batch:
            expected += f" or (..., n_q, n_k) = {shape_str(full)}"
        raise ValueError(f"mask has shape {shape_str(mask.shape)}; expected {expected}")
    return mask


def _check_qkv(Q, K, V, width: str, v_width: str):
    """Shared Q/K/V checks: real finite arrays with at least 2 dimensions.

    ``width`` and ``v_width`` name the feature axes in the messages (``d_k``/``d_v`` for plain
    attention, ``d_model`` for multi-head attention).
    """
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    check_ndim(Q, "Q", f"(..., n_q, {width}) with at least 2 dimensions", 2)
    check_ndim(K, "K", f"(..., n_k, {width}) with at least 2 dimensions", 2)
    check_ndim(V, "V", f"(..., n_k, {v_width}) with at least 2 dimensions", 2)
    return Q, K, V


def _check_batch(Q, arrays):
    batch = Q.shape[:-2]
    for name, arr, tail in arrays:
        if arr.shape[:-2] != batch:
            raise ValueError(
                f"{name} has shape {shape_str(arr.shape)}; expected (..., {tail}) with batch "
                f"dimensions ... = {shape_str(batch)} from Q (no broadcasting)"
            )
    return batch


def check_scale(scale, d_k: int, dtype):
    """Validate the score factor: None gives the standard ``1 / sqrt(d_k)``; else a finite number > 0.

    Returned as a scalar of ``dtype`` (the dtype of the scores).
    """
    if scale is None:
        return dtype.type(1.0 / np.sqrt(d_k))
    ok = (not isinstance(scale, bool) and isinstance(scale, (int, float, np.integer, np.floating))
          and bool(np.isfinite(scale)) and scale > 0)
    if not ok:
        raise ValueError(f"scale must be a finite number > 0 (or None for 1/sqrt(d_k)), got {scale!r}")
    return dtype.type(scale)


def check_attention_inputs(Q, K, V, mask, scale=None):
    """Validate the inputs of ``scaled_dot_product_attention``.

    Returns ``Q, K, V`` in their common float dtype, ``mask`` as None or a boolean array of
    the full shape ``(..., n_q, n_k)`` (a 2-D mask is broadcast over the batch dimensions), and
    the score factor ``scale`` (default ``1 / sqrt(d_k)``) in that dtype.
    """
    Q, K, V = _check_qkv(Q, K, V, "d_k", "d_v")
    n_q, d_k = Q.shape[-2:]
    n_k = K.shape[-2]
    check_dim(K, "K", -1, d_k, f"(..., n_k, d_k) with d_k = {d_k} from Q")
    check_dim(V, "V", -2, n_k, f"(..., n_k, d_v) with n_k = {n_k} from K")
    batch = _check_batch(Q, (("K", K, "n_k, d_k"), ("V", V, "n_k, d_v")))
    dtype = np.result_type(Q, K, V)
    Q, K, V = Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)
    mask = None if mask is None else attention_mask(mask, batch, n_q, n_k)
    return Q, K, V, mask, check_scale(scale, d_k, dtype)


def check_multihead_weights(W_q, W_k, W_v, W_o, h: int, d_model: int, d_k: int):
    """Re-validate the (possibly reassigned) weights of a MultiHeadAttention layer."""
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        check_shape(np.asarray(W), name, (h, d_model, d_k), "(h, d_model, d_k)")
    check_shape(np.asarray(W_o), "W_o", (d_model, d_model), "(d_model, d_model)")


def head_mask(mask, batch: tuple, h: int, n_q: int, n_k: int):
    """Return a mask the core accepts for the head-batched shape ``batch + (h, n_q, n_k)``."""
    if mask is None:
        return None
    mask = as_bool_mask(mask)
    if mask.shape == (n_q, n_k):
        return mask  # the core uses a 2-D mask for every batch element and head
    if mask.shape == batch + (n_q, n_k):
        return np.broadcast_to(mask[..., None, :, :], batch + (h, n_q, n_k))  # same for every head
    if mask.shape == batch + (h, n_q, n_k):
        return mask  # one mask per head
    raise ValueError(
        f"mask has shape {shape_str(mask.shape)}; expected (n_q, n_k) = {shape_str((n_q, n_k))}, "
        f"(..., n_q, n_k) = {shape_str(batch + (n_q, n_k))} or "
        f"(..., h, n_q, n_k) = {shape_str(batch + (h, n_q, n_k))}"
    )


def check_multihead_inputs(layer, Q, K, V, mask):
    """Validate the weights of ``layer`` and the inputs of ``MultiHeadAttention.head_outputs``.

    Returns ``Q, K, V`` in their common float dtype, the three projections ``W_q, W_k, W_v``
    cast to that dtype, and a mask with a shape the core accepts for ``(..., h, n_q, n_k)``.
    """
    h, d, d_k = layer.num_heads, layer.d_model, layer.d_k
    check_multihead_weights(layer.W_q, layer.W_k, layer.W_v, layer.W_o, h, d, d_k)
    Q, K, V = _check_qkv(Q, K, V, "d_model", "d_model")
    for name, arr, tail in (("Q", Q, "n_q"), ("K", K, "n_k"), ("V", V, "n_k")):
        check_dim(arr, name, -1, d, f"(..., {tail}, d_model) with d_model = {d}")
    batch, n_q, n_k = Q.shape[:-2], Q.shape[-2], K.shape[-2]
    _check_batch(Q, (("K", K, "n_k, d_model"), ("V", V, "n_k, d_model")))
    check_dim(V, "V", -2, n_k, f"(..., n_k, d_model) with n_k = {n_k} from K")
    mask = head_mask(mask, batch, h, n_q, n_k)
    dtype = np.result_type(Q, K, V)
    Q, K, V = (a.astype(dtype, copy=False) for a in (Q, K, V))
    W_q, W_k, W_v = (np.asarray(W, dtype=dtype) for W in (layer.W_q, layer.W_k, layer.W_v))
    return Q, K, V, W_q, W_k, W_v, mask


def check_same_shape(grad, grad_name: str, ref, ref_name: str) -> np.ndarray:
    """Validate an upstream gradient: a finite float array with exactly the shape of ``ref``."""
    grad = as_float(grad, grad_name)
    check_shape(grad, grad_name, ref.shape, f"the shape of {ref_name}")
    return grad


def check_attention_backward_inputs(d_out, Q, K, V, weights, scale):
    """Validate the arguments of ``attention_backward``; returns them as float arrays and the score factor."""
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    weights = as_float(weights, "weights")
    check_ndim(Q, "Q", "(..., n_q, d_k) with at least 2 dimensions", 2)
    check_shape(weights, "weights", Q.shape[:-1] + K.shape[-2:-1], "(..., n_q, n_k)", "from Q and K")
    check_shape(V, "V", K.shape[:-1] + V.shape[-1:], "(..., n_k, d_v)", "batch and n_k from K")
    d_out = as_float(d_out, "d_out")
    check_shape(d_out, "d_out", weights.shape[:-1] + V.shape[-1:], "the shape of (..., n_q, d_v)")
    return d_out, Q, K, V, weights, check_scale(scale, Q.shape[-1], Q.dtype)


def check_multihead_backward_inputs(d_out, mha, Q, K, V, weights, mha_type):
    """Validate the arguments of ``multihead_backward``; returns the arrays and mha's 4 weights."""
    if not isinstance(mha, mha_type):
        raise ValueError(f"mha must be a MultiHeadAttention, got {type(mha).__name__}")
    h, d, d_k = mha.num_heads, mha.d_model, mha.d_k
    check_multihead_weights(mha.W_q, mha.W_k, mha.W_v, mha.W_o, h, d, d_k)  # they may have been reassigned
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    weights = as_float(weights, "weights")
    check_ndim(Q, "Q", "(..., n_q, d_model) with at least 2 dimensions", 2)
    check_shape(weights, "weights", Q.shape[:-2] + (h, Q.shape[-2], K.shape[-2]), "(..., h, n_q, n_k)",
                "from Q, K and mha")
    d_out = check_same_shape(d_out, "d_out", Q, "Q (..., n_q, d_model)")
    W = tuple(np.asarray(W, dtype=d_out.dtype) for W in (mha.W_q, mha.W_k, mha.W_v, mha.W_o))
    return (d_out, Q, K, V, weights) + W


def check_heads(heads, h: int, d_k: int) -> np.ndarray:
    """Validate per-head outputs of shape ``(..., h, n_q, d_k)`` before concatenation."""
    heads = as_float(heads, "heads")
    check_ndim(heads, "heads", "(..., h, n_q, d_k) with at least 3 dimensions", 3)
    check_shape(heads, "heads", heads.shape[:-3] + (h, heads.shape[-2], d_k),
                f"(..., h, n_q, d_k) with h = {h}, d_k = {d_k}")
    return heads


def check_layer_norm_inputs(x, gamma, beta, eps, eps_in_sqrt=True):
    """Validate ``layer_norm``'s inputs; ``gamma``/``beta`` default to ones/zeros of x's dtype."""
    x = as_float(x, "x")
    check_ndim(x, "x", "(..., d) with at least 1 dimension", 1)
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    if not isinstance(eps_in_sqrt, (bool, np.bool_)):
        raise ValueError(f"eps_in_sqrt must be True or False, got {eps_in_sqrt!r}")
    d, dtype = x.shape[-1], x.dtype
    params = []
    for name, value, default in (("gamma", gamma, np.ones), ("beta", beta, np.zeros)):
        if value is None:
            params.append(default(d, dtype=dtype))
            continue
        value = as_float(value, name)
        check_shape(value, name, (d,), "(d,)", "the last dimension of x")
        params.append(value.astype(dtype, copy=False))
    return x, params[0], params[1], dtype.type(eps)


def check_ffn_inputs(x, W1, b1, W2, b2):
    """Validate ``ffn``'s inputs; the parameters are returned in x's dtype."""
    x = as_float(x, "x")
    check_ndim(x, "x", "(..., d_model) with at least 1 dimension", 1)
    d_model = x.shape[-1]
    W1 = as_float(W1, "W1")
    check_ndim(W1, "W1", "(d_model, d_ff) with 2 dimensions", 2, 2)
    check_dim(W1, "W1", 0, d_model, f"(d_model, d_ff) with d_model = {d_model} from x")
    d_ff = W1.shape[1]
    b1 = as_float(b1, "b1")
    check_shape(b1, "b1", (d_ff,), "(d_ff,)", "d_ff from W1")
    W2 = as_float(W2, "W2")
    check_shape(W2, "W2", (d_ff, d_model), "(d_ff, d_model)", "d_ff from W1, d_model from x")
    b2 = as_float(b2, "b2")
    check_shape(b2, "b2", (d_model,), "(d_model,)", "d_model from x")
    return (x,) + tuple(a.astype(x.dtype, copy=False) for a in (W1, b1, W2, b2))


def check_encoder_input(x, mha, mha_type) -> np.ndarray:
    """Validate the input of ``transformer_encoder_block`` against its attention layer ``mha``."""
    if not isinstance(mha, mha_type):
        raise ValueError(f"mha must be a MultiHeadAttention, got {type(mha).__name__}")
    x = as_float(x, "x")
    check_ndim(x, "x", "(..., n, d_model) with at least 2 dimensions", 2)
    check_dim(x, "x", -1, mha.d_model, f"(..., n, d_model) with d_model = {mha.d_model} from mha")
    return x


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


# -- token models (attn.training.seq2seq, attn.training.encoder_model) ------------------------------


def check_tokens(x, name: str, vocab_size: int) -> np.ndarray:
    """Validate a batch of token ids: integers of shape (B, length), every id in ``[0, vocab_size)``."""
    x = np.asarray(x)
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} has shape {shape_str(x.shape)} and dtype {x.dtype}; "
                         "expected integers with shape (B, length)")
    if x.size and (x.min() < 0 or x.max() >= vocab_size):
        raise ValueError(f"{name} holds tokens outside [0, V) with V = {vocab_size}")
    return x


def check_lengths(lengths, name: str, B: int, n: int) -> np.ndarray:
    """Validate real sequence lengths: integers of shape (B,), each in ``[1, n]``."""
    lengths = np.asarray(lengths)
    if lengths.shape != (B,) or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"{name} has shape {shape_str(lengths.shape)} and dtype {lengths.dtype}; "
                         f"expected integers with shape (B,) = ({B},)")
    if B and (lengths.min() < 1 or lengths.max() > n):
        raise ValueError(f"{name} must lie in [1, {n}], got min {lengths.min()} and max {lengths.max()}")
    return lengths


def check_encoder_tokens(tokens, lengths, vocab_size: int, max_len: int):
    """Validate ``TransformerEncoder.forward``'s tokens (B, n), ``n <= max_len``, and lengths (B,) or None."""
    tokens = check_tokens(tokens, "tokens", vocab_size)
    B, n = tokens.shape
    if n > max_len:
        raise ValueError(f"tokens has shape ({B}, {n}); expected (B, n) with n <= max_len = {max_len}")
    return tokens, (None if lengths is None else check_lengths(lengths, "lengths", B, n))


def check_embedding_backward_inputs(d_x, tokens, vocab_size: int):
    """Validate the arguments of ``embedding_backward``: tokens (B, n) in ``[0, V)``, d_x (B, n, d)."""
    tokens = check_tokens(tokens, "tokens", vocab_size)
    d_x = as_float(d_x, "d_x")
    check_ndim(d_x, "d_x", "(B, n, d) with 3 dimensions", 3, 3)
    check_shape(d_x, "d_x", tokens.shape + d_x.shape[-1:], "(B, n, d)", "B and n from tokens")
    return d_x, tokens


def check_probe_inputs(train_x, train_y, test_x, test_y, n_classes: int):
    """Validate a linear probe's data: features (N, d) and (M, d), integer labels (N,) and (M,) in [0, C)."""
    train_x, test_x = as_float(train_x, "train_x"), as_float(test_x, "test_x")
    check_ndim(train_x, "train_x", "(N, d) with 2 dimensions", 2, 2)
    check_shape(test_x, "test_x", test_x.shape[:1] + train_x.shape[1:], "(M, d)", "d from train_x")
    labels = []
    for name, y, x, rows in (("train_y", train_y, train_x, "(N,)"), ("test_y", test_y, test_x, "(M,)")):
        y = np.asarray(y)
        if y.shape != x.shape[:1] or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"{name} has shape {shape_str(y.shape)} and dtype {y.dtype}; "
                             f"expected integers with shape {rows} = {shape_str(x.shape[:1])}")
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"{name} holds labels outside [0, C) with C = {n_classes}")
        labels.append(y)
    return train_x, labels[0], test_x, labels[1]


# -- tiled attention (attn.tiled) -----------------------------------------------------------------


def check_tiled_attention_inputs(Q, K, V, mask, scale, tile_q, tile_k):
    """Validate ``tiled_attention``'s inputs: those of the dense version (same messages), two tile sizes."""
    Q, K, V, mask, scale = check_attention_inputs(Q, K, V, mask, scale)
    return Q, K, V, mask, scale, positive_int(tile_q, "tile_q"), positive_int(tile_k, "tile_k")


def check_tiled_backward_inputs(d_out, Q, K, V, output, stats, mask, scale, tile_q, tile_k):
    """Validate ``tiled_attention_backward``'s inputs; every array is returned in Q's float dtype.

    Returns ``d_out, Q, K, V, output, m, l, mask, scale, tile_q, tile_k`` (``m``, ``l`` from ``stats``).
    """
    Q, K, V, mask, scale, tile_q, tile_k = check_tiled_attention_inputs(Q, K, V, mask, scale, tile_q, tile_k)
    if not (isinstance(stats, tuple) and len(stats) == 2):
        raise ValueError(f"stats must be the pair (m, l) returned by tiled_attention, "
                         f"got {type(stats).__name__}")
    rows, out_shape = Q.shape[:-1], Q.shape[:-1] + V.shape[-1:]
    arrays = []
    for name, value, shape, expected, neg_inf in (
            ("d_out", d_out, out_shape, "(..., n_q, d_v)", False),
            ("output", output, out_shape, "(..., n_q, d_v)", False),
            ("stats.m", stats[0], rows, "(..., n_q)", True),  # -inf: a query with no allowed key
            ("stats.l", stats[1], rows, "(..., n_q)", False)):
        value = as_float(value, name, allow_neg_inf=neg_inf)
        check_shape(value, name, shape, expected, "from Q and V")
        arrays.append(value.astype(Q.dtype, copy=False))
    d_out, output, m, l = arrays
    return d_out, Q, K, V, output, m, l, mask, scale, tile_q, tile_k


# -- decoder block and key/value cache (attn.decoder) -------------------------------------------


def check_decoder_inputs(y, memory, self_mha, cross_mha, mha_type):
    """Validate the inputs of ``transformer_decoder_block``: ``y`` (..., T, d) and ``memory`` (..., S, d)."""
    for name, layer in (("self_mha", self_mha), ("cross_mha", cross_mha)):
        if not isinstance(layer, mha_type):
            raise ValueError(f"{name} must be a MultiHeadAttention, got {type(layer).__name__}")
    d = self_mha.d_model
    if cross_mha.d_model != d:
        raise ValueError(f"cross_mha has d_model = {cross_mha.d_model}; expected d_model = {d} from self_mha")
    y, memory = as_float(y, "y"), as_float(memory, "memory")
    check_ndim(y, "y", "(..., T, d_model) with at least 2 dimensions", 2)
    check_dim(y, "y", -1, d, f"(..., T, d_model) with d_model = {d} from self_mha")
    check_shape(memory, "memory", y.shape[:-2] + memory.shape[-2:-1] + (d,), "(..., S, d_model)",
                "batch dimensions from y, d_model from self_mha")
    return y, memory


def check_decoder_step_inputs(y_t, self_cache, cross_cache, self_mha, cross_mha, cross_mask):
    """Validate ``decoder_block_step``'s inputs; return ``y_t``, the position ``t`` and the weights."""
    y_t = as_float(y_t, "y_t")
    d, h, d_k = self_mha.d_model, self_mha.num_heads, self_mha.d_k
    check_ndim(y_t, "y_t", "(B, 1, d_model) with 3 dimensions", 3, 3)
    B = y_t.shape[0]
    check_shape(y_t, "y_t", (B, 1, d), "(B, 1, d_model)", f"d_model = {d} from self_mha")
    t, room = self_cache["t"], self_cache["k"].shape[2]
    check_shape(self_cache["k"], "self_cache['k']", (B, h, room, d_k), "(B, h, max_steps, d_k)")
    if t >= room:
        raise ValueError(f"self_cache is full: it holds t = {t} of max_steps = {room} positions")
    S = cross_cache["k"].shape[-2]
    for key in ("k", "v"):
        check_shape(cross_cache[key], f"cross_cache['{key}']", (B, cross_mha.num_heads, S, cross_mha.d_k),
                    "(B, h, S, d_k)", "from y_t and cross_mha")
    check_shape(as_bool_mask(cross_mask, "cross_mask"), "cross_mask", (B, S), "(B, S)", "from cross_cache")
    dt = y_t.dtype
    layers = (("self", self_mha), ("cross", cross_mha))
    W = {f"{side}_{name[-1]}": np.asarray(getattr(layer, name), dtype=dt)
         for side, layer in layers for name in ("W_q", "W_k", "W_v", "W_o")}
    return y_t, t, W
