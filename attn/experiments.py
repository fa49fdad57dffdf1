"""The small experiments that more than one page quotes.

Each experiment lives here once: the page that teaches it shows it (``literalinclude``) and calls
it, and any other page (the oral-exam page, a lesson) calls the same function with the same seed,
so both pages glue the same numbers (``tests/test_shared_facts.py`` checks that a glue name used
on two pages has one value).

Shapes: ``n`` tokens, ``d_model`` model width, ``d_ff = 4 d_model`` hidden width of the FFN,
``d_k`` query/key width, ``...`` any batch dimensions.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float, check_dim, check_ndim, check_qkv, positive_int
from .core import causal_mask, scaled_dot_product_attention, softmax
from .encoder import transformer_encoder_block
from .multihead import MultiHeadAttention
from .positional import positional_encoding


def encoder_example(seed: int = 42, d_model: int = 8, num_heads: int = 2, n: int = 5):
    r"""The Exercise 2 and 3 setup, drawn from NumPy's global generator after ``np.random.seed(seed)``.

    Draw order: the attention layer (``W_q``, ``W_k``, ``W_v``, ``W_o``), the ``n`` tokens, then the
    FFN weights from :math:`\mathcal N(0, 1/d_{in})` with zero biases, ``d_ff = 4 d_model``.

    Returns
    -------
    mha : MultiHeadAttention
    X : ndarray, shape (n, d_model)
    ffn_params : tuple (W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,))
    """
    n, d_ff = positive_int(n, "n"), 4 * positive_int(d_model, "d_model")
    np.random.seed(seed)  # noqa: NPY002 -- the activity fixes the global seed
    mha = MultiHeadAttention(d_model, num_heads)  # W_q, W_k, W_v, W_o
    X = np.random.randn(n, d_model)  # noqa: NPY002  (n, d_model)
    W1 = np.random.randn(d_model, d_ff) / np.sqrt(d_model)  # noqa: NPY002  (d_model, d_ff)
    W2 = np.random.randn(d_ff, d_model) / np.sqrt(d_ff)  # noqa: NPY002  (d_ff, d_model)
    return mha, X, (W1, np.zeros(d_ff), W2, np.zeros(d_model))


def cosine_similarity(A, B=None) -> np.ndarray:
    r"""Cosine similarity between every row of ``A`` and every row of ``B`` (Exercise 3).

    .. math:: S_{ij} = \frac{a_i \cdot b_j}{\lVert a_i \rVert\, \lVert b_j \rVert}

    Parameters
    ----------
    A : array_like, shape (n, d)
    B : array_like, shape (m, d), optional
        Default: ``A`` itself (then ``S`` is symmetric with ones on the diagonal).

    Returns
    -------
    ndarray, shape (n, m)
        1 for rows in the same direction, 0 for orthogonal rows, -1 for opposite rows.
    """
    A = check_ndim(as_float(A, "A"), "A", "(n, d) with 2 dimensions", 2, 2)
    unit_a = A / np.linalg.norm(A, axis=-1, keepdims=True)  # (n, d)
    if B is None:
        return unit_a @ unit_a.T  # (n, n)
    B = check_ndim(as_float(B, "B"), "B", "(m, d) with 2 dimensions", 2, 2)
    check_dim(B, "B", 1, A.shape[1], f"(m, d) with d = {A.shape[1]} from A")
    unit_b = B / np.linalg.norm(B, axis=-1, keepdims=True)  # (m, d)
    return unit_a @ unit_b.T  # (n, m)


def mean_similarity(M) -> float:
    """Mean cosine similarity between distinct rows of ``M`` (n, d): the off-diagonal mean of
    :func:`cosine_similarity` ``(M)``, the "mais ricas?" measure of Exercise 3 and of the oral-exam page."""
    S = cosine_similarity(M)  # (n, n)
    return float(S[~np.eye(len(S), dtype=bool)].mean())  # the n (n - 1) pairs i != j


def future_token_change(Q, K, V, seed: int = 0):
    """Exercise 1: replace the last key and value by N(0, 1) draws; how much does the output move?

    Parameters
    ----------
    Q : ndarray, shape (n_q, d_k)
    K : ndarray, shape (n_k, d_k)
    V : ndarray, shape (n_k, d_v)
    seed : int
        Seed of the draws that replace ``K[-1]`` and ``V[-1]``.

    Returns
    -------
    without_mask, with_mask : float
        Largest absolute change of the output, without and with the causal mask.
    """
    Q, K, V = check_qkv(Q, K, V)  # (n_q, d_k), (n_k, d_k), (n_k, d_v)
    rng = np.random.default_rng(seed)
    K_new, V_new = K.copy(), V.copy()
    K_new[-1], V_new[-1] = rng.normal(size=K.shape[-1]), rng.normal(size=V.shape[-1])  # (d_k,), (d_v,)
    mask = causal_mask(Q.shape[0], K.shape[0])  # (n_q, n_k)
    changes = [np.abs(scaled_dot_product_attention(Q, K_new, V_new, m)[0]
                      - scaled_dot_product_attention(Q, K, V, m)[0]).max() for m in (None, mask)]
    return float(changes[0]), float(changes[1])


def same_token_two_positions(mha, ffn_params, seed: int = 0, length: int = 60, positions=(1, 50)):
    """Exercise 4, question 2: ``length`` N(0, 1) tokens, one of them repeated at both ``positions``.

    Returns
    -------
    without_pe, with_pe : float
        Largest absolute difference between the block's outputs at the two ``positions``, without
        and with the positional encoding added to the input.
    """
    length = positive_int(length, "length")  # the FFN parameters are checked by the block
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
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(positive_int(n, "n"), mha.d_model))  # (n, d_model)
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
    w = check_ndim(as_float(w, "w"), "w", "(..., n) with at least 1 dimension", 1)  # (..., n)
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
    q = rng.standard_normal((positive_int(samples, "samples"), 1, d_k))  # (samples, 1, d_k)
    k = rng.standard_normal((samples, n_keys, d_k))  # (samples, n, d_k)
    c = np.sqrt(d_k) if scaled else 1.0
    w = softmax((q @ k.transpose(0, 2, 1))[:, 0, :] / c)  # (samples, n)
    J = softmax_jacobian(w)  # (samples, n, n)
    plogp = w * np.log(np.where(w > 0, w, 1.0))  # (samples, n); 0 log 0 = 0
    return {"max_weight": float(w.max(axis=1).mean()), "above_099": float((w.max(axis=1) > 0.99).mean()),
            "entropy": float(-plogp.sum(axis=1).mean()),
            "score_jacobian": float(np.median(np.linalg.norm(J, axis=(1, 2)))),
            "query_jacobian": float(np.median(np.linalg.norm(J @ k / c, axis=(1, 2))))}
