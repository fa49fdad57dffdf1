r"""Sinusoidal positional encoding (Vaswani et al., 2017, section 3.5).

.. math::
   PE_{pos,\,2i} = \sin\!\left(\frac{pos}{b^{2i/d}}\right), \qquad
   PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{b^{2i/d}}\right), \qquad b = 10000

Column ``j`` therefore oscillates with angular frequency
:math:`\omega_j = b^{-2\lfloor j/2 \rfloor / d}` and wavelength
:math:`2\pi / \omega_j`, from :math:`2\pi` (columns 0 and 1) up to nearly
:math:`2\pi b`. An odd ``d_model`` is allowed: the last column is then a
sine without its cosine partner.
"""
from __future__ import annotations

import numpy as np

from ._checks import positive_int


def positional_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    r"""Angular frequency of every column of the encoding.

    .. math:: \omega_j = b^{-2\lfloor j/2 \rfloor / d_{model}}

    Parameters
    ----------
    d_model : int
    base : float
        The constant ``b`` (10000 in the paper); must exceed 1.

    Returns
    -------
    ndarray, shape (d_model,)
        Non-increasing; equal in pairs (sine and cosine of one frequency).
        The wavelength of column ``j`` is ``2 * pi / omega[j]``.
    """
    d_model = positive_int(d_model, "d_model")
    if not base > 1:
        raise ValueError(f"base must be greater than 1, got {base!r}")
    pair = np.arange(d_model) // 2  # (d_model,) index i of the pair 2i, 2i+1
    return base ** (-2.0 * pair / d_model)


def positional_encoding(max_len: int, d_model: int,
                        base: float = 10000.0) -> np.ndarray:
    r"""Sinusoidal positional-encoding table.

    .. math:: PE_{pos, j} = \begin{cases} \sin(pos\,\omega_j) & j \text{ even} \\
                                          \cos(pos\,\omega_j) & j \text{ odd} \end{cases}

    Parameters
    ----------
    max_len : int
        Number of positions ``0 .. max_len - 1``.
    d_model : int
        Number of columns (odd values allowed, see the module notes).
    base : float
        The constant ``b`` of :func:`positional_frequencies`.

    Returns
    -------
    ndarray, shape (max_len, d_model), float64
        Row ``pos`` is added to the embedding of the token at position ``pos``.
        Every entry lies in ``[-1, 1]``.
    """
    max_len = positive_int(max_len, "max_len")
    omega = positional_frequencies(d_model, base)  # (d_model,)
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    angles = pos * omega[None, :]  # (max_len, d_model)
    even = (np.arange(d_model) % 2 == 0)[None, :]  # (1, d_model)
    return np.where(even, np.sin(angles), np.cos(angles))  # (max_len, d_model)
