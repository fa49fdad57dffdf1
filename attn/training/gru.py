r"""A batched GRU with its backward pass written out, in ``torch.nn.GRU``'s layout.

Gate equations (gates stacked in the order r, z, n, exactly as PyTorch does):

.. math::
    r &= \sigma(W_{ir} x + b_{ir} + W_{hr} h + b_{hr}) \\
    z &= \sigma(W_{iz} x + b_{iz} + W_{hz} h + b_{hz}) \\
    n &= \tanh(W_{in} x + b_{in} + r \odot (W_{hn} h + b_{hn})) \\
    h' &= (1 - z) \odot n + z \odot h

``W_ih`` has shape (3H, D) and ``W_hh`` shape (3H, H), rows ``[0:H]`` for r,
``[H:2H]`` for z and ``[2H:3H]`` for n; ``b_hn`` sits *inside* the reset
product. A weight set is a dict with keys ``W_ih, W_hh, b_ih, b_hh`` so that
it can be copied into ``torch.nn.GRU`` as ``weight_ih_l0`` etc.

The input projection ``x W_ih^T + b_ih`` of a whole sequence is one matrix
product done before the time loop; the cell works on those projected gates.

Shapes: ``T`` time steps, ``B`` batch, ``D`` input size, ``H`` hidden size.
Sequences are time-major, ``(T, B, ...)``, like ``torch.nn.GRU`` with
``batch_first=False``.
"""
from __future__ import annotations

import numpy as np

from .._checks import as_bool_mask, as_float, check_ndim, check_shape

GRU_KEYS = ("W_ih", "W_hh", "b_ih", "b_hh")


def init_gru(input_size: int, hidden_size: int, rng: np.random.Generator, dtype=np.float32) -> dict:
    r"""GRU weights drawn like PyTorch's default: :math:`U(-1/\sqrt{H}, 1/\sqrt{H})`.

    Returns
    -------
    dict with ``W_ih`` (3H, D), ``W_hh`` (3H, H), ``b_ih`` (3H,), ``b_hh`` (3H,)
    """
    bound = 1.0 / np.sqrt(hidden_size)
    shapes = {"W_ih": (3 * hidden_size, input_size), "W_hh": (3 * hidden_size, hidden_size),
              "b_ih": (3 * hidden_size,), "b_hh": (3 * hidden_size,)}
    return {k: rng.uniform(-bound, bound, size=s).astype(dtype) for k, s in shapes.items()}


def cell_forward(x_gates, h, W_hh, b_hh):
    r"""One GRU step from already projected inputs (no validation; used in loops).

    Parameters
    ----------
    x_gates : ndarray, shape (B, 3H)
        ``x W_ih^T + b_ih``.
    h : ndarray, shape (B, H)
        Previous state.
    W_hh : ndarray, shape (3H, H)
    b_hh : ndarray, shape (3H,)

    Returns
    -------
    h_new : ndarray, shape (B, H)
    cache : tuple
        ``(h, r, z, n, hn)`` with ``hn = W_hn h + b_hn``, for :func:`cell_backward`.
    """
    H = h.shape[-1]
    h_gates = h @ W_hh.T  # (B, 3H)
    h_gates += b_hh
    rz = x_gates[:, : 2 * H] + h_gates[:, : 2 * H]  # (B, 2H)
    rz *= 0.5  # sigmoid(x) = (1 + tanh(x / 2)) / 2, in place: overflow-free
    np.tanh(rz, out=rz)
    rz += 1.0
    rz *= 0.5
    r, z = rz[:, :H], rz[:, H:]
    hn = h_gates[:, 2 * H:]  # (B, H)
    n = r * hn
    n += x_gates[:, 2 * H:]
    np.tanh(n, out=n)  # (B, H)
    h_new = h - n
    h_new *= z
    h_new += n  # (1 - z) n + z h
    return h_new, (h, r, z, n, hn)


def cell_backward(dh_new, cache, W_hh):
    """Backward of :func:`cell_forward` (no validation).

    Parameters
    ----------
    dh_new : ndarray, shape (B, H)
        Gradient of the loss with respect to ``h_new``.
    cache : tuple from :func:`cell_forward`
    W_hh : ndarray, shape (3H, H)

    Returns
    -------
    d_x_gates : ndarray, shape (B, 3H)
        Gradient w.r.t. ``x_gates`` (and hence ``b_ih``; ``W_ih`` follows by a product with x).
    d_h_gates : ndarray, shape (B, 3H)
        Gradient w.r.t. ``h W_hh^T + b_hh`` (gives ``W_hh`` and ``b_hh``).
    dh : ndarray, shape (B, H)
        Gradient w.r.t. the previous state ``h``.
    """
    h, r, z, n, hn = cache
    H = h.shape[-1]
    dn = dh_new * (1.0 - z)
    dz = dh_new * (h - n)
    d_x_gates = np.empty(h.shape[:-1] + (3 * H,), dtype=h.dtype)
    d_h_gates = np.empty_like(d_x_gates)
    dn_pre = dn * (1.0 - n * n)  # through tanh
    d_x_gates[:, 2 * H:] = dn_pre
    d_h_gates[:, 2 * H:] = dn_pre * r
    d_x_gates[:, :H] = dn_pre * hn * r * (1.0 - r)  # through r's sigmoid
    d_x_gates[:, H: 2 * H] = dz * z * (1.0 - z)  # through z's sigmoid
    d_h_gates[:, : 2 * H] = d_x_gates[:, : 2 * H]
    dh = dh_new * z + d_h_gates @ W_hh
    return d_x_gates, d_h_gates, dh


def _check_weights(weights, D):
    for key in GRU_KEYS:
        if key not in weights:
            raise ValueError(f"weights is missing {key!r}; expected keys {GRU_KEYS}")
    W_hh = as_float(weights["W_hh"], "W_hh")
    check_ndim(W_hh, "W_hh", "(3H, H) with 2 dimensions", 2, 2)
    H = W_hh.shape[1]
    check_shape(W_hh, "W_hh", (3 * H, H), "(3H, H)")
    W_ih = as_float(weights["W_ih"], "W_ih")
    check_shape(W_ih, "W_ih", (3 * H, D), "(3H, D)", "D from x, H from W_hh")
    b_ih = as_float(weights["b_ih"], "b_ih")
    check_shape(b_ih, "b_ih", (3 * H,), "(3H,)", "H from W_hh")
    b_hh = as_float(weights["b_hh"], "b_hh")
    check_shape(b_hh, "b_hh", (3 * H,), "(3H,)", "H from W_hh")
    return {"W_ih": W_ih, "W_hh": W_hh, "b_ih": b_ih, "b_hh": b_hh}, H


def gru_forward(x, h0, weights, mask=None):
    r"""Run a GRU over a padded batch of sequences.

    Where ``mask[t, b]`` is False (padding) the state is carried over unchanged,
    :math:`h_t = h_{t-1}`, so ``hs[-1]`` is every sequence's state at its own
    last real step.

    Parameters
    ----------
    x : ndarray, shape (T, B, D)
        Inputs, time-major.
    h0 : ndarray, shape (B, H)
        Initial state.
    weights : dict
        ``W_ih`` (3H, D), ``W_hh`` (3H, H), ``b_ih`` (3H,), ``b_hh`` (3H,).
    mask : ndarray of bool, shape (T, B), optional
        True on real steps.

    Returns
    -------
    hs : ndarray, shape (T, B, H)
        State after each step.
    cache : dict
        Everything :func:`gru_backward` needs.
    """
    x = as_float(x, "x")
    check_ndim(x, "x", "(T, B, D) with 3 dimensions", 3, 3)
    T, B, D = x.shape
    w, H = _check_weights(weights, D)
    h0 = as_float(h0, "h0")
    check_shape(h0, "h0", (B, H), "(B, H)", "B from x, H from W_hh")
    if mask is not None:
        mask = as_bool_mask(mask)
        check_shape(mask, "mask", (T, B), "(T, B)", "True = real step")
    dtype = np.result_type(x, h0, *w.values())
    x, h = x.astype(dtype, copy=False), h0.astype(dtype, copy=False)
    w = {k: v.astype(dtype, copy=False) for k, v in w.items()}

    x_gates = (x.reshape(T * B, D) @ w["W_ih"].T + w["b_ih"]).reshape(T, B, 3 * H)  # (T, B, 3H)
    hs = np.empty((T, B, H), dtype=dtype)
    caches = []
    for t in range(T):
        h_new, c = cell_forward(x_gates[t], h, w["W_hh"], w["b_hh"])
        if mask is not None:
            h_new = np.where(mask[t][:, None], h_new, h)
        caches.append(c)
        hs[t] = h = h_new
    return hs, {"x": x, "w": w, "mask": mask, "cells": caches}


def gru_backward(d_hs, cache):
    """Backward of :func:`gru_forward`.

    Parameters
    ----------
    d_hs : ndarray, shape (T, B, H)
        Gradient of the loss w.r.t. every output state (put the gradient of a
        final state into ``d_hs[-1]``).
    cache : dict from :func:`gru_forward`

    Returns
    -------
    dx : ndarray, shape (T, B, D)
    dh0 : ndarray, shape (B, H)
    grads : dict
        ``W_ih`` (3H, D), ``W_hh`` (3H, H), ``b_ih`` (3H,), ``b_hh`` (3H,).
    """
    x, w, mask, cells = cache["x"], cache["w"], cache["mask"], cache["cells"]
    T, B, D = x.shape
    H = w["W_hh"].shape[1]
    d_hs = as_float(d_hs, "d_hs")
    check_shape(d_hs, "d_hs", (T, B, H), "(T, B, H)", "from the forward pass")
    d_hs = d_hs.astype(x.dtype, copy=False)
    dxg = np.empty((T, B, 3 * H), dtype=x.dtype)
    dhg = np.empty_like(dxg)
    h_prev = np.empty((T, B, H), dtype=x.dtype)
    dh = np.zeros((B, H), dtype=x.dtype)
    for t in range(T - 1, -1, -1):
        dh = dh + d_hs[t]
        if mask is not None:
            m = mask[t][:, None]
            d_cell = np.where(m, dh, 0.0).astype(x.dtype, copy=False)
            carried = np.where(m, 0.0, dh).astype(x.dtype, copy=False)
        else:
            d_cell, carried = dh, 0.0
        dxg[t], dhg[t], dh_prev = cell_backward(d_cell, cells[t], w["W_hh"])
        h_prev[t] = cells[t][0]
        dh = dh_prev + carried
    dxg2, dhg2 = dxg.reshape(T * B, 3 * H), dhg.reshape(T * B, 3 * H)
    grads = {
        "W_ih": dxg2.T @ x.reshape(T * B, D),
        "W_hh": dhg2.T @ h_prev.reshape(T * B, H),
        "b_ih": dxg2.sum(axis=0),
        "b_hh": dhg2.sum(axis=0),
    }
    dx = (dxg2 @ w["W_ih"]).reshape(T, B, D)
    return dx, dh, grads
