r"""Softmax, masks and scaled dot-product attention: the core every other module uses.

Mask convention (one for the whole package): a boolean array where
``True`` means *this query may attend to this key* and ``False`` means
*blocked*. PyTorch's ``F.scaled_dot_product_attention`` uses the same
convention; ``torch.nn.MultiheadAttention`` uses the opposite one
(``True`` = blocked), so convert with ``~mask`` when comparing.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_bool_mask, as_float, check_ndim, check_qkv, positive_int, positive_number, shape_str


def softmax(x, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax along ``axis``.

    .. math:: \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
              \quad m = \max_j x_j

    Parameters
    ----------
    x : array_like, shape (...)
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
    x = check_ndim(as_float(x, "x", allow_neg_inf=True), "x", "at least 1 dimension", 1)  # (...)
    m = np.max(x, axis=axis, keepdims=True)  # x.shape, 1 along axis
    m = np.where(np.isneginf(m), 0.0, m).astype(x.dtype)  # all -inf: m = 0
    e = np.exp(x - m)  # x.shape
    total = np.sum(e, axis=axis, keepdims=True)  # x.shape, 1 along axis
    weights = np.zeros_like(e)  # x.shape; stays 0 where total = 0
    return np.divide(e, total, out=weights, where=total > 0)  # x.shape


def masked_softmax(scores, mask=None, axis: int = -1) -> np.ndarray:
    r"""Softmax of ``scores`` where ``mask == False`` positions get weight exactly 0.

    .. math:: w = \operatorname{softmax}(\text{where}(M, S, -\infty))

    Parameters
    ----------
    scores : ndarray, shape (..., n)
    mask : ndarray of bool, shape exactly ``scores.shape``, optional
        True = may attend. No broadcasting: build the full shape first.
    axis : int

    Returns
    -------
    ndarray, same shape as ``scores``
        A slice with no allowed position is all zeros.
    """
    scores = as_float(scores, "scores", allow_neg_inf=True)  # (..., n)
    if mask is not None:
        mask = as_bool_mask(mask, shapes={"the shape of scores": scores.shape})  # (..., n)
        blocked = scores.dtype.type(-np.inf)  # scalar, in the dtype of scores
        scores = np.where(mask, scores, blocked)  # scores.shape
    return softmax(scores, axis=axis)  # scores.shape


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None):
    r"""Scaled dot-product attention (Vaswani et al., 2017).

    .. math:: \operatorname{Attention}(Q, K, V) =
              \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

    Parameters
    ----------
    Q : ndarray, shape (..., n_q, d_k)
        Queries.
    K : ndarray, shape (..., n_k, d_k)
        Keys; the leading ``...`` batch dimensions must equal those of ``Q``.
    V : ndarray, shape (..., n_k, d_v)
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
        zero row.
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
    Q, K, V = check_qkv(Q, K, V)  # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
    batch, (n_q, d_k), n_k = Q.shape[:-2], Q.shape[-2:], K.shape[-2]
    dtype = np.result_type(Q, K, V)  # float32 only if all three are float32
    Q, K, V = (X.astype(dtype, copy=False) for X in (Q, K, V))  # the three in that dtype
    if scale is None:
        scale = 1.0 / np.sqrt(d_k)  # the default: scores of variance ~1 for unit-variance Q and K
    scale = dtype.type(positive_number(scale, "scale", " (or None for 1/sqrt(d_k))"))  # scalar
    if mask is not None:
        mask = as_bool_mask(mask, shapes={"(n_q, n_k)": (n_q, n_k), "(..., n_q, n_k)": batch + (n_q, n_k)})
        mask = np.broadcast_to(mask, batch + (n_q, n_k))  # (..., n_q, n_k): a 2-D mask serves every batch
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n_q, n_k)
    weights = masked_softmax(scores, mask)  # (..., n_q, n_k)
    return weights @ V, weights  # (..., n_q, d_v), (..., n_q, n_k)


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
    To combine it with a causal mask, take the logical *and* of masks of the
    same shape: ``padding_mask(lengths, n, n_q=n) & causal_mask(n)``. A query
    is then allowed a key only if both masks allow it.
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"lengths has shape {shape_str(lengths.shape)} and dtype {lengths.dtype}; "
            "expected integers with shape (batch,)"
        )
    n_k = positive_int(n_k, "n_k")
    if lengths.size and (lengths.min() < 0 or lengths.max() > n_k):
        raise ValueError(f"lengths must lie in [0, n_k = {n_k}], got {lengths.tolist()}")
    mask = np.arange(n_k)[None, :] < lengths[:, None]  # (batch, n_k)
    if n_q is None:
        return mask
    return np.repeat(mask[:, None, :], positive_int(n_q, "n_q"), axis=1)  # (batch, n_q, n_k)
