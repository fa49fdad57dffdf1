"""The exercises' experiments (attn.core, attn.encoder, attn.positional) and attn.experiments, against
independent computations; each refuses bad input at its door."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn
from attn.core import future_token_change
from attn.encoder import cosine_similarity, encoder_example
from attn.experiments import softmax_jacobian, softmax_saturation
from attn.multihead import _project_heads
from attn.positional import same_token_two_positions, shuffled_tokens

Q = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
K = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
V = np.vstack([np.eye(2), [[0.5, 0.5]]])


def test_encoder_example_is_the_global_seed_sequence_of_the_statement():
    mha, X, (W1, b1, W2, b2) = encoder_example()
    np.random.seed(42)  # noqa: NPY002 -- the statement's global seed
    expected = attn.MultiHeadAttention(8, 2)
    assert np.array_equal(mha.W_q, expected.W_q) and np.array_equal(mha.W_o, expected.W_o)
    assert np.array_equal(X, np.random.randn(5, 8))  # noqa: NPY002
    assert np.array_equal(W1, np.random.randn(8, 32) / np.sqrt(8))  # noqa: NPY002
    assert np.array_equal(W2, np.random.randn(32, 8) / np.sqrt(32))  # noqa: NPY002
    assert not b1.any() and not b2.any() and b1.shape == (32,) and b2.shape == (8,)


def test_future_token_change_by_hand():
    without, with_mask = future_token_change(Q, K, V, seed=0)
    rng = np.random.default_rng(0)
    K2, V2 = K.copy(), V.copy()
    K2[2], V2[2] = rng.normal(size=4), rng.normal(size=2)
    expected = np.abs(attn.scaled_dot_product_attention(Q, K2, V2)[0]
                      - attn.scaled_dot_product_attention(Q, K, V)[0]).max()
    assert without == expected and without > 0.1
    assert with_mask == 0.0  # the causal mask hides key 3 from both queries


def test_future_token_change_sees_the_future_when_a_query_may_reach_it():
    # three queries: the third may attend to key 3, so the change is not zero even with the mask
    Q3 = np.vstack([Q, [[1.0, 1.0, 0.0, 0.0]]])
    assert future_token_change(Q3, K, V, seed=0)[1] > 0.0


def test_same_token_two_positions():
    mha, _, params = encoder_example()
    without, with_pe = same_token_two_positions(mha, params, seed=0, length=60)
    X = np.random.default_rng(0).normal(size=(60, 8))
    X[50] = X[1]
    assert len({tuple(row) for row in X}) == 59  # one repeated token among 59 different ones
    out = attn.transformer_encoder_block(X + attn.positional_encoding(60, 8), mha, *params)
    assert without < 1e-12 and with_pe == np.abs(out[1] - out[50]).max() > 0.1


def test_shuffled_tokens_equivariance_without_pe():
    mha, _, params = encoder_example()
    perm, diff = shuffled_tokens(mha, params, seed=4, n=6)
    assert sorted(perm) == list(range(6)) and list(perm) != list(range(6))
    assert diff["no_pe"] < 1e-12 and diff["pe_with_tokens"] < 1e-12 and diff["same_pe"] > 0.1


def test_softmax_jacobian_matches_finite_differences():
    s = np.random.default_rng(3).normal(size=(2, 5))
    h = 1e-6
    fd = np.stack([(attn.softmax(s + h * e) - attn.softmax(s - h * e)) / (2 * h) for e in np.eye(5)], axis=-1)
    np.testing.assert_allclose(softmax_jacobian(attn.softmax(s)), fd, atol=1e-9)


@settings(max_examples=30)
@given(st.integers(2, 8), st.integers(0, 2**31))
def test_softmax_jacobian_rows_sum_to_zero(n, seed):
    w = attn.softmax(np.random.default_rng(seed).normal(size=n) * 3)
    J = softmax_jacobian(w)
    np.testing.assert_allclose(J.sum(axis=0), 0.0, atol=1e-12)  # the weights always sum to 1
    np.testing.assert_allclose(J, J.T, atol=1e-15)


def test_softmax_saturation_by_hand_and_trend():
    got = softmax_saturation(16, scaled=False, n_keys=3, samples=50, seed=5)
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((50, 1, 16)), rng.standard_normal((50, 3, 16))
    w = attn.softmax((q @ k.transpose(0, 2, 1))[:, 0, :])
    assert got["max_weight"] == pytest.approx(w.max(axis=1).mean(), rel=1e-12)
    assert got["entropy"] == pytest.approx(-(w * np.log(w)).sum(axis=1).mean(), rel=1e-12)
    # without the scale the weights concentrate as d_k grows; with it they do not
    peaked = [softmax_saturation(d, scaled=False, samples=500)["max_weight"] for d in (4, 64, 1024)]
    flat = [softmax_saturation(d, scaled=True, samples=500)["max_weight"] for d in (4, 64, 1024)]
    assert peaked == sorted(peaked) and max(flat) - min(flat) < 0.05


def test_softmax_saturation_query_jacobian_includes_the_scale():
    # d_k = 1: J K / c with c = 1 either way, so scaled and unscaled agree exactly
    a, b = softmax_saturation(1, scaled=True, samples=20), softmax_saturation(1, scaled=False, samples=20)
    assert a == b


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="d_k"):
        softmax_saturation(0, scaled=True)
    with pytest.raises(ValueError, match="K"):
        future_token_change(Q, K[:, :3], V)


def test_cosine_similarity_refuses_a_zero_row():
    A = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, -1.0]])
    with pytest.raises(ValueError, match=r"A has a zero row \(row 1\)"):
        cosine_similarity(A)


@pytest.mark.parametrize("positions", [(1, -59), (50, 1), (1, 1), (1, 60), (1.0, 50)])
def test_same_token_two_positions_refuses_positions_outside_the_sequence(positions):
    mha, _, params = encoder_example()
    with pytest.raises(ValueError, match=r"positions must be two ints p < q in \[0, length = 60\)"):
        same_token_two_positions(mha, params, length=60, positions=positions)


@pytest.mark.parametrize("rng", ["abc", 1.5, True, -1])
def test_multihead_refuses_an_rng_that_is_no_generator(rng):
    with pytest.raises(ValueError, match=r"rng must be None, an int seed >= 0 or a NumPy generator, got"):
        attn.MultiHeadAttention(8, 2, rng=rng)


@pytest.mark.parametrize("call", [
    lambda: attn.scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), scale=10**400),
    lambda: attn.causal_mask(10**400),
    lambda: attn.MultiHeadAttention(10**400, 2),
])
def test_numbers_beyond_float64_are_refused_with_a_value_error(call):
    with pytest.raises(ValueError, match=r"must be a (finite number > 0|positive integer)"):
        call()


@pytest.mark.parametrize("inf", [np.float16(np.inf), np.float32(np.inf), np.float64(np.inf), np.float32(np.nan)])
def test_numpy_infinities_of_any_width_are_refused_without_a_warning(inf):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # comparing a float32 with float64's max used to warn (overflow in cast)
        with pytest.raises(ValueError, match=r"scale must be a finite number > 0"):
            attn.scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), scale=inf)
        with pytest.raises(ValueError, match=r"eps must be a finite number > 0"):
            attn.layer_norm(np.ones((2, 3)), eps=inf)
        assert attn.MultiHeadAttention(8, 2, rng=0, scale=np.float32(0.5)).scale == 0.5


def test_a_nan_input_is_refused_at_the_door_before_the_projection():
    mha, X, _ = encoder_example()
    X[2, 3] = np.nan
    assert np.isnan(_project_heads(X, mha.W_q)).any()  # the kernel checks nothing
    with pytest.raises(ValueError, match=r"Q with shape \(5, 8\) contains NaN or inf at index \[2 3\]$"):
        mha.forward(X, X, X)
