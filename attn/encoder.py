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

from ._checks import check_encoder_input, check_ffn_inputs, check_layer_norm_inputs
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
    statements write; the two differ by a relative amount of order
    :math:`\varepsilon / \sigma^2`.

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
        Each row has mean ``beta`` and (for ``gamma = 1``) variance
        :math:`\sigma^2 / (\sigma^2 + \varepsilon)` (or
        :math:`\sigma^2 / (\sigma + \varepsilon)^2`). A constant row maps to ``beta``.
    """
    x, gamma, beta, eps = check_layer_norm_inputs(x, gamma, beta, eps, eps_in_sqrt)
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
    x, W1, b1, W2, b2 = check_ffn_inputs(x, W1, b1, W2, b2)
    hidden = np.maximum(x @ W1 + b1, x.dtype.type(0))  # (..., d_ff)
    return hidden @ W2 + b2  # (..., d_model)


def transformer_encoder_block(x, mha, W1, b1, W2, b2, mask=None, *,
                              gamma1=None, beta1=None, gamma2=None, beta2=None,
                              eps: float = 1e-5) -> np.ndarray:
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

    Returns
    -------
    ndarray, shape (..., n, d_model)
    """
    x = check_encoder_input(x, mha, MultiHeadAttention)
    attended, _ = mha.forward(x, x, x, mask)  # (..., n, d_model)
    h = layer_norm(x + attended, gamma1, beta1, eps)  # (..., n, d_model)
    f = ffn(h, W1, b1, W2, b2)  # (..., n, d_model)
    return layer_norm(h + f, gamma2, beta2, eps)  # (..., n, d_model)
