"""The softmax-saturation experiment that lesson 7.02 and the oral-exam page both quote.

It lives here once, so both pages glue the same numbers (``tests/test_shared_facts.py`` checks that a
glue name used on two pages has one value). The exercises' own experiments live beside their code:
:func:`attn.core.future_token_change`, :func:`attn.encoder.encoder_example`,
:func:`attn.positional.same_token_two_positions` and :func:`attn.positional.shuffled_tokens`.

Shapes: ``n`` keys, ``d_k`` query/key width, ``...`` any batch dimensions.
"""
from __future__ import annotations

import numpy as np

from ._checks import array, positive_int
from .core import softmax


def softmax_jacobian(w) -> np.ndarray:
    r"""Jacobian of the softmax from its output.

    .. math:: J_{ij} = \partial w_i / \partial s_j = w_i(\delta_{ij} - w_j)

    Parameters
    ----------
    w : array_like, shape (..., n)
        Softmax outputs (rows summing to 1).

    Returns
    -------
    ndarray, shape (..., n, n)
        :math:`\operatorname{diag}(w) - w w^\top` for every row.
    """
    w = array(w, "w", "(..., n)", {})  # (..., n)
    return w[..., :, None] * np.eye(w.shape[-1]) - w[..., :, None] * w[..., None, :]  # (..., n, n)


def softmax_saturation(d_k: int, scaled: bool, n_keys: int = 6, samples: int = 2000, seed: int = 1) -> dict:
    r"""How peaked the attention of one query is, with or without the :math:`1/\sqrt{d_k}` scale.

    ``samples`` queries, each against its own ``n_keys`` keys, all coordinates N(0, 1), seeded.

    Returns
    -------
    dict of float
        ``max_weight``: mean of each row's largest weight; ``above_099``: fraction of rows whose
        largest weight exceeds 0.99; ``entropy``: mean row entropy in nats (at most
        :math:`\ln n`); ``score_jacobian``: median Frobenius norm of :math:`\partial w/\partial s`
        (what reaches the scores); ``query_jacobian``: median Frobenius norm of
        :math:`\partial w/\partial q = J K / c`, ``c`` = :math:`\sqrt{d_k}` or 1 (what reaches the query).
    """
    d_k, n_keys = positive_int(d_k, "d_k"), positive_int(n_keys, "n_keys")
    rng = np.random.default_rng(seed)
    samples = positive_int(samples, "samples")
    q = rng.standard_normal((samples, 1, d_k))  # (samples, 1, d_k)
    k = rng.standard_normal((samples, n_keys, d_k))  # (samples, n, d_k)
    c = np.sqrt(d_k) if scaled else 1.0
    w = softmax((q @ k.transpose(0, 2, 1))[:, 0, :] / c)  # (samples, n)
    J = softmax_jacobian(w)  # (samples, n, n)
    plogp = w * np.log(np.where(w > 0, w, 1.0))  # (samples, n); 0 log 0 = 0
    return {"max_weight": float(w.max(axis=1).mean()), "above_099": float((w.max(axis=1) > 0.99).mean()),
            "entropy": float(-plogp.sum(axis=1).mean()),
            "score_jacobian": float(np.median(np.linalg.norm(J, axis=(1, 2)))),
            "query_jacobian": float(np.median(np.linalg.norm(J @ k / c, axis=(1, 2))))}
