"""Tests of attn.SelfAttention: hand-derived values, invariants, validation errors, PyTorch oracle."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn
from attn import SelfAttention

SENTENCE = ["The", "cat", "sat", "on", "the", "mat"]


def layer_with(W_q, W_k, W_v):
    W_q, W_k, W_v = (np.asarray(W, dtype=float) for W in (W_q, W_k, W_v))
    layer = SelfAttention(W_q.shape[0], W_q.shape[1], W_v.shape[1], rng=0)
    layer.W_q, layer.W_k, layer.W_v = W_q, W_k, W_v
    return layer


# -- hand-derived values ---------------------------------------------------------------------------
def test_identity_projections_by_hand():
    # Q = K = X = I_2 -> scores = I / sqrt(2); V = X @ [[1], [0]] = [[1], [0]]
    layer = layer_with(np.eye(2), np.eye(2), [[1.0], [0.0]])
    out, w = layer.forward(np.eye(2))
    a = np.exp(1 / np.sqrt(2))
    expected_w = np.array([[a, 1.0], [1.0, a]]) / (a + 1)
    np.testing.assert_allclose(w, expected_w, rtol=1e-14)
    np.testing.assert_allclose(out, [[a / (a + 1)], [1 / (a + 1)]], rtol=1e-14)


def test_zero_query_projection_gives_uniform_weights_and_mean_values():
    # W_q = 0 -> every score is 0 -> uniform weights 1/n; output = mean of the value rows
    rng = np.random.default_rng(3)
    layer = layer_with(np.zeros((5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2)))
    X = rng.normal(size=(4, 5))
    out, w = layer.forward(X)
    np.testing.assert_array_equal(w, np.full((4, 4), 0.25))
    np.testing.assert_allclose(out, np.tile((X @ layer.W_v).mean(axis=0), (4, 1)), rtol=1e-13)


def test_causal_first_row_copies_first_value_and_masked_weights_are_exact_zeros():
    layer = SelfAttention(8, 4, 4, rng=42)
    X = np.random.default_rng(42).normal(size=(6, 8))
    out, w = layer.forward(X, mask=attn.causal_mask(6))
    _, _, V = layer.project(X)
    assert np.all(w[np.triu_indices(6, k=1)] == 0.0)
    np.testing.assert_array_equal(w[0], [1.0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out[0], V[0])
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-14)


def test_forward_is_sdpa_of_projections():
    layer = SelfAttention(8, 4, 3, rng=1)
    X = np.random.default_rng(2).normal(size=(5, 8))
    Q, K, V = layer.project(X)
    np.testing.assert_array_equal(Q, X @ layer.W_q)
    np.testing.assert_array_equal(K, X @ layer.W_k)
    np.testing.assert_array_equal(V, X @ layer.W_v)
    out, w = layer.forward(X)
    ref_out, ref_w = attn.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(w, ref_w)


# -- shapes, dtypes, batches -------------------------------------------------------------------------
def test_shapes_lesson_sentence():
    layer = SelfAttention(8, 4, 4, rng=42)
    X = np.random.default_rng(42).normal(size=(len(SENTENCE), 8))
    Q, K, V = layer.project(X)
    out, w = layer(X)
    assert (Q.shape, K.shape, V.shape) == ((6, 4), (6, 4), (6, 4))
    assert out.shape == (6, 4) and w.shape == (6, 6)
    assert (layer.W_q.shape, layer.W_k.shape, layer.W_v.shape) == ((8, 4), (8, 4), (8, 4))


def test_d_v_differs_from_d_k():
    layer = SelfAttention(6, 2, 5, rng=0)
    out, w = layer.forward(np.ones((3, 6)))
    assert out.shape == (3, 5) and w.shape == (3, 3)


def test_float32_in_float32_out():
    layer = SelfAttention(8, 4, 4, rng=0)
    X = np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32)
    out, w = layer.forward(X)
    assert out.dtype == np.float32 and w.dtype == np.float32
    ref_out, _ = layer.forward(X.astype(np.float64))
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)
    Q, K, V = layer.project(X)
    assert Q.dtype == K.dtype == V.dtype == np.float32


def test_integer_input_becomes_float64():
    out, w = SelfAttention(2, 2, 2, rng=0).forward(np.array([[1, 0], [0, 1]]))
    assert out.dtype == np.float64 and w.dtype == np.float64


def test_batch_equals_loop():
    layer = SelfAttention(8, 4, 3, rng=5)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2, 3, 5, 8))
    mask = rng.random((2, 3, 5, 5)) < 0.7
    out, w = layer.forward(X, mask=mask)
    assert out.shape == (2, 3, 5, 3) and w.shape == (2, 3, 5, 5)
    for idx in np.ndindex(2, 3):
        o, ww = layer.forward(X[idx], mask=mask[idx])
        np.testing.assert_allclose(out[idx], o, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(w[idx], ww, rtol=1e-13, atol=1e-15)


def test_2d_mask_applies_to_every_batch_element():
    layer = SelfAttention(4, 2, 2, rng=5)
    X = np.random.default_rng(7).normal(size=(3, 5, 4))
    out, _ = layer.forward(X, mask=attn.causal_mask(5))
    full, _ = layer.forward(X, mask=np.broadcast_to(attn.causal_mask(5), (3, 5, 5)))
    np.testing.assert_array_equal(out, full)


def test_padding_mask_outputs_ignore_padded_rows():
    layer = SelfAttention(4, 3, 2, rng=8)
    rng = np.random.default_rng(9)
    X = rng.normal(size=(2, 5, 4))
    mask = attn.padding_mask([5, 3], 5, n_q=5)  # (2, 5, 5)
    out, w = layer.forward(X, mask=mask)
    X2 = X.copy()
    X2[1, 3:] = rng.normal(size=(2, 4)) * 100  # change only the padded tokens of sequence 2
    out2, w2 = layer.forward(X2, mask=mask)
    np.testing.assert_array_equal(out2[1, :3], out[1, :3])
    assert np.all(w[1, :, 3:] == 0.0) and np.all(w2[1, :, 3:] == 0.0)


# -- initialisation --------------------------------------------------------------------------------
def test_seed_is_reproducible_and_int_equals_generator():
    a = SelfAttention(8, 4, 4, rng=42)
    b = SelfAttention(8, 4, 4, rng=42)
    c = SelfAttention(8, 4, 4, rng=np.random.default_rng(42))
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_array_equal(getattr(a, name), getattr(c, name))
    assert not np.array_equal(a.W_q, a.W_k)


def test_none_uses_numpy_global_generator():
    np.random.seed(11)  # noqa: NPY002 (the documented rng=None behaviour)
    a = SelfAttention(5, 3, 2)
    np.random.seed(11)  # noqa: NPY002 (the documented rng=None behaviour)
    b = SelfAttention(5, 3, 2)
    np.testing.assert_array_equal(a.W_v, b.W_v)


def test_draw_order_and_xavier_scale():
    a = SelfAttention(4, 3, 2, rng=123)
    g = np.random.default_rng(123)
    np.testing.assert_array_equal(a.W_q, g.standard_normal((4, 3)) * np.sqrt(2 / 7))
    np.testing.assert_array_equal(a.W_k, g.standard_normal((4, 3)) * np.sqrt(2 / 7))
    np.testing.assert_array_equal(a.W_v, g.standard_normal((4, 2)) * np.sqrt(2 / 6))


def test_xavier_variance_on_a_large_layer():
    layer = SelfAttention(300, 200, 100, rng=0)
    assert abs(layer.W_q.std() / np.sqrt(2 / 500) - 1) < 0.02
    assert abs(layer.W_v.std() / np.sqrt(2 / 400) - 1) < 0.02


def test_weights_are_settable_and_stored_as_float64():
    layer = SelfAttention(3, 2, 2, rng=0)
    layer.W_q = np.ones((3, 2), dtype=np.float32)
    assert layer.W_q.dtype == np.float64
    np.testing.assert_array_equal(layer.W_q, np.ones((3, 2)))


def test_repr():
    assert repr(SelfAttention(8, 4, 2, rng=0)) == "SelfAttention(d_model=8, d_k=4, d_v=2)"


# -- properties ----------------------------------------------------------------------------------
finite = st.floats(-5, 5, allow_nan=False, allow_infinity=False)


@settings(max_examples=40)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 6), st.just(4)), elements=finite),
       seed=st.integers(0, 2**16))
def test_rows_sum_to_one_and_output_in_convex_hull(X, seed):
    layer = SelfAttention(4, 3, 2, rng=seed)
    out, w = layer.forward(X)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.all(w >= 0)
    V = X @ layer.W_v
    assert np.all(out <= V.max(axis=0) + 1e-9) and np.all(out >= V.min(axis=0) - 1e-9)


@settings(max_examples=40)
@given(X=arrays(np.float64, st.tuples(st.integers(2, 6), st.just(5)), elements=finite),
       data=st.data())
def test_permutation_equivariance(X, data):
    n = X.shape[0]
    perm = np.array(data.draw(st.permutations(range(n))))
    layer = SelfAttention(5, 3, 4, rng=1)
    out, w = layer.forward(X)
    out_p, w_p = layer.forward(X[perm])
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_p, w[np.ix_(perm, perm)], rtol=1e-10, atol=1e-12)


@settings(max_examples=40)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 6), st.just(3)), elements=finite),
       data=st.data())
def test_masked_weights_exactly_zero(X, data):
    n = X.shape[0]
    mask = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n),
                                       min_size=n, max_size=n)), dtype=bool).reshape(n, n)
    out, w = SelfAttention(3, 2, 2, rng=2).forward(X, mask=mask)
    assert np.all(w[~mask] == 0.0)
    assert not np.isnan(out).any()
    rows = mask.any(axis=1)
    np.testing.assert_allclose(w[rows].sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(w[~rows] == 0.0) and np.all(out[~rows] == 0.0)


# -- validation errors (one per message) -------------------------------------------------------------
@pytest.mark.parametrize("name, args", [
    ("d_model", (0, 2, 2)),
    ("d_k", (4, -1, 2)),
    ("d_v", (4, 2, 2.5)),
])
def test_sizes_must_be_positive_integers(name, args):
    with pytest.raises(ValueError, match=rf"^{name} must be a positive integer, got"):
        SelfAttention(*args, rng=0)


def test_bool_size_refused():
    with pytest.raises(ValueError, match=r"d_model must be a positive integer, got True"):
        SelfAttention(True, 2, 2, rng=0)


def test_rng_type_refused():
    with pytest.raises(ValueError, match=r"rng must be None, an int seed >= 0 or a NumPy generator, got '"):
        SelfAttention(4, 2, 2, rng="42")


def test_X_must_be_2d_or_more():
    with pytest.raises(ValueError, match=r"X has shape \(8,\) \(1 dimensions\); expected \(n, d_model\)"):
        SelfAttention(8, 4, 4, rng=0).forward(np.ones(8))


def test_X_last_axis_must_be_d_model():
    with pytest.raises(ValueError,
                       match=r"X has shape \(6, 5\); expected \(\.\.\., n, d_model\) with d_model = 8"):
        SelfAttention(8, 4, 4, rng=0).forward(np.ones((6, 5)))


def test_X_nan_refused():
    X = np.ones((3, 4))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"X with shape \(3, 4\) contains NaN or inf at index \[1 2\]$"):
        SelfAttention(4, 2, 2, rng=0).forward(X)


def test_X_non_numeric_refused():
    with pytest.raises(ValueError, match=r"X must be a real numeric array, got dtype <U1"):
        SelfAttention(1, 1, 1, rng=0).forward(np.array([["a"]]))


def test_mask_must_be_boolean():
    with pytest.raises(ValueError, match=r"mask: dtype int64, shape \(3, 3\); expected bool \(True = may attend\)$"):
        SelfAttention(4, 2, 2, rng=0).forward(np.ones((3, 4)), mask=np.ones((3, 3), dtype=np.int64))


def test_mask_shape_must_match():
    with pytest.raises(ValueError, match=r"mask has shape \(3, 4\); expected \(n_q, n_k\) with n_q = 3, n_k = 3$"):
        SelfAttention(4, 2, 2, rng=0).forward(np.ones((3, 4)), mask=np.ones((3, 4), dtype=bool))


@pytest.mark.parametrize("name, shape, expected", [
    ("W_q", (4, 3), r"\(d_model, d_k\) = \(4, 2\)"),
    ("W_k", (2, 4), r"\(d_model, d_k\) = \(4, 2\)"),
    ("W_v", (4, 2), r"\(d_model, d_v\) = \(4, 5\)"),
])
def test_weight_setter_checks_shape(name, shape, expected):
    layer = SelfAttention(4, 2, 5, rng=0)
    with pytest.raises(ValueError, match=rf"{name} has shape \({shape[0]}, {shape[1]}\); expected {expected}"):
        setattr(layer, name, np.ones(shape))


def test_weight_setter_refuses_inf():
    layer = SelfAttention(2, 2, 2, rng=0)
    with pytest.raises(ValueError, match=r"W_k with shape \(2, 2\) contains NaN or inf"):
        layer.W_k = np.array([[1.0, np.inf], [0.0, 1.0]])


# -- oracle: PyTorch on the same weights and inputs (float64) ----------------------------------------
def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


@pytest.mark.oracle
@pytest.mark.parametrize("causal", [False, True])
def test_oracle_torch_sdpa_on_torch_projections(causal):
    layer = SelfAttention(8, 4, 3, rng=42)
    X = np.random.default_rng(42).normal(size=(2, 6, 8))
    mask = attn.causal_mask(6) if causal else None
    out, w = layer.forward(X, mask=mask)
    Xt = _t(X)
    Q, K, V = Xt @ _t(layer.W_q), Xt @ _t(layer.W_k), Xt @ _t(layer.W_v)
    ref = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-12, atol=1e-13)
    scores = Q @ K.transpose(-1, -2) / np.sqrt(4)
    if causal:
        scores = scores.masked_fill(~_t(attn.causal_mask(6)), float("-inf"))
    np.testing.assert_allclose(w, torch.softmax(scores, dim=-1).numpy(), rtol=1e-12, atol=1e-14)


def _torch_one_head(layer):
    """nn.MultiheadAttention with 1 head, no bias, W_o = I and attn's projections.

    torch computes x @ in_proj_weight.T; its (3 d, d) weight stacks [W_q^T; W_k^T; W_v^T].
    """
    d = layer.d_model
    mha = torch.nn.MultiheadAttention(d, num_heads=1, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(_t(np.concatenate([layer.W_q.T, layer.W_k.T, layer.W_v.T])))
        mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    return mha


@pytest.mark.oracle
def test_oracle_torch_multihead_one_head_identity_output():
    layer = SelfAttention(8, 8, 8, rng=7)
    X = np.random.default_rng(8).normal(size=(3, 6, 8))
    out, w = layer.forward(X)
    mha = _torch_one_head(layer)
    with torch.no_grad():
        ref_out, ref_w = mha(_t(X), _t(X), _t(X), need_weights=True)
    np.testing.assert_allclose(out, ref_out.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, ref_w.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.oracle
def test_oracle_torch_multihead_masks_use_the_opposite_convention():
    layer = SelfAttention(6, 6, 6, rng=9)
    X = np.random.default_rng(10).normal(size=(2, 5, 6))
    allowed = attn.padding_mask([5, 2], 5, n_q=5) & attn.causal_mask(5)  # (2, 5, 5), True = may attend
    out, w = layer.forward(X, mask=allowed)
    mha = _torch_one_head(layer)
    with torch.no_grad():
        ref_out, ref_w = mha(_t(X), _t(X), _t(X), attn_mask=_t(~attn.causal_mask(5)),
                             key_padding_mask=_t(~attn.padding_mask([5, 2], 5)))  # torch: True = blocked
    np.testing.assert_allclose(out, ref_out.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, ref_w.numpy(), rtol=1e-12, atol=1e-14)
