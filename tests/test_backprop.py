"""attn.training.backward and attn.training.encoder_model: finite differences (float64), exact zeros under masks, PyTorch autograd oracles.

Finite differences: central, step 1e-6, relative error ``|num - ana| / (|num| + |ana|)`` (norms over the
whole array) below 1e-6 for every parameter and every input. The whole-model checks perturb the loss
alone (the same forward and cross-entropy as ``loss_and_grads``, equal to its loss bit for bit, without
its backward) on a model as small as still has every parameter kind and every path (2 layers, 2 heads,
padding). Oracles: torch.nn.MultiheadAttention,
torch.nn.LayerNorm, torch.nn.TransformerEncoderLayer (dropout 0, attention biases zero) and a whole
torch model built from the same weights, gradients compared with autograd's.
"""
import numpy as np
import pytest
import torch
from helpers import assert_close_grad, numeric_grad, probe, t, torch_layer

import attn
from attn import MultiHeadAttention, layer_norm, transformer_encoder_block
from attn.core import masked_softmax, scaled_dot_product_attention
from attn.encoder import ffn
from attn.training.backward import (
    attention_backward,
    embedding_backward,
    encoder_block_backward,
    encoder_block_forward,
    ffn_backward,
    layer_norm_backward,
    multihead_backward,
    softmax_backward,
    softmax_cross_entropy,
)
from attn.training.encoder_model import TransformerEncoder


def block_params(rng, d, d_ff):
    return {"W1": rng.normal(size=(d, d_ff)) / np.sqrt(d), "b1": rng.normal(size=d_ff) * 0.3,
            "W2": rng.normal(size=(d_ff, d)) / np.sqrt(d_ff), "b2": rng.normal(size=d) * 0.3,
            "gamma1": 1 + 0.3 * rng.normal(size=d), "beta1": 0.3 * rng.normal(size=d),
            "gamma2": 1 + 0.3 * rng.normal(size=d), "beta2": 0.3 * rng.normal(size=d)}


# ---------------------------------------------------------------- finite differences, piece by piece

def test_fd_softmax_masked():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(2, 3, 5))
    mask = rng.random((2, 3, 5)) < 0.7
    mask[0, 1] = False  # a fully blocked row: all-zero weights and gradient
    P = probe(s.shape, 1)
    grad = softmax_backward(P, masked_softmax(s, mask))
    assert_close_grad(numeric_grad(lambda: np.sum(P * masked_softmax(s, mask)), s), grad, "scores")
    assert np.all(grad[~mask] == 0.0)


@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_fd_attention_with_mask(scale):
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 5, 6))
    mask = attn.padding_mask(np.array([5, 3]), 5, n_q=4)  # (2, 4, 5): keys 3, 4 of batch 1 are padding
    P = probe((2, 4, 6), 3)
    out, w = scaled_dot_product_attention(Q, K, V, mask, scale=scale)
    dQ, dK, dV = attention_backward(P, Q, K, V, w, scale=scale)
    for name, arr, ana in (("Q", Q, dQ), ("K", K, dK), ("V", V, dV)):
        num = numeric_grad(lambda: np.sum(P * scaled_dot_product_attention(Q, K, V, mask, scale=scale)[0]), arr)
        assert_close_grad(num, ana, name)
    assert np.all(dK[1, 3:] == 0.0) and np.all(dV[1, 3:] == 0.0)  # padded keys: exactly zero


@pytest.mark.parametrize("batch, scale", [((2,), None), ((2,), 1.0), ((), 0.3), ((2, 3), None)])
def test_fd_multihead_all_weights_and_inputs(batch, scale):
    rng = np.random.default_rng(4)
    mha = MultiHeadAttention(6, 2, rng=rng, scale=scale)
    Q, K, V = rng.normal(size=batch + (3, 6)), rng.normal(size=batch + (4, 6)), rng.normal(size=batch + (4, 6))
    mask = rng.random(batch + (3, 4)) < 0.8  # one mask per batch element, the same for every head
    P = probe(batch + (3, 6), 5)

    def f():
        return np.sum(P * mha.forward(Q, K, V, mask)[0])

    _, w = mha.forward(Q, K, V, mask)
    dQ, dK, dV, grads = multihead_backward(P, mha, Q, K, V, w)
    for name, arr, ana in (("Q", Q, dQ), ("K", K, dK), ("V", V, dV)):
        assert_close_grad(numeric_grad(f, arr), ana, name)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert_close_grad(numeric_grad(f, getattr(mha, name)), grads[name], name)


def test_fd_layer_norm():
    rng = np.random.default_rng(6)
    x, gamma, beta = rng.normal(size=(3, 4, 5)) * 2 + 1, rng.normal(size=5), rng.normal(size=5)
    P = probe(x.shape, 7)
    dx, dg, db = layer_norm_backward(P, x, gamma)
    for name, arr, ana in (("x", x, dx), ("gamma", gamma, dg), ("beta", beta, db)):
        assert_close_grad(numeric_grad(lambda: np.sum(P * layer_norm(x, gamma, beta)), arr), ana, name)


def test_fd_ffn():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 3, 4))
    p = block_params(rng, 4, 9)
    P = probe(x.shape, 9)
    dx, grads = ffn_backward(P, x, p["W1"], p["b1"], p["W2"])

    def f():
        return np.sum(P * ffn(x, p["W1"], p["b1"], p["W2"], p["b2"]))

    assert_close_grad(numeric_grad(f, x), dx, "x")
    for name in ("W1", "b1", "W2", "b2"):
        assert_close_grad(numeric_grad(f, p[name]), grads[name], name)


def test_fd_encoder_block_with_padding_mask():
    rng = np.random.default_rng(10)
    mha = MultiHeadAttention(6, 2, rng=rng)
    p = block_params(rng, 6, 12)
    x = rng.normal(size=(2, 5, 6))
    mask = attn.padding_mask(np.array([5, 3]), 5, n_q=5)
    P = probe(x.shape, 11)
    P[1, 3:] = 0.0  # the loss ignores padded positions, as the model's does
    out, cache = encoder_block_forward(x, mha, p, mask)
    dx, grads = encoder_block_backward(P, cache)

    def f():
        return np.sum(P * encoder_block_forward(x, mha, p, mask)[0])

    assert_close_grad(numeric_grad(f, x), dx, "x")
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert_close_grad(numeric_grad(f, getattr(mha, name)), grads[name], name)
    for name, arr in p.items():
        assert_close_grad(numeric_grad(f, arr), grads[name], name)
    assert np.all(dx[1, 3:] == 0.0)  # padded positions: exactly zero gradient


def test_fd_softmax_cross_entropy_with_weight():
    rng = np.random.default_rng(12)
    z = rng.normal(size=(3, 4, 5))
    y = rng.integers(0, 5, size=(3, 4))
    m = rng.random((3, 4)) < 0.7
    loss, dz = softmax_cross_entropy(z, y, m)
    assert_close_grad(numeric_grad(lambda: softmax_cross_entropy(z, y, m)[0], z), dz, "logits")
    assert np.all(dz[~m] == 0.0)
    p = attn.softmax(z)
    expected = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])[m].mean()
    assert loss == pytest.approx(expected, rel=1e-12)


def float64_model(scaled=True, positional=True, seed=1, d_model=8, d_ff=16):
    model = TransformerEncoder(7, 5, d_model=d_model, num_heads=2, d_ff=d_ff, num_layers=2, max_len=10,
                               positional=positional, scaled=scaled, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    for k, v in model.params.items():  # move biases and norms away from 0 and 1
        if k.split(".")[-1] in ("b1", "b2", "beta1", "beta2", "b_out"):
            v[...] = 0.3 * rng.normal(size=v.shape)
        elif k.split(".")[-1] in ("gamma1", "gamma2"):
            v[...] = 1 + 0.3 * rng.normal(size=v.shape)
    return model


def model_loss(model, tokens, targets, lengths):
    """The loss of ``loss_and_grads`` without its backward: its forward and its cross-entropy."""
    logits, cache = model.forward(tokens, lengths)
    return softmax_cross_entropy(logits, targets, cache["mask"])[0]


@pytest.mark.full  # the pull-request tier: every block by finite differences, the whole model against PyTorch
@pytest.mark.parametrize("scaled, positional", [(True, True), (False, True), (True, False)])
def test_fd_whole_model_every_parameter(scaled, positional):
    model = float64_model(scaled, positional, d_model=4, d_ff=8)  # d_k = 2: 365 parameters
    rng = np.random.default_rng(13)
    tokens, targets, lengths = rng.integers(0, 7, (3, 6)), rng.integers(0, 5, (3, 6)), np.array([6, 4, 2])
    loss, grads = model.loss_and_grads(tokens, targets, lengths)
    assert model_loss(model, tokens, targets, lengths) == loss
    assert set(grads) == set(model.params)
    for name, arr in model.params.items():
        num = numeric_grad(lambda: model_loss(model, tokens, targets, lengths), arr)
        assert_close_grad(num, grads[name], name)


# ---------------------------------------------------------------- masks, reuse of the forwards

def test_padded_tokens_change_nothing():
    model = float64_model()
    rng = np.random.default_rng(14)
    tokens, targets, lengths = rng.integers(0, 7, (3, 6)), rng.integers(0, 5, (3, 6)), np.array([6, 4, 2])
    loss, grads = model.loss_and_grads(tokens, targets, lengths)
    other = tokens.copy()
    other[1, 4:], other[2, 2:] = 0, 6  # different ids on padded positions
    other_t = targets.copy()
    other_t[2, 2:] = 0
    loss2, grads2 = model.loss_and_grads(other, other_t, lengths)
    assert loss == loss2
    for k in grads:
        np.testing.assert_array_equal(grads[k], grads2[k], err_msg=k)


def test_block_forward_is_the_library_block_bit_for_bit():
    rng = np.random.default_rng(15)
    mha = MultiHeadAttention(8, 2, rng=rng)
    p = block_params(rng, 8, 32)
    x = rng.normal(size=(3, 5, 8))
    mask = attn.causal_mask(5)
    # with trained norms: the block's definition written with the public layers
    out, cache = encoder_block_forward(x, mha, p, mask)
    h = layer_norm(x + mha.forward(x, x, x, mask)[0], p["gamma1"], p["beta1"])
    ref = layer_norm(h + ffn(h, p["W1"], p["b1"], p["W2"], p["b2"]), p["gamma2"], p["beta2"])
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(cache["h"], h)
    # with gamma = 1, beta = 0: the public block (whose layer norms have no parameters)
    plain = {**p, "gamma1": np.ones(8), "beta1": np.zeros(8), "gamma2": np.ones(8), "beta2": np.zeros(8)}
    out, _ = encoder_block_forward(x, mha, plain, mask)
    np.testing.assert_array_equal(out, transformer_encoder_block(x, mha, p["W1"], p["b1"], p["W2"], p["b2"],
                                                                 mask=mask))


@pytest.mark.parametrize("positional", [False, True])
def test_positions_are_what_breaks_permutation_equivariance(positional):
    """Without PE, permuting the tokens permutes the logits (to rounding); with PE it does not."""
    model = float64_model(positional=positional)
    rng = np.random.default_rng(17)
    tokens, perm = rng.integers(0, 7, (2, 6)), rng.permutation(6)
    logits, _ = model.forward(tokens)
    permuted, _ = model.forward(tokens[:, perm])
    gap = np.abs(permuted - logits[:, perm]).max()
    assert (gap < 1e-12) if not positional else (gap > 1e-3), gap


def test_unscaled_model_scores_are_plain_dot_products():
    model = float64_model(scaled=False)
    tokens = np.random.default_rng(16).integers(0, 7, (2, 6))
    _, cache = model.forward(tokens)
    x = cache["states"][0]
    q = x[:, None] @ model.params["0.W_q"]  # (B, h, n, d_k)
    k = x[:, None] @ model.params["0.W_k"]
    np.testing.assert_allclose(cache["blocks"][0]["weights"], attn.softmax(q @ np.swapaxes(k, -1, -2)),
                               rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- validation

def test_error_attention_backward_d_out_shape():
    Q = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match=r"d_out has shape \(2, 3, 5\); expected the shape of \(\.\.\., n_q, d_v\) = \(2, 3, 6\)"):
        attention_backward(np.zeros((2, 3, 5)), Q, Q, np.zeros((2, 3, 6)), np.full((2, 3, 3), 1 / 3))


def test_error_softmax_backward_shape():
    with pytest.raises(ValueError, match=r"d_weights has shape \(3,\); expected the shape of weights = \(4,\)"):
        softmax_backward(np.zeros(3), np.full(4, 0.25))


def test_error_cross_entropy_targets():
    with pytest.raises(ValueError, match=r"targets holds classes outside \[0, C\) with C = 3"):
        softmax_cross_entropy(np.zeros((2, 3)), np.array([0, 3]))


def test_error_model_tokens():
    model = float64_model()
    with pytest.raises(ValueError, match=r"tokens holds tokens outside \[0, V\) with V = 7"):
        model.forward(np.array([[0, 7]]))
    with pytest.raises(ValueError, match=r"expected \(B, n\) with n <= max_len = 10"):
        model.forward(np.zeros((1, 11), dtype=int))


# ---------------------------------------------------------------- PyTorch autograd oracles

def torch_grads_of_layer(layer, d, h):
    """Gradients of a TransformerEncoderLayer in attn's layout."""
    d_k = d // h
    packed = layer.self_attn.in_proj_weight.grad.numpy()  # (3d, d): rows [W_q^T; W_k^T; W_v^T]
    out = {name: packed[i * d:(i + 1) * d].reshape(h, d_k, d).transpose(0, 2, 1)
           for i, name in enumerate(("W_q", "W_k", "W_v"))}
    out["W_o"] = layer.self_attn.out_proj.weight.grad.numpy().T
    out.update(W1=layer.linear1.weight.grad.numpy().T, b1=layer.linear1.bias.grad.numpy(),
               W2=layer.linear2.weight.grad.numpy().T, b2=layer.linear2.bias.grad.numpy(),
               gamma1=layer.norm1.weight.grad.numpy(), beta1=layer.norm1.bias.grad.numpy(),
               gamma2=layer.norm2.weight.grad.numpy(), beta2=layer.norm2.bias.grad.numpy())
    return out


@pytest.mark.oracle
def test_oracle_torch_encoder_layer_gradients_with_padding_mask():
    rng = np.random.default_rng(20)
    mha = MultiHeadAttention(8, 2, rng=rng)
    p = block_params(rng, 8, 32)
    x = rng.normal(size=(3, 5, 8))
    lengths = np.array([5, 3, 1])
    P = probe(x.shape, 21)
    layer = torch_layer(mha, p)
    xt = t(x)
    key_padding = torch.from_numpy(~attn.padding_mask(lengths, 5))  # torch: True = blocked
    out_t = layer(xt, src_key_padding_mask=key_padding)
    (out_t * torch.from_numpy(P)).sum().backward()
    out, cache = encoder_block_forward(x, mha, p, attn.padding_mask(lengths, 5, n_q=5))
    dx, grads = encoder_block_backward(P, cache)
    np.testing.assert_allclose(out, out_t.detach().numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for name, ref in torch_grads_of_layer(layer, 8, 2).items():
        np.testing.assert_allclose(grads[name], ref, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.oracle
def test_oracle_torch_multihead_attention_gradients_with_mask():
    rng = np.random.default_rng(22)
    mha = MultiHeadAttention(8, 4, rng=rng)
    Q, K, V = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    mask = rng.random((3, 5)) < 0.7
    mask[:, 0] = True  # every query keeps a key (torch gives NaN for a fully blocked row)
    P = probe((2, 3, 8), 23)
    ref = torch.nn.MultiheadAttention(8, 4, bias=False, batch_first=True, dtype=torch.float64)
    packed = np.concatenate([W.transpose(0, 2, 1).reshape(8, 8) for W in (mha.W_q, mha.W_k, mha.W_v)])
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.from_numpy(packed))
        ref.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    Qt, Kt, Vt = t(Q), t(K), t(V)
    out_t, _ = ref(Qt, Kt, Vt, attn_mask=torch.from_numpy(~mask), need_weights=False)
    (out_t * torch.from_numpy(P)).sum().backward()
    _, w = mha.forward(Q, K, V, mask)
    dQ, dK, dV, grads = multihead_backward(P, mha, Q, K, V, w)
    for ana, ref_t in ((dQ, Qt), (dK, Kt), (dV, Vt)):
        np.testing.assert_allclose(ana, ref_t.grad.numpy(), rtol=1e-10, atol=1e-12)
    packed_g = ref.in_proj_weight.grad.numpy()
    for i, name in enumerate(("W_q", "W_k", "W_v")):
        np.testing.assert_allclose(grads[name], packed_g[i * 8:(i + 1) * 8].reshape(4, 2, 8).transpose(0, 2, 1),
                                   rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(grads["W_o"], ref.out_proj.weight.grad.numpy().T, rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_oracle_torch_layer_norm_gradients():
    rng = np.random.default_rng(24)
    x, gamma, beta = rng.normal(size=(4, 6)) * 3 - 1, rng.normal(size=6), rng.normal(size=6)
    P = probe(x.shape, 25)
    ln = torch.nn.LayerNorm(6, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(torch.from_numpy(gamma))
        ln.bias.copy_(torch.from_numpy(beta))
    xt = t(x)
    (ln(xt) * torch.from_numpy(P)).sum().backward()
    dx, dg, db = layer_norm_backward(P, x, gamma)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dg, ln.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(db, ln.bias.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
@pytest.mark.parametrize("scaled", [True, False])
def test_oracle_torch_whole_model_loss_with_padding(scaled):
    model = float64_model(scaled=scaled, seed=3)
    rng = np.random.default_rng(26)
    B, n = 4, 7
    tokens, targets, lengths = rng.integers(0, 7, (B, n)), rng.integers(0, 5, (B, n)), np.array([7, 5, 3, 1])
    loss, grads = model.loss_and_grads(tokens, targets, lengths)

    P = model.params
    root = 1.0 if scaled else np.sqrt(model.d_k)
    emb = t(P["emb"])
    layers = []
    for layer_idx in range(model.num_layers):
        mha = MultiHeadAttention.from_weights(P[f"{layer_idx}.W_q"] * root, P[f"{layer_idx}.W_k"],
                                              P[f"{layer_idx}.W_v"], P[f"{layer_idx}.W_o"])
        bp = {k: P[f"{layer_idx}.{k}"] for k in ("W1", "b1", "W2", "b2", "gamma1", "beta1", "gamma2", "beta2")}
        layers.append(torch_layer(mha, bp))
    W_out, b_out = t(P["W_out"]), t(P["b_out"])
    x = emb[torch.from_numpy(tokens)] + torch.from_numpy(model.pe[:n])
    key_padding = torch.from_numpy(~attn.padding_mask(lengths, n))
    for layer in layers:
        x = layer(x, src_key_padding_mask=key_padding)
    logits = x @ W_out + b_out
    real = torch.from_numpy(attn.padding_mask(lengths, n))
    loss_t = torch.nn.functional.cross_entropy(logits[real], torch.from_numpy(targets)[real])
    loss_t.backward()

    assert loss == pytest.approx(loss_t.item(), rel=1e-12)
    np.testing.assert_allclose(grads["emb"], emb.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["W_out"], W_out.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["b_out"], b_out.grad.numpy(), rtol=1e-9, atol=1e-12)
    for layer_idx, layer in enumerate(layers):
        ref = torch_grads_of_layer(layer, model.d_model, model.num_heads)
        ref["W_q"] = ref["W_q"] * root  # d/dW_q of (sqrt(d_k) W_q)
        for name, g in ref.items():
            np.testing.assert_allclose(grads[f"{layer_idx}.{name}"], g, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{layer_idx}.{name}")


# ---------------------------------------------------------------- the score factor, the embedding, one store


def test_embedding_backward_hand_values():
    tokens = np.array([[2, 0, 2], [1, 2, 0]])
    d_x = np.arange(12.0).reshape(2, 3, 2)  # rows (0,1) (2,3) (4,5) / (6,7) (8,9) (10,11)
    expected = np.array([[2 + 10, 3 + 11], [6, 7], [0 + 4 + 8, 1 + 5 + 9], [0, 0]])  # token 3 unused
    np.testing.assert_array_equal(embedding_backward(d_x, tokens, 4), expected)


def test_fd_embedding_backward():
    rng = np.random.default_rng(30)
    E, tokens, P = rng.normal(size=(5, 3)), rng.integers(0, 5, (2, 4)), probe((2, 4, 3), 31)
    assert_close_grad(numeric_grad(lambda: np.sum(P * E[tokens]), E), embedding_backward(P, tokens, 5), "E")


def test_error_embedding_backward():
    with pytest.raises(ValueError, match=r"d_x has shape \(2, 3, 4\); expected \(B, n, d\) = \(2, 2, 4\)"):
        embedding_backward(np.zeros((2, 3, 4)), np.zeros((2, 2), dtype=int), 5)
    with pytest.raises(ValueError, match=r"tokens holds tokens outside \[0, V\) with V = 5"):
        embedding_backward(np.zeros((1, 2, 4)), np.array([[0, 5]]), 5)


@pytest.mark.parametrize("bad", [0, -1.0, np.nan, np.inf, True, "1"])
def test_error_attention_backward_scale(bad):
    Q = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"scale must be a finite number > 0"):
        attention_backward(np.zeros((2, 3)), Q, Q, Q, np.full((2, 2), 0.5), scale=bad)


def test_unscaled_block_gradients_match_torch_on_rescaled_queries():
    """scale=1 is the same layer as the standard one with W_q multiplied by sqrt(d_k)."""
    rng = np.random.default_rng(32)
    mha = MultiHeadAttention(8, 2, rng=rng, scale=1.0)
    p, x, P = block_params(rng, 8, 16), rng.normal(size=(2, 5, 8)), probe((2, 5, 8), 33)
    root = np.sqrt(mha.d_k)
    scaled = MultiHeadAttention.from_weights(mha.W_q * root, mha.W_k, mha.W_v, mha.W_o)
    layer, xt = torch_layer(scaled, p), t(x)
    (layer(xt) * torch.from_numpy(P)).sum().backward()
    out, cache = encoder_block_forward(x, mha, p)
    dx, grads = encoder_block_backward(P, cache)
    np.testing.assert_allclose(out, layer(xt).detach().numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    ref = torch_grads_of_layer(layer, 8, 2)
    np.testing.assert_allclose(grads["W_q"], ref["W_q"] * root, rtol=1e-10, atol=1e-12)  # chain rule of root W_q
    np.testing.assert_allclose(grads["W_k"], ref["W_k"], rtol=1e-10, atol=1e-12)


def test_model_parameters_live_in_one_place():
    model = float64_model()
    tokens = np.random.default_rng(34).integers(0, 7, (2, 6))
    for layer, (mha, rest) in enumerate(model.blocks):
        for key in ("W_q", "W_k", "W_v", "W_o"):
            assert model.params[f"{layer}.{key}"] is getattr(mha, key)
        for key, arr in rest.items():
            assert model.params[f"{layer}.{key}"] is arr
    before = {id(getattr(mha, k)) for mha, _ in model.blocks for k in ("W_q", "W_k", "W_v", "W_o")}
    logits = model.forward(tokens)[0]
    assert {id(getattr(mha, k)) for mha, _ in model.blocks for k in ("W_q", "W_k", "W_v", "W_o")} == before
    model.params["0.W_q"][...] = 0.0  # an in-place update (as Adam's) is what the forward uses
    assert not np.allclose(model.forward(tokens)[0], logits)
    np.testing.assert_array_equal(model.blocks[0][0].W_q, 0.0)
