r"""Multi-head Luong "general" attention: one general score per group of encoder features.

The encoder state size ``d_h`` is cut into ``n_heads`` equal groups of
``d_head = d_h / n_heads`` features. Head ``k`` scores the full decoder state
against its own group with its own matrix ``W_k`` of shape ``(d_s, d_head)``,
takes its own masked softmax and averages only its group of features; the
heads' contexts are concatenated back to ``d_h`` features.

Every head is computed by :func:`attn.classic.general_attention`, so there
is no second scoring or softmax path, and ``n_heads = 1`` *is* the
single-head function.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float, check_ndim
from .classic import check_position_mask, check_query_keys, general_attention


def multihead_general_attention(query, keys, W_heads, mask=None):
    r"""Luong general attention run separately on ``n_heads`` groups of encoder features.

    .. math:: e^{(k)}_i = s^\top W_k\, h^{(k)}_i, \qquad
              \alpha^{(k)} = \operatorname{softmax}(e^{(k)}), \qquad
              c = \big[\textstyle\sum_i \alpha^{(1)}_i h^{(1)}_i ; \dots ;
              \sum_i \alpha^{(n)}_i h^{(n)}_i\big]

    where :math:`h^{(k)}_i` is features ``k*d_head ... (k+1)*d_head - 1`` of
    the encoder state :math:`h_i`.

    Parameters
    ----------
    query : ndarray, shape (..., d_s)
        Decoder state(s); every head sees the whole state.
    keys : ndarray, shape (..., T, d_h)
        Encoder states (also the values). ``d_h`` must be divisible by ``n_heads``.
    W_heads : ndarray, shape (n_heads, d_s, d_head)
        One general-score matrix per head, ``d_head = d_h / n_heads``.
    mask : ndarray of bool, shape (..., T), optional
        True on real (non-padded) encoder positions; shared by every head.

    Returns
    -------
    context : ndarray, shape (..., d_h)
        The heads' contexts concatenated in head order.
    weights : ndarray, shape (..., n_heads, T)
        Each head's attention weights over the encoder positions.

    Raises
    ------
    ValueError
        On the errors of :func:`attn.classic.general_attention`, a ``W_heads``
        that is not 3-D, whose ``d_s`` differs from the query's, or whose
        ``d_head`` is not ``d_h / n_heads`` (including ``d_h`` not divisible
        by ``n_heads``).
    """
    query, keys = check_query_keys(query, keys)  # (..., d_s), (..., T, d_h)
    d_s, d_h = query.shape[-1], keys.shape[-1]
    W_heads = check_ndim(as_float(W_heads, "W_heads"), "W_heads",
                         "(n_heads, d_s, d_head) with 3 dimensions", 3, 3)
    n_heads, d_s_w, d_head = W_heads.shape
    if n_heads == 0 or d_s_w != d_s:
        raise ValueError(f"W_heads has shape {W_heads.shape}; expected (n_heads, d_s, d_head) "
                         f"with n_heads >= 1 and d_s = {d_s} from query")
    if d_h % n_heads != 0 or d_head != d_h // n_heads:
        wanted = (f"d_head = d_h / n_heads = {d_h // n_heads}" if d_h % n_heads == 0
                  else f"d_h = {d_h} divisible by n_heads = {n_heads}")
        raise ValueError(f"W_heads has shape {W_heads.shape}; expected (n_heads, d_s, d_head) "
                         f"with {wanted} (d_h from keys)")
    mask = check_position_mask(mask, keys)  # (..., T) or None
    contexts, weights = [], []
    for k, W_k in enumerate(W_heads):  # head k: features k*d_head ... (k+1)*d_head - 1
        h_k = keys[..., k * d_head:(k + 1) * d_head]  # (..., T, d_head)
        c_k, alpha_k = general_attention(query, h_k, W_k, mask)  # (..., d_head), (..., T)
        contexts.append(c_k)
        weights.append(alpha_k)
    return np.concatenate(contexts, axis=-1), np.stack(weights, axis=-2)  # (..., d_h), (..., n_heads, T)
