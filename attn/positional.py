r"""Sinusoidal positional encoding (Vaswani et al., 2017, section 3.5).

.. math::
   PE_{pos,\,2i} = \sin\!\left(\frac{pos}{b^{2i/d}}\right), \qquad
   PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{b^{2i/d}}\right), \qquad b = 10000

Column ``j`` therefore oscillates with angular frequency
:math:`\omega_j = b^{-2\lfloor j/2 \rfloor / d}` and wavelength
:math:`2\pi / \omega_j`, from :math:`2\pi` (columns 0 and 1) up to that of the last column,
below :math:`2\pi b`. An odd ``d_model`` is allowed: the last column is then a sine without its
cosine partner.

Exercise 4 of Activity 4 is here too: what the block does with the same token at two positions, and
with shuffled tokens, with and without the encoding.
"""
from __future__ import annotations

import numpy as np

from ._checks import check_type, positive_int
from .encoder import transformer_encoder_block
from .multihead import MultiHeadAttention

BASE = 10000.0  # the constant b of the paper


def positional_frequencies(d_model: int) -> np.ndarray:
    r"""Angular frequency of every column of the encoding.

    .. math:: \omega_j = b^{-2\lfloor j/2 \rfloor / d_{model}}, \quad b = 10000

    Parameters
    ----------
    d_model : int

    Returns
    -------
    ndarray, shape (d_model,)
        Non-increasing; equal in pairs (sine and cosine of one frequency; for an odd ``d_model`` the
        last column has no pair).
        The wavelength of column ``j`` is ``2 * pi / omega[j]``.
    """
    d_model = positive_int(d_model, "d_model")
    pair = np.arange(d_model) // 2  # (d_model,) index i of the pair 2i, 2i+1
    return BASE ** (-2.0 * pair / d_model)  # (d_model,)


def positional_encoding(max_len: int, d_model: int) -> np.ndarray:
    r"""Sinusoidal positional-encoding table.

    .. math:: PE_{pos, j} = \begin{cases} \sin(pos\,\omega_j) & j \text{ even} \\
                                          \cos(pos\,\omega_j) & j \text{ odd} \end{cases}

    Parameters
    ----------
    max_len : int
        Number of positions ``0 .. max_len - 1``.
    d_model : int
        Number of columns (odd values allowed, see the module notes).

    Returns
    -------
    ndarray, shape (max_len, d_model), float64
        Row ``pos`` is added to the embedding of the token at position ``pos``.
        Every entry lies in ``[-1, 1]``.
    """
    max_len = positive_int(max_len, "max_len")
    omega = positional_frequencies(d_model)  # (d_model,)
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    angles = pos * omega[None, :]  # (max_len, d_model)
    even = (np.arange(d_model) % 2 == 0)[None, :]  # (1, d_model)
    return np.where(even, np.sin(angles), np.cos(angles))  # (max_len, d_model)


def same_token_two_positions(mha, ffn_params, seed: int = 0, length: int = 60, positions=(1, 50)):
    """Exercise 4, question 2: ``length`` N(0, 1) tokens, one of them repeated at both ``positions``.

    Parameters
    ----------
    mha, ffn_params
        The block's attention layer and FFN parameters (as from :func:`attn.encoder.encoder_example`).
    seed : int
    length : int
    positions : two ints ``p < q`` in ``[0, length)``

    Returns
    -------
    without_pe, with_pe : float
        Largest absolute difference between the block's outputs at the two ``positions``, without
        and with the positional encoding added to the input.
    """
    check_type(mha, "mha", MultiHeadAttention)
    length = positive_int(length, "length")
    ints = [i for i in positions if isinstance(i, (int, np.integer)) and not isinstance(i, bool)]
    if not (len(ints) == len(positions) == 2 and 0 <= ints[0] < ints[1] < length):
        raise ValueError(f"positions must be two ints p < q in [0, length = {length}), got {positions!r}")
    p, q = positions
    X = np.random.default_rng(seed).normal(size=(length, mha.d_model))  # (length, d_model)
    X[q] = X[p]  # the same token at positions p and q, other tokens around them
    outputs = [transformer_encoder_block(M, mha, *ffn_params)
               for M in (X, X + positional_encoding(length, mha.d_model))]  # (length, d_model) each
    return tuple(float(np.abs(out[p] - out[q]).max()) for out in outputs)


def shuffled_tokens(mha, ffn_params, seed: int = 4, n: int = 6):
    """Exercise 4, question 3: ``n`` N(0, 1) tokens and one permutation, drawn from ``seed``.

    Returns
    -------
    perm : ndarray of int, shape (n,)
    differences : dict
        ``max |block(shuffled input) - block(input)[perm]|`` for three inputs: no PE (``"no_pe"``),
        the same PE added after shuffling (``"same_pe"``), and the PE shuffled with the tokens
        (``"pe_with_tokens"``).
    """
    check_type(mha, "mha", MultiHeadAttention)
    n, rng = positive_int(n, "n"), np.random.default_rng(seed)
    X = rng.normal(size=(n, mha.d_model))  # (n, d_model)
    perm = rng.permutation(n)  # (n,)
    pe = positional_encoding(n, mha.d_model)  # (n, d_model)

    def block(M):
        return transformer_encoder_block(M, mha, *ffn_params)  # (n, d_model)

    differences = {
        "no_pe": np.abs(block(X[perm]) - block(X)[perm]).max(),
        "same_pe": np.abs(block(X[perm] + pe) - block(X + pe)[perm]).max(),
        "pe_with_tokens": np.abs(block((X + pe)[perm]) - block(X + pe)[perm]).max(),
    }
    return perm, {k: float(v) for k, v in differences.items()}
