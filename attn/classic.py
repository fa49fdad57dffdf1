r"""Classic (RNN-era) attention scores: Bahdanau additive and Luong dot / general.

All three read the same way: one call validates the inputs
(``attn._checks``), a score per encoder position, then
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

from ._checks import check_additive_inputs, check_dot_inputs, check_general_inputs
from .core import masked_softmax


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
    query, keys, W_a, U_a, v_a, mask = check_additive_inputs(query, keys, W_a, U_a, v_a, mask)
    scores = additive_scores(query @ W_a.T, keys @ U_a.T, v_a)  # (..., T)
    weights = masked_softmax(scores, mask)  # (..., T)
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
    query, keys, mask = check_dot_inputs(query, keys, mask)
    scores = (keys @ query[..., :, None])[..., 0]  # (..., T)
    weights = masked_softmax(scores, mask)  # (..., T)
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
    query, keys, W, mask = check_general_inputs(query, keys, W, mask)
    projected = query @ W  # (..., d_h)
    scores = (keys @ projected[..., :, None])[..., 0]  # (..., T)
    weights = masked_softmax(scores, mask)  # (..., T)
    context = (weights[..., None, :] @ keys)[..., 0, :]  # (..., d_h)
    return context, weights
