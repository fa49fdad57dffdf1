"""MultiHeadAttention: hand-derived values, properties, validation errors and a PyTorch oracle.

The oracle compares against torch.nn.MultiheadAttention(bias=False, batch_first=True) in float64.
Its in_proj_weight packs the q, k and v projections as row blocks of shape (d_model, d_model) and
is applied as x @ W.T; head i uses rows i*d_k:(i+1)*d_k of each block. Its boolean attn_mask means
True = *blocked*, the opposite of attn, so masks are converted with ~ in one helper.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attn
from attn import MultiHeadAttention
from attn.multihead import _concat_heads


def reference_mha(mha, Q, K, V, mask=None):
    """Loop over heads one by one and concatenate with np.concatenate (unbatched; the same mask
    (n_q, n_k) for every head)."""
    heads, weights = [], []
    for i in range(mha.num_heads):
        out, w = attn.scaled_dot_product_attention(Q @ mha.W_q[i], K @ mha.W_k[i], V @ mha.W_v[i],
                                                   mask=mask)
        heads.append(out)
        weights.append(w)
    return np.concatenate(heads, axis=-1) @ mha.W_o, np.stack(weights)


# ---------------------------------------------------------------- hand-derived values

def test_zero_queries_give_uniform_weights_and_mean_of_values():
    # W_q = 0 -> every score is 0 -> weights 1/n; with identity-like W_v and W_o the output is mean(V).
    d, h = 4, 2
    eye_blocks = np.stack([np.eye(d)[:, 2 * i:2 * i + 2] for i in range(h)])  # (h, d, d_k)
    mha = MultiHeadAttention.from_weights(np.zeros((h, d, 2)), eye_blocks, eye_blocks, np.eye(d))
    V = np.array([[1.0, 2.0, 3.0, 4.0],
                  [3.0, 0.0, -1.0, 2.0]])
    out, w = mha.forward(V, V, V)
    np.testing.assert_array_equal(w, np.full((2, 2, 2), 0.5))
    np.testing.assert_allclose(out, [[2.0, 1.0, 1.0, 3.0]] * 2)


def test_block_projections_split_the_features_between_heads():
    # Head i sees only features 2i, 2i+1: the result is the core applied to each half, side by side.
    d, h = 4, 2
    blocks = np.stack([np.eye(d)[:, 2 * i:2 * i + 2] for i in range(h)])
    mha = MultiHeadAttention.from_weights(blocks, blocks, blocks, np.eye(d))
    X = np.random.default_rng(0).normal(size=(5, d))
    out, w = mha.forward(X, X, X)
    for i in range(h):
        o_i, w_i = attn.scaled_dot_product_attention(X[:, 2 * i:2 * i + 2], X[:, 2 * i:2 * i + 2],
                                                     X[:, 2 * i:2 * i + 2])
        np.testing.assert_allclose(out[:, 2 * i:2 * i + 2], o_i, rtol=1e-13)
        np.testing.assert_allclose(w[i], w_i, rtol=1e-13)


def test_one_head_equals_single_attention_with_projections():
    rng = np.random.default_rng(3)
    mha = MultiHeadAttention(6, 1, rng=rng)
    X = rng.normal(size=(4, 6))
    out, w = mha.forward(X, X, X)
    o, w1 = attn.scaled_dot_product_attention(X @ mha.W_q[0], X @ mha.W_k[0], X @ mha.W_v[0])
    np.testing.assert_allclose(out, o @ mha.W_o, rtol=1e-12)
    np.testing.assert_allclose(w[0], w1, rtol=1e-12)


def test_activity_shapes():
    np.random.seed(42)  # noqa: NPY002 -- the activity's global seed
    mha = MultiHeadAttention(8, 2)
    X = np.random.randn(5, 8)  # noqa: NPY002
    out, w = mha.forward(X, X, X)
    assert (mha.W_q.shape, mha.W_o.shape, mha.d_k) == ((2, 8, 4), (8, 8), 4)
    assert out.shape == (5, 8) and w.shape == (2, 5, 5)
    np.testing.assert_allclose(w.sum(-1), 1.0)


def test_matches_loop_over_heads_and_concat():
    rng = np.random.default_rng(11)
    mha = MultiHeadAttention(12, 3, rng=rng)
    Q, K, V = rng.normal(size=(4, 12)), rng.normal(size=(6, 12)), rng.normal(size=(6, 12))
    out, w = mha.forward(Q, K, V)
    ref_out, ref_w = reference_mha(mha, Q, K, V)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)


def test_output_is_sum_of_head_contributions():
    rng = np.random.default_rng(5)
    mha = MultiHeadAttention(8, 2, rng=rng)
    X = rng.normal(size=(5, 8))
    heads, _ = mha.head_outputs(X, X, X)  # (h, n, d_k)
    parts = [heads[i] @ mha.W_o[4 * i:4 * (i + 1)] for i in range(2)]
    np.testing.assert_allclose(mha.forward(X, X, X)[0], parts[0] + parts[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(_concat_heads(heads), np.concatenate(list(heads), axis=-1))


def test_concat_heads_puts_head_i_in_columns_i_dk_to_i_plus_1_dk():
    # the module kernel, on a batch: (..., h, n_q, d_k) -> (..., n_q, h * d_k)
    heads = np.random.default_rng(6).normal(size=(2, 3, 5, 4))  # (B, h, n_q, d_k)
    merged = _concat_heads(heads)
    assert merged.shape == (2, 5, 12)
    for i in range(3):
        np.testing.assert_array_equal(merged[..., 4 * i:4 * (i + 1)], heads[:, i])


# ---------------------------------------------------------------- masks

def test_masks_shared_and_per_batch_element_same_for_every_head():
    rng = np.random.default_rng(8)
    mha = MultiHeadAttention(8, 2, rng=rng)
    X = rng.normal(size=(3, 5, 8))
    causal = attn.causal_mask(5)
    out2d, w2d = mha.forward(X, X, X, mask=causal)
    out3d, w3d = mha.forward(X, X, X, mask=np.broadcast_to(causal, (3, 5, 5)).copy())
    np.testing.assert_array_equal(out2d, out3d)
    assert np.all(w2d[..., ~causal] == 0.0)
    # per batch element: causal, anti-causal, random (every query keeps a key); each mask serves both heads
    per_batch = np.stack([causal, causal.T, rng.random((5, 5)) < 0.5])  # (B, n, n)
    per_batch[2, :, 0] = True
    out_b, w_b = mha.forward(X, X, X, mask=per_batch)
    for b in range(3):
        assert np.all(w_b[b][:, ~per_batch[b]] == 0.0)  # both heads
        ref_out, ref_w = reference_mha(mha, X[b], X[b], X[b], mask=per_batch[b])
        np.testing.assert_allclose(out_b[b], ref_out, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w_b[b], ref_w, rtol=1e-12, atol=1e-14)
    # unbatched input with a (n, n) mask: the batch element alone
    out_u, _ = mha.forward(X[1], X[1], X[1], mask=per_batch[1])
    np.testing.assert_allclose(out_u, out_b[1], rtol=1e-13)


def test_per_head_masks_are_refused():
    # a mask is (n_q, n_k) or (..., n_q, n_k), the same for every head; (..., h, n_q, n_k) is not accepted
    mha = MultiHeadAttention(8, 2, rng=0)
    X = np.zeros((3, 5, 8))
    with pytest.raises(ValueError, match=r"mask has shape \(3, 2, 5, 5\); expected \(\.\.\., n_q, n_k\) "
                                         r"with \.\.\. = \(3,\), n_q = 5, n_k = 5$"):
        mha.forward(X, X, X, mask=np.ones((3, 2, 5, 5), dtype=bool))
    with pytest.raises(ValueError, match=r"mask has shape \(2, 5, 5\); expected \(\.\.\., n_q, n_k\) "
                                         r"with \.\.\. = \(\), n_q = 5, n_k = 5$"):
        mha.head_outputs(X[0], X[0], X[0], mask=np.ones((2, 5, 5), dtype=bool))


def test_fully_masked_query_gives_zero_row():
    mha = MultiHeadAttention(4, 2, rng=0)
    X = np.random.default_rng(1).normal(size=(3, 4))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    out, w = mha.forward(X, X, X, mask=mask)
    assert np.all(w[:, 1] == 0.0) and np.all(out[1] == 0.0) and np.isfinite(out).all()


# ---------------------------------------------------------------- randomness and dtype

def test_global_seed_reproducible():
    np.random.seed(42)  # noqa: NPY002 -- the activity's global seed
    a = MultiHeadAttention(8, 2)
    np.random.seed(42)  # noqa: NPY002 -- the activity's global seed
    b = MultiHeadAttention(8, 2)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.W_q, a.W_k)


def test_int_seed_and_generator_reproducible():
    a, b = MultiHeadAttention(8, 2, rng=7), MultiHeadAttention(8, 2, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.W_o, b.W_o)
    c = MultiHeadAttention(8, 2, rng=np.random.RandomState(42))
    np.random.seed(42)  # noqa: NPY002 -- the activity's global seed
    d = MultiHeadAttention(8, 2)
    np.testing.assert_array_equal(c.W_v, d.W_v)


def test_init_scale_is_one_over_sqrt_d_model():
    mha = MultiHeadAttention(64, 4, rng=0)
    all_w = np.concatenate([mha.W_q.ravel(), mha.W_k.ravel(), mha.W_v.ravel(), mha.W_o.ravel()])
    assert abs(all_w.std() - 1 / 8) < 0.005


def test_float32_dtype_follows_numpy_promotion():
    # the weights are not cast to the input's dtype: float32 input with float64 weights gives float64,
    # float32 input with float32 weights stays float32
    mha = MultiHeadAttention(8, 2, rng=0)  # float64 weights
    X = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    out, w = mha.forward(X, X, X)
    assert out.dtype == np.float64 and w.dtype == np.float64
    np.testing.assert_allclose(out, mha.forward(X.astype(np.float64), X, X)[0], rtol=1e-12, atol=1e-14)
    mha32 = MultiHeadAttention.from_weights(*(W.astype(np.float32) for W in (mha.W_q, mha.W_k, mha.W_v, mha.W_o)))
    assert mha32.W_q.dtype == np.float32 and mha32.W_o.dtype == np.float32
    out32, w32 = mha32.forward(X, X, X)
    assert out32.dtype == np.float32 and w32.dtype == np.float32
    heads32, hw32 = mha32.head_outputs(X, X, X)
    assert heads32.dtype == np.float32 and hw32.dtype == np.float32
    np.testing.assert_allclose(out32, out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w32, w, rtol=1e-4, atol=1e-5)


def test_from_weights_copies():
    W = np.zeros((2, 4, 2))
    mha = MultiHeadAttention.from_weights(W, W, W, np.eye(4))
    W[0, 0, 0] = 1.0
    assert mha.W_q[0, 0, 0] == 0.0 and repr(mha) == "MultiHeadAttention(d_model=4, num_heads=2, d_k=2)"


# ---------------------------------------------------------------- properties

@settings(max_examples=60)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_property_shapes_rows_sum_to_one(h, d_k, n_q, n_k, seed):
    rng = np.random.default_rng(seed)
    d = h * d_k
    mha = MultiHeadAttention(d, h, rng=rng)
    Q, K, V = rng.normal(size=(2, n_q, d)), rng.normal(size=(2, n_k, d)), rng.normal(size=(2, n_k, d))
    out, w = mha.forward(Q, K, V)
    assert out.shape == (2, n_q, d) and w.shape == (2, h, n_q, n_k)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)


@settings(max_examples=60)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1))
def test_property_self_attention_is_permutation_equivariant(n, seed):
    rng = np.random.default_rng(seed)
    mha = MultiHeadAttention(6, 3, rng=rng)
    X = rng.normal(size=(n, 6))
    perm = rng.permutation(n)
    out, w = mha.forward(X, X, X)
    out_p, w_p = mha.forward(X[perm], X[perm], X[perm])
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_p, w[:, perm][:, :, perm], rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- validation errors

def test_error_not_divisible():
    with pytest.raises(ValueError, match=r"d_model = 10 is not divisible by num_heads = 3"):
        MultiHeadAttention(10, 3)


def test_error_d_model_not_positive():
    with pytest.raises(ValueError, match=r"d_model must be a positive integer, got 0"):
        MultiHeadAttention(0, 1)


def test_error_num_heads_not_integer():
    with pytest.raises(ValueError, match=r"num_heads must be a positive integer, got 1.5"):
        MultiHeadAttention(8, 1.5)


def test_error_query_width():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"Q has shape \(5, 6\); expected \(\.\.\., n_q, d_model\) with d_model = 8$"):
        mha.forward(np.zeros((5, 6)), np.zeros((5, 8)), np.zeros((5, 8)))


def test_error_query_ndim():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"Q has shape \(8,\); expected \(\.\.\., n_q, d_model\) with d_model = 8$"):
        mha.forward(np.zeros(8), np.zeros((5, 8)), np.zeros((5, 8)))


def test_error_key_batch_mismatch():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"K has shape \(3, 5, 8\); expected \(\.\.\., n_k, d_model\) with \.\.\. = \(2,\), d_model = 8$"):
        mha.forward(np.zeros((2, 5, 8)), np.zeros((3, 5, 8)), np.zeros((2, 5, 8)))


def test_error_value_length():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"V has shape \(4, 8\); expected \(\.\.\., n_k, d_model\) with \.\.\. = \(\), n_k = 5, d_model = 8$"):
        mha.forward(np.zeros((5, 8)), np.zeros((5, 8)), np.zeros((4, 8)))


def test_error_nan_input():
    mha = MultiHeadAttention(8, 2, rng=0)
    X = np.zeros((5, 8))
    X[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"Q with shape \(5, 8\) contains NaN or inf"):
        mha.forward(X, X, X)


def test_error_mask_shape():
    mha = MultiHeadAttention(8, 2, rng=0)
    X = np.zeros((2, 5, 8))
    with pytest.raises(ValueError, match=r"mask has shape \(3, 5, 5\); expected \(\.\.\., n_q, n_k\) "
                                         r"with \.\.\. = \(2,\), n_q = 5, n_k = 5$"):
        mha.forward(X, X, X, mask=np.ones((3, 5, 5), dtype=bool))


def test_error_mask_dtype():
    mha = MultiHeadAttention(8, 2, rng=0)
    X = np.zeros((5, 8))
    with pytest.raises(ValueError, match=r"mask: dtype int64, shape .*; expected bool \(True = may attend\)$"):
        mha.forward(X, X, X, mask=np.ones((5, 5), dtype=np.int64))


def test_error_from_weights_ndim():
    with pytest.raises(ValueError, match=r"W_q has shape \(4, 2\); expected \(h, d_model, d_k\)$"):
        MultiHeadAttention.from_weights(np.zeros((4, 2)), None, None, None)


def test_error_from_weights_head_width():
    W = np.zeros((2, 4, 3))  # h * d_k = 6 != d_model = 4
    with pytest.raises(ValueError, match=r"W_q has shape \(2, 4, 3\); expected \(h, d_model, d_k\) with d_k = d_model / h$"):
        MultiHeadAttention.from_weights(W, W, W, np.zeros((4, 4)))


def test_error_from_weights_key_shape():
    with pytest.raises(ValueError, match=r"W_k has shape \(2, 4, 1\); expected \(h, d_model, d_k\) with h = 2, d_model = 4, d_k = 2$"):
        MultiHeadAttention.from_weights(np.zeros((2, 4, 2)), np.zeros((2, 4, 1)), None, None)


def test_error_from_weights_output_shape():
    W = np.zeros((2, 4, 2))
    with pytest.raises(ValueError, match=r"W_o has shape \(4, 3\); expected \(d_model, d_model\) with d_model = 4"):
        MultiHeadAttention.from_weights(W, W, W, np.zeros((4, 3)))


# ---------------------------------------------------------------- PyTorch oracle

def torch_mha_from(mha):
    """torch.nn.MultiheadAttention carrying exactly the weights of an attn MultiHeadAttention."""
    d, h = mha.d_model, mha.num_heads
    layer = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True, dtype=torch.float64)
    # block rows i*d_k:(i+1)*d_k of each (d, d) block = head i; torch applies x @ W.T
    packed = np.concatenate([W.transpose(0, 2, 1).reshape(d, d) for W in (mha.W_q, mha.W_k, mha.W_v)])
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.from_numpy(packed))
        layer.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    return layer


def blocked(allowed):
    """attn mask (True = may attend) -> torch.nn.MultiheadAttention attn_mask (True = blocked)."""
    return torch.from_numpy(~allowed)


@pytest.mark.oracle
def test_oracle_torch_multihead_attention():
    rng = np.random.default_rng(2024)
    mha = MultiHeadAttention(8, 2, rng=rng)
    Q, K, V = rng.normal(size=(3, 5, 8)), rng.normal(size=(3, 7, 8)), rng.normal(size=(3, 7, 8))
    layer = torch_mha_from(mha)
    ref_out, ref_w = layer(*(torch.from_numpy(a) for a in (Q, K, V)), need_weights=True,
                           average_attn_weights=False)
    out, w = mha.forward(Q, K, V)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.oracle
def test_oracle_torch_causal_and_per_batch_masks():
    rng = np.random.default_rng(99)
    mha = MultiHeadAttention(12, 3, rng=rng)
    X = rng.normal(size=(2, 6, 12))
    layer = torch_mha_from(mha)
    tX = torch.from_numpy(X)
    causal = attn.causal_mask(6)
    ref_out, ref_w = layer(tX, tX, tX, attn_mask=blocked(causal), need_weights=True, average_attn_weights=False)
    out, w = mha.forward(X, X, X, mask=causal)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), rtol=1e-12, atol=1e-14)
    # one mask per batch element, the same for every head: torch wants shape (batch * h, n, n), batch-major
    per_batch = rng.random((2, 6, 6)) < 0.6
    per_batch[..., 0] = True  # keep every query with at least one key (torch gives NaN otherwise)
    ref_out, ref_w = layer(tX, tX, tX, attn_mask=blocked(np.repeat(per_batch, 3, axis=0)), need_weights=True,
                           average_attn_weights=False)
    out, w = mha.forward(X, X, X, mask=per_batch)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), rtol=1e-12, atol=1e-14)
