r"""The post-norm Transformer decoder block and incremental decoding with a key/value cache.

The block of Vaswani et al. (2017), in the same post-norm form as the encoder block of
:mod:`attn.encoder`:

.. math::
   h_1 = \operatorname{LN}_1(y + \operatorname{MHA}_{self}(y, y, y;\ \text{causal})), \qquad
   h_2 = \operatorname{LN}_2(h_1 + \operatorname{MHA}_{cross}(h_1, m, m;\ \text{padding})), \qquad
   \text{out} = \operatorname{LN}_3(h_2 + \operatorname{FFN}(h_2))

``y`` are the decoder's token representations, ``m`` the encoder's output (the *memory*): in the
cross-attention the queries come from the decoder, the keys and values from the encoder.

Greedy generation adds one position at a time. Under the causal mask, the representations of the
positions already generated never change, so their per-head keys and values can be kept (the
*key/value cache*) and each new token computes a single query row per layer:
:func:`decoder_block_step`. The cross-attention keys and values depend only on the memory and are
projected once per sequence (:func:`cross_attention_cache`).

Shapes: ``B`` batch, ``T`` target (decoder) length, ``S`` source (memory) length, ``d_model``,
``h`` heads, ``d_k = d_model / h``, ``d_ff``, ``...`` any batch dimensions.
"""
from __future__ import annotations

import numpy as np

from ._checks import (
    array,
    as_bool_mask,
    as_float,
    attention_mask,
    check_ndim,
    check_shape,
    check_type,
    positive_number,
)
from .core import _attention, causal_mask
from .encoder import _ffn, _ffn_params, _layer_norm, ffn, layer_norm
from .multihead import MultiHeadAttention, _concat_heads, _project_heads

DECODER_KEYS = ("W1", "b1", "W2", "b2", "gamma1", "beta1", "gamma2", "beta2", "gamma3", "beta3")


def transformer_decoder_block(y, memory, self_mha, cross_mha, W1, b1, W2, b2, self_mask=None,
                              cross_mask=None, *, gamma1=None, beta1=None, gamma2=None, beta2=None,
                              gamma3=None, beta3=None, eps: float = 1e-5, return_cache: bool = False):
    r"""One post-norm Transformer decoder layer (no dropout).

    .. math::
       h_1 = \operatorname{LN}_1(y + \operatorname{MHA}_{self}(y, y, y)), \quad
       h_2 = \operatorname{LN}_2(h_1 + \operatorname{MHA}_{cross}(h_1, m, m)), \quad
       \text{out} = \operatorname{LN}_3(h_2 + \operatorname{FFN}(h_2))

    Parameters
    ----------
    y : array_like, shape (..., T, d_model)
        Decoder token representations.
    memory : array_like, shape (..., S, d_model)
        Encoder output ``m``; same batch dimensions as ``y``.
    self_mha, cross_mha : MultiHeadAttention
        Causal self-attention and cross-attention layers, width ``d_model``.
    W1, b1, W2, b2 : array_like
        FFN parameters, shapes (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,).
    self_mask : ndarray of bool, shape (T, T) or (..., T, T), optional
        True = may attend. Default: :func:`attn.core.causal_mask` ``(T)``.
    cross_mask : ndarray of bool, optional
        True = may attend; shape (T, S) or (..., T, S), typically a key padding mask of the source
        repeated for the ``T`` queries. Default: every source position.
    gamma1, beta1, gamma2, beta2, gamma3, beta3 : array_like, shape (d_model,), optional
        Scale and shift of the three layer norms (default 1 and 0).
    eps : float
        Layer-norm epsilon.
    return_cache : bool
        Also return what :func:`attn.training.decoder_backward.decoder_block_backward` needs.

    Returns
    -------
    out : ndarray, shape (..., T, d_model)
    cache : dict, only if ``return_cache``
        ``y``, ``memory``, ``z1 = y + MHA_self``, ``h1``, ``z2 = h1 + MHA_cross``, ``h2``,
        ``z3 = h2 + FFN(h2)``, ``self_weights`` (..., h, T, T), ``cross_weights`` (..., h, T, S),
        the two layers, the parameters ``p`` (by name) and ``eps``.
    """
    check_type(self_mha, "self_mha", MultiHeadAttention)
    check_type(cross_mha, "cross_mha", MultiHeadAttention)
    if cross_mha.d_model != self_mha.d_model:
        raise ValueError(f"cross_mha has d_model = {cross_mha.d_model}; "
                         f"expected d_model = {self_mha.d_model} from self_mha")
    dims = {"d_model": self_mha.d_model}
    y = array(y, "y", "(..., T, d_model)", dims)  # binds ..., T
    memory = array(memory, "memory", "(..., S, d_model)", dims)  # same ...; binds S
    T, S = dims["T"], dims["S"]
    W1, b1, W2, b2 = _ffn_params(W1, b1, W2, b2, dims)  # (d_model, d_ff), (d_ff,), (d_ff, d), (d,)
    gamma1, beta1, gamma2, beta2, gamma3, beta3 = [  # the three layer norms; default gamma = 1, beta = 0
        default if g is None else array(g, name, "(d_model,)", dims) for name, g, default in
        zip(DECODER_KEYS[4:], (gamma1, beta1, gamma2, beta2, gamma3, beta3), (1.0, 0.0) * 3, strict=True)]
    if self_mask is None:
        self_mask = causal_mask(T)  # (T, T)
    else:
        self_mask = attention_mask(self_mask, dict(dims, n_q=T, n_k=T), "self_mask")  # (T, T), (..., T, T)
    if cross_mask is not None:
        cross_mask = attention_mask(cross_mask, dict(dims, n_q=T, n_k=S), "cross_mask")  # (T, S), (..., T, S)
    eps = positive_number(eps, "eps")
    attended, self_weights = self_mha._forward(y, y, y, self_mask)  # (..., T, d_model), (..., h, T, T)
    z1 = y + attended  # (..., T, d_model)
    h1 = _layer_norm(z1, gamma1, beta1, eps)  # (..., T, d_model)
    crossed, cross_weights = cross_mha._forward(h1, memory, memory, cross_mask)  # (..., T, d), (..., h, T, S)
    z2 = h1 + crossed  # (..., T, d_model)
    h2 = _layer_norm(z2, gamma2, beta2, eps)  # (..., T, d_model)
    z3 = h2 + _ffn(h2, W1, b1, W2, b2)  # (..., T, d_model)
    out = _layer_norm(z3, gamma3, beta3, eps)  # (..., T, d_model)
    if not return_cache:
        return out
    p = dict(zip(DECODER_KEYS, (W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, gamma3, beta3),
                 strict=True))  # the parameters by name
    return out, {"y": y, "memory": memory, "z1": z1, "h1": h1, "z2": z2, "h2": h2, "z3": z3,
                 "self_weights": self_weights, "cross_weights": cross_weights, "self_mha": self_mha,
                 "cross_mha": cross_mha, "p": p, "eps": eps}


def cross_attention_cache(memory, cross_mha) -> dict:
    """Keys and values of a cross-attention layer, projected once from the memory (not checked: the
    training model calls it on its own arrays).

    Parameters
    ----------
    memory : ndarray, shape (B, S, d_model)
    cross_mha : MultiHeadAttention

    Returns
    -------
    dict
        ``k`` and ``v``, each (B, h, S, d_k).
    """
    return {"k": _project_heads(memory, cross_mha.W_k),  # (B, h, S, d_k)
            "v": _project_heads(memory, cross_mha.W_v)}  # (B, h, S, d_k)


def empty_self_cache(batch: int, max_steps: int, mha, dtype) -> dict:
    """An empty self-attention key/value cache with room for ``max_steps`` positions (not checked).

    Returns
    -------
    dict
        ``k``, ``v``: zeros (B, h, max_steps, d_k); ``t``: 0, the number of positions filled.
    """
    shape = (batch, mha.num_heads, max_steps, mha.d_k)
    return {"k": np.zeros(shape, dtype=dtype), "v": np.zeros(shape, dtype=dtype), "t": 0}


def decoder_block_step(y_t, self_cache, cross_cache, self_mha, cross_mha, p, cross_mask, eps: float = 1e-5):
    r"""The newest position through one decoder block, reusing (and extending) the key/value cache.

    Computes for the single new row what :func:`transformer_decoder_block` computes for the last row
    of the whole prefix under the causal mask (equal to float64 rounding, for any ``scale`` of the two
    layers: both call the attention kernel ``attn.core._attention`` with the layer's ``scale``): the
    new token's key and value are appended to ``self_cache`` and its query attends to the ``t + 1``
    cached positions; the cross-attention reads the keys and values of ``cross_cache``.

    Parameters
    ----------
    y_t : array_like, shape (B, 1, d_model)
        Representation of the new position ``t`` (the block's input).
    self_cache : dict from :func:`empty_self_cache`
        Keys and values of positions ``0 .. t - 1``; updated in place (``t`` grows by one).
    cross_cache : dict from :func:`cross_attention_cache`
    self_mha, cross_mha : MultiHeadAttention
    p : dict
        ``W1, b1, W2, b2`` and ``gamma1, beta1, gamma2, beta2, gamma3, beta3`` (see ``DECODER_KEYS``).
    cross_mask : ndarray of bool, shape (B, S)
        Source key padding mask, True on real positions.
    eps : float

    Returns
    -------
    out : ndarray, shape (B, 1, d_model)
    self_weights : ndarray, shape (B, h, 1, t + 1)
        The new query's causal self-attention weights.
    cross_weights : ndarray, shape (B, h, 1, S)
        The new query's cross-attention weights.
    """
    check_type(self_mha, "self_mha", MultiHeadAttention)
    check_type(cross_mha, "cross_mha", MultiHeadAttention)
    y_t = check_ndim(as_float(y_t, "y_t"), "y_t", "(B, 1, d_model) with 3 dimensions", 3, 3)  # (B, 1, d)
    B, d, h, d_k = y_t.shape[0], self_mha.d_model, self_mha.num_heads, self_mha.d_k
    check_shape(y_t, "y_t", (B, 1, d), "(B, 1, d_model)", f"d_model = {d} from self_mha")
    t, room = self_cache["t"], self_cache["k"].shape[2]  # positions filled, positions allocated
    check_shape(self_cache["k"], "self_cache['k']", (B, h, room, d_k), "(B, h, max_steps, d_k)")
    if t >= room:
        raise ValueError(f"self_cache is full: it holds t = {t} of max_steps = {room} positions")
    S = cross_cache["k"].shape[-2]
    for key in ("k", "v"):
        check_shape(cross_cache[key], f"cross_cache['{key}']", (B, cross_mha.num_heads, S, cross_mha.d_k),
                    "(B, h, S, d_k)", "from y_t and cross_mha")
    cross_mask = as_bool_mask(cross_mask, "cross_mask", shapes={"(B, S)": (B, S)})  # (B, S)
    self_cache["k"][:, :, t:t + 1] = _project_heads(y_t, self_mha.W_k)  # (B, h, 1, d_k)
    self_cache["v"][:, :, t:t + 1] = _project_heads(y_t, self_mha.W_v)  # (B, h, 1, d_k)
    self_cache["t"] = t + 1  # (): positions now in the cache
    q = _project_heads(y_t, self_mha.W_q)  # (B, h, 1, d_k): one query row
    k, v = self_cache["k"][:, :, :t + 1], self_cache["v"][:, :, :t + 1]  # (B, h, t + 1, d_k)
    heads, self_weights = _attention(q, k, v, None, self_mha.scale)  # (B, h, 1, d_k), (B, h, 1, t + 1)
    z1 = y_t + _concat_heads(heads) @ self_mha.W_o  # (B, 1, d_model)
    h1 = layer_norm(z1, p["gamma1"], p["beta1"], eps)  # (B, 1, d_model)
    q = _project_heads(h1, cross_mha.W_q)  # (B, h, 1, d_k)
    mask = np.broadcast_to(cross_mask[:, None, None, :], (B, cross_mha.num_heads, 1, S))  # (B, h, 1, S)
    k, v = cross_cache["k"], cross_cache["v"]  # (B, h, S, d_k), projected once per sequence
    heads, cross_weights = _attention(q, k, v, mask, cross_mha.scale)  # (B, h, 1, d_k), (B, h, 1, S)
    z2 = h1 + _concat_heads(heads) @ cross_mha.W_o  # (B, 1, d_model)
    h2 = layer_norm(z2, p["gamma2"], p["beta2"], eps)  # (B, 1, d_model)
    f = ffn(h2, p["W1"], p["b1"], p["W2"], p["b2"])  # (B, 1, d_model)
    return layer_norm(h2 + f, p["gamma3"], p["beta3"], eps), self_weights, cross_weights  # (B, 1, d_model)

