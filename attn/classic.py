r"""Classic (RNN-era) attention scores: Bahdanau additive and Luong dot / general.

All three read the same way: the inputs are validated (:func:`check_query_keys`, whose messages
lesson 5.10's shapes page quotes, then each weight's shape), a score per encoder position, then
:func:`attn.core.masked_softmax`, then the weighted sum of the encoder states
(keys and values are the same array here).

Shapes (symbols used in every docstring below)
------------------------------------------------
``d_s``     decoder state size          ``d_h``   encoder state size
``d_attn``  additive-attention width    ``T``     encoder length
``...``     any batch dimensions, identical for ``query``, ``keys`` and ``mask``
"""
from __future__ import annotations

import numpy as np

from ._checks import as_bool_mask, as_float, check_dim, check_ndim, check_shape
from .core import _masked_softmax


def check_query_keys(query, keys):
    """Validate a decoder ``query`` (..., d_s) and encoder ``keys`` (..., T, d_h); same float dtype."""
    query = check_ndim(as_float(query, "query"), "query", "(..., d_s) with at least 1 dimension", 1)
    keys = check_ndim(as_float(keys, "keys"), "keys", "(..., T, d_h) with at least 2 dimensions", 2)
    if keys.shape[:-2] != query.shape[:-1]:
        raise ValueError(
            f"keys has shape {keys.shape}; expected (..., T, d_h) with batch "
            f"dimensions ... = {query.shape[:-1]} from query (no broadcasting)"
        )
    if keys.shape[-2] == 0:
        raise ValueError(
            f"keys has shape {keys.shape}; expected (..., T, d_h) with T >= 1 "
            "(at least one encoder position)"
        )
    dtype = np.result_type(query, keys)  # float32 only if both are float32
    return query.astype(dtype, copy=False), keys.astype(dtype, copy=False)


def check_position_mask(mask, keys):
    """Validate an optional (..., T) boolean mask over the encoder positions of ``keys``."""
    if mask is None:
        return None
    return check_shape(as_bool_mask(mask), "mask", keys.shape[:-1], "(..., T)", "True = real position")


def additive_attention(query, keys, W_a, U_a, v_a, mask=None):
    r"""Bahdanau (additive) attention.

    .. math:: e_i = v_a^\top \tanh(W_a s + U_a h_i), \qquad
              \alpha = \operatorname{softmax}(e), \qquad c = \sum_i \alpha_i h_i

    In Bahdanau et al. (2014) the query ``s`` is the *previous* decoder state
    :math:`s_{t-1}`.

    Parameters
    ----------
    query : ndarray, shape (..., d_s)
        Decoder state(s).
    keys : ndarray, shape (..., T, d_h)
        Encoder states (also used as values).
    W_a : ndarray, shape (d_attn, d_s)
    U_a : ndarray, shape (d_attn, d_h)
    v_a : ndarray, shape (d_attn,)
    mask : ndarray of bool, shape (..., T), optional
        True on real (non-padded) encoder positions.

    Returns
    -------
    context : ndarray, shape (..., d_h)
    weights : ndarray, shape (..., T)
    """
    query, keys = check_query_keys(query, keys)  # (..., d_s), (..., T, d_h)
    d_s, d_h = query.shape[-1], keys.shape[-1]
    W_a = check_ndim(as_float(W_a, "W_a"), "W_a", "(d_attn, d_s) with 2 dimensions", 2, 2)
    check_dim(W_a, "W_a", 1, d_s, f"(d_attn, d_s) with d_s = {d_s} from query")
    d_attn = W_a.shape[0]
    U_a = check_shape(as_float(U_a, "U_a"), "U_a", (d_attn, d_h), "(d_attn, d_h)",
                      "d_attn from W_a, d_h from keys")
    v_a = check_shape(as_float(v_a, "v_a"), "v_a", (d_attn,), "(d_attn,)", "d_attn from W_a")
    mask = check_position_mask(mask, keys)  # (..., T) or None
    scores = additive_scores(query @ W_a.T, keys @ U_a.T, v_a)  # (..., T)
    weights = _masked_softmax(scores, mask)  # (..., T)
    context = (weights[..., None, :] @ keys)[..., 0, :]  # (..., d_h)
    return context, weights


def additive_scores(query_proj, keys_proj, v_a):
    r"""The additive score from already projected query and keys (no validation).

    .. math:: e_i = v_a^\top \tanh(q + k_i), \quad q = W_a s, \quad k_i = U_a h_i

    This is the single implementation of the Bahdanau score; callers that
    cache ``keys_proj`` across decoder steps (the copy-task model) use it
    directly.

    Parameters
    ----------
    query_proj : ndarray, shape (..., d_attn)
        ``W_a s``.
    keys_proj : ndarray, shape (..., T, d_attn)
        ``U_a h_i`` for every encoder position.
    v_a : ndarray, shape (d_attn,)

    Returns
    -------
    scores : ndarray, shape (..., T)
    """
    return np.tanh(keys_proj + query_proj[..., None, :]) @ v_a  # (..., T)


def dot_attention(query, keys, mask=None):
    r"""Luong "dot" attention: :math:`e_i = s^\top h_i` (no scaling).

    In Luong et al. (2015) the query is the *current* decoder state :math:`s_t`.

    Parameters
    ----------
    query : ndarray, shape (..., d_s)
        Requires ``d_s == d_h``; otherwise use :func:`general_attention`.
    keys : ndarray, shape (..., T, d_h)
    mask : ndarray of bool, shape (..., T), optional
        True on real (non-padded) positions.

    Returns
    -------
    context : ndarray, shape (..., d_h)
    weights : ndarray, shape (..., T)
    """
    query, keys = check_query_keys(query, keys)  # (..., d_s), (..., T, d_h)
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"query has shape {query.shape}; expected (..., d_s) with d_s = d_h = "
            f"{keys.shape[-1]} from keys: dot attention needs d_s == d_h, "
            "use general_attention with W of shape (d_s, d_h) instead"
        )
    mask = check_position_mask(mask, keys)  # (..., T) or None
    scores = (keys @ query[..., :, None])[..., 0]  # (..., T)
    weights = _masked_softmax(scores, mask)  # (..., T)
    context = (weights[..., None, :] @ keys)[..., 0, :]  # (..., d_h)
    return context, weights


def general_attention(query, keys, W, mask=None):
    r"""Luong "general" attention: :math:`e_i = s^\top W h_i`.

    Parameters
    ----------
    query : ndarray, shape (..., d_s)
    keys : ndarray, shape (..., T, d_h)
    W : ndarray, shape (d_s, d_h)
    mask : ndarray of bool, shape (..., T), optional
        True on real (non-padded) positions.

    Returns
    -------
    context : ndarray, shape (..., d_h)
    weights : ndarray, shape (..., T)
    """
    query, keys = check_query_keys(query, keys)  # (..., d_s), (..., T, d_h)
    W = check_shape(as_float(W, "W"), "W", (query.shape[-1], keys.shape[-1]), "(d_s, d_h)",
                    "d_s from query, d_h from keys")
    mask = check_position_mask(mask, keys)  # (..., T) or None
    projected = query @ W  # (..., d_h)
    scores = (keys @ projected[..., :, None])[..., 0]  # (..., T)
    weights = _masked_softmax(scores, mask)  # (..., T)
    context = (weights[..., None, :] @ keys)[..., 0, :]  # (..., d_h)
    return context, weights
