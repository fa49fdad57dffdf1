r"""Multi-head attention built on the attention of :mod:`attn.core` (Exercise 2 of Activity 4).

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

from ._checks import array, attention_mask, generator, positive_int, positive_number
from .core import _attention


def _project_heads(x, W) -> np.ndarray:
    """Per-head projection :math:`x W^i` for every head ``i``: x (..., n, d_model), W (h, d_model, d_k)."""
    return np.einsum("...nd,hdk->...hnk", x, W, optimize=True)  # (..., h, n, d_k); optimize: a BLAS product


def _concat_heads(heads) -> np.ndarray:
    """The heads side by side: (..., h, n_q, d_k) -> (..., n_q, h * d_k)."""
    *batch, h, n_q, d_k = heads.shape
    moved = np.moveaxis(heads, -3, -2)  # (..., n_q, h, d_k)
    return moved.reshape(*batch, n_q, h * d_k)  # (..., n_q, d_model): the h rows of d_k side by side


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
    The weights are checked when the layer is built (here or by :meth:`from_weights`), not on every
    call: to change them, build a new layer with :meth:`from_weights`.

    * ``W_q``, ``W_k``, ``W_v``: shape (h, d_model, d_k); ``W_q[i]`` is
      :math:`W_Q^i`, the query projection of head ``i``;
    * ``W_o``: shape (d_model, d_model), the output projection :math:`W^O`;
      rows ``i*d_k:(i+1)*d_k`` act on head ``i``;
    * ``d_model``, ``num_heads``, ``d_k``: ints; ``scale``: None or a float.

    Raises
    ------
    ValueError
        If ``d_model`` is not divisible by ``num_heads``, either is not a
        positive integer, ``rng`` is none of the above, or ``scale`` is not a finite number > 0.
    """

    def __init__(self, d_model: int, num_heads: int, rng=None, scale=None):
        d, h = positive_int(d_model, "d_model"), positive_int(num_heads, "num_heads")
        if d % h:
            raise ValueError(f"d_model = {d} is not divisible by num_heads = {h} (d_k = d_model / num_heads)")
        rng, d_k, std = generator(rng), d // h, 1 / np.sqrt(d)  # weights ~ N(0, 1/d_model)
        self.W_q, self.W_k, self.W_v = rng.standard_normal((3, h, d, d_k)) * std  # 3 x (h, d_model, d_k)
        self.W_o = rng.standard_normal((d, d)) * std  # (d_model, d_model)
        self.d_model, self.num_heads, self.d_k = d, h, d_k
        self.scale = None if scale is None else positive_number(scale, "scale")  # None: 1/sqrt(d_k)

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
        dims = {}
        W_q = array(W_q, "W_q", "(h, d_model, d_k)", dims).copy()  # binds h, d_model, d_k
        h, d, d_k = dims["h"], dims["d_model"], dims["d_k"]
        if h * d_k != d:
            raise ValueError(f"W_q has shape ({h}, {d}, {d_k}); expected (h, d_model, d_k) "
                             "with d_k = d_model / h")
        layer = cls.__new__(cls)  # an instance without __init__: no random draw
        layer.W_q = W_q  # (h, d_model, d_k)
        layer.W_k = array(W_k, "W_k", "(h, d_model, d_k)", dims).copy()  # (h, d_model, d_k)
        layer.W_v = array(W_v, "W_v", "(h, d_model, d_k)", dims).copy()  # (h, d_model, d_k)
        layer.W_o = array(W_o, "W_o", "(d_model, d_model)", dims).copy()  # (d_model, d_model)
        layer.d_model, layer.num_heads, layer.d_k = d, h, d_k
        layer.scale = None if scale is None else positive_number(scale, "scale")
        return layer

    def __repr__(self) -> str:
        scale = "" if self.scale is None else f", scale={self.scale}"
        return (f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}, "
                f"d_k={self.d_k}{scale})")

    def _checked(self, Q, K, V, mask):
        """The door of :meth:`forward` and :meth:`head_outputs`: Q, K, V and the mask, checked once."""
        dims = {"d_model": self.d_model}
        Q = array(Q, "Q", "(..., n_q, d_model)", dims)  # binds ..., n_q
        K = array(K, "K", "(..., n_k, d_model)", dims)  # binds n_k
        V = array(V, "V", "(..., n_k, d_model)", dims)
        return Q, K, V, None if mask is None else attention_mask(mask, dims)  # mask 2-D or (..., n_q, n_k)

    def _heads(self, Q, K, V, mask=None):
        """The kernel of :meth:`head_outputs`: project, then every head's attention in one call."""
        q = _project_heads(Q, self.W_q)  # (..., h, n_q, d_k)
        k = _project_heads(K, self.W_k)  # (..., h, n_k, d_k)
        v = _project_heads(V, self.W_v)  # (..., h, n_k, d_k)
        mask = None if mask is None else mask[..., None, :, :]  # (1, n_q, n_k) or (..., 1, n_q, n_k)
        return _attention(q, k, v, mask, self.scale)  # (..., h, n_q, d_k), (..., h, n_q, n_k)

    def _forward(self, Q, K, V, mask=None):
        """The kernel of :meth:`forward`: heads, concatenation, output projection."""
        heads, weights = self._heads(Q, K, V, mask)  # (..., h, n_q, d_k), (..., h, n_q, n_k)
        return _concat_heads(heads) @ self.W_o, weights  # (..., n_q, d_model), (..., h, n_q, n_k)

    def head_outputs(self, Q, K, V, mask=None):
        r"""Per-head attention, before concatenation and :math:`W^O`.

        Parameters
        ----------
        Q : array_like, shape (..., n_q, d_model)
        K : array_like, shape (..., n_k, d_model)
        V : array_like, shape (..., n_k, d_model)
        mask : ndarray of bool, shape (n_q, n_k) or (..., n_q, n_k), optional
            True = the query may attend to the key; the same mask for every head (a 2-D mask also
            for every batch element).

        Returns
        -------
        heads : ndarray, shape (..., h, n_q, d_k)
            :math:`\operatorname{head}_i` for every head ``i``.
        weights : ndarray, shape (..., h, n_q, n_k)
            Attention weights of every head.
        """
        return self._heads(*self._checked(Q, K, V, mask))  # (..., h, n_q, d_k), (..., h, n_q, n_k)

    def forward(self, Q, K, V, mask=None):
        r"""Project, attend per head, concatenate, project the output.

        Parameters
        ----------
        Q : array_like, shape (..., n_q, d_model)
        K : array_like, shape (..., n_k, d_model)
        V : array_like, shape (..., n_k, d_model)
        mask : ndarray of bool, shape (n_q, n_k) or (..., n_q, n_k), optional
            True = may attend (see :meth:`head_outputs`).

        Returns
        -------
        output : ndarray, shape (..., n_q, d_model)
            :math:`[\operatorname{head}_1; \dots; \operatorname{head}_h] W^O`.
        weights : ndarray, shape (..., h, n_q, n_k)
            Attention weights of every head.
        """
        return self._forward(*self._checked(Q, K, V, mask))  # (..., n_q, d_model), (..., h, n_q, n_k)
