"""Unit and property tests of attn.core: hand-derived values, invariants, validation errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn

# Activity 4, Exercise 1 inputs (d_k = 4)
Q1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
K1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
V1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])


def test_exercise1_weights_and_output_by_hand():
    # dot products: q1.k = (2, 0, 1), q2.k = (0, 2, 1); scaled by 1/sqrt(4): (1, 0, .5), (0, 1, .5)
    e = np.e
    z = e + 1 + np.sqrt(e)
    w1 = np.array([e, 1.0, np.sqrt(e)]) / z
    w2 = np.array([1.0, e, np.sqrt(e)]) / z
    out, w = attn.scaled_dot_product_attention(Q1, K1, V1)
    np.testing.assert_allclose(w, [w1, w2], rtol=1e-14)
    # output row 1 = w11 * (1, 0) + w12 * (0, 1) + w13 * (.5, .5)
    np.testing.assert_allclose(out[0], [w1[0] + 0.5 * w1[2], w1[1] + 0.5 * w1[2]], rtol=1e-14)
    np.testing.assert_allclose(out[1], [w2[0] + 0.5 * w2[2], w2[1] + 0.5 * w2[2]], rtol=1e-14)
    np.testing.assert_allclose(w[0], [0.50648039, 0.18632372, 0.30719589], atol=1e-8)


def test_exercise1_causal_by_hand():
    out, w = attn.scaled_dot_product_attention(Q1, K1, V1, mask=attn.causal_mask(2, 3))
    # row 1 sees key 1 only; row 2 sees keys 1, 2 with scores (0, 1)
    s = 1 / (1 + np.e)
    np.testing.assert_allclose(w, [[1.0, 0.0, 0.0], [s, 1 - s, 0.0]], rtol=1e-14)
    np.testing.assert_allclose(out, [[1.0, 0.0], [s, 1 - s]], rtol=1e-14)
    assert w[0, 1] == 0.0 and w[0, 2] == 0.0 and w[1, 2] == 0.0


def test_softmax_large_and_neg_inf():
    x = np.array([1000.0, 999.0, -np.inf])
    p = attn.softmax(x)
    np.testing.assert_allclose(p[:2], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))])
    assert p[2] == 0.0
    np.testing.assert_array_equal(attn.softmax(np.full((2, 3), -np.inf)), np.zeros((2, 3)))


def test_softmax_axis_and_dtype():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert attn.softmax(x).dtype == np.float32
    np.testing.assert_allclose(attn.softmax(x, axis=0).sum(axis=0), 1.0, rtol=1e-6)
    assert attn.softmax(np.array([1, 2, 3])).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_keeps_dtype(dtype):
    out, w = attn.scaled_dot_product_attention(Q1.astype(dtype), K1.astype(dtype), V1.astype(dtype))
    assert out.dtype == dtype and w.dtype == dtype


def test_fully_masked_query_gives_zero_row():
    mask = np.array([[False, False, False], [True, False, True]])
    out, w = attn.scaled_dot_product_attention(Q1, K1, V1, mask=mask)
    np.testing.assert_array_equal(w[0], 0.0)
    np.testing.assert_array_equal(out[0], 0.0)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(w[1].sum(), 1.0)


def test_causal_mask_is_lower_triangular():
    np.testing.assert_array_equal(
        attn.causal_mask(3, 4),
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]],
    )
    assert attn.causal_mask(3).shape == (3, 3)


def test_padding_mask_and_combination():
    pad = attn.padding_mask([2, 3, 0], 3)
    np.testing.assert_array_equal(pad, [[1, 1, 0], [1, 1, 1], [0, 0, 0]])
    full = attn.padding_mask([2, 3, 0], 3, n_q=3) & attn.causal_mask(3)
    assert full.shape == (3, 3, 3)
    np.testing.assert_array_equal(full[0], [[1, 0, 0], [1, 1, 0], [1, 1, 0]])


def test_batched_mask_shape_exact():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 6))
    mask = attn.padding_mask([5, 2], 5, n_q=3)
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask=mask)
    assert out.shape == (2, 3, 6) and w.shape == (2, 3, 5)
    assert np.all(w[1, :, 2:] == 0.0)


# ---------------------------------------------------------------- properties
finite = st.floats(-30, 30, allow_nan=False, allow_infinity=False)


def qkv(draw, batch=()):
    n_q = draw(st.integers(1, 5))
    n_k = draw(st.integers(1, 5))
    d_k = draw(st.integers(1, 4))
    d_v = draw(st.integers(1, 4))
    Q = draw(arrays(np.float64, batch + (n_q, d_k), elements=finite))
    K = draw(arrays(np.float64, batch + (n_k, d_k), elements=finite))
    V = draw(arrays(np.float64, batch + (n_k, d_v), elements=finite))
    return Q, K, V


@st.composite
def qkv_mask(draw):
    Q, K, V = qkv(draw)
    mask = draw(arrays(bool, (Q.shape[0], K.shape[0])))
    return Q, K, V, mask


@settings(max_examples=200)
@given(qkv_mask())
def test_weights_sum_to_one_over_allowed_and_zero_elsewhere(data):
    Q, K, V, mask = data
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask=mask)
    assert np.all(w[~mask] == 0.0)
    sums = w.sum(axis=-1)
    has_key = mask.any(axis=-1)
    np.testing.assert_allclose(sums[has_key], 1.0, rtol=1e-12)
    np.testing.assert_array_equal(sums[~has_key], 0.0)
    assert np.isfinite(out).all()


@settings(max_examples=200)
@given(arrays(np.float64, st.integers(1, 8), elements=finite), st.floats(-1e3, 1e3))
def test_softmax_shift_invariance(x, c):
    np.testing.assert_allclose(attn.softmax(x), attn.softmax(x + c), atol=1e-12)


@settings(max_examples=100)
@given(st.data())
def test_permutation_equivariance(data):
    Q, K, V = qkv(data.draw)
    pq = data.draw(st.permutations(range(Q.shape[0])))
    pk = data.draw(st.permutations(range(K.shape[0])))
    out, w = attn.scaled_dot_product_attention(Q, K, V)
    out_p, w_p = attn.scaled_dot_product_attention(Q[pq], K[pk], V[pk])
    # permuting queries permutes output rows; permuting key/value pairs together changes nothing
    np.testing.assert_allclose(out_p, out[pq], atol=1e-10)
    np.testing.assert_allclose(w_p, w[pq][:, pk], atol=1e-12)


@settings(max_examples=100)
@given(st.data())
def test_batched_equals_loop(data):
    Q, K, V = qkv(data.draw, batch=(3,))
    mask = data.draw(arrays(bool, (3, Q.shape[1], K.shape[1])))
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask=mask)
    for b in range(3):
        out_b, w_b = attn.scaled_dot_product_attention(Q[b], K[b], V[b], mask=mask[b])
        np.testing.assert_allclose(out[b], out_b, atol=1e-12)
        np.testing.assert_allclose(w[b], w_b, atol=1e-12)


# ---------------------------------------------------------------- validation errors
def test_error_q_ndim():
    with pytest.raises(ValueError, match=r"Q has shape \(4,\); expected \(\.\.\., n_q, d_k\)$"):
        attn.scaled_dot_product_attention(Q1[0], K1, V1)


def test_error_dk_mismatch():
    with pytest.raises(ValueError, match=r"K has shape \(3, 3\); expected \(\.\.\., n_k, d_k\) with \.\.\. = \(\), d_k = 4$"):
        attn.scaled_dot_product_attention(Q1, K1[:, :3], V1)


def test_error_nk_mismatch():
    with pytest.raises(ValueError, match=r"V has shape \(2, 2\); expected \(\.\.\., n_k, d_v\) with \.\.\. = \(\), n_k = 3$"):
        attn.scaled_dot_product_attention(Q1, K1, V1[:2])


def test_error_batch_mismatch_is_not_broadcast():
    Qb = np.stack([Q1, Q1])  # (2, 2, 4) against unbatched K: NumPy would broadcast, attn refuses
    with pytest.raises(ValueError, match=r"K has shape \(3, 4\); expected \(\.\.\., n_k, d_k\) with \.\.\. = \(2,\), d_k = 4$"):
        attn.scaled_dot_product_attention(Qb, K1, V1)


def test_error_mask_not_bool():
    with pytest.raises(ValueError, match=r"mask: dtype float64, shape \(2, 3\); expected bool \(True = may attend\)$"):
        attn.scaled_dot_product_attention(Q1, K1, V1, mask=np.ones((2, 3)))


def test_error_mask_shape():
    with pytest.raises(ValueError, match=r"mask has shape \(3, 3\); expected \(n_q, n_k\) with n_q = 2, n_k = 3$"):
        attn.scaled_dot_product_attention(Q1, K1, V1, mask=attn.causal_mask(3))


def test_error_mask_batch_shape():
    Q = np.zeros((2, 2, 4))
    K = np.zeros((2, 3, 4))
    V = np.zeros((2, 3, 2))
    with pytest.raises(ValueError, match=r"mask has shape \(1, 2, 3\); expected \(\.\.\., n_q, n_k\) with \.\.\. = \(2,\), n_q = 2, n_k = 3$"):
        attn.scaled_dot_product_attention(Q, K, V, mask=np.ones((1, 2, 3), bool))


@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_error_non_finite(name, bad):
    args = {"Q": Q1.copy(), "K": K1.copy(), "V": V1.copy()}
    args[name][0, 0] = bad
    with pytest.raises(ValueError, match=rf"{name} with shape .* contains NaN or inf"):
        attn.scaled_dot_product_attention(**args)


def test_error_softmax_nan():
    with pytest.raises(ValueError, match=r"x with shape \(2,\) contains NaN or inf"):
        attn.softmax(np.array([0.0, np.nan]))


def test_error_padding_lengths():
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, n_k = 3\]"):
        attn.padding_mask([4], 3)
    with pytest.raises(ValueError, match=r"lengths has shape \(1, 2\)"):
        attn.padding_mask([[1, 2]], 3)


def test_error_causal_mask_size():
    with pytest.raises(ValueError, match="n_q must be a positive integer"):
        attn.causal_mask(0)


def test_error_masked_softmax_shape():
    with pytest.raises(ValueError, match=r"mask has shape \(3,\); expected \(\.\.\., n\) with \.\.\. = \(2,\), n = 3$"):
        attn.masked_softmax(np.zeros((2, 3)), np.ones(3, bool))


# ---------------------------------------------------------------- the score factor


def test_scale_default_is_one_over_sqrt_dk_and_one_gives_plain_dot_products():
    rng = np.random.default_rng(40)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    scores = Q @ np.swapaxes(K, -1, -2)  # (2, 3, 5)
    out, w = attn.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(w, attn.scaled_dot_product_attention(Q, K, V, scale=0.5)[1])  # 1/sqrt(4)
    np.testing.assert_allclose(w, attn.softmax(scores / 2), rtol=1e-14)
    out1, w1 = attn.scaled_dot_product_attention(Q, K, V, scale=1.0)
    np.testing.assert_allclose(w1, attn.softmax(scores), rtol=1e-14)
    np.testing.assert_allclose(out1, attn.softmax(scores) @ V, rtol=1e-14)
    assert not np.allclose(w1, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_keeps_dtype(dtype):
    Q = np.ones((2, 3), dtype=dtype)
    out, w = attn.scaled_dot_product_attention(Q, Q, Q, scale=3.0)
    assert out.dtype == dtype and w.dtype == dtype


@pytest.mark.parametrize("bad", [0, -0.5, np.nan, np.inf, True, "2", [1.0]])
def test_error_scale(bad):
    Q = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"scale must be a finite number > 0 \(or None for 1/sqrt\(d_k\)\), got"):
        attn.scaled_dot_product_attention(Q, Q, Q, scale=bad)


def test_multihead_scale_reaches_every_head():
    rng = np.random.default_rng(41)
    mha = attn.MultiHeadAttention(8, 2, rng=3, scale=1.0)
    x = rng.normal(size=(2, 4, 8))
    q, k = np.einsum("bnd,hdk->bhnk", x, mha.W_q), np.einsum("bnd,hdk->bhnk", x, mha.W_k)
    np.testing.assert_allclose(mha.forward(x, x, x)[1], attn.softmax(q @ np.swapaxes(k, -1, -2)), rtol=1e-13)
    same = attn.MultiHeadAttention.from_weights(mha.W_q, mha.W_k, mha.W_v, mha.W_o, scale=1.0)
    np.testing.assert_array_equal(same.forward(x, x, x)[0], mha.forward(x, x, x)[0])
    assert repr(same) == "MultiHeadAttention(d_model=8, num_heads=2, d_k=4, scale=1.0)"
