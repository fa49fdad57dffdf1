r"""Single-head self-attention with learned projections: queries, keys and values from one input.

Every row of ``X`` is projected three times and the three projections go
through :func:`attn.core.scaled_dot_product_attention`:

.. math:: Q = X W_q, \quad K = X W_k, \quad V = X W_v, \qquad
          \operatorname{SelfAttention}(X) =
          \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

Shapes (symbols used in the docstrings below)
---------------------------------------------
``n``        sequence length          ``d_model``  input (embedding) size
``d_k``      query / key size         ``d_v``      value (output) size
``...``      optional batch dimensions, identical for ``X`` and ``mask``
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float, check_dim, check_ndim, check_shape, generator, positive_int
from .core import scaled_dot_product_attention


def _xavier_normal(rng, fan_in: int, fan_out: int) -> np.ndarray:
    r"""Draw a ``(fan_in, fan_out)`` float64 matrix with Xavier / Glorot normal scaling.

    .. math:: W_{ij} \sim \mathcal{N}\!\left(0, \frac{2}{\text{fan\_in} + \text{fan\_out}}\right)

    ``rng`` is what :func:`attn._checks.generator` returns.
    """
    std = np.sqrt(2.0 / (fan_in + fan_out))
    return rng.standard_normal((fan_in, fan_out)) * std


class SelfAttention:
    r"""Single-head self-attention layer (no bias, no output projection).

    .. math:: Q = X W_q,\ K = X W_k,\ V = X W_v, \qquad
              \text{output} = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

    Parameters
    ----------
    d_model : int
        Size of each input row.
    d_k : int
        Size of queries and keys.
    d_v : int
        Size of values, hence of each output row.
    rng : None, int, numpy.random.Generator or numpy.random.RandomState, optional
        Source of the Xavier-normal initial weights, drawn in the order
        ``W_q``, ``W_k``, ``W_v`` with variance
        :math:`2 / (\text{fan\_in} + \text{fan\_out})`. Same convention as
        ``attn.MultiHeadAttention``: ``None`` uses NumPy's global
        generator (``np.random.seed`` makes it reproducible), an ``int`` seeds a
        fresh ``np.random.default_rng``, a generator object is used as is.

    Notes
    -----
    The projection matrices are the properties ``W_q`` (d_model, d_k),
    ``W_k`` (d_model, d_k) and ``W_v`` (d_model, d_v). They may be replaced
    by assignment; the new array is validated (exact shape, finite, real)
    and stored as float64.
    """

    def __init__(self, d_model: int, d_k: int, d_v: int, rng=None):
        self.d_model = positive_int(d_model, "d_model")
        self.d_k = positive_int(d_k, "d_k")
        self.d_v = positive_int(d_v, "d_v")
        rng = generator(rng)
        # drawn in this order, so one seed fixes all three
        self.W_q = _xavier_normal(rng, self.d_model, self.d_k)  # (d_model, d_k)
        self.W_k = _xavier_normal(rng, self.d_model, self.d_k)  # (d_model, d_k)
        self.W_v = _xavier_normal(rng, self.d_model, self.d_v)  # (d_model, d_v)

    # -- weights: validated on assignment -------------------------------------------------------
    def _set_weight(self, name: str, value, cols: int, cols_symbol: str):
        W = as_float(value, name)
        check_shape(W, name, (self.d_model, cols), f"(d_model, {cols_symbol})")
        setattr(self, "_" + name, W.astype(np.float64))

    @property
    def W_q(self) -> np.ndarray:
        """Query projection, shape (d_model, d_k)."""
        return self._W_q

    @W_q.setter
    def W_q(self, value):
        self._set_weight("W_q", value, self.d_k, "d_k")

    @property
    def W_k(self) -> np.ndarray:
        """Key projection, shape (d_model, d_k)."""
        return self._W_k

    @W_k.setter
    def W_k(self, value):
        self._set_weight("W_k", value, self.d_k, "d_k")

    @property
    def W_v(self) -> np.ndarray:
        """Value projection, shape (d_model, d_v)."""
        return self._W_v

    @W_v.setter
    def W_v(self, value):
        self._set_weight("W_v", value, self.d_v, "d_v")

    # -- computation ----------------------------------------------------------------------------
    def project(self, X):
        r"""Project the input into queries, keys and values.

        .. math:: Q = X W_q, \quad K = X W_k, \quad V = X W_v

        Parameters
        ----------
        X : ndarray, shape (n, d_model) or (..., n, d_model)

        Returns
        -------
        Q : ndarray, shape (..., n, d_k)
        K : ndarray, shape (..., n, d_k)
        V : ndarray, shape (..., n, d_v)
            Same float dtype as ``X`` (float32 stays float32).
        """
        X = check_ndim(as_float(X, "X"), "X",
                       "(n, d_model) or (..., n, d_model) with at least 2 dimensions", 2)
        check_dim(X, "X", -1, self.d_model, f"(..., n, d_model) with d_model = {self.d_model}")
        Q = X @ self.W_q.astype(X.dtype, copy=False)  # (..., n, d_k)
        K = X @ self.W_k.astype(X.dtype, copy=False)  # (..., n, d_k)
        V = X @ self.W_v.astype(X.dtype, copy=False)  # (..., n, d_v)
        return Q, K, V

    def forward(self, X, mask=None):
        r"""Self-attention of every row of ``X`` over all rows of ``X``.

        .. math:: \text{output} = \operatorname{softmax}\!\left(
                  \frac{(X W_q)(X W_k)^\top}{\sqrt{d_k}}\right) X W_v

        Parameters
        ----------
        X : ndarray, shape (n, d_model) or (..., n, d_model)
            One row per token.
        mask : ndarray of bool, shape (n, n) or (..., n, n), optional
            ``mask[i, j]`` True = token ``i`` may attend to token ``j``
            (e.g. :func:`attn.core.causal_mask`). A 2-D mask is used for every
            batch element; any other shape must match exactly.

        Returns
        -------
        output : ndarray, shape (..., n, d_v)
        weights : ndarray, shape (..., n, n)
            Each row sums to 1 over the allowed positions; masked entries are
            exactly 0 and a row with no allowed position is all zeros.

        Raises
        ------
        ValueError
            If ``X`` is not ``(..., n, d_model)``, holds NaN/inf, or the mask
            is not boolean with a valid shape.
        """
        Q, K, V = self.project(X)  # (..., n, d_k), (..., n, d_k), (..., n, d_v)
        return scaled_dot_product_attention(Q, K, V, mask=mask)  # (..., n, d_v), (..., n, n)

    __call__ = forward

    def __repr__(self) -> str:
        return f"SelfAttention(d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v})"
