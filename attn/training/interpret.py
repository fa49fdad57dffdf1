r"""Measurements on a trained :class:`~attn.training.encoder_model.TransformerEncoder`: what its heads do and
need.

* :func:`pattern_scores` — how much each head looks at the mirror position and at equal tokens;
* :func:`attention_entropy` — mean entropy of each head's attention rows (nats);
* :func:`head_outputs` and :func:`ablated` — every head's output, and a copy of the model in which
  some heads' outputs are replaced (by zeros, or by their mean over the data): an ablation;
* :func:`head_ablations` — the model's accuracy with each head, then each layer's heads together,
  replaced in three ways (zeros, a constant, the mean per position);
* :func:`score_gradients` — the loss gradient with respect to every head's scores (the softmax logits);
* :func:`probe_accuracy` — a linear probe (least-squares classifier) of a label from a state;
* :func:`pair_contrast` — mean cosine similarity of pairs of states with equal labels minus pairs with
  different labels, over the pairs a boolean selection keeps.

Shapes: ``L`` layers, ``B`` sequences, ``h`` heads, ``n`` positions, ``d_k`` head width, ``d`` state
width, ``N`` and ``M`` samples.
"""
from __future__ import annotations

import copy

import numpy as np

from .._checks import as_float, check_dim, check_ndim, check_shape
from ..multihead import MultiHeadAttention
from ._checks import check_labels, check_tokens
from .backward import (
    encoder_block_backward,
    ffn_backward,
    layer_norm_backward,
    softmax_backward,
    softmax_cross_entropy,
)


def pattern_scores(weights, tokens):
    """How much each head looks at the mirror position and at equal tokens.

    Parameters
    ----------
    weights : ndarray, shape (L, B, h, n, n)
        Attention maps (:meth:`attn.training.encoder_model.TransformerEncoder.attention_maps`).
    tokens : ndarray of int, shape (B, n)

    Returns
    -------
    dict of ndarray, shape (L, h)
        ``anti_diagonal``: mean weight that query ``i`` puts on key ``n - 1 - i`` (``1 / n`` for
        uniform weights). ``equal_token``: mean total weight on the keys holding the query's own token,
        itself included (``equal_token_uniform``, a float, for uniform weights). ``equal_token_rank``:
        the probability that, for the same query, another key with the query's token gets more weight
        than a key with a different token (ties count 1/2), averaged over the queries that have both
        kinds: 1 for a head that always ranks equal tokens first, exactly 0.5 for uniform weights, and
        near 0.5 for weights that depend only on the position when the tokens do not (in expectation,
        not on every batch).
    """
    n = tokens.shape[1]
    i = np.arange(n)
    anti = weights[..., i, n - 1 - i].mean(axis=(1, 3))  # (L, h)
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, n, n)
    equal = np.sum(weights * same[None, :, None], axis=-1).mean(axis=(1, 3))  # (L, h)
    w_pos, w_neg = weights[..., :, :, None], weights[..., :, None, :]  # keys j (equal) vs k (different)
    wins = (w_pos > w_neg) + 0.5 * (w_pos == w_neg)  # (L, B, h, n, n, n)
    pairs = (same & ~np.eye(n, dtype=bool))[:, :, :, None] & ~same[:, :, None, :]  # (B, n, j, k)
    per_query = np.sum(wins * pairs[None, :, None], axis=(-1, -2))  # (L, B, h, n)
    count = pairs.sum(axis=(-1, -2))  # (B, n)
    rank = np.moveaxis(per_query / np.maximum(count[:, None], 1), 2, 1)  # (L, h, B, n)
    rank = rank[..., count > 0]  # (L, h, queries with both kinds)
    return {"anti_diagonal": anti, "equal_token": equal, "equal_token_uniform": float(same.mean()),
            "equal_token_rank": rank.mean(axis=-1)}


def attention_entropy(weights) -> np.ndarray:
    r"""Mean entropy :math:`-\sum_j w_{ij} \ln w_{ij}` of the attention rows of every layer and head.

    Parameters
    ----------
    weights : array_like, shape (L, B, h, n, n)
        Attention maps; every row sums to 1.

    Returns
    -------
    ndarray, shape (L, h)
        In nats, averaged over sequences and queries: 0 for rows that put all their weight on one key,
        :math:`\ln n` for uniform rows.
    """
    weights = as_float(weights, "weights")
    check_ndim(weights, "weights", "(L, B, h, n, n) with 5 dimensions", 5, 5)
    logs = np.log(np.where(weights > 0, weights, 1))  # (L, B, h, n, n); 0 log 0 = 0
    return -np.sum(weights * logs, axis=-1).mean(axis=(1, 3))  # (L, h)


def head_outputs(model, tokens) -> np.ndarray:
    r"""Every head's output :math:`\operatorname{head}_i = A_i V_i` in every layer, before :math:`W^O`.

    Parameters
    ----------
    model : TransformerEncoder
    tokens : ndarray of int, shape (B, n)

    Returns
    -------
    ndarray, shape (L, B, h, n, d_k)
    """
    blocks = model.forward(tokens)[1]["blocks"]
    return np.stack([c["mha"].head_outputs(c["x"], c["x"], c["x"])[0] for c in blocks])  # (L, B, h, n, d_k)


class _HeadReplaced(MultiHeadAttention):
    """Multi-head attention whose heads ``heads`` output ``replacement`` (k, n_q, d_k) whatever the input."""

    def _heads(self, Q, K, V, mask=None):  # the kernel under forward and head_outputs
        out, weights = super()._heads(Q, K, V, mask)  # (..., h, n_q, d_k)
        out = out.copy()
        full = out.shape[:-3] + self.replacement.shape  # (..., k, n_q, d_k)
        out[..., self.heads, :, :] = np.broadcast_to(self.replacement, full)
        return out, weights


def ablated(model, layer: int, heads, replacement):
    """A copy of ``model`` (for evaluation only) in which some heads of one layer output something else.

    Parameters
    ----------
    model : TransformerEncoder
    layer : int
    heads : int or sequence of int
        The ``k`` heads of ``layer`` to replace (distinct, in ``[0, h)``).
    replacement : array_like, shape (n, d_k) for one head or (k, n, d_k)
        What each head outputs at each position for every sequence: zeros (a zero ablation) or the
        head's mean output over the data (a mean ablation, ``head_outputs(model, tokens)[layer, :,
        head].mean(axis=0)``), which keeps what depends only on the position and removes what
        depends on the tokens.

    Returns
    -------
    TransformerEncoder
        Shares every array with ``model`` except block ``layer``'s attention layer, a copy with the
        same weights; its ``params`` are still ``model``'s, so the copy is for evaluation only.
    """
    mha, rest = model.blocks[layer]
    heads = [int(i) for i in np.atleast_1d(heads)]
    if not heads or len(set(heads)) != len(heads) or not all(0 <= i < mha.num_heads for i in heads):
        raise ValueError(f"heads must be distinct heads in [0, h) with h = {mha.num_heads}, got {heads}")
    replacement = as_float(replacement, "replacement")
    if replacement.ndim == 2:
        replacement = replacement[None]  # one head: (1, n, d_k)
    check_ndim(replacement, "replacement", "(n, d_k) or (k, n, d_k)", 3, 3)
    check_shape(replacement, "replacement", (len(heads), replacement.shape[1], mha.d_k), "(k, n, d_k)",
                "k from heads, d_k of the layer")
    layer_copy = _HeadReplaced.from_weights(mha.W_q, mha.W_k, mha.W_v, mha.W_o, scale=mha.scale)
    layer_copy.heads, layer_copy.replacement = heads, replacement.astype(mha.W_q.dtype)
    out = copy.copy(model)
    out.blocks = list(model.blocks)
    out.blocks[layer] = (layer_copy, rest)
    return out


def head_ablations(model, tokens, targets, reference_tokens) -> dict:
    """The accuracy on ``tokens`` when each head alone, then all heads of a layer, are replaced.

    Three replacements (:func:`ablated`) remove three parts of a head's output, each one more than the
    one before. ``"position mean"``, its mean output at each position over ``reference_tokens``, removes
    what depends on the tokens. ``"constant"``, that mean averaged over the positions too, removes the
    part that depends on the position as well. ``"zero"`` removes everything, the constant included.

    Parameters
    ----------
    model : TransformerEncoder
    tokens, targets : ndarray of int, shape (B, n)
        The sequences scored, and their targets.
    reference_tokens : ndarray of int, shape (B_ref, n)
        The sequences the means are taken over.

    Returns
    -------
    dict
        ``"none"``: the intact model's accuracy; ``(layer, heads, mode)``: the accuracy with the tuple
        ``heads`` of ``layer`` replaced, ``mode`` one of ``"zero"``, ``"constant"``, ``"position mean"``.
    """
    tokens = check_tokens(tokens, "tokens", model.V)
    targets = check_labels(targets, "targets", tokens.shape, "(B, n)", model.C)
    n = tokens.shape[1]
    check_dim(check_tokens(reference_tokens, "reference_tokens", model.V), "reference_tokens", 1, n,
              f"(B_ref, n) with n = {n}", "n from tokens")
    means = head_outputs(model, reference_tokens).mean(axis=1)  # (L, h, n, d_k): mean over sequences
    constants = np.broadcast_to(means.mean(axis=2, keepdims=True), means.shape)  # (L, h, n, d_k): flat in n
    L, h = means.shape[:2]
    groups = [(layer, (i,)) for layer in range(L) for i in range(h)]  # each head alone,
    groups += [(layer, tuple(range(h))) for layer in range(L)]  # then each layer's heads together
    out = {"none": float((model.predict(tokens) == targets).mean())}
    for layer, heads in groups:
        k = list(heads)
        for mode, replacement in (("zero", np.zeros_like(means[layer, k])), ("constant", constants[layer, k]),
                                  ("position mean", means[layer, k])):  # (len(heads), n, d_k)
            predicted = ablated(model, layer, k, replacement).predict(tokens)  # (B, n)
            out[(layer, heads, mode)] = float((predicted == targets).mean())
    return out


def score_gradients(model, tokens, targets) -> np.ndarray:
    r"""Gradient of the mean cross-entropy with respect to every head's scores :math:`S = c\,qk^\top`.

    :math:`dS = A \odot (dA - \operatorname{rowsum}(A \odot dA))` with :math:`dA = d\text{head}\; v^\top`,
    the softmax step of :func:`attn.training.backward.attention_backward`; the query and key gradients
    multiply it by the layer's factor :math:`c` once more (:math:`dq = c\, dS\, k`), so comparing
    :math:`dS` across values of :math:`c` leaves that factor of the chain rule out.

    Parameters
    ----------
    model : TransformerEncoder
    tokens, targets : ndarray of int, shape (B, n)

    Returns
    -------
    ndarray, shape (L, B, h, n, n)
    """
    logits, cache = model.forward(tokens)  # (B, n, C)
    _, d_logits = softmax_cross_entropy(logits, targets, cache["mask"])  # (B, n, C)
    dx = d_logits @ model.params["W_out"].T  # (B, n, d_model): into the last block's output
    found = []
    for block in reversed(cache["blocks"]):
        p, mha, eps = block["p"], block["mha"], block["eps"]
        d_z2 = layer_norm_backward(dx, block["z2"], p["gamma2"], eps)[0]  # (B, n, d_model)
        d_h = d_z2 + ffn_backward(d_z2, block["h"], p["W1"], p["b1"], p["W2"])[0]  # (B, n, d_model)
        d_att = layer_norm_backward(d_h, block["z1"], p["gamma1"], eps)[0]  # (B, n, d_model): into MHA(x)
        v = np.einsum("bnd,hdk->bhnk", block["x"], mha.W_v)  # (B, h, n, d_k)
        W_o = mha.W_o.reshape(mha.num_heads, mha.d_k, -1)  # (h, d_k, d_model)
        d_heads = np.einsum("bne,hke->bhnk", d_att, W_o)  # (B, h, n, d_k)
        d_weights = d_heads @ np.swapaxes(v, -1, -2)  # (B, h, n, n)
        found.append(softmax_backward(d_weights, block["weights"]))  # (B, h, n, n)
        dx = encoder_block_backward(dx, block)[0]  # (B, n, d_model): into the block below
    return np.stack(found[::-1])  # (L, B, h, n, n)


def probe_accuracy(train_x, train_y, test_x, test_y, n_classes: int, ridge: float = 1e-3) -> float:
    r"""Accuracy of a linear probe: ridge least squares from the features to one-hot labels.

    .. math:: W = \arg\min_W \lVert [X, 1] W - Y \rVert^2 + \lambda \lVert W \rVert^2, \qquad
              \hat y = \arg\max_c\, ([x, 1] W)_c

    Parameters
    ----------
    train_x : array_like, shape (N, d)
    train_y : array_like of int, shape (N,)
        Labels in ``[0, n_classes)``.
    test_x : array_like, shape (M, d)
    test_y : array_like of int, shape (M,)
    n_classes : int
    ridge : float
        :math:`\lambda` = ``ridge`` · N · mean([X, 1]²): ``ridge`` times the mean diagonal entry of
        :math:`[X, 1]^\top [X, 1]`. The bias row is penalised too.

    Returns
    -------
    float
        Fraction of ``test_y`` predicted right.
    """
    train_x = check_ndim(as_float(train_x, "train_x"), "train_x", "(N, d) with 2 dimensions", 2, 2)  # (N, d)
    test_x = as_float(test_x, "test_x")  # (M, d)
    check_shape(test_x, "test_x", test_x.shape[:1] + train_x.shape[1:], "(M, d)", "d from train_x")
    train_y = check_labels(train_y, "train_y", train_x.shape[:1], "(N,)", n_classes)  # (N,)
    test_y = check_labels(test_y, "test_y", test_x.shape[:1], "(M,)", n_classes)  # (M,)
    X = np.hstack([train_x, np.ones((len(train_x), 1))]).astype(np.float64)  # (N, d + 1)
    Y = (train_y[:, None] == np.arange(n_classes)).astype(np.float64)  # (N, C)
    lam = ridge * np.mean(X * X) * len(X)  # scalar
    W = np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ Y)  # (d + 1, C)
    scores = np.hstack([test_x, np.ones((len(test_x), 1))]) @ W  # (M, C)
    return float((scores.argmax(axis=1) == test_y).mean())


def pair_contrast(states, labels, keep) -> float:
    """Mean cosine similarity of state pairs with equal labels minus pairs with different labels.

    Parameters
    ----------
    states : array_like, shape (B, n, d)
        One state per position.
    labels : array_like of int, shape (B, n)
    keep : array_like of bool, shape (B, n, n)
        The pairs ``(i, j)`` of each sequence that count (``i == j`` is always left out).

    Returns
    -------
    float
        ``mean cos(equal labels) - mean cos(different labels)`` over the kept pairs.
    """
    states = as_float(states, "states")
    check_ndim(states, "states", "(B, n, d) with 3 dimensions", 3, 3)
    labels, keep = np.asarray(labels), np.asarray(keep)
    check_shape(labels, "labels", states.shape[:2], "(B, n)", "from states")
    check_shape(keep, "keep", states.shape[:2] + states.shape[1:2], "(B, n, n)", "from states")
    unit = states / np.linalg.norm(states, axis=-1, keepdims=True)  # (B, n, d)
    cos = unit @ np.swapaxes(unit, -1, -2)  # (B, n, n)
    equal = labels[:, :, None] == labels[:, None, :]  # (B, n, n)
    pairs = keep.astype(bool) & ~np.eye(states.shape[1], dtype=bool)  # (B, n, n)
    return float(cos[pairs & equal].mean() - cos[pairs & ~equal].mean())
