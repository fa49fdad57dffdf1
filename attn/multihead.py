r"""Multi-head attention built on :func:`attn.core.scaled_dot_product_attention`.

.. math::
   \operatorname{head}_i = \operatorname{Attention}(Q W_Q^i,\; K W_K^i,\; V W_V^i), \qquad
   \operatorname{MHA}(Q, K, V) = [\operatorname{head}_1; \dots; \operatorname{head}_h]\, W^O

Shape symbols used below: ``d_model`` model width, ``h`` number of heads
(``num_heads``), ``d_k = d_model // h`` head width, ``n_q`` number of
queries, ``n_k`` number of keys / values, ``...`` any batch dimensions,
identical for ``Q``, ``K`` and ``V``.

There are no biases, as in the activity's description (and in
``torch.nn.MultiheadAttention(bias=False)``). Every head is computed in one
call to the core, batched over a head axis placed just before ``(n, d_k)``.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_bool_mask, as_float, check_ndim, check_qkv, check_shape, positive_int, shape_str
from .core import scaled_dot_product_attention


def _head_width(d_model, num_heads) -> int:
    d_model = positive_int(d_model, "d_model")
    num_heads = positive_int(num_heads, "num_heads")
    if d_model % num_heads:
        raise ValueError(
            f"d_model = {d_model} is not divisible by num_heads = {num_heads}; "
            "d_k = d_model / num_heads must be an integer"
        )
    return d_model // num_heads


def project_heads(x, W) -> np.ndarray:
    r"""Per-head projection :math:`x W^i` for every head ``i`` at once.

    Parameters
    ----------
    x : ndarray, shape (..., n, d_model)
    W : ndarray, shape (h, d_model, d_k)

    Returns
    -------
    ndarray, shape (..., h, n, d_k)
    """
    return np.einsum("...nd,hdk->...hnk", x, W, optimize=True)  # (..., h, n, d_k)


def _standard_normal(rng, shape):
    """Draw from ``rng``: None = NumPy's global generator (``np.random.seed``), int = seed, or a generator."""
    if rng is None:
        return np.random.standard_normal(shape)  # noqa: NPY002 -- deliberate: the activity seeds np.random
    return rng.standard_normal(shape)


class MultiHeadAttention:
    r"""Multi-head attention with per-head projections and an output projection.

    Parameters
    ----------
    d_model : int
        Width of the inputs and of the output.
    num_heads : int
        Number of heads ``h``; must divide ``d_model``.
    rng : None, int, numpy.random.Generator or numpy.random.RandomState, optional
        Source of the random initial weights, drawn in the order ``W_q``,
        ``W_k``, ``W_v``, ``W_o`` from :math:`\mathcal N(0, 1/d_{model})`
        (variance-preserving for unit-variance inputs).

        * ``None``: NumPy's *global* generator, so ``np.random.seed(42)``
          right before the constructor makes the weights reproducible;
        * an ``int``: the seed of a fresh ``np.random.default_rng(rng)``;
        * a generator object: used as is (its state advances).
    scale : float > 0, optional
        Factor of every head's scores (see
        :func:`attn.core.scaled_dot_product_attention`); default
        :math:`1/\sqrt{d_k}`, ``1.0`` for unscaled dot products.

    Notes
    -----
    The weights are plain attributes (they may be reassigned; shapes are
    re-checked on every call):

    * ``W_q``, ``W_k``, ``W_v``: shape (h, d_model, d_k); ``W_q[i]`` is
      :math:`W_Q^i`, the query projection of head ``i``;
    * ``W_o``: shape (d_model, d_model), the output projection :math:`W^O`;
      rows ``i*d_k:(i+1)*d_k`` act on head ``i``;
    * ``d_model``, ``num_heads``, ``d_k``: ints; ``scale``: None or a float.

    Raises
    ------
    ValueError
        If ``d_model`` is not divisible by ``num_heads`` or either is not a
        positive integer.

    See Also
    --------
    MultiHeadAttention.from_weights : build it from given matrices.
    """

    def __init__(self, d_model: int, num_heads: int, rng=None, scale=None):
        d_k = _head_width(d_model, num_heads)
        self.d_model, self.num_heads, self.d_k = int(d_model), int(num_heads), d_k
        self.scale = scale  # factor of the scores; None: 1/sqrt(d_k), checked by the core on every call
        if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
            rng = np.random.default_rng(int(rng))
        d, h, init_std = self.d_model, self.num_heads, 1.0 / np.sqrt(self.d_model)  # N(0, 1/d_model)
        self.W_q = _standard_normal(rng, (h, d, d_k)) * init_std  # (h, d_model, d_k)
        self.W_k = _standard_normal(rng, (h, d, d_k)) * init_std  # (h, d_model, d_k)
        self.W_v = _standard_normal(rng, (h, d, d_k)) * init_std  # (h, d_model, d_k)
        self.W_o = _standard_normal(rng, (d, d)) * init_std  # (d_model, d_model)

    @classmethod
    def from_weights(cls, W_q, W_k, W_v, W_o, scale=None) -> "MultiHeadAttention":
        r"""Build the layer from explicit matrices (copied, no random draw).

        Parameters
        ----------
        W_q, W_k, W_v : array_like, shape (h, d_model, d_k)
            Per-head projections, with ``d_k = d_model / h``.
        W_o : array_like, shape (d_model, d_model)
        scale : float > 0, optional
            Factor of the scores (default :math:`1/\sqrt{d_k}`).

        Returns
        -------
        MultiHeadAttention
        """
        W_q = as_float(W_q, "W_q")
        check_ndim(W_q, "W_q", "(h, d_model, d_k) with 3 dimensions", 3, 3)
        h, d_model, d_k = W_q.shape
        if h * d_k != d_model:
            raise ValueError(
                f"W_q has shape {shape_str(W_q.shape)}; expected (h, d_model, d_k) with "
                f"d_k = d_model / h = {d_model} / {h}"
            )
        layer = cls.__new__(cls)
        layer.d_model, layer.num_heads, layer.d_k, layer.scale = d_model, h, d_k, scale
        layer.W_q = W_q.copy()
        for name, W in (("W_k", W_k), ("W_v", W_v)):
            W = as_float(W, name)
            check_shape(W, name, (h, d_model, d_k), "(h, d_model, d_k)", "the shape of W_q")
            setattr(layer, name, W.copy())
        W_o = as_float(W_o, "W_o")
        check_shape(W_o, "W_o", (d_model, d_model), "(d_model, d_model)", "d_model from W_q")
        layer.W_o = W_o.copy()
        return layer

    def __repr__(self) -> str:
        scale = "" if self.scale is None else f", scale={self.scale}"
        return (f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}, "
                f"d_k={self.d_k}{scale})")

    def check_weights(self):
        """Re-validate the weights (they are plain attributes and may have been reassigned)."""
        h, d, d_k = self.num_heads, self.d_model, self.d_k
        for name in ("W_q", "W_k", "W_v"):
            check_shape(np.asarray(getattr(self, name)), name, (h, d, d_k), "(h, d_model, d_k)")
        check_shape(np.asarray(self.W_o), "W_o", (d, d), "(d_model, d_model)")

    def head_outputs(self, Q, K, V, mask=None):
        r"""Per-head attention, before concatenation and :math:`W^O`.

        Parameters
        ----------
        Q : array_like, shape (..., n_q, d_model)
        K : array_like, shape (..., n_k, d_model)
        V : array_like, shape (..., n_k, d_model)
        mask : ndarray of bool, optional
            True = the query may attend to the key. Accepted shapes:

            * ``(n_q, n_k)``: the same mask for every batch element and head;
            * ``(..., n_q, n_k)`` (exactly the batch of ``Q``): the same mask
              for every head;
            * ``(..., h, n_q, n_k)``: one mask per head.

        Returns
        -------
        heads : ndarray, shape (..., h, n_q, d_k)
            :math:`\operatorname{head}_i` for every head ``i``.
        weights : ndarray, shape (..., h, n_q, n_k)
            Attention weights of every head.
        """
        self.check_weights()
        Q, K, V = check_qkv(Q, K, V, d_model=self.d_model)  # (..., n_q, d_model), (..., n_k, d_model) x 2
        batch, h, n_q, n_k = Q.shape[:-2], self.num_heads, Q.shape[-2], K.shape[-2]
        if mask is not None:
            mask = as_bool_mask(mask, shapes={"(n_q, n_k)": (n_q, n_k), "(..., n_q, n_k)": batch + (n_q, n_k),
                                              "(..., h, n_q, n_k)": batch + (h, n_q, n_k)})
            if mask.shape == batch + (n_q, n_k):
                mask = mask[..., None, :, :]  # (..., 1, n_q, n_k): the same mask for every head
            mask = np.broadcast_to(mask, batch + (h, n_q, n_k))  # (..., h, n_q, n_k)
        dtype = np.result_type(Q, K, V)  # float32 only if all three are float32
        Q, K, V = (X.astype(dtype, copy=False) for X in (Q, K, V))  # the three in that dtype
        q = project_heads(Q, np.asarray(self.W_q, dtype=dtype))  # (..., h, n_q, d_k)
        k = project_heads(K, np.asarray(self.W_k, dtype=dtype))  # (..., h, n_k, d_k)
        v = project_heads(V, np.asarray(self.W_v, dtype=dtype))  # (..., h, n_k, d_k)
        return self.attend(q, k, v, mask)  # (..., h, n_q, d_k), (..., h, n_q, n_k)

    def attend(self, q, k, v, mask=None):
        r"""Every head's attention on already projected queries, keys and values, with this layer's ``scale``.

        The one place where the layer calls :func:`attn.core.scaled_dot_product_attention`: the full
        forward and the cached decoder step (:func:`attn.decoder.decoder_block_step`) both go through it.

        Parameters
        ----------
        q : ndarray, shape (..., h, n_q, d_k)
        k, v : ndarray, shape (..., h, n_k, d_k)
        mask : ndarray of bool, shape (n_q, n_k) or (..., h, n_q, n_k), optional

        Returns
        -------
        heads : ndarray, shape (..., h, n_q, d_k)
        weights : ndarray, shape (..., h, n_q, n_k)
        """
        return scaled_dot_product_attention(q, k, v, mask=mask, scale=self.scale)  # heads, weights

    def concat_heads(self, heads) -> np.ndarray:
        r"""Concatenate head outputs along the feature axis: :math:`[\operatorname{head}_1; \dots]`.

        Parameters
        ----------
        heads : array_like, shape (..., h, n_q, d_k)

        Returns
        -------
        ndarray, shape (..., n_q, h * d_k) = (..., n_q, d_model)
            Columns ``i*d_k:(i+1)*d_k`` hold head ``i``.
        """
        heads = check_ndim(as_float(heads, "heads"), "heads",
                           "(..., h, n_q, d_k) with at least 3 dimensions", 3)
        h, d_k = self.num_heads, self.d_k
        check_shape(heads, "heads", heads.shape[:-3] + (h, heads.shape[-2], d_k),
                    f"(..., h, n_q, d_k) with h = {h}, d_k = {d_k}")  # (..., h, n_q, d_k)
        moved = np.moveaxis(heads, -3, -2)  # (..., n_q, h, d_k)
        merged = moved.shape[:-2] + (self.d_model,)  # d_model = h * d_k
        return moved.reshape(merged)  # (..., n_q, d_model)

    def forward(self, Q, K, V, mask=None):
        r"""Project, attend per head, concatenate, project the output.

        Parameters
        ----------
        Q : array_like, shape (..., n_q, d_model)
        K : array_like, shape (..., n_k, d_model)
        V : array_like, shape (..., n_k, d_model)
        mask : ndarray of bool, optional
            True = may attend; shape ``(n_q, n_k)``, ``(..., n_q, n_k)`` or
            ``(..., h, n_q, n_k)`` (see :meth:`MultiHeadAttention.head_outputs`).

        Returns
        -------
        output : ndarray, shape (..., n_q, d_model)
            :math:`[\operatorname{head}_1; \dots; \operatorname{head}_h] W^O`.
            float32 inputs give float32 output.
        weights : ndarray, shape (..., h, n_q, n_k)
            Attention weights of every head.
        """
        heads, weights = self.head_outputs(Q, K, V, mask)  # (..., h, n_q, d_k)
        concat = self.concat_heads(heads)  # (..., n_q, d_model)
        W_o = np.asarray(self.W_o, dtype=concat.dtype)  # (d_model, d_model)
        output = concat @ W_o  # (..., n_q, d_model)
        return output, weights  # weights: (..., h, n_q, n_k)

    __call__ = forward
