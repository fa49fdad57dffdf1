"""Tests for the classic (Bahdanau / Luong) attention functions and the multi-head Luong variant.

Four kinds of checks:
* hand-derived values (small inputs whose weights can be computed on paper);
* hypothesis properties (weights are a distribution, masks give exact zeros,
  permutation equivariance, batch = loop, padding does not change the context);
* oracles: PyTorch float64 with the same weights, and a plain Python/NumPy loop;
* one test per validation error, asserting its message.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn
from attn.classic import additive_attention, additive_scores, dot_attention, general_attention
from attn.multihead_luong import multihead_general_attention

# ---------------------------------------------------------------------------
# helpers


def _rng(seed=0):
    return np.random.default_rng(seed)


def _additive_params(rng, d_s, d_h, d_attn):
    return rng.normal(size=(d_attn, d_s)), rng.normal(size=(d_attn, d_h)), rng.normal(size=d_attn)


def _random_mask(rng, shape):
    """Boolean (..., T) mask with at least one True per row."""
    mask = rng.random(shape) < 0.6
    mask[..., 0] = True
    return mask


def _loop_oracle(score_fn, query, keys, mask=None):
    """Plain-Python reference: one score per position, explicit softmax, explicit weighted sum.

    query (B, d_s), keys (B, T, d_h), mask (B, T) -> context (B, d_h), weights (B, T).
    """
    B, T, d_h = keys.shape
    context = np.zeros((B, d_h))
    weights = np.zeros((B, T))
    for b in range(B):
        allowed = [i for i in range(T) if mask is None or mask[b, i]]
        scores = {i: score_fn(query[b], keys[b, i]) for i in allowed}
        m = max(scores.values())
        total = sum(math.exp(s - m) for s in scores.values())
        for i in allowed:
            weights[b, i] = math.exp(scores[i] - m) / total
            context[b] += weights[b, i] * keys[b, i]
    return context, weights


def _torch_softmax_context(scores, keys, mask):
    """Reference tail in PyTorch: masked softmax over T and weighted sum of the keys."""
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask), float("-inf"))
    w = torch.softmax(scores, dim=-1)  # (..., T)
    return torch.einsum("...t,...td->...d", w, keys).numpy(), w.numpy()


# ---------------------------------------------------------------------------
# hand-derived values


def test_dot_worked_example_cat_sat_mat():
    # lesson 5.10's worked example: three encoder states and a decoder state close to the first
    H = np.array([[1.0, 0.0, 0.2], [0.5, 0.5, 0.1], [0.1, 0.9, 0.3]])
    s = np.array([0.9, 0.1, 0.2])
    context, w = dot_attention(s, H)
    # scores s.h_i = 0.94, 0.52, 0.24
    e = np.exp([0.94, 0.52, 0.24])
    np.testing.assert_allclose(w, e / e.sum(), rtol=1e-12)
    np.testing.assert_allclose(w, [0.464, 0.305, 0.231], atol=5e-4)
    np.testing.assert_allclose(w[0] / w[1], math.exp(0.42), rtol=1e-12)
    np.testing.assert_allclose(context, w @ H, rtol=1e-12)


def test_additive_hand_values():
    # s = 0 removes W_a s; h_2 = atanh(1/2) gives tanh(U_a h_2) = 1/2; v_a = 2 ln 3 makes the
    # scores (0, ln 3), hence weights (1/4, 3/4).
    keys = np.array([[0.0], [math.atanh(0.5)]])
    W_a, U_a, v_a = np.array([[1.0]]), np.array([[1.0]]), np.array([2 * math.log(3.0)])
    context, w = additive_attention(np.array([0.0]), keys, W_a, U_a, v_a)
    np.testing.assert_allclose(w, [0.25, 0.75], rtol=1e-12)
    np.testing.assert_allclose(context, [0.75 * math.atanh(0.5)], rtol=1e-12)


def test_additive_zero_v_gives_uniform_weights_and_mean_context():
    rng = _rng(1)
    keys = rng.normal(size=(4, 3))
    W_a, U_a, _ = _additive_params(rng, 2, 3, 5)
    context, w = additive_attention(rng.normal(size=2), keys, W_a, U_a, np.zeros(5))
    np.testing.assert_allclose(w, np.full(4, 0.25), rtol=1e-12)
    np.testing.assert_allclose(context, keys.mean(axis=0), rtol=1e-12)


def test_general_hand_values_with_different_sizes():
    # d_s = 2, d_h = 3: scores (0, ln 2) -> weights (1/3, 2/3)
    keys = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    W = np.zeros((2, 3))
    W[0, 0] = math.log(2.0)
    context, w = general_attention(np.array([1.0, 0.0]), keys, W)
    np.testing.assert_allclose(w, [1 / 3, 2 / 3], rtol=1e-12)
    np.testing.assert_allclose(context, [2 / 3, 0.0, 0.0], rtol=1e-12, atol=1e-15)


def test_mask_hand_values():
    # two equal scores and one blocked position: weights (1/2, 1/2, 0) exactly
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    context, w = dot_attention(np.array([1.0, 1.0]), keys, mask=np.array([True, True, False]))
    assert w[2] == 0.0
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0], rtol=1e-12)
    np.testing.assert_allclose(context, [0.5, 0.5], rtol=1e-12)


def test_general_with_identity_is_dot():
    rng = _rng(2)
    q, keys = rng.normal(size=(3, 4)), rng.normal(size=(3, 6, 4))
    c1, w1 = dot_attention(q, keys)
    c2, w2 = general_attention(q, keys, np.eye(4))
    np.testing.assert_allclose(w1, w2, rtol=1e-12)
    np.testing.assert_allclose(c1, c2, rtol=1e-12)


def test_additive_scores_is_the_score_used_by_additive_attention():
    rng = _rng(3)
    q, keys = rng.normal(size=(2, 3)), rng.normal(size=(2, 5, 4))
    W_a, U_a, v_a = _additive_params(rng, 3, 4, 6)
    _, w = additive_attention(q, keys, W_a, U_a, v_a)
    scores = additive_scores(q @ W_a.T, keys @ U_a.T, v_a)
    assert scores.shape == (2, 5)
    np.testing.assert_array_equal(w, attn.softmax(scores))


def test_all_masked_row_gives_zeros_not_nan():
    rng = _rng(4)
    q, keys = rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 3))
    mask = np.ones((2, 4), dtype=bool)
    mask[1] = False
    for context, w in (dot_attention(q, keys, mask), general_attention(q, keys, np.eye(3), mask),
                       additive_attention(q, keys, *_additive_params(rng, 3, 3, 2), mask=mask)):
        assert np.isfinite(context).all() and np.isfinite(w).all()
        np.testing.assert_array_equal(w[1], 0.0)
        np.testing.assert_array_equal(context[1], 0.0)
        np.testing.assert_allclose(w[0].sum(), 1.0)


def test_float32_in_float32_out():
    rng = _rng(5)
    q = rng.normal(size=(2, 3)).astype(np.float32)
    keys = rng.normal(size=(2, 4, 3)).astype(np.float32)
    W_a, U_a, v_a = (p.astype(np.float32) for p in _additive_params(rng, 3, 3, 2))
    W_heads = rng.normal(size=(3, 3, 1)).astype(np.float32)
    outs = (dot_attention(q, keys), general_attention(q, keys, np.eye(3, dtype=np.float32)),
            additive_attention(q, keys, W_a, U_a, v_a), multihead_general_attention(q, keys, W_heads))
    for context, w in outs:
        assert context.dtype == np.float32 and w.dtype == np.float32


def test_large_scores_do_not_overflow():
    keys = np.array([[100.0, 0.0], [0.0, 100.0]])
    context, w = dot_attention(np.array([10.0, 9.9]), keys)  # scores 1000 and 990
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, [1 / (1 + math.exp(-10)), 1 / (1 + math.exp(10))], rtol=1e-12)


# ---------------------------------------------------------------------------
# hypothesis properties

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def problems(draw, same_dims=False):
    """A batch of queries, keys, a mask with >= 1 real position per row, and the three parameter sets."""
    B = draw(st.integers(1, 3))
    T = draw(st.integers(1, 6))
    d_h = draw(st.integers(1, 4))
    d_s = d_h if same_dims else draw(st.integers(1, 4))
    d_attn = draw(st.integers(1, 4))
    q = draw(arrays(np.float64, (B, d_s), elements=finite))
    keys = draw(arrays(np.float64, (B, T, d_h), elements=finite))
    mask = draw(arrays(np.bool_, (B, T)))
    mask[:, 0] = True
    W = draw(arrays(np.float64, (d_s, d_h), elements=finite))
    W_a = draw(arrays(np.float64, (d_attn, d_s), elements=finite))
    U_a = draw(arrays(np.float64, (d_attn, d_h), elements=finite))
    v_a = draw(arrays(np.float64, (d_attn,), elements=finite))
    return dict(q=q, keys=keys, mask=mask, W=W, W_a=W_a, U_a=U_a, v_a=v_a)


def _all_three(p, q=None, keys=None, mask="default"):
    q = p["q"] if q is None else q
    keys = p["keys"] if keys is None else keys
    mask = p["mask"] if isinstance(mask, str) else mask
    out = {
        "additive": additive_attention(q, keys, p["W_a"], p["U_a"], p["v_a"], mask=mask),
        "general": general_attention(q, keys, p["W"], mask=mask),
    }
    if q.shape[-1] == keys.shape[-1]:
        out["dot"] = dot_attention(q, keys, mask=mask)
    return out


@settings(max_examples=60)
@given(problems())
def test_weights_are_a_distribution_over_real_positions(p):
    for name, (context, w) in _all_three(p).items():
        assert w.shape == p["mask"].shape, name
        assert context.shape == p["q"].shape[:-1] + (p["keys"].shape[-1],), name
        assert (w >= 0).all(), name
        assert (w[~p["mask"]] == 0.0).all(), name  # exact zeros on padding
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12, err_msg=name)


@settings(max_examples=60)
@given(problems())
def test_context_is_inside_the_box_of_the_real_keys(p):
    big = np.where(p["mask"][..., None], p["keys"], -np.inf).max(axis=-2)
    small = np.where(p["mask"][..., None], p["keys"], np.inf).min(axis=-2)
    for name, (context, _) in _all_three(p).items():
        assert (context <= big + 1e-12).all() and (context >= small - 1e-12).all(), name


@settings(max_examples=60)
@given(problems(), st.randoms(use_true_random=False))
def test_permuting_encoder_positions_permutes_weights_only(p, rnd):
    T = p["keys"].shape[-2]
    perm = np.array(rnd.sample(range(T), T))
    base = _all_three(p)
    moved = _all_three(p, keys=p["keys"][:, perm], mask=p["mask"][:, perm])
    for name in base:
        np.testing.assert_allclose(moved[name][1], base[name][1][:, perm], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(moved[name][0], base[name][0], rtol=1e-10, atol=1e-12)


@settings(max_examples=60)
@given(problems())
def test_batch_equals_one_call_per_element(p):
    batched = _all_three(p)
    for b in range(p["q"].shape[0]):
        single = _all_three(p, q=p["q"][b], keys=p["keys"][b], mask=p["mask"][b])
        for name in batched:
            np.testing.assert_allclose(batched[name][1][b], single[name][1], rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(batched[name][0][b], single[name][0], rtol=1e-12, atol=1e-15)


@settings(max_examples=60)
@given(problems(), st.integers(1, 4), st.floats(-50, 50))
def test_padding_does_not_change_the_context(p, n_pad, pad_value):
    """Appending masked positions with arbitrary content changes nothing."""
    B, T, d_h = p["keys"].shape
    padded = np.concatenate([p["keys"], np.full((B, n_pad, d_h), pad_value)], axis=1)
    mask = np.concatenate([p["mask"], np.zeros((B, n_pad), dtype=bool)], axis=1)
    base = _all_three(p)
    with_pad = _all_three(p, keys=padded, mask=mask)
    for name in base:
        np.testing.assert_array_equal(with_pad[name][1][:, T:], 0.0)
        np.testing.assert_allclose(with_pad[name][1][:, :T], base[name][1], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(with_pad[name][0], base[name][0], rtol=1e-12, atol=1e-15)


@settings(max_examples=60)
@given(problems(same_dims=True))
def test_dot_equals_unscaled_scaled_dot_product_attention(p):
    """keys = values and the query multiplied by sqrt(d) cancels the 1/sqrt(d) of the core."""
    q, keys, mask = p["q"], p["keys"], p["mask"]
    d = q.shape[-1]
    context, w = dot_attention(q, keys, mask)
    out, w_core = attn.scaled_dot_product_attention(q[:, None, :] * np.sqrt(d), keys, keys,
                                                    mask=mask[:, None, :])
    np.testing.assert_allclose(w, w_core[:, 0], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(context, out[:, 0], rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------
# oracles: plain loop and PyTorch (float64, same inputs and weights)


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_three_functions_match_a_plain_loop(batch):
    rng = _rng(6)
    d = 4
    q = rng.normal(size=batch + (d,))
    keys = rng.normal(size=batch + (5, d))
    mask = _random_mask(rng, batch + (5,))
    W = rng.normal(size=(d, d))
    W_a, U_a, v_a = _additive_params(rng, d, d, 3)
    flat = lambda a, tail: a.reshape((-1,) + tail)
    qf, kf, mf = flat(q, (d,)), flat(keys, (5, d)), flat(mask, (5,))
    cases = {
        "additive": (additive_attention(q, keys, W_a, U_a, v_a, mask),
                     lambda s, h: float(v_a @ np.tanh(W_a @ s + U_a @ h))),
        "dot": (dot_attention(q, keys, mask), lambda s, h: float(s @ h)),
        "general": (general_attention(q, keys, W, mask), lambda s, h: float(s @ W @ h)),
    }
    for name, ((context, w), score) in cases.items():
        ref_c, ref_w = _loop_oracle(score, qf, kf, mf)
        np.testing.assert_allclose(flat(w, (5,)), ref_w, rtol=1e-12, atol=1e-15, err_msg=name)
        np.testing.assert_allclose(flat(context, (d,)), ref_c, rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("masked", [False, True])
def test_additive_matches_torch(masked):
    rng = _rng(7)
    q, keys = rng.normal(size=(4, 3)), rng.normal(size=(4, 6, 5))
    W_a, U_a, v_a = _additive_params(rng, 3, 5, 7)
    mask = _random_mask(rng, (4, 6)) if masked else None
    context, w = additive_attention(q, keys, W_a, U_a, v_a, mask)

    tq, tk = torch.tensor(q), torch.tensor(keys)
    proj_q = tq @ torch.tensor(W_a).T  # (B, d_attn)
    proj_k = tk @ torch.tensor(U_a).T  # (B, T, d_attn)
    scores = torch.tanh(proj_k + proj_q[:, None, :]) @ torch.tensor(v_a)  # (B, T)
    ref_c, ref_w = _torch_softmax_context(scores, tk, mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(context, ref_c, rtol=1e-12, atol=1e-14)


@pytest.mark.oracle
def test_additive_matches_torch_linear_layers():
    """Same weights loaded into nn.Linear layers, the way a PyTorch Bahdanau module holds them."""
    rng = _rng(8)
    q, keys = rng.normal(size=(2, 4)), rng.normal(size=(2, 5, 3))
    W_a, U_a, v_a = _additive_params(rng, 4, 3, 6)
    W_lin = torch.nn.Linear(4, 6, bias=False, dtype=torch.float64)
    U_lin = torch.nn.Linear(3, 6, bias=False, dtype=torch.float64)
    v_lin = torch.nn.Linear(6, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        W_lin.weight.copy_(torch.tensor(W_a))
        U_lin.weight.copy_(torch.tensor(U_a))
        v_lin.weight.copy_(torch.tensor(v_a)[None, :])
        tk = torch.tensor(keys)
        scores = v_lin(torch.tanh(W_lin(torch.tensor(q))[:, None, :] + U_lin(tk)))[..., 0]
        ref_c, ref_w = _torch_softmax_context(scores, tk, None)
    context, w = additive_attention(q, keys, W_a, U_a, v_a)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(context, ref_c, rtol=1e-12, atol=1e-14)


@pytest.mark.oracle
@pytest.mark.parametrize("masked", [False, True])
def test_dot_matches_torch_sdpa_with_unit_scale(masked):
    rng = _rng(9)
    q, keys = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 2, 7, 4))
    mask = _random_mask(rng, (3, 2, 7)) if masked else None
    context, w = dot_attention(q, keys, mask)
    tq, tk = torch.tensor(q)[..., None, :], torch.tensor(keys)  # query as a length-1 sequence
    tmask = None if mask is None else torch.as_tensor(mask)[..., None, :]
    ref = F.scaled_dot_product_attention(tq, tk, tk, attn_mask=tmask, scale=1.0)[..., 0, :]
    np.testing.assert_allclose(context, ref.numpy(), rtol=1e-12, atol=1e-14)
    ref_c, ref_w = _torch_softmax_context(torch.einsum("...d,...td->...t", torch.tensor(q), tk), tk, mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-15)


@pytest.mark.oracle
@pytest.mark.parametrize("masked", [False, True])
def test_general_matches_torch(masked):
    rng = _rng(10)
    q, keys, W = rng.normal(size=(5, 3)), rng.normal(size=(5, 4, 6)), rng.normal(size=(3, 6))
    mask = _random_mask(rng, (5, 4)) if masked else None
    context, w = general_attention(q, keys, W, mask)
    tk = torch.tensor(keys)
    scores = torch.einsum("bs,sh,bth->bt", torch.tensor(q), torch.tensor(W), tk)  # s^T W h_i
    ref_c, ref_w = _torch_softmax_context(scores, tk, mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(context, ref_c, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------
# multi-head Luong general


def test_multihead_one_head_is_general_attention_exactly():
    rng = _rng(11)
    q, keys, W = rng.normal(size=(3, 4)), rng.normal(size=(3, 5, 6)), rng.normal(size=(4, 6))
    mask = _random_mask(rng, (3, 5))
    c1, w1 = general_attention(q, keys, W, mask)
    c, w = multihead_general_attention(q, keys, W[None], mask)
    assert w.shape == (3, 1, 5)
    np.testing.assert_array_equal(c, c1)
    np.testing.assert_array_equal(w[:, 0], w1)


def test_multihead_hand_values():
    # two heads over d_h = 2: head 1 sees feature 0, head 2 feature 1; d_s = 1, s = 1
    keys = np.array([[0.0, 1.0], [1.0, 0.0]])
    W_heads = np.array([[[math.log(3.0)]], [[0.0]]])  # head 1 scores (0, ln 3); head 2 uniform
    context, w = multihead_general_attention(np.array([1.0]), keys, W_heads)
    np.testing.assert_allclose(w, [[0.25, 0.75], [0.5, 0.5]], rtol=1e-12)
    np.testing.assert_allclose(context, [0.75, 0.5], rtol=1e-12)


@settings(max_examples=40)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_multihead_matches_per_head_loop(B, T, n_heads, d_head, seed):
    rng = _rng(seed)
    d_s, d_h = 3, n_heads * d_head
    q, keys = rng.normal(size=(B, d_s)), rng.normal(size=(B, T, d_h))
    W_heads = rng.normal(size=(n_heads, d_s, d_head))
    mask = _random_mask(rng, (B, T))
    context, w = multihead_general_attention(q, keys, W_heads, mask)
    assert context.shape == (B, d_h) and w.shape == (B, n_heads, T)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (w[np.broadcast_to(~mask[:, None, :], w.shape)] == 0).all()
    for k in range(n_heads):
        sl = slice(k * d_head, (k + 1) * d_head)
        score = lambda s, h, k=k, sl=sl: float(s @ W_heads[k] @ h[sl])
        ref_c, ref_w = _loop_oracle(score, q, keys, mask)
        np.testing.assert_allclose(w[:, k], ref_w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(context[:, sl], ref_c[:, sl], rtol=1e-12, atol=1e-14)


def test_multihead_single_score_is_sum_of_head_scores():
    """With W_k the column blocks of W, the single-head score is the sum of the head scores."""
    rng = _rng(12)
    n_heads, d_head = 3, 2
    q, keys, W = rng.normal(size=4), rng.normal(size=(5, n_heads * d_head)), rng.normal(size=(4, 6))
    W_heads = np.stack(np.split(W, n_heads, axis=1))  # (n_heads, d_s, d_head)
    head_scores = np.stack([keys[:, k * d_head:(k + 1) * d_head] @ (q @ W_heads[k])
                            for k in range(n_heads)])  # (n_heads, T)
    _, w_single = general_attention(q, keys, W)
    np.testing.assert_allclose(w_single, attn.softmax(head_scores.sum(0)), rtol=1e-12)
    _, w_multi = multihead_general_attention(q, keys, W_heads)
    np.testing.assert_allclose(w_multi, attn.softmax(head_scores, axis=-1), rtol=1e-12)


# ---------------------------------------------------------------------------
# validation errors: one test per message

Q3, K3 = np.zeros(3), np.zeros((4, 3))  # d_s = d_h = 3, T = 4


def test_error_query_not_numeric():
    with pytest.raises(ValueError, match=r"query must be a real numeric array, got dtype <U1"):
        dot_attention(np.array(["a", "b", "c"]), K3)


def test_error_query_contains_nan():
    with pytest.raises(ValueError, match=r"query with shape \(3,\) contains NaN or inf at index \[1\]$"):
        dot_attention(np.array([0.0, np.nan, 0.0]), K3)


def test_error_keys_contains_inf():
    keys = K3.copy()
    keys[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"keys with shape \(4, 3\) contains NaN or inf"):
        general_attention(Q3, keys, np.eye(3))


def test_error_query_zero_dimensions():
    with pytest.raises(ValueError, match=r"query has shape \(\) \(0 dimensions\); expected \(\.\.\., d_s\)"):
        dot_attention(1.0, K3)


def test_error_keys_one_dimension():
    with pytest.raises(ValueError, match=r"keys has shape \(3,\) \(1 dimensions\); expected \(\.\.\., T, d_h\)"):
        dot_attention(Q3, np.zeros(3))


def test_error_batch_mismatch_is_not_broadcast():
    with pytest.raises(ValueError, match=r"keys has shape \(2, 4, 3\); expected .* batch dimensions "
                                         r"\.\.\. = \(5,\) from query \(no broadcasting\)"):
        dot_attention(np.zeros((5, 3)), np.zeros((2, 4, 3)))


def test_error_keys_without_positions():
    with pytest.raises(ValueError, match=r"keys has shape \(0, 3\); expected \(\.\.\., T, d_h\) with T >= 1"):
        dot_attention(Q3, np.zeros((0, 3)))


def test_error_dot_with_different_sizes_points_to_general():
    with pytest.raises(ValueError, match=r"query has shape \(2,\); .* d_s = d_h = 3 from keys: dot attention "
                                         r"needs d_s == d_h, use general_attention"):
        dot_attention(np.zeros(2), K3)


def test_error_general_W_wrong_shape():
    with pytest.raises(ValueError, match=r"W has shape \(3, 2\); expected \(d_s, d_h\) = \(3, 3\)"):
        general_attention(Q3, K3, np.zeros((3, 2)))


def test_error_general_W_transposed():
    with pytest.raises(ValueError, match=r"W has shape \(5, 2\); expected \(d_s, d_h\) = \(2, 5\)"):
        general_attention(np.zeros(2), np.zeros((4, 5)), np.zeros((5, 2)))


def test_error_additive_W_a_not_2d():
    with pytest.raises(ValueError, match=r"W_a has shape \(3,\) \(1 dimensions\); expected \(d_attn, d_s\)"):
        additive_attention(Q3, K3, np.zeros(3), np.zeros((2, 3)), np.zeros(2))


def test_error_additive_W_a_wrong_d_s():
    with pytest.raises(ValueError, match=r"W_a has shape \(2, 5\); expected \(d_attn, d_s\) with d_s = 3"):
        additive_attention(Q3, K3, np.zeros((2, 5)), np.zeros((2, 3)), np.zeros(2))


def test_error_additive_U_a_wrong_shape():
    with pytest.raises(ValueError, match=r"U_a has shape \(3, 2\); expected \(d_attn, d_h\) = \(2, 3\)"):
        additive_attention(Q3, K3, np.zeros((2, 3)), np.zeros((3, 2)), np.zeros(2))


def test_error_additive_v_a_wrong_shape():
    with pytest.raises(ValueError, match=r"v_a has shape \(2, 1\); expected \(d_attn,\) = \(2,\)"):
        additive_attention(Q3, K3, np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 1)))


def test_error_mask_not_boolean():
    with pytest.raises(ValueError, match=r"mask must be a boolean array \(True = may attend\), got dtype int64"):
        dot_attention(Q3, K3, mask=np.array([1, 1, 0, 0]))


def test_error_mask_wrong_shape():
    with pytest.raises(ValueError, match=r"mask has shape \(3,\); expected \(\.\.\., T\) = \(4,\)"):
        dot_attention(Q3, K3, mask=np.ones(3, dtype=bool))


def test_error_mask_in_attention_shape_is_refused():
    # a (..., n_q, n_k) mask from padding_mask(..., n_q=1) is not silently squeezed
    with pytest.raises(ValueError, match=r"mask has shape \(2, 1, 4\); expected \(\.\.\., T\) = \(2, 4\)"):
        dot_attention(np.zeros((2, 3)), np.zeros((2, 4, 3)), mask=attn.padding_mask([4, 2], 4, n_q=1))


def test_error_multihead_W_heads_not_3d():
    with pytest.raises(ValueError, match=r"W_heads has shape \(3, 3\) \(2 dimensions\); expected "
                                         r"\(n_heads, d_s, d_head\) with 3 dimensions"):
        multihead_general_attention(Q3, K3, np.zeros((3, 3)))


def test_error_multihead_wrong_d_s():
    with pytest.raises(ValueError, match=r"W_heads has shape \(1, 2, 3\); .* d_s = 3 from query"):
        multihead_general_attention(Q3, K3, np.zeros((1, 2, 3)))


def test_error_multihead_d_h_not_divisible():
    with pytest.raises(ValueError, match=r"W_heads has shape \(2, 3, 1\); .* d_h = 3 divisible by n_heads = 2"):
        multihead_general_attention(Q3, K3, np.zeros((2, 3, 1)))


def test_error_multihead_wrong_d_head():
    with pytest.raises(ValueError, match=r"W_heads has shape \(3, 3, 2\); .* d_head = d_h / n_heads = 1"):
        multihead_general_attention(Q3, K3, np.zeros((3, 3, 2)))
