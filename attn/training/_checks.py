"""Input validation that only the training code needs: token ids, sequence lengths, class labels.

Same rules as :mod:`attn._checks`: each raises ``ValueError`` naming the argument, its shape and the
shape expected.
"""
from __future__ import annotations

import numpy as np


def check_tokens(x, name: str, vocab_size: int) -> np.ndarray:
    """Validate a batch of token ids: integers of shape (B, length), every id in ``[0, vocab_size)``."""
    x = np.asarray(x)
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} has shape {x.shape} and dtype {x.dtype}; "
                         "expected integers with shape (B, length)")
    if x.size and (x.min() < 0 or x.max() >= vocab_size):
        raise ValueError(f"{name} holds tokens outside [0, V) with V = {vocab_size}")
    return x


def check_lengths(lengths, name: str, B: int, n: int) -> np.ndarray:
    """Validate real sequence lengths: integers of shape (B,), each in ``[1, n]``."""
    lengths = np.asarray(lengths)
    if lengths.shape != (B,) or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"{name} has shape {lengths.shape} and dtype {lengths.dtype}; "
                         f"expected integers with shape (B,) = ({B},)")
    if B and (lengths.min() < 1 or lengths.max() > n):
        raise ValueError(f"{name} must lie in [1, {n}], got min {lengths.min()} and max {lengths.max()}")
    return lengths


def check_labels(y, name: str, rows: tuple, expected: str, n_classes: int) -> np.ndarray:
    """Validate integer class labels of shape ``rows``, each in ``[0, n_classes)``."""
    y = np.asarray(y)
    if y.shape != tuple(rows) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{name} has shape {y.shape} and dtype {y.dtype}; "
                         f"expected integers with shape {expected} = {tuple(rows)}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"{name} holds labels outside [0, C) with C = {n_classes}")
    return y
