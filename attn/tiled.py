r"""Tiled attention with an online softmax: the result of :func:`attn.core.scaled_dot_product_attention`,
holding at most one ``tile_q × tile_k`` block of scores at a time, never the whole ``n_q × n_k`` matrix
unless one tile covers it (Rabe & Staats, 2021; Dao et al., 2022).

The queries are cut into tiles of ``tile_q`` rows and the keys into tiles of ``tile_k`` rows. For one
query tile, the key tiles are visited in order, and three running quantities per query row carry
everything the softmax needs:

* ``m``, the largest score seen so far (the max that the stable softmax subtracts);
* ``l`` (ℓ), the sum of ``exp(score - m)`` over the keys seen so far;
* ``acc``, the sum of ``exp(score - m) * v`` over the same keys: the output, not yet divided by ℓ.

When a new key tile raises the maximum from ``m`` to ``m'``, everything summed so far was computed
against the old maximum and is multiplied by ``exp(m - m')``; after the last tile, ``acc / ℓ`` is the
attention output. Besides the inputs, the output and its two statistics per query, every array is a
tile: per batch element, at most ``tile_q × tile_k`` scores (and weights) and ``tile_q × d_v`` of the
running output. For fixed tile sizes, the memory it allocates therefore grows like ``n_q + n_k``, not
like ``n_q · n_k``; a mask, when given, is the caller's ``(n_q, n_k)`` boolean array (one byte per
entry).

The backward pass keeps the forward's ``m`` and ℓ (two numbers per query, :class:`SoftmaxStats`)
instead of the weights, and recomputes each tile of weights from them.

Masks follow the package's convention (True = may attend). A query with no allowed key keeps
``m = -inf`` and ``ℓ = 0`` and gets a zero output row, as in the dense version.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._checks import as_float, check_shape, positive_int
from .core import _checked


class SoftmaxStats(NamedTuple):
    """The two per-query statistics of the softmax that the tiled backward needs.

    ``m``, shape (..., n_q): the largest allowed score of each query, ``-inf`` when the query has no
    allowed key. ``l``, shape (..., n_q): ℓ, the sum of ``exp(score_j - m)`` over the allowed keys,
    0 when the query has no allowed key.
    """

    m: np.ndarray
    l: np.ndarray


def _tiles(n: int, size: int):
    """The slices ``0:size, size:2 size, ...`` that cover ``range(n)``; the last one may be shorter."""
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def _score_tile(Q, K, mask, scale, rows: slice, cols: slice) -> np.ndarray:
    """Scores of the query rows ``rows`` against the key rows ``cols``, ``-inf`` where the mask blocks."""
    s = Q[..., rows, :] @ np.swapaxes(K[..., cols, :], -1, -2) * scale  # (..., t_q, t_k)
    if mask is None:
        return s
    return np.where(mask[..., rows, cols], s, Q.dtype.type(-np.inf))  # (..., t_q, t_k)


def _online_softmax_step(m, l, acc, s, v):
    r"""Fold one tile of scores ``s`` and its value rows ``v`` into the running ``m``, ℓ and ``acc``.

    .. math:: m' = \max(m, \max_j s_j), \quad
              \ell' = e^{m - m'} \ell + \sum_j e^{s_j - m'}, \quad
              \text{acc}' = e^{m - m'} \text{acc} + \sum_j e^{s_j - m'} v_j

    Shapes: ``m``, ``l`` (..., t_q); ``acc`` (..., t_q, d_v); ``s`` (..., t_q, t_k), ``-inf`` where
    blocked; ``v`` (..., t_k, d_v). A row whose keys are all blocked so far keeps ``m = -inf``: it is
    shifted by 0 instead of by ``-inf``, so that no ``inf - inf`` (NaN) appears.
    """
    m_new = np.maximum(m, s.max(axis=-1))  # (..., t_q)
    shift = np.where(np.isneginf(m_new), 0, m_new)  # (..., t_q); 0 for a row with nothing allowed yet
    p = np.exp(s - shift[..., None])  # (..., t_q, t_k); exactly 0 where blocked
    alpha = np.exp(m - shift)  # (..., t_q); e^(m - m'), the rescaling of what was summed before
    l = alpha * l + p.sum(axis=-1)  # (..., t_q)
    acc = alpha[..., None] * acc + p @ v  # (..., t_q, d_v)
    return m_new, l, acc


def tiled_attention(Q, K, V, mask=None, scale=None, *, tile_q: int = 128, tile_k: int = 128):
    r"""Scaled dot-product attention computed tile by tile with an online softmax.

    Equal (up to rounding) to :func:`attn.core.scaled_dot_product_attention`, without allocating any
    array with more than ``tile_q`` query rows and ``tile_k`` key columns of scores.

    Parameters
    ----------
    Q, K, V : ndarray, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        Queries, keys and values, with the dense version's rules: the same batch dimensions ``...``,
        the same ``d_k`` for Q and K, the same ``n_k`` for K and V, no broadcasting.
    mask : ndarray of bool, shape (n_q, n_k) or (..., n_q, n_k), optional
        True = the query may attend to the key, a 2-D mask for every batch element, as in the dense
        version. Only one tile of it is read at a time.
    scale : float > 0, optional
        Factor of the scores, :math:`S = \text{scale} \cdot QK^\top`; default :math:`1/\sqrt{d_k}`.
    tile_q, tile_k : int
        Number of query rows and of key rows in a tile (the last tile may be shorter).

    Returns
    -------
    output : ndarray, shape (..., n_q, d_v)
        The attention output; a query with no allowed key gets a zero row.
    stats : SoftmaxStats
        ``m`` and ``l`` (ℓ), each of shape (..., n_q): what :func:`tiled_attention_backward` needs
        instead of the ``(..., n_q, n_k)`` weights.

    Raises
    ------
    ValueError
        On the inputs the dense version refuses (with the same messages), or a tile size that is not
        a positive integer.
    """
    Q, K, V, mask, scale = _checked(Q, K, V, mask, scale)  # the dense version's door
    tile_q, tile_k = positive_int(tile_q, "tile_q"), positive_int(tile_k, "tile_k")
    batch, (n_q, d_k), n_k = Q.shape[:-2], Q.shape[-2:], K.shape[-2]
    dtype = np.result_type(Q, K, V)  # float32 only if all three are float32
    Q, K, V = (X.astype(dtype, copy=False) for X in (Q, K, V))  # the three in that dtype
    if scale is None:
        scale = 1 / math.sqrt(d_k)  # the default of the dense version
    scale = dtype.type(scale)  # scalar, in the inputs' dtype
    if mask is not None:
        mask = np.broadcast_to(mask, batch + (n_q, n_k))  # (..., n_q, n_k): a 2-D mask serves every batch
    out = np.empty(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)  # (..., n_q, d_v)
    m_all = np.empty(Q.shape[:-1], dtype=Q.dtype)  # (..., n_q)
    l_all = np.empty_like(m_all)  # (..., n_q)
    for rows in _tiles(Q.shape[-2], tile_q):
        m = np.full(m_all[..., rows].shape, -np.inf, dtype=Q.dtype)  # (..., t_q): nothing seen yet
        l = np.zeros_like(m)  # (..., t_q)
        acc = np.zeros_like(out[..., rows, :])  # (..., t_q, d_v)
        for cols in _tiles(K.shape[-2], tile_k):
            s = _score_tile(Q, K, mask, scale, rows, cols)  # (..., t_q, t_k)
            m, l, acc = _online_softmax_step(m, l, acc, s, V[..., cols, :])  # (..., t_q), (..., t_q, d_v)
        l_safe = np.where(l > 0, l, 1)  # (..., t_q); ℓ = 0: no allowed key, and acc = 0
        out[..., rows, :] = acc / l_safe[..., None]  # (..., t_q, d_v)
        m_all[..., rows], l_all[..., rows] = m, l  # (..., t_q) each
    return out, SoftmaxStats(m_all, l_all)  # (..., n_q, d_v), ((..., n_q), (..., n_q))


def tiled_attention_backward(d_out, Q, K, V, output, stats, mask=None, scale=None, *, tile_q: int = 128,
                             tile_k: int = 128):
    r"""Gradient through :func:`tiled_attention`, tile by tile, without the stored weights.

    Each tile of weights is recomputed from the scores and the forward's statistics,
    :math:`A_{ij} = e^{S_{ij} - m_i} / \ell_i`; with :math:`D_i = \sum_j A_{ij}\,dA_{ij} = dO_i \cdot O_i`:

    .. math:: dV = A^\top dO, \quad dA = dO\, V^\top, \quad dS = A \odot (dA - D),
              \quad dQ = c\, dS\, K, \quad dK = c\, dS^\top Q

    the formulas of :func:`attn.training.backward.attention_backward`, summed over tiles.

    Parameters
    ----------
    d_out : array_like, shape (..., n_q, d_v)
        Gradient of the loss with respect to the forward's output.
    Q, K, V : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        The forward's inputs.
    output : array_like, shape (..., n_q, d_v)
        The output returned by the forward.
    stats : SoftmaxStats
        The statistics returned by the forward (``m`` and ``l``, each of shape (..., n_q)).
    mask : ndarray of bool, shape (n_q, n_k) or (..., n_q, n_k), optional
        The mask given to the forward.
    scale : float > 0, optional
        The forward's ``scale`` (:math:`c` above; default :math:`1/\sqrt{d_k}`).
    tile_q, tile_k : int
        Tile sizes (they need not be those of the forward).

    Returns
    -------
    dQ : ndarray, shape (..., n_q, d_k)
    dK : ndarray, shape (..., n_k, d_k)
    dV : ndarray, shape (..., n_k, d_v)
    """
    Q, K, V, mask, scale = _checked(Q, K, V, mask, scale)  # the dense version's door
    tile_q, tile_k = positive_int(tile_q, "tile_q"), positive_int(tile_k, "tile_k")
    batch, (n_q, d_k), n_k = Q.shape[:-2], Q.shape[-2:], K.shape[-2]
    dtype = np.result_type(Q, K, V)  # float32 only if all three are float32
    Q, K, V = (X.astype(dtype, copy=False) for X in (Q, K, V))  # the three in that dtype
    if scale is None:
        scale = 1 / math.sqrt(d_k)  # the default of the dense version
    scale = dtype.type(scale)  # scalar, in the inputs' dtype
    if mask is not None:
        mask = np.broadcast_to(mask, batch + (n_q, n_k))  # (..., n_q, n_k): a 2-D mask serves every batch
    if not (isinstance(stats, tuple) and len(stats) == 2):
        raise ValueError(f"stats must be the pair (m, l) returned by tiled_attention, "
                         f"got {type(stats).__name__}")
    rows, out_shape = Q.shape[:-1], Q.shape[:-1] + V.shape[-1:]  # (..., n_q), (..., n_q, d_v)
    d_out = check_shape(as_float(d_out, "d_out"), "d_out", out_shape, "(..., n_q, d_v)", "from Q and V")
    output = check_shape(as_float(output, "output"), "output", out_shape, "(..., n_q, d_v)", "from Q and V")
    m = as_float(stats[0], "stats.m", allow_neg_inf=True)  # -inf: a query with no allowed key
    check_shape(m, "stats.m", rows, "(..., n_q)", "from Q and V")
    l = check_shape(as_float(stats[1], "stats.l"), "stats.l", rows, "(..., n_q)", "from Q and V")
    d_out, output, m, l = (X.astype(dtype, copy=False) for X in (d_out, output, m, l))  # in Q's dtype
    shift = np.where(np.isneginf(m), 0, m)  # (..., n_q); as in the forward, 0 for a query with no key
    inv_l = np.divide(1, l, out=np.zeros_like(l), where=l > 0)  # (..., n_q); 0 for a query with no key
    D = np.sum(d_out * output, axis=-1)  # (..., n_q)
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for cols in _tiles(K.shape[-2], tile_k):
        for rows in _tiles(Q.shape[-2], tile_q):
            s = _score_tile(Q, K, mask, scale, rows, cols)  # (..., t_q, t_k)
            a = np.exp(s - shift[..., rows, None]) * inv_l[..., rows, None]  # (..., t_q, t_k): the weights
            dV[..., cols, :] += np.swapaxes(a, -1, -2) @ d_out[..., rows, :]  # (..., t_k, d_v)
            da = d_out[..., rows, :] @ np.swapaxes(V[..., cols, :], -1, -2)  # (..., t_q, t_k)
            ds = a * (da - D[..., rows, None]) * scale  # (..., t_q, t_k); through S = scale * Q K^T
            dQ[..., rows, :] += ds @ K[..., cols, :]  # (..., t_q, d_k)
            dK[..., cols, :] += np.swapaxes(ds, -1, -2) @ Q[..., rows, :]  # (..., t_k, d_k)
    return dQ, dK, dV
