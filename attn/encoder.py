r"""Layer normalisation, the position-wise feed-forward network and the encoder block.

The block is the original *post-norm* form of Vaswani et al. (2017):

.. math::
   h = \operatorname{LN}(x + \operatorname{MHA}(x, x, x)), \qquad
   \text{out} = \operatorname{LN}(h + \operatorname{FFN}(h))

Shapes: ``d_model`` model width, ``d_ff`` hidden width of the FFN, ``n``
sequence length, ``...`` any batch dimensions.

Exercise 3 of Activity 4 is here too: its setup (:func:`encoder_example`: the draws of Exercise 2,
then the FFN's) and the cosine similarity that asks whether the block's outputs are "richer" than
its inputs.
"""
from __future__ import annotations

import numpy as np

from ._checks import array, attention_mask, positive_number
from .multihead import MultiHeadAttention

EPS = 1e-5  # the epsilon of every layer norm of attn (torch.nn.LayerNorm's default)


def _layer_norm(x, gamma=1.0, beta=0.0, eps: float = EPS, eps_in_sqrt: bool = True) -> np.ndarray:
    """The kernel of :func:`layer_norm`; ``gamma`` and ``beta`` are (d,) arrays or the scalars 1 and 0."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean  # (..., d)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1), the biased variance
    scale = np.sqrt(var + eps) if eps_in_sqrt else np.sqrt(var) + eps  # (..., 1)
    return gamma * (centred / scale) + beta  # (..., d)


def layer_norm(x, gamma=None, beta=None, eps: float = EPS, eps_in_sqrt: bool = True) -> np.ndarray:
    r"""Layer normalisation over the last axis (Ba et al., 2016).

    .. math:: \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,
              \quad \mu = \tfrac{1}{d}\sum_j x_j,\;
              \sigma^2 = \tfrac{1}{d}\sum_j (x_j - \mu)^2

    The variance is the biased one (divide by ``d``) and, by default, ``eps``
    sits inside the square root, as ``torch.nn.LayerNorm``. With
    ``eps_in_sqrt=False`` the row is divided by the standard deviation plus
    ``eps``, :math:`(x - \mu) / (\sigma + \varepsilon)`, the form some course
    statements write; for :math:`\varepsilon \ll \sigma^2` the two differ by a relative amount of
    about :math:`|\varepsilon / \sigma - \varepsilon / (2\sigma^2)|`.

    Parameters
    ----------
    x : array_like, shape (..., d)
    gamma : array_like, shape (d,), optional
        Scale (default: 1).
    beta : array_like, shape (d,), optional
        Shift (default: 0).
    eps : float > 0
        Added to the variance (to the standard deviation when ``eps_in_sqrt`` is False).
    eps_in_sqrt : bool
        True: divide by :math:`\sqrt{\sigma^2 + \varepsilon}`; False: by
        :math:`\sigma + \varepsilon`.

    Returns
    -------
    ndarray, shape (..., d)
        ``gamma`` times the normalised row plus ``beta``; the normalised row has mean 0 and
        variance :math:`\sigma^2 / (\sigma^2 + \varepsilon)` (or
        :math:`\sigma^2 / (\sigma + \varepsilon)^2`). A constant row maps to ``beta`` (up to rounding).
    """
    dims = {}
    x = array(x, "x", "(..., d)", dims)  # (..., d)
    gamma = 1.0 if gamma is None else array(gamma, "gamma", "(d,)", dims)  # (d,) or 1
    beta = 0.0 if beta is None else array(beta, "beta", "(d,)", dims)  # (d,) or 0
    return _layer_norm(x, gamma, beta, positive_number(eps, "eps"), eps_in_sqrt)  # (..., d)


def _ffn(x, W1, b1, W2, b2) -> np.ndarray:
    """The kernel of :func:`ffn`."""
    hidden = np.maximum(x @ W1 + b1, 0)  # (..., d_ff): the ReLU
    return hidden @ W2 + b2  # (..., d_model)


def ffn(x, W1, b1, W2, b2) -> np.ndarray:
    r"""Position-wise feed-forward network with a ReLU.

    .. math:: \operatorname{FFN}(x) = \max(0,\; x W_1 + b_1)\, W_2 + b_2

    Parameters
    ----------
    x : array_like, shape (..., d_model)
    W1 : array_like, shape (d_model, d_ff)
    b1 : array_like, shape (d_ff,)
    W2 : array_like, shape (d_ff, d_model)
    b2 : array_like, shape (d_model,)

    Returns
    -------
    ndarray, shape (..., d_model)
        Applied to every position independently.
    """
    dims = {}
    return _ffn(array(x, "x", "(..., d_model)", dims), *_ffn_params(W1, b1, W2, b2, dims))  # x binds d_model


def _ffn_params(W1, b1, W2, b2, dims: dict):
    """The door of the FFN's parameters, against ``dims["d_model"]``; binds ``d_ff``."""
    return (array(W1, "W1", "(d_model, d_ff)", dims), array(b1, "b1", "(d_ff,)", dims),
            array(W2, "W2", "(d_ff, d_model)", dims), array(b2, "b2", "(d_model,)", dims))


def _encoder_block(x, mha, W1, b1, W2, b2, mask=None, gamma1=1.0, beta1=0.0, gamma2=1.0, beta2=0.0):
    """The kernel of :func:`transformer_encoder_block`; the training models pass their layer norms' γ, β."""
    z1 = x + mha._forward(x, x, x, mask)[0]  # (..., n, d_model)
    h = _layer_norm(z1, gamma1, beta1)  # (..., n, d_model)
    z2 = h + _ffn(h, W1, b1, W2, b2)  # (..., n, d_model)
    return _layer_norm(z2, gamma2, beta2)  # (..., n, d_model)


def transformer_encoder_block(x, mha, W1, b1, W2, b2, mask=None) -> np.ndarray:
    r"""One post-norm Transformer encoder layer (no dropout; layer norms with :math:`\gamma = 1, \beta = 0`).

    .. math::
       h = \operatorname{LN}_1(x + \operatorname{MHA}(x, x, x)), \qquad
       \text{out} = \operatorname{LN}_2(h + \operatorname{FFN}(h))

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        Token representations.
    mha : MultiHeadAttention
        Self-attention layer with width ``d_model``.
    W1, b1, W2, b2 : array_like
        FFN parameters, shapes (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,).
    mask : ndarray of bool, shape (n, n) or (..., n, n), optional
        True = may attend.

    Returns
    -------
    ndarray, shape (..., n, d_model)
    """
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"mha must be a MultiHeadAttention, got {type(mha).__name__}")
    dims = {"d_model": mha.d_model}
    x = array(x, "x", "(..., n, d_model)", dims)  # binds ..., n
    dims["n_q"] = dims["n_k"] = dims["n"]  # self-attention: the n tokens are the queries and the keys
    mask = None if mask is None else attention_mask(mask, dims)  # (n, n) or (..., n, n)
    return _encoder_block(x, mha, *_ffn_params(W1, b1, W2, b2, dims), mask)  # (..., n, d_model)


def encoder_example(seed: int = 42):
    r"""The Exercise 2 and 3 setup, drawn from NumPy's global generator after ``np.random.seed(seed)``.

    ``d_model = 8``, ``h = 2``, ``n = 5`` tokens, ``d_ff = 4 d_model``. Draw order: the attention layer
    (``W_q``, ``W_k``, ``W_v``, ``W_o``), the tokens, then the FFN weights from
    :math:`\mathcal N(0, 1/d_{in})`; the biases are zero.

    Returns
    -------
    mha : MultiHeadAttention
    X : ndarray, shape (n, d_model)
    ffn_params : tuple (W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,))
    """
    n, d_model, d_ff = 5, 8, 32
    np.random.seed(seed)  # noqa: NPY002 -- the activity fixes the global seed
    mha = MultiHeadAttention(d_model, num_heads=2)  # W_q, W_k, W_v, W_o
    X = np.random.randn(n, d_model)  # noqa: NPY002  (n, d_model)
    W1 = np.random.randn(d_model, d_ff) / np.sqrt(d_model)  # noqa: NPY002  (d_model, d_ff)
    W2 = np.random.randn(d_ff, d_model) / np.sqrt(d_ff)  # noqa: NPY002  (d_ff, d_model)
    return mha, X, (W1, np.zeros(d_ff), W2, np.zeros(d_model))


def cosine_similarity(A) -> np.ndarray:
    r"""Cosine similarity between every two rows of ``A`` (Exercise 3).

    .. math:: S_{ij} = \frac{a_i \cdot a_j}{\lVert a_i \rVert\, \lVert a_j \rVert}

    Parameters
    ----------
    A : array_like, shape (n, d)
        No zero row (its direction is undefined).

    Returns
    -------
    ndarray, shape (n, n)
        Symmetric, ones on the diagonal (to rounding); 1 for rows in the same direction, 0 for
        orthogonal rows, -1 for opposite rows.
    """
    A = array(A, "A", "(n, d)", {})
    norms = np.linalg.norm(A, axis=-1, keepdims=True)  # (n, 1)
    if not norms.all():
        raise ValueError(f"A has a zero row (row {int(np.argmin(norms))}): its direction is undefined")
    unit = A / norms  # (n, d): every row of length 1
    return unit @ unit.T  # (n, n)


def mean_similarity(M) -> float:
    """Mean cosine similarity between distinct rows of ``M`` (n, d), n >= 2: the off-diagonal mean of
    :func:`cosine_similarity` ``(M)``, the "mais ricas?" measure of Exercise 3 and of the oral-exam page."""
    M = array(M, "M", "(n, d)", {})  # (n, d)
    if len(M) < 2:
        raise ValueError(f"M has shape {M.shape}; expected (n, d) with n >= 2")
    S = cosine_similarity(M)  # (n, n)
    return float(S[~np.eye(len(S), dtype=bool)].mean())  # the n (n - 1) pairs i != j
