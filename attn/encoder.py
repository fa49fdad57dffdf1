r"""Layer normalisation, the position-wise feed-forward network and the encoder block.

The block is the original *post-norm* form of Vaswani et al. (2017):

.. math::
   h = \operatorname{LN}(x + \operatorname{MHA}(x, x, x)), \qquad
   \text{out} = \operatorname{LN}(h + \operatorname{FFN}(h))

Shapes: ``d_model`` model width, ``d_ff`` hidden width of the FFN, ``n``
sequence length, ``...`` any batch dimensions.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float, check_dim, check_ndim, check_shape, check_type, positive_number
from .multihead import MultiHeadAttention


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5, eps_in_sqrt: bool = True) -> np.ndarray:
    r"""Layer normalisation over the last axis (Ba et al., 2016).

    .. math:: \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,
              \quad \mu = \tfrac{1}{d}\sum_j x_j,\;
              \sigma^2 = \tfrac{1}{d}\sum_j (x_j - \mu)^2

    The variance is the biased one (divide by ``d``) and, by default, ``eps``
    sits inside the square root, exactly as ``torch.nn.LayerNorm``. With
    ``eps_in_sqrt=False`` the row is divided by the standard deviation plus
    ``eps``, :math:`(x - \mu) / (\sigma + \varepsilon)`, the form some course
    statements write; for :math:`\varepsilon \ll \sigma^2` the two differ by a relative amount of
    about :math:`|\varepsilon / \sigma - \varepsilon / (2\sigma^2)|`.

    Parameters
    ----------
    x : array_like, shape (..., d)
    gamma : array_like, shape (d,), optional
        Scale (default: ones).
    beta : array_like, shape (d,), optional
        Shift (default: zeros).
    eps : float
        Positive constant added to the variance (to the standard deviation
        when ``eps_in_sqrt`` is False).
    eps_in_sqrt : bool
        True: divide by :math:`\sqrt{\sigma^2 + \varepsilon}`; False: by
        :math:`\sigma + \varepsilon`.

    Returns
    -------
    ndarray, shape (..., d)
        ``gamma`` times the normalised row plus ``beta``; the normalised row has mean 0 and
        variance :math:`\sigma^2 / (\sigma^2 + \varepsilon)` (or
        :math:`\sigma^2 / (\sigma + \varepsilon)^2`). A constant row maps to ``beta``.
    """
    x = check_ndim(as_float(x, "x"), "x", "(..., d) with at least 1 dimension", 1)  # (..., d)
    if not isinstance(eps_in_sqrt, (bool, np.bool_)):
        raise ValueError(f"eps_in_sqrt must be True or False, got {eps_in_sqrt!r}")
    d, dtype = x.shape[-1], x.dtype  # float32 stays float32
    eps = dtype.type(positive_number(eps, "eps"))  # scalar
    gamma = np.ones(d, dtype) if gamma is None else as_float(gamma, "gamma").astype(dtype, copy=False)  # (d,)
    beta = np.zeros(d, dtype) if beta is None else as_float(beta, "beta").astype(dtype, copy=False)  # (d,)
    check_shape(gamma, "gamma", (d,), "(d,)", "the last dimension of x")
    check_shape(beta, "beta", (d,), "(d,)", "the last dimension of x")
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean  # (..., d)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1)
    scale = np.sqrt(var + eps) if eps_in_sqrt else np.sqrt(var) + eps  # (..., 1)
    return gamma * (centred / scale) + beta  # (..., d)


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
    x = check_ndim(as_float(x, "x"), "x", "(..., d_model) with at least 1 dimension", 1)  # (..., d_model)
    d_model = x.shape[-1]
    W1 = check_ndim(as_float(W1, "W1"), "W1", "(d_model, d_ff) with 2 dimensions", 2, 2)
    check_dim(W1, "W1", 0, d_model, f"(d_model, d_ff) with d_model = {d_model} from x")
    d_ff = W1.shape[1]
    b1 = check_shape(as_float(b1, "b1"), "b1", (d_ff,), "(d_ff,)", "d_ff from W1")
    W2 = check_shape(as_float(W2, "W2"), "W2", (d_ff, d_model), "(d_ff, d_model)",
                     "d_ff from W1, d_model from x")
    b2 = check_shape(as_float(b2, "b2"), "b2", (d_model,), "(d_model,)", "d_model from x")
    W1, b1, W2, b2 = (a.astype(x.dtype, copy=False) for a in (W1, b1, W2, b2))  # in x's dtype
    hidden = np.maximum(x @ W1 + b1, x.dtype.type(0))  # (..., d_ff)
    return hidden @ W2 + b2  # (..., d_model)


def transformer_encoder_block(x, mha, W1, b1, W2, b2, mask=None, *,
                              gamma1=None, beta1=None, gamma2=None, beta2=None,
                              eps: float = 1e-5, return_cache: bool = False):
    r"""One post-norm Transformer encoder layer (no dropout).

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
    mask : ndarray of bool, optional
        True = may attend; any shape :meth:`attn.multihead.MultiHeadAttention.forward` accepts
        with ``n_q = n_k = n``.
    gamma1, beta1, gamma2, beta2 : array_like, shape (d_model,), optional
        Scale and shift of the two layer norms (default 1 and 0).
    eps : float
        Layer-norm epsilon.
    return_cache : bool
        Also return what :func:`attn.training.backward.encoder_block_backward` needs.

    Returns
    -------
    out : ndarray, shape (..., n, d_model)
    cache : dict, only if ``return_cache``
        ``x``, ``z1 = x + MHA(x)``, ``h``, ``z2 = h + FFN(h)`` (all (..., n, d_model)), the attention
        ``weights`` (..., h, n, n), ``mha``, the parameters ``p`` (by name) and ``eps``.
    """
    check_type(mha, "mha", MultiHeadAttention)
    x = check_ndim(as_float(x, "x"), "x", "(..., n, d_model) with at least 2 dimensions", 2)
    check_dim(x, "x", -1, mha.d_model, f"(..., n, d_model) with d_model = {mha.d_model} from mha")
    attended, weights = mha.forward(x, x, x, mask)  # (..., n, d_model), (..., h, n, n)
    z1 = x + attended  # (..., n, d_model)
    h = layer_norm(z1, gamma1, beta1, eps)  # (..., n, d_model)
    z2 = h + ffn(h, W1, b1, W2, b2)  # (..., n, d_model)
    out = layer_norm(z2, gamma2, beta2, eps)  # (..., n, d_model)
    if not return_cache:
        return out
    p = {"W1": W1, "b1": b1, "W2": W2, "b2": b2, "gamma1": gamma1, "beta1": beta1, "gamma2": gamma2,
         "beta2": beta2}  # the parameters by name
    return out, {"x": x, "z1": z1, "h": h, "z2": z2, "weights": weights, "mha": mha, "p": p, "eps": eps}
