r"""Backward passes of the Transformer pieces, written out by hand (no autograd engine).

One backward per forward of :mod:`attn.core`, :mod:`attn.multihead` and
:mod:`attn.encoder`, plus the embedding lookup and the loss:

* :func:`softmax_backward` — softmax and masked softmax;
* :func:`attention_backward` — :func:`attn.core.scaled_dot_product_attention`;
* :func:`multihead_backward` — :class:`attn.multihead.MultiHeadAttention` (``W_q, W_k, W_v, W_o``);
* :func:`layer_norm_backward` — :func:`attn.encoder.layer_norm` (``γ, β``);
* :func:`ffn_backward` — :func:`attn.encoder.ffn`;
* :func:`encoder_block_forward` and :func:`encoder_block_backward` — the post-norm encoder block of
  :func:`attn.encoder.transformer_encoder_block`, its forward keeping what the backward needs;
* :func:`embedding_backward` — a table lookup ``E[tokens]`` (the token models' embeddings);
* :func:`softmax_cross_entropy` — mean cross-entropy and its gradient.

The forwards are never rewritten: a backward receives the forward's inputs
and outputs and recomputes from them the few intermediates the public
forwards do not return (the projections ``q, k, v`` of
:meth:`~attn.multihead.MultiHeadAttention.head_outputs`, the hidden layer of
:func:`~attn.encoder.ffn`, the row statistics of
:func:`~attn.encoder.layer_norm`).

Masks: a blocked position has attention weight exactly 0, and every gradient
that flows through it is multiplied by that weight, so it receives exactly
zero gradient (no ``-inf`` ever enters the backward).

Shapes: ``...`` batch dimensions, ``h`` heads, ``n_q``/``n_k`` queries/keys,
``d_k`` head width, ``d_model`` model width, ``d_ff`` FFN width, ``C`` classes.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import array, as_float, check_dim, check_ndim, check_shape, check_type, positive_number
from ..core import softmax
from ..encoder import EPS, _ffn, _layer_norm
from ..multihead import MultiHeadAttention
from ._checks import check_tokens


def _einsum(spec, a, b):
    """``np.einsum(spec, a, b)`` along a BLAS contraction path (``optimize=True``), ~10x its loop."""
    return np.einsum(spec, a, b, optimize=True)


def softmax_backward(d_weights, weights, axis: int = -1) -> np.ndarray:
    r"""Gradient through :func:`attn.core.softmax` / :func:`attn.core.masked_softmax`.

    .. math:: \frac{\partial L}{\partial s_i} = w_i \left(\frac{\partial L}{\partial w_i}
              - \sum_j w_j \frac{\partial L}{\partial w_j}\right)

    Parameters
    ----------
    d_weights : array_like, shape (...)
        Gradient of the loss with respect to the softmax output.
    weights : array_like, shape (...)
        The softmax output (masked entries are 0, so their gradient is exactly 0).
    axis : int

    Returns
    -------
    ndarray, same shape
        Gradient with respect to the logits (scores).
    """
    weights = as_float(weights, "weights")
    d_weights = check_shape(as_float(d_weights, "d_weights"), "d_weights", weights.shape,
                            "the shape of weights")
    inner = np.sum(weights * d_weights, axis=axis, keepdims=True)  # (..., 1)
    return weights * (d_weights - inner)  # (...)


def attention_backward(d_out, Q, K, V, weights, scale=None):
    r"""Gradient through :func:`attn.core.scaled_dot_product_attention`.

    With :math:`S = c\,QK^\top` (:math:`c` = ``scale``, default :math:`1/\sqrt{d_k}`),
    :math:`A = \operatorname{softmax}(S)`, :math:`O = AV`:

    .. math:: dV = A^\top dO, \quad dA = dO\, V^\top,
              \quad dS = A \odot (dA - \operatorname{rowsum}(A \odot dA)),
              \quad dQ = c\, dS\, K, \quad dK = c\, dS^\top Q

    Parameters
    ----------
    d_out : array_like, shape (..., n_q, d_v)
        Gradient with respect to the attention output.
    Q : array_like, shape (..., n_q, d_k)
    K : array_like, shape (..., n_k, d_k)
    V : array_like, shape (..., n_k, d_v)
    weights : array_like, shape (..., n_q, n_k)
        The weights returned by the forward (the mask is already in them).
    scale : float > 0, optional
        The forward's ``scale`` (default :math:`1/\sqrt{d_k}`).

    Returns
    -------
    dQ : ndarray, shape (..., n_q, d_k)
    dK : ndarray, shape (..., n_k, d_k)
    dV : ndarray, shape (..., n_k, d_v)
    """
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    check_ndim(Q, "Q", "(..., n_q, d_k) with at least 2 dimensions", 2)
    weights = as_float(weights, "weights")
    check_shape(weights, "weights", Q.shape[:-1] + K.shape[-2:-1], "(..., n_q, n_k)", "from Q and K")
    check_shape(V, "V", K.shape[:-1] + V.shape[-1:], "(..., n_k, d_v)", "batch and n_k from K")
    d_out = as_float(d_out, "d_out")
    check_shape(d_out, "d_out", weights.shape[:-1] + V.shape[-1:], "the shape of (..., n_q, d_v)")
    if scale is not None:
        scale = positive_number(scale, "scale", " (or None for 1/sqrt(d_k))")
    return _attention_backward(d_out, Q, K, V, weights, scale)  # dQ, dK, dV


def _attention_backward(d_out, Q, K, V, weights, scale=None):
    """The kernel of :func:`attention_backward`."""
    if scale is None:
        scale = 1 / math.sqrt(Q.shape[-1])  # the forward's default, 1/sqrt(d_k)
    dV = np.swapaxes(weights, -1, -2) @ d_out  # (..., n_k, d_v)
    d_weights = d_out @ np.swapaxes(V, -1, -2)  # (..., n_q, n_k)
    d_scores = weights * (d_weights - np.sum(weights * d_weights, axis=-1, keepdims=True))  # (..., n_q, n_k)
    d_scores *= scale  # through S = scale * Q K^T
    dQ = d_scores @ K  # (..., n_q, d_k)
    dK = np.swapaxes(d_scores, -1, -2) @ Q  # (..., n_k, d_k)
    return dQ, dK, dV


def multihead_backward(d_out, mha, Q, K, V, weights):
    r"""Gradient through :meth:`attn.multihead.MultiHeadAttention.forward`.

    The forward, with :math:`W^O` split by rows into one block per head
    (:math:`W^O_i` = rows ``i*d_k:(i+1)*d_k``, the block that reads head ``i``):

    .. math:: q_i = Q W_Q^i,\; k_i = K W_K^i,\; v_i = V W_V^i, \quad
              \operatorname{head}_i = \operatorname{Attention}(q_i, k_i, v_i), \quad
              \text{out} = \textstyle\sum_i \operatorname{head}_i W^O_i

    The backward runs it in reverse with the same ``einsum`` layouts. The
    projections ``q, k, v`` and the head outputs are recomputed from the inputs
    and the cached ``weights`` (the forward returns only its output and the weights).

    Parameters
    ----------
    d_out : array_like, shape (..., n_q, d_model)
        Gradient with respect to the layer's output.
    mha : MultiHeadAttention
        The layer, with the weights (and ``scale``) used in the forward.
    Q : array_like, shape (..., n_q, d_model)
    K, V : array_like, shape (..., n_k, d_model)
    weights : array_like, shape (..., h, n_q, n_k)
        The attention weights returned by the forward.

    Returns
    -------
    dQ : ndarray, shape (..., n_q, d_model)
    dK, dV : ndarray, shape (..., n_k, d_model)
    grads : dict
        ``W_q``, ``W_k``, ``W_v`` (h, d_model, d_k) and ``W_o`` (d_model, d_model).
        For self-attention (Q = K = V = x) the gradient of x is ``dQ + dK + dV``.
    """
    check_type(mha, "mha", MultiHeadAttention)
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    check_ndim(Q, "Q", "(..., n_q, d_model) with at least 2 dimensions", 2)
    weights = as_float(weights, "weights")
    check_shape(weights, "weights", Q.shape[:-2] + (mha.num_heads, Q.shape[-2], K.shape[-2]),
                "(..., h, n_q, n_k)", "from Q, K and mha")
    d_out = check_shape(as_float(d_out, "d_out"), "d_out", Q.shape, "the shape of Q (..., n_q, d_model)")
    W = [np.asarray(W, dtype=d_out.dtype) for W in (mha.W_q, mha.W_k, mha.W_v, mha.W_o)]  # in d_out's dtype
    return _multihead_backward(d_out, Q, K, V, weights, *W, mha.scale)  # dQ, dK, dV, grads


def _multihead_backward(d_out, Q, K, V, weights, W_q, W_k, W_v, W_o, scale=None):
    """The kernel of :func:`multihead_backward`, on the layer's weights and ``scale``."""
    h, d_model, d_k = W_q.shape
    shapes = Q.shape, K.shape, V.shape  # the batch dimensions ... become one axis b, restored at the end
    Q, K, V, d_out = (X.reshape((-1,) + X.shape[-2:]) for X in (Q, K, V, d_out))  # (b, n, d_model)
    weights = weights.reshape((-1,) + weights.shape[-3:])  # (b, h, n_q, n_k)
    W_o_heads = W_o.reshape(h, d_k, d_model)  # (h, d_k, d_model): W^O_i = W_o_heads[i]
    q = _einsum("bnd,hdk->bhnk", Q, W_q)  # (b, h, n_q, d_k), as in head_outputs
    k = _einsum("bnd,hdk->bhnk", K, W_k)  # (b, h, n_k, d_k)
    v = _einsum("bnd,hdk->bhnk", V, W_v)  # (b, h, n_k, d_k)
    heads = weights @ v  # (b, h, n_q, d_k)
    d_heads = _einsum("bne,hke->bhnk", d_out, W_o_heads)  # (b, h, n_q, d_k)
    dq, dk, dv = _attention_backward(d_heads, q, k, v, weights, scale)  # (b, h, n, d_k) each
    grads = {"W_q": _einsum("bnd,bhnk->hdk", Q, dq),  # (h, d_model, d_k)
             "W_k": _einsum("bnd,bhnk->hdk", K, dk),  # (h, d_model, d_k)
             "W_v": _einsum("bnd,bhnk->hdk", V, dv),  # (h, d_model, d_k)
             "W_o": _einsum("bhnk,bne->hke", heads, d_out).reshape(W_o.shape)}  # (d_model, d_model)
    dQ = _einsum("bhnk,hdk->bnd", dq, W_q).reshape(shapes[0])  # (..., n_q, d_model)
    dK = _einsum("bhnk,hdk->bnd", dk, W_k).reshape(shapes[1])  # (..., n_k, d_model)
    dV = _einsum("bhnk,hdk->bnd", dv, W_v).reshape(shapes[2])  # (..., n_k, d_model)
    return dQ, dK, dV, grads


def layer_norm_backward(d_y, x, gamma=None, eps: float = 1e-5):
    r"""Gradient through :func:`attn.encoder.layer_norm`.

    With :math:`\hat x = (x - \mu)/\sqrt{\sigma^2 + \varepsilon}` and :math:`g = \gamma \odot dy`:

    .. math:: dx = \frac{g - \overline{g} - \hat x\, \overline{g \odot \hat x}}{\sqrt{\sigma^2 + \varepsilon}}
              \quad d\gamma = \textstyle\sum dy \odot \hat x, \quad d\beta = \sum dy

    (bars are means over the last axis; sums over every row).

    Parameters
    ----------
    d_y : array_like, shape (..., d)
        Gradient with respect to the output.
    x : array_like, shape (..., d)
        The forward's input.
    gamma : array_like, shape (d,), optional
        Scale used in the forward (default ones).
    eps : float
        The forward's epsilon.

    Returns
    -------
    dx : ndarray, shape (..., d)
    d_gamma : ndarray, shape (d,)
    d_beta : ndarray, shape (d,)
    """
    dims = {}
    x = array(x, "x", "(..., d)", dims)  # (..., d)
    d_y = check_shape(as_float(d_y, "d_y"), "d_y", x.shape, "the shape of x")  # (..., d)
    gamma = None if gamma is None else np.asarray(gamma, dtype=x.dtype)  # (d,)
    return _layer_norm_backward(d_y, x, gamma, positive_number(eps, "eps"))  # dx, d_gamma, d_beta


def _layer_norm_backward(d_y, x, gamma=None, eps: float = EPS):
    """The kernel of :func:`layer_norm_backward`."""
    x_hat = _layer_norm(x, eps=eps)  # (..., d) the forward itself, without gamma and beta
    d = x_hat.shape[-1]
    rows_dy, rows_xh = d_y.reshape(-1, d), x_hat.reshape(-1, d)  # (rows, d)
    d_gamma, d_beta = np.sum(rows_dy * rows_xh, axis=0), rows_dy.sum(axis=0)  # (d,), (d,)
    g = d_y if gamma is None else d_y * gamma  # (..., d)
    inv_std = 1.0 / np.sqrt(np.var(x, axis=-1, keepdims=True) + x_hat.dtype.type(eps))  # (..., 1)
    dx = inv_std * (g - g.mean(axis=-1, keepdims=True)
                    - x_hat * np.mean(g * x_hat, axis=-1, keepdims=True))  # (..., d)
    return dx, d_gamma, d_beta


def ffn_backward(d_out, x, W1, b1, W2):
    r"""Gradient through :func:`attn.encoder.ffn` (:math:`\max(0, xW_1 + b_1)W_2 + b_2`).

    Parameters
    ----------
    d_out : array_like, shape (..., d_model)
    x : array_like, shape (..., d_model)
    W1 : array_like, shape (d_model, d_ff)
    b1 : array_like, shape (d_ff,)
    W2 : array_like, shape (d_ff, d_model)

    Returns
    -------
    dx : ndarray, shape (..., d_model)
    grads : dict
        ``W1`` (d_model, d_ff), ``b1`` (d_ff,), ``W2`` (d_ff, d_model), ``b2`` (d_model,).
    """
    x = as_float(x, "x")
    check_ndim(x, "x", "(..., d_model) with at least 1 dimension", 1)
    d_out = check_shape(as_float(d_out, "d_out"), "d_out", x.shape, "the shape of x")
    W1, b1, W2 = (np.asarray(a, dtype=x.dtype) for a in (W1, b1, W2))
    check_dim(W1, "W1", 0, x.shape[-1], "(d_model, d_ff) with d_model from x")
    d_model, d_ff = W1.shape
    check_shape(W2, "W2", (d_ff, d_model), "(d_ff, d_model)", "from W1")
    return _ffn_backward(d_out, x, W1, b1, W2)  # dx, grads


def _ffn_backward(d_out, x, W1, b1, W2):
    """The kernel of :func:`ffn_backward`."""
    d_model = W1.shape[0]
    rows_x, rows_d = x.reshape(-1, d_model), d_out.reshape(-1, d_model)  # (rows, d_model)
    pre = rows_x @ W1 + b1  # (rows, d_ff) recomputed: ffn returns only its output
    hidden = np.maximum(pre, 0)  # (rows, d_ff)
    d_pre = (rows_d @ W2.T) * (pre > 0)  # (rows, d_ff) through the ReLU
    grads = {"W1": rows_x.T @ d_pre, "b1": d_pre.sum(axis=0),  # (d_model, d_ff), (d_ff,)
             "W2": hidden.T @ rows_d, "b2": rows_d.sum(axis=0)}  # (d_ff, d_model), (d_model,)
    return (d_pre @ W1.T).reshape(x.shape), grads  # (..., d_model)


def embedding_backward(d_x, tokens, vocab_size: int) -> np.ndarray:
    r"""Gradient of the embedding table through the lookup :math:`x = E[\text{tokens}]`.

    .. math:: dE_v = \textstyle\sum_{t:\ \text{tokens}_t = v} dx_t

    Parameters
    ----------
    d_x : array_like, shape (B, n, d)
        Gradient with respect to the looked-up rows.
    tokens : array_like of int, shape (B, n)
        The ids of the forward, in ``[0, vocab_size)``.
    vocab_size : int
        ``V``, rows of the table.

    Returns
    -------
    ndarray, shape (V, d)
        Row ``v`` sums the gradients of every position holding token ``v`` (zero for unused ids).
    """
    tokens = check_tokens(tokens, "tokens", vocab_size)  # (B, n)
    d_x = check_ndim(as_float(d_x, "d_x"), "d_x", "(B, n, d) with 3 dimensions", 3, 3)
    check_shape(d_x, "d_x", tokens.shape + d_x.shape[-1:], "(B, n, d)", "B and n from tokens")
    one_hot = tokens.reshape(-1)[:, None] == np.arange(vocab_size)  # (B * n, V)
    return one_hot.astype(d_x.dtype).T @ d_x.reshape(one_hot.shape[0], -1)  # (V, d)


BLOCK_KEYS = ("W_q", "W_k", "W_v", "W_o", "W1", "b1", "W2", "b2", "gamma1", "beta1", "gamma2", "beta2")


def encoder_block_forward(x, mha, p, mask=None):
    """The encoder block's forward (the kernels of :mod:`attn.encoder`, as ``attn.encoder._encoder_block``),
    keeping its intermediates for :func:`encoder_block_backward`. Its inputs are the model's: not checked.

    Parameters
    ----------
    x : ndarray, shape (..., n, d_model)
    mha : MultiHeadAttention
    p : dict
        ``W1, b1, W2, b2, gamma1, beta1, gamma2, beta2`` (``BLOCK_KEYS[4:]``).
    mask : ndarray of bool, shape (..., n, n), optional

    Returns
    -------
    out : ndarray, shape (..., n, d_model)
    cache : dict
        ``x``, ``z1 = x + MHA(x)``, ``h``, ``z2 = h + FFN(h)`` (all (..., n, d_model)), the attention
        ``weights`` (..., h, n, n), ``mha``, the parameters ``p`` and ``eps``.
    """
    attended, weights = mha._forward(x, x, x, mask)  # (..., n, d_model), (..., h, n, n)
    z1 = x + attended  # (..., n, d_model)
    h = _layer_norm(z1, p["gamma1"], p["beta1"])  # (..., n, d_model)
    z2 = h + _ffn(h, p["W1"], p["b1"], p["W2"], p["b2"])  # (..., n, d_model)
    out = _layer_norm(z2, p["gamma2"], p["beta2"])  # (..., n, d_model)
    return out, {"x": x, "z1": z1, "h": h, "z2": z2, "weights": weights, "mha": mha, "p": p, "eps": EPS}


def encoder_block_backward(d_out, cache):
    """Gradient through :func:`attn.encoder.transformer_encoder_block`.

    Parameters
    ----------
    d_out : array_like, shape (..., n, d_model)
    cache : dict from :func:`encoder_block_forward`

    Returns
    -------
    dx : ndarray, shape (..., n, d_model)
    grads : dict
        One entry per key of ``BLOCK_KEYS`` (the four attention matrices, the FFN and the norms),
        shaped like the parameter.
    """
    x, p, mha, eps = cache["x"], cache["p"], cache["mha"], cache["eps"]
    d_out = check_shape(as_float(d_out, "d_out"), "d_out", cache["z2"].shape,
                        "the shape of the block's output")
    d_z2, g_gamma2, g_beta2 = _layer_norm_backward(d_out, cache["z2"], p["gamma2"], eps)  # (..., n, d_model)
    d_h_ffn, grads = _ffn_backward(d_z2, cache["h"], p["W1"], p["b1"], p["W2"])  # (..., n, d_model)
    d_z1, g_gamma1, g_beta1 = _layer_norm_backward(d_z2 + d_h_ffn, cache["z1"], p["gamma1"], eps)
    W = (mha.W_q, mha.W_k, mha.W_v, mha.W_o)  # the model's own arrays, in its dtype
    dQ, dK, dV, g_attn = _multihead_backward(d_z1, x, x, x, cache["weights"], *W, mha.scale)  # (.., n, d) x3
    grads.update(g_attn)
    grads.update(gamma1=g_gamma1, beta1=g_beta1, gamma2=g_gamma2, beta2=g_beta2)
    return d_z1 + dQ + dK + dV, grads  # residual + the three uses of x


def softmax_cross_entropy(logits, targets, weight=None):
    r"""Mean cross-entropy of softmax predictions and its gradient with respect to the logits.

    .. math:: L = -\frac{1}{\sum_i m_i}\sum_i m_i \log p_{i, y_i}, \quad
              p_i = \operatorname{softmax}(z_i), \quad
              \frac{\partial L}{\partial z_i} = \frac{m_i}{\sum m}\,(p_i - e_{y_i})

    Parameters
    ----------
    logits : array_like, shape (..., C)
    targets : array_like of int, shape (...)
        Class indices in ``[0, C)``.
    weight : array_like of bool, shape (...), optional
        ``m``: False for positions that cost nothing (padding); they get exactly zero gradient.

    Returns
    -------
    loss : float
    d_logits : ndarray, shape (..., C)
    """
    logits = as_float(logits, "logits")
    check_ndim(logits, "logits", "(..., C) with at least 1 dimension", 1)
    targets = np.asarray(targets)
    C = logits.shape[-1]
    if targets.shape != logits.shape[:-1] or not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(f"targets has shape {targets.shape} and dtype {targets.dtype}; "
                         f"expected integers with shape (...) = {logits.shape[:-1]} from logits")
    if targets.size and (targets.min() < 0 or targets.max() >= C):
        raise ValueError(f"targets holds classes outside [0, C) with C = {C}")
    m = np.ones(targets.shape, dtype=bool) if weight is None else np.asarray(weight)
    if m.shape != targets.shape or m.dtype != bool:
        raise ValueError(f"weight has shape {m.shape} and dtype {m.dtype}; "
                         f"expected bool with shape {targets.shape}")
    dt = logits.dtype
    probs = softmax(logits)  # (..., C)
    one_hot = targets[..., None] == np.arange(C)  # (..., C)
    p_target = np.sum(probs * one_hot, axis=-1)  # (...)
    count = max(int(m.sum()), 1)
    loss = float(-np.sum(np.log(p_target + np.finfo(dt).tiny) * m) / count)
    d_logits = (probs - one_hot) * (m[..., None] / dt.type(count))  # (..., C)
    return loss, d_logits.astype(dt, copy=False)
