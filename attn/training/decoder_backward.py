r"""Backward pass of the post-norm decoder block (:mod:`attn.decoder`), written out by hand.

Built from the pieces of :mod:`attn.training.backward`, as
:func:`attn.training.backward.encoder_block_backward` is:
:func:`~attn.training.backward.layer_norm_backward`, :func:`~attn.training.backward.ffn_backward` and
:func:`~attn.training.backward.multihead_backward` (once for the causal self-attention, where the gradient
of ``y`` is ``dQ + dK + dV``, once for the cross-attention, where ``dQ`` goes to the decoder and
``dK + dV`` to the encoder's memory).

A key blocked by a mask (a future position, a padded source position) has weight exactly 0, and
everything that flows back through it is multiplied by that weight: it receives exactly zero
gradient.

Shapes: ``...`` batch dimensions, ``T`` target length, ``S`` source length, ``h`` heads.
"""
from __future__ import annotations

from .._checks import as_float, check_shape
from .backward import _ffn_backward, _layer_norm_backward, _multihead_backward

ATTENTION_KEYS = ("W_q", "W_k", "W_v", "W_o")


def decoder_block_backward(d_out, cache):
    """Gradient through :func:`attn.decoder.transformer_decoder_block`.

    Parameters
    ----------
    d_out : array_like, shape (..., T, d_model)
    cache : dict from :func:`attn.decoder.transformer_decoder_block` with ``return_cache=True``

    Returns
    -------
    dy : ndarray, shape (..., T, d_model)
    d_memory : ndarray, shape (..., S, d_model)
    grads : dict
        ``self.W_q .. self.W_o``, ``cross.W_q .. cross.W_o`` and one entry per key of
        ``attn.decoder.DECODER_KEYS``, shaped like the parameter.
    """
    p, eps, y, memory = cache["p"], cache["eps"], cache["y"], cache["memory"]
    d_out = check_shape(as_float(d_out, "d_out"), "d_out", cache["z3"].shape, "the shape of the output")
    cross, own = cache["cross_mha"], cache["self_mha"]
    d_z3, g_gamma3, g_beta3 = _layer_norm_backward(d_out, cache["z3"], p["gamma3"], eps)  # (..., T, d_model)
    d_h2_ffn, grads = _ffn_backward(d_z3, cache["h2"], p["W1"], p["b1"], p["W2"])  # (..., T, d_model)
    d_z2, g_gamma2, g_beta2 = _layer_norm_backward(d_z3 + d_h2_ffn, cache["z2"], p["gamma2"], eps)
    dQ, dK, dV, g_cross = _multihead_backward(d_z2, cache["h1"], memory, memory, cache["cross_weights"],
                                              cross.W_q, cross.W_k, cross.W_v, cross.W_o, cross.scale)
    d_z1, g_gamma1, g_beta1 = _layer_norm_backward(d_z2 + dQ, cache["z1"], p["gamma1"], eps)  # (..., T, d)
    dQs, dKs, dVs, g_self = _multihead_backward(d_z1, y, y, y, cache["self_weights"],
                                                own.W_q, own.W_k, own.W_v, own.W_o, own.scale)
    grads.update({f"self.{k}": g_self[k] for k in ATTENTION_KEYS})
    grads.update({f"cross.{k}": g_cross[k] for k in ATTENTION_KEYS})
    grads.update(gamma1=g_gamma1, beta1=g_beta1, gamma2=g_gamma2, beta2=g_beta2)
    grads.update(gamma3=g_gamma3, beta3=g_beta3)
    return d_z1 + dQs + dKs + dVs, dK + dV, grads  # residual + the three uses of y; memory is K and V
