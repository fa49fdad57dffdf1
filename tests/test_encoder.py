"""layer_norm, ffn and transformer_encoder_block: hand values, properties, errors and PyTorch oracles.

Oracles (float64, same weights): torch.nn.LayerNorm, and
torch.nn.TransformerEncoderLayer(norm_first=False, dropout=0.0, activation="relu") whose attention
biases are set to zero (attn's MultiHeadAttention has none) and whose linear and norm parameters
are copied from the arrays given to attn.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attn
from attn import MultiHeadAttention, ffn, layer_norm, transformer_encoder_block
from attn.training.backward import encoder_block_forward


def block_params(rng, d_model, d_ff):
    return (rng.normal(size=(d_model, d_ff)) / np.sqrt(d_model), rng.normal(size=d_ff) * 0.1,
            rng.normal(size=(d_ff, d_model)) / np.sqrt(d_ff), rng.normal(size=d_model) * 0.1)


# ---------------------------------------------------------------- layer_norm

def test_layer_norm_hand_values():
    # mean 2.5, biased variance 1.25
    y = layer_norm([1.0, 2.0, 3.0, 4.0], eps=1e-5)
    np.testing.assert_allclose(y, np.array([-1.5, -0.5, 0.5, 1.5]) / np.sqrt(1.25 + 1e-5), rtol=1e-15)


def test_layer_norm_gamma_beta():
    y = layer_norm([[0.0, 2.0]], gamma=[2.0, 3.0], beta=[1.0, -1.0], eps=1e-12)
    np.testing.assert_allclose(y, [[2.0 * -1 + 1.0, 3.0 * 1 - 1.0]], rtol=1e-10)


def test_layer_norm_constant_row_gives_beta():
    y = layer_norm(np.full((2, 3), 7.0), beta=[0.5, 0.0, -0.5])
    np.testing.assert_array_equal(y, [[0.5, 0.0, -0.5]] * 2)


def test_layer_norm_float32():
    # float32 x stays float32 without gamma/beta (the scalars 1 and 0) and with float32 ones;
    # float64 gamma/beta promote the result to float64 (NumPy promotion, nothing is cast)
    x = np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)
    ref = layer_norm(x.astype(np.float64))
    y = layer_norm(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert layer_norm(x, np.ones(6, np.float32), np.zeros(6, np.float32)).dtype == np.float32
    y64 = layer_norm(x, np.ones(6), np.zeros(6))
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64, ref, rtol=1e-5, atol=1e-5)


@settings(max_examples=100)
@given(st.integers(2, 16), st.integers(0, 2**32 - 1), st.floats(0.1, 100.0))
def test_property_rows_mean_zero_unit_variance(d, seed, scale):
    x = np.random.default_rng(seed).normal(size=(3, d)) * scale
    var = x.var(axis=-1, keepdims=True)
    y = layer_norm(x)
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1, keepdims=True), var / (var + 1e-5), rtol=1e-10)
    # invariant to shifting and (positive) rescaling of a row, up to eps
    np.testing.assert_allclose(layer_norm(3.0 * x + 5.0, eps=9e-5), y, rtol=1e-9, atol=1e-12)


def test_error_layer_norm_gamma_shape():
    with pytest.raises(ValueError, match=r"gamma has shape \(3,\); expected \(d,\) with d = 4$"):
        layer_norm(np.zeros((2, 4)), gamma=np.ones(3))


def test_error_layer_norm_beta_shape():
    with pytest.raises(ValueError, match=r"beta has shape \(1, 4\); expected \(d,\) with d = 4$"):
        layer_norm(np.zeros((2, 4)), beta=np.ones((1, 4)))


def test_error_layer_norm_eps():
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0, got 0"):
        layer_norm(np.zeros(4), eps=0)


def test_error_layer_norm_scalar():
    with pytest.raises(ValueError, match=r"x has shape \(\); expected \(\.\.\., d\)$"):
        layer_norm(1.0)


# ---------------------------------------------------------------- ffn

def test_ffn_hand_values():
    # relu([1, -1]) = [1, 0]; [1, 0] @ diag(2, 3) + [1, 1] = [3, 1]
    out = ffn([1.0, -1.0], np.eye(2), np.zeros(2), np.diag([2.0, 3.0]), np.ones(2))
    np.testing.assert_array_equal(out, [3.0, 1.0])


def test_ffn_is_position_wise():
    rng = np.random.default_rng(2)
    params = block_params(rng, 4, 16)
    X = rng.normal(size=(2, 5, 4))
    out = ffn(X, *params)
    np.testing.assert_allclose(out[1, 3], ffn(X[1, 3], *params), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("which, bad, msg", [
    ("W1", np.zeros((3, 8)), r"W1 has shape \(3, 8\); expected \(d_model, d_ff\) with d_model = 4$"),
    ("b1", np.zeros(7), r"b1 has shape \(7,\); expected \(d_ff,\) with d_ff = 8$"),
    ("W2", np.zeros((8, 3)), r"W2 has shape \(8, 3\); expected \(d_ff, d_model\) with d_ff = 8, d_model = 4$"),
    ("b2", np.zeros(8), r"b2 has shape \(8,\); expected \(d_model,\) with d_model = 4$"),
])
def test_error_ffn_shapes(which, bad, msg):
    args = {"W1": np.zeros((4, 8)), "b1": np.zeros(8), "W2": np.zeros((8, 4)), "b2": np.zeros(4)}
    args[which] = bad
    with pytest.raises(ValueError, match=msg):
        ffn(np.zeros((5, 4)), **args)


def test_error_ffn_W1_ndim():
    with pytest.raises(ValueError, match=r"W1 has shape \(4,\); expected \(d_model, d_ff\) with d_model = 4$"):
        ffn(np.zeros((5, 4)), np.zeros(4), np.zeros(8), np.zeros((8, 4)), np.zeros(4))


# ---------------------------------------------------------------- encoder block

def test_block_equals_its_definition():
    rng = np.random.default_rng(4)
    mha = MultiHeadAttention(8, 2, rng=rng)
    params = block_params(rng, 8, 32)
    x = rng.normal(size=(5, 8))
    h = layer_norm(x + mha.forward(x, x, x)[0])
    expected = layer_norm(h + ffn(h, *params))
    np.testing.assert_allclose(transformer_encoder_block(x, mha, *params), expected, rtol=1e-14, atol=1e-15)


def test_block_output_rows_are_normalised():
    rng = np.random.default_rng(6)
    mha = MultiHeadAttention(8, 2, rng=rng)
    out = transformer_encoder_block(rng.normal(size=(3, 5, 8)), mha, *block_params(rng, 8, 32))
    assert out.shape == (3, 5, 8)
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-12)


def test_block_causal_mask_first_token_ignores_the_rest():
    rng = np.random.default_rng(9)
    mha = MultiHeadAttention(8, 2, rng=rng)
    params = block_params(rng, 8, 32)
    x = rng.normal(size=(4, 8))
    y = x.copy()
    y[1:] = rng.normal(size=(3, 8))
    mask = attn.causal_mask(4)
    a = transformer_encoder_block(x, mha, *params, mask=mask)
    b = transformer_encoder_block(y, mha, *params, mask=mask)
    np.testing.assert_array_equal(a[0], b[0])


@settings(max_examples=50)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1))
def test_property_block_is_permutation_equivariant(n, seed):
    rng = np.random.default_rng(seed)
    mha = MultiHeadAttention(8, 2, rng=rng)
    params = block_params(rng, 8, 32)
    x = rng.normal(size=(n, 8))
    perm = rng.permutation(n)
    np.testing.assert_allclose(transformer_encoder_block(x[perm], mha, *params),
                               transformer_encoder_block(x, mha, *params)[perm], rtol=1e-9, atol=1e-11)


def test_error_block_mha_type():
    with pytest.raises(ValueError, match=r"mha must be a MultiHeadAttention, got dict"):
        transformer_encoder_block(np.zeros((5, 8)), {}, np.zeros((8, 32)), np.zeros(32), np.zeros((32, 8)),
                                  np.zeros(8))


def test_error_block_width():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"x has shape \(5, 6\); expected \(\.\.\., n, d_model\) with d_model = 8$"):
        transformer_encoder_block(np.zeros((5, 6)), mha, np.zeros((8, 32)), np.zeros(32), np.zeros((32, 8)),
                                  np.zeros(8))


def test_error_block_ndim():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"x has shape \(8,\); expected \(\.\.\., n, d_model\) with d_model = 8$"):
        transformer_encoder_block(np.zeros(8), mha, np.zeros((8, 32)), np.zeros(32), np.zeros((32, 8)),
                                  np.zeros(8))


def test_error_block_mask_shape():
    mha = MultiHeadAttention(8, 2, rng=0)
    params = (np.zeros((8, 32)), np.zeros(32), np.zeros((32, 8)), np.zeros(8))
    x = np.zeros((2, 5, 8))
    with pytest.raises(ValueError, match=r"mask has shape \(5, 4\); expected \(n_q, n_k\) with n_q = 5, n_k = 5$"):
        transformer_encoder_block(x, mha, *params, mask=np.ones((5, 4), bool))
    with pytest.raises(ValueError, match=r"mask has shape \(3, 5, 5\); expected \(\.\.\., n_q, n_k\) "
                                         r"with \.\.\. = \(2,\), n_q = 5, n_k = 5$"):
        transformer_encoder_block(x, mha, *params, mask=np.ones((3, 5, 5), bool))


# ---------------------------------------------------------------- PyTorch oracles

def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


@pytest.mark.oracle
def test_oracle_torch_layer_norm():
    rng = np.random.default_rng(31)
    x, gamma, beta = rng.normal(size=(3, 5, 8)) * 4 + 2, rng.normal(size=8), rng.normal(size=8)
    ln = torch.nn.LayerNorm(8, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(t(gamma))
        ln.bias.copy_(t(beta))
        ref = ln(t(x)).numpy()
    np.testing.assert_allclose(layer_norm(x, gamma, beta, eps=1e-5), ref, rtol=1e-12, atol=1e-13)


def torch_encoder_layer(mha, W1, b1, W2, b2, norms):
    d, h = mha.d_model, mha.num_heads
    layer = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=W1.shape[1], dropout=0.0, activation="relu",
                                             batch_first=True, norm_first=False, dtype=torch.float64)
    packed = np.concatenate([W.transpose(0, 2, 1).reshape(d, d) for W in (mha.W_q, mha.W_k, mha.W_v)])
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(t(packed))
        layer.self_attn.in_proj_bias.zero_()  # attn's MHA has no biases
        layer.self_attn.out_proj.weight.copy_(t(mha.W_o.T))
        layer.self_attn.out_proj.bias.zero_()
        layer.linear1.weight.copy_(t(W1.T))  # torch Linear: x @ weight.T + bias
        layer.linear1.bias.copy_(t(b1))
        layer.linear2.weight.copy_(t(W2.T))
        layer.linear2.bias.copy_(t(b2))
        for norm, (g, b) in zip((layer.norm1, layer.norm2), norms, strict=True):
            norm.weight.copy_(t(g))
            norm.bias.copy_(t(b))
    return layer.eval()


@pytest.mark.oracle
def test_oracle_torch_transformer_encoder_layer():
    # the public block: layer norms with gamma = 1, beta = 0 (torch.nn.LayerNorm's initial parameters)
    rng = np.random.default_rng(77)
    mha = MultiHeadAttention(8, 2, rng=rng)
    W1, b1, W2, b2 = block_params(rng, 8, 32)
    norms = [(np.ones(8), np.zeros(8))] * 2
    x = rng.normal(size=(3, 5, 8))
    layer = torch_encoder_layer(mha, W1, b1, W2, b2, norms)
    lengths = np.array([5, 3, 1])
    per_batch = attn.padding_mask(lengths, 5, 5)  # (B, n, n): each batch element its own key mask
    with torch.no_grad():
        ref = layer(t(x)).numpy()
        ref_causal = layer(t(x), src_mask=t(~attn.causal_mask(5))).numpy()  # torch: True = blocked
        ref_pad = layer(t(x), src_key_padding_mask=t(~attn.padding_mask(lengths, 5))).numpy()
    out = transformer_encoder_block(x, mha, W1, b1, W2, b2)
    np.testing.assert_allclose(out, ref, rtol=1e-11, atol=1e-12)
    out_c = transformer_encoder_block(x, mha, W1, b1, W2, b2, mask=attn.causal_mask(5))
    np.testing.assert_allclose(out_c, ref_causal, rtol=1e-11, atol=1e-12)
    out_p = transformer_encoder_block(x, mha, W1, b1, W2, b2, mask=per_batch)
    np.testing.assert_allclose(out_p, ref_pad, rtol=1e-11, atol=1e-12)


@pytest.mark.oracle
def test_oracle_torch_encoder_layer_with_trained_norms():
    # gamma, beta != 1, 0: the block's forward of the training code (the public block has none)
    rng = np.random.default_rng(78)
    mha = MultiHeadAttention(8, 2, rng=rng)
    W1, b1, W2, b2 = block_params(rng, 8, 32)
    norms = [(rng.normal(size=8), rng.normal(size=8)) for _ in range(2)]
    x = rng.normal(size=(3, 5, 8))
    layer = torch_encoder_layer(mha, W1, b1, W2, b2, norms)
    with torch.no_grad():
        ref = layer(t(x)).numpy()
        ref_causal = layer(t(x), src_mask=t(~attn.causal_mask(5))).numpy()  # torch: True = blocked
    (g1, be1), (g2, be2) = norms
    p = dict(W1=W1, b1=b1, W2=W2, b2=b2, gamma1=g1, beta1=be1, gamma2=g2, beta2=be2)
    out, _ = encoder_block_forward(x, mha, p)
    np.testing.assert_allclose(out, ref, rtol=1e-11, atol=1e-12)
    out_c, _ = encoder_block_forward(x, mha, p, attn.causal_mask(5))
    np.testing.assert_allclose(out_c, ref_causal, rtol=1e-11, atol=1e-12)


# ---------------------------------------------------------------- layer_norm, eps outside the root

def test_layer_norm_eps_added_to_the_standard_deviation():
    x = np.array([1.0, 2.0, 3.0, 4.0])  # mean 2.5, biased deviation sqrt(1.25)
    y = layer_norm(x, eps=1e-2, eps_in_sqrt=False)
    np.testing.assert_allclose(y, (x - 2.5) / (np.sqrt(1.25) + 1e-2), rtol=1e-15)
    assert not np.allclose(y, layer_norm(x, eps=1e-2))  # the two forms are different functions


def test_layer_norm_eps_outside_constant_row_gives_beta():
    np.testing.assert_array_equal(layer_norm(np.full((1, 3), 2.0), beta=[1.0, 0.0, -1.0], eps_in_sqrt=False),
                                  [[1.0, 0.0, -1.0]])


@settings(max_examples=50)
@given(st.integers(2, 16), st.integers(0, 2**32 - 1))
def test_property_eps_forms_agree_to_order_eps(d, seed):
    x = np.random.default_rng(seed).normal(size=(4, d))
    sigma = x.std(axis=-1, keepdims=True)
    gap = np.abs(layer_norm(x) - layer_norm(x, eps_in_sqrt=False))
    # both are x_hat times a factor 1 - O(eps / sigma); |x_hat| <= sqrt(d)
    assert np.all(gap <= np.sqrt(d) * 1e-5 * (1 / sigma + 1 / (2 * sigma**2)))

