r"""Softmax, masks and scaled dot-product attention: the core every other module uses.

Exercise 1 of Activity 4 is here, with its experiment (:func:`future_token_change`).

Mask convention (one for the whole package): a boolean array where
``True`` means *this query may attend to this key* and ``False`` means
*blocked*. PyTorch's ``F.scaled_dot_product_attention`` uses the same
convention; ``torch.nn.MultiheadAttention`` uses the opposite one
(``True`` = blocked), so convert with ``~mask`` when comparing.
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import array, attention_mask, boolean, positive_int, positive_number


def _softmax(x, axis: int = -1) -> np.ndarray:
    """The kernel of :func:`softmax`: the formula, on an array already checked."""
    m = np.max(x, axis=axis, keepdims=True)  # x.shape, 1 along axis
    blocked = np.isneginf(m)  # x.shape, 1 along axis: a slice all -inf (every position blocked)
    e = np.exp(x - np.where(blocked, 0.0, m))  # x.shape; m = 0 where blocked: exp(-inf) = 0, not NaN
    total = np.sum(e, axis=axis, keepdims=True)  # x.shape, 1 along axis; 0 only where blocked
    return np.divide(e, total, out=np.zeros_like(e), where=~blocked)  # x.shape; 0 where blocked


def softmax(x, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax along ``axis``.

    .. math:: \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
              \quad m = \max_j x_j

    Parameters
    ----------
    x : array_like, at least 1-D
        Logits. ``-inf`` is allowed and gives an exact 0; NaN and ``+inf``
        are refused.
    axis : int
        Axis that is normalised.

    Returns
    -------
    ndarray, same shape as ``x``
        Non-negative weights summing to 1 along ``axis``. A slice that is
        entirely ``-inf`` (every position blocked) gives all zeros, never NaN.
        float32 input stays float32; integer input becomes float64.
    """
    return _softmax(array(x, "x", "(..., n)", {}, neg_inf=True), axis)  # x.shape


def _masked_softmax(scores, mask=None, axis: int = -1) -> np.ndarray:
    """The kernel of :func:`masked_softmax`; ``mask`` may be any shape that broadcasts to ``scores``."""
    scores = scores if mask is None else np.where(mask, scores, -np.inf)  # scores.shape; blocked: -inf
    return _softmax(scores, axis)  # scores.shape


def masked_softmax(scores, mask=None, axis: int = -1) -> np.ndarray:
    r"""Softmax of ``scores`` where ``mask == False`` positions get weight exactly 0.

    .. math:: w = \operatorname{softmax}(\text{where}(M, S, -\infty))

    Parameters
    ----------
    scores : array_like, shape (..., n)
    mask : ndarray of bool, shape exactly ``scores.shape``, optional
        True = may attend. No broadcasting: build the full shape first.
    axis : int

    Returns
    -------
    ndarray, same shape as ``scores``
        A slice with no allowed position is all zeros.
    """
    dims = {}
    scores = array(scores, "scores", "(..., n)", dims, neg_inf=True)  # (..., n)
    if mask is not None:
        mask = boolean(mask, "mask", "(..., n)", dims)  # (..., n), the shape of scores
    return _masked_softmax(scores, mask, axis)  # (..., n)


def _attention(Q, K, V, mask=None, scale=None):
    """The kernel of :func:`scaled_dot_product_attention`: the formula, on arrays already checked."""
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale  # default 1/sqrt(d_k), d_k = Q.shape[-1]
    scores = Q @ K.mT * scale  # (..., n_q, n_k); K.mT: K transposed in its last two axes
    weights = _masked_softmax(scores, mask)  # (..., n_q, n_k)
    return weights @ V, weights  # (..., n_q, d_v), (..., n_q, n_k)


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None):
    r"""Scaled dot-product attention (Vaswani et al., 2017).

    .. math:: \operatorname{Attention}(Q, K, V) =
              \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

    Parameters
    ----------
    Q : array_like, shape (..., n_q, d_k)
        Queries.
    K : array_like, shape (..., n_k, d_k)
        Keys; the leading ``...`` batch dimensions must equal those of ``Q``.
    V : array_like, shape (..., n_k, d_v)
        Values; same batch dimensions and same ``n_k`` as ``K``.
    mask : ndarray of bool, shape (n_q, n_k) or (..., n_q, n_k), optional
        True = the query may attend to the key. A 2-D mask is used for every
        batch element; any other shape must match exactly.
    scale : float > 0, optional
        Factor of the scores, :math:`S = \text{scale} \cdot QK^\top`; default
        :math:`1/\sqrt{d_k}`. ``scale=1`` gives the unscaled dot product (as
        the ``scale`` of PyTorch's ``F.scaled_dot_product_attention``).

    Returns
    -------
    output : ndarray, shape (..., n_q, d_v)
        Weighted sums of the value rows. A query with no allowed key gets a
        zero row; scores that overflow give NaN (to ``+inf``) or, if a whole row overflows to
        ``-inf``, a zero row. float32 stays float32 when ``Q``,
        ``K``, ``V`` are all float32.
    weights : ndarray, shape (..., n_q, n_k)
        Attention weights; each row sums to 1 over the allowed keys (or is
        all zeros if none is allowed). Masked entries are exactly 0.

    Raises
    ------
    ValueError
        On a wrong number of dimensions, ``d_k`` or ``n_k`` mismatch, batch
        mismatch, a non-boolean or wrongly shaped mask, NaN/inf inputs, or a
        ``scale`` that is not a finite number > 0.
    """
    return _attention(*_checked(Q, K, V, mask, scale))  # (..., n_q, d_v), (..., n_q, n_k)


def _checked(Q, K, V, mask, scale):
    """The door of :func:`scaled_dot_product_attention` (and of :mod:`attn.tiled`): every input, once."""
    dims = {}
    Q = array(Q, "Q", "(..., n_q, d_k)", dims)  # binds ..., n_q, d_k
    K = array(K, "K", "(..., n_k, d_k)", dims)  # same ... and d_k; binds n_k
    V = array(V, "V", "(..., n_k, d_v)", dims)  # same ... and n_k
    mask = None if mask is None else attention_mask(mask, dims)  # (n_q, n_k) or (..., n_q, n_k)
    scale = None if scale is None else positive_number(scale, "scale", " (or None for 1/sqrt(d_k))")
    return Q, K, V, mask, scale


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """Boolean causal mask: query ``i`` may attend to keys ``0..i``.

    Parameters
    ----------
    n_q : int
        Number of queries.
    n_k : int, optional
        Number of keys (defaults to ``n_q``).

    Returns
    -------
    ndarray of bool, shape (n_q, n_k)
        Lower-triangular, aligned at the top-left corner like PyTorch's
        ``is_causal=True``.
    """
    n_q = positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else positive_int(n_k, "n_k")
    return np.tril(np.ones((n_q, n_k), dtype=bool))


def padding_mask(lengths, n_k: int, n_q: int | None = None) -> np.ndarray:
    """Key padding mask from sequence lengths: True on real positions.

    Parameters
    ----------
    lengths : array_like of int, shape (batch,)
        Real length of each sequence, ``0 <= lengths[b] <= n_k``.
    n_k : int
        Padded length (number of keys).
    n_q : int, optional
        If given, the mask is repeated for ``n_q`` queries so that it has
        the attention-mask shape and can be passed to
        :func:`scaled_dot_product_attention` directly.

    Returns
    -------
    ndarray of bool, shape (batch, n_k), or (batch, n_q, n_k) if ``n_q`` is given
        ``mask[b, j]`` is True when ``j < lengths[b]``.

    Notes
    -----
    To combine it with a causal mask, take the logical *and*:
    ``padding_mask(lengths, n, n_q=n) & causal_mask(n)`` (the (n, n) causal mask
    broadcasts over the batch). A query is then allowed a key only if both masks allow it.
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"lengths has shape {lengths.shape} and dtype {lengths.dtype}; "
            "expected integers with shape (batch,)"
        )
    n_k = positive_int(n_k, "n_k")
    if lengths.size and (lengths.min() < 0 or lengths.max() > n_k):
        raise ValueError(f"lengths must lie in [0, n_k = {n_k}], got {lengths.tolist()}")
    mask = np.arange(n_k)[None, :] < lengths[:, None]  # (batch, n_k)
    if n_q is None:
        return mask
    return np.repeat(mask[:, None, :], positive_int(n_q, "n_q"), axis=1)  # (batch, n_q, n_k)


def future_token_change(Q, K, V, seed: int = 0):
    """Exercise 1: replace the last key and value by N(0, 1) draws; how much does the output move?

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
    K : array_like, shape (n_k, d_k)
    V : array_like, shape (n_k, d_v)
    seed : int
        Seed of the draws that replace ``K[-1]`` and ``V[-1]``.

    Returns
    -------
    without_mask, with_mask : float
        Largest absolute change of the output, without and with the causal mask; with it the change
        is 0 when ``n_q < n_k`` (the last key is then in every query's future).
    """
    dims = {}
    Q = array(Q, "Q", "(n_q, d_k)", dims)
    K = array(K, "K", "(n_k, d_k)", dims)
    V = array(V, "V", "(n_k, d_v)", dims)
    rng = np.random.default_rng(seed)
    K_new, V_new = K.copy(), V.copy()
    K_new[-1], V_new[-1] = rng.normal(size=dims["d_k"]), rng.normal(size=dims["d_v"])  # (d_k,), (d_v,)
    mask = causal_mask(dims["n_q"], dims["n_k"])  # (n_q, n_k)
    changes = [np.abs(_attention(Q, K_new, V_new, m)[0] - _attention(Q, K, V, m)[0]).max()
               for m in (None, mask)]  # without, with the mask
    return float(changes[0]), float(changes[1])
