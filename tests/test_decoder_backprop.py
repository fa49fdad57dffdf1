"""attn.training.decoder_backward and attn.training.transformer gradients: finite differences (float64), exact zeros, PyTorch oracles.

Finite differences as in test_backprop.py (central, step 1e-6, relative error below 1e-6) for every
parameter and every input of the decoder block and every parameter of the whole encoder–decoder
(its loss alone perturbed, on a model as small as still has every path: 2 layers, 2 heads, padding).
Oracles: torch.nn.TransformerDecoderLayer and torch.nn.Transformer (dropout 0, norm_first=False,
attention biases zero, no final norms) on the same weights, with the causal mask and both key padding
masks in torch's convention (True = blocked). A deliberately wrong gradient fails the same check.
"""
import numpy as np
import pytest
import torch
from helpers import assert_close_grad, block_params, numeric_grad, probe, random_model, t, torch_layer

import attn
from attn.decoder import transformer_decoder_block
from attn.training.backward import (
    ffn_backward,
    layer_norm_backward,
    multihead_backward,
    softmax_cross_entropy,
)
from attn.training.decoder_backward import ATTENTION_KEYS, decoder_block_backward


def decoder_block_forward(y, memory, self_mha, cross_mha, p, self_mask, cross_mask=None):
    """The decoder block with its cache (the forward the backward differentiates)."""
    return transformer_decoder_block(y, memory, self_mha, cross_mha, self_mask=self_mask, cross_mask=cross_mask,
                                     return_cache=True, **p)


def block_case(seed=30, B=3, T=5, S=4, d=6, h=2):
    rng = np.random.default_rng(seed)
    s_mha, c_mha = attn.MultiHeadAttention(d, h, rng=rng), attn.MultiHeadAttention(d, h, rng=rng)
    p = block_params(rng, d, 2 * d)
    y, memory = rng.normal(size=(B, T, d)), rng.normal(size=(B, S, d))
    src_len = np.array([S, S - 1, 1])[:B]
    cross_mask = attn.padding_mask(src_len, S, n_q=T)  # (B, T, S)
    return s_mha, c_mha, p, y, memory, src_len, cross_mask


# ---------------------------------------------------------------- finite differences

def test_fd_decoder_block_every_parameter_and_input():
    s_mha, c_mha, p, y, memory, src_len, cross_mask = block_case()
    causal = attn.causal_mask(y.shape[1])
    P = probe(y.shape, 31)

    def f():
        return np.sum(P * decoder_block_forward(y, memory, s_mha, c_mha, p, causal, cross_mask)[0])

    _, cache = decoder_block_forward(y, memory, s_mha, c_mha, p, causal, cross_mask)
    dy, d_memory, grads = decoder_block_backward(P, cache)
    assert_close_grad(numeric_grad(f, y), dy, "y")
    assert_close_grad(numeric_grad(f, memory), d_memory, "memory")
    for site, mha in (("self", s_mha), ("cross", c_mha)):
        for name in ATTENTION_KEYS:
            assert_close_grad(numeric_grad(f, getattr(mha, name)), grads[f"{site}.{name}"], f"{site}.{name}")
    for name, arr in p.items():
        assert_close_grad(numeric_grad(f, arr), grads[name], name)
    assert set(grads) == {f"{s}.{k}" for s in ("self", "cross") for k in ATTENTION_KEYS} | set(p)


def values_share_of_memory_gradient(cache, P):
    """The values' share (dV) of the memory gradient, recomputed from the cache: what a wrong backward drops."""
    p, eps = cache["p"], cache["eps"]
    d_z3 = layer_norm_backward(P, cache["z3"], p["gamma3"], eps)[0]
    d_h2 = ffn_backward(d_z3, cache["h2"], p["W1"], p["b1"], p["W2"])[0]
    d_z2 = layer_norm_backward(d_z3 + d_h2, cache["z2"], p["gamma2"], eps)[0]
    return multihead_backward(d_z2, cache["cross_mha"], cache["h1"], cache["memory"], cache["memory"],
                              cache["cross_weights"])[2]


def test_fixture_a_wrong_gradient_fails_the_check():
    """The check above is not vacuous: a memory gradient without the values' share (dK only) is refused."""
    s_mha, c_mha, p, y, memory, _, cross_mask = block_case()
    causal = attn.causal_mask(y.shape[1])
    P = probe(y.shape, 31)
    _, cache = decoder_block_forward(y, memory, s_mha, c_mha, p, causal, cross_mask)
    _, d_memory, _ = decoder_block_backward(P, cache)
    num = numeric_grad(lambda: np.sum(P * decoder_block_forward(y, memory, s_mha, c_mha, p, causal,
                                                                cross_mask)[0]), memory)
    assert_close_grad(num, d_memory, "memory")  # the right one: dK + dV
    wrong = d_memory - values_share_of_memory_gradient(cache, P)
    assert np.abs(wrong - d_memory).max() > 1e-3
    with pytest.raises(AssertionError, match="memory: relative error"):
        assert_close_grad(num, wrong, "memory")


def model_loss(model, src, src_len, tgt_in, tgt_out, tgt_len):
    """The loss of ``loss_and_grads`` without its backward: its forward and its cross-entropy."""
    logits = model.forward(src, src_len, tgt_in)[0]
    return softmax_cross_entropy(logits, tgt_out, attn.padding_mask(tgt_len, tgt_in.shape[1]))[0]


@pytest.mark.full  # the pull-request tier: every block by finite differences, the whole model against PyTorch
def test_fd_whole_model_every_parameter():
    model = random_model(4, 2, 2, seed=32, V=7, max_len=8)  # d_k = 2: 859 parameters
    rng = np.random.default_rng(32)
    src, src_len = rng.integers(0, 7, (3, 5)), np.array([5, 3, 1])
    tgt_in, tgt_out, tgt_len = rng.integers(0, 7, (3, 4)), rng.integers(0, 7, (3, 4)), np.array([4, 2, 3])
    loss, grads = model.loss_and_grads(src, src_len, tgt_in, tgt_out, tgt_len)
    assert model_loss(model, src, src_len, tgt_in, tgt_out, tgt_len) == loss
    assert set(grads) == set(model.params)
    for name, arr in model.params.items():
        num = numeric_grad(lambda: model_loss(model, src, src_len, tgt_in, tgt_out, tgt_len), arr)
        assert_close_grad(num, grads[name], name)


# ---------------------------------------------------------------- exact zeros through masked positions

def test_exact_zero_gradient_through_masked_positions():
    s_mha, c_mha, p, y, memory, src_len, cross_mask = block_case(seed=33)
    T = y.shape[1]
    _, cache = decoder_block_forward(y, memory, s_mha, c_mha, p, attn.causal_mask(T), cross_mask)
    P = probe(y.shape, 34)
    P[:, 2:] = 0.0  # the loss reads positions 0 and 1 only
    dy, d_memory, _ = decoder_block_backward(P, cache)
    assert np.all(dy[:, 2:] == 0.0)  # future positions: blocked by the causal mask
    assert np.any(dy[:, :2] != 0.0)
    for b, L in enumerate(src_len):
        assert np.all(d_memory[b, L:] == 0.0)  # padded source positions: blocked by the padding mask
        assert np.any(d_memory[b, :L] != 0.0)


def test_exact_zero_gradient_for_tokens_seen_only_at_padded_positions():
    model = random_model(6, 2, 2, seed=35, V=7, max_len=8)
    rng = np.random.default_rng(35)
    src, src_len = rng.integers(0, 5, (2, 6)), np.array([6, 3])
    tgt_in, tgt_out, tgt_len = rng.integers(0, 5, (2, 5)), rng.integers(0, 5, (2, 5)), np.array([5, 2])
    src[1, 3:], tgt_in[1, 2:] = 6, 5  # ids 6 (source) and 5 (target) appear only on padding
    _, grads = model.loss_and_grads(src, src_len, tgt_in, tgt_out, tgt_len)
    assert np.all(grads["src_emb"][6] == 0.0) and np.all(grads["tgt_emb"][5] == 0.0)
    assert np.any(grads["src_emb"][:5] != 0.0) and np.any(grads["tgt_emb"][:5] != 0.0)


# ---------------------------------------------------------------- PyTorch autograd oracles

def load_attention(ref, mha):
    """Copy attn's per-head weights into a torch.nn.MultiheadAttention (biases zero)."""
    d = mha.d_model
    packed = np.concatenate([W.transpose(0, 2, 1).reshape(d, d) for W in (mha.W_q, mha.W_k, mha.W_v)])
    ref.in_proj_weight.copy_(torch.from_numpy(packed))
    ref.in_proj_bias.zero_()
    ref.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    ref.out_proj.bias.zero_()


def attention_grads(ref, h):
    """Gradients of a torch.nn.MultiheadAttention in attn's layout."""
    d = ref.embed_dim
    packed = ref.in_proj_weight.grad.numpy()  # (3d, d): rows [W_q^T; W_k^T; W_v^T]
    out = {name: packed[i * d:(i + 1) * d].reshape(h, d // h, d).transpose(0, 2, 1)
           for i, name in enumerate(("W_q", "W_k", "W_v"))}
    out["W_o"] = ref.out_proj.weight.grad.numpy().T
    return out


def torch_decoder_layer(s_mha, c_mha, p):
    d, h = s_mha.d_model, s_mha.num_heads
    layer = torch.nn.TransformerDecoderLayer(d, h, dim_feedforward=p["W1"].shape[1], dropout=0.0,
                                             activation="relu", batch_first=True, norm_first=False,
                                             dtype=torch.float64)
    with torch.no_grad():
        load_attention(layer.self_attn, s_mha)
        load_attention(layer.multihead_attn, c_mha)
        layer.linear1.weight.copy_(torch.from_numpy(p["W1"].T.copy()))
        layer.linear1.bias.copy_(torch.from_numpy(p["b1"]))
        layer.linear2.weight.copy_(torch.from_numpy(p["W2"].T.copy()))
        layer.linear2.bias.copy_(torch.from_numpy(p["b2"]))
        for i, norm in enumerate((layer.norm1, layer.norm2, layer.norm3), start=1):
            norm.weight.copy_(torch.from_numpy(p[f"gamma{i}"]))
            norm.bias.copy_(torch.from_numpy(p[f"beta{i}"]))
    return layer


def torch_decoder_grads(layer, h):
    out = {f"self.{k}": v for k, v in attention_grads(layer.self_attn, h).items()}
    out.update({f"cross.{k}": v for k, v in attention_grads(layer.multihead_attn, h).items()})
    out.update(W1=layer.linear1.weight.grad.numpy().T, b1=layer.linear1.bias.grad.numpy(),
               W2=layer.linear2.weight.grad.numpy().T, b2=layer.linear2.bias.grad.numpy())
    for i, norm in enumerate((layer.norm1, layer.norm2, layer.norm3), start=1):
        out[f"gamma{i}"], out[f"beta{i}"] = norm.weight.grad.numpy(), norm.bias.grad.numpy()
    return out


@pytest.mark.oracle
def test_oracle_torch_decoder_layer_with_causal_and_padding_masks():
    s_mha, c_mha, p, y, memory, src_len, cross_mask = block_case(seed=36, B=3, T=6, S=5, d=8, h=2)
    T, S = y.shape[1], memory.shape[1]
    P = probe(y.shape, 37)
    layer = torch_decoder_layer(s_mha, c_mha, p)
    yt, mt = t(y), t(memory)
    out_t = layer(yt, mt, tgt_mask=torch.from_numpy(~attn.causal_mask(T)),  # torch: True = blocked
                  memory_key_padding_mask=torch.from_numpy(~attn.padding_mask(src_len, S)))
    (out_t * torch.from_numpy(P)).sum().backward()
    out, cache = decoder_block_forward(y, memory, s_mha, c_mha, p, attn.causal_mask(T), cross_mask)
    dy, d_memory, grads = decoder_block_backward(P, cache)
    np.testing.assert_allclose(out, out_t.detach().numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(dy, yt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_memory, mt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for name, ref in torch_decoder_grads(layer, 2).items():
        np.testing.assert_allclose(grads[name], ref, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.oracle
def test_oracle_torch_transformer_whole_model_loss():
    model = random_model(8, 2, 2, seed=38, V=9, max_len=10)
    rng = np.random.default_rng(38)
    B, S, T = 4, 7, 6
    src, src_len = rng.integers(0, 9, (B, S)), np.array([7, 5, 2, 1])
    tgt_in, tgt_out, tgt_len = rng.integers(0, 9, (B, T)), rng.integers(0, 9, (B, T)), np.array([6, 3, 6, 1])
    loss, grads = model.loss_and_grads(src, src_len, tgt_in, tgt_out, tgt_len)

    P, d, h, N = model.params, model.d_model, model.num_heads, model.num_layers
    enc_layers = []
    for i in range(N):
        mha = attn.MultiHeadAttention.from_weights(*(P[f"enc.{i}.{k}"] for k in ATTENTION_KEYS))
        enc_layers.append(torch_layer(mha, {k: P[f"enc.{i}.{k}"] for k in
                                            ("W1", "b1", "W2", "b2", "gamma1", "beta1", "gamma2", "beta2")}))
    dec_layers = []
    for i in range(N):
        s_mha, c_mha = (attn.MultiHeadAttention.from_weights(*(P[f"dec.{i}.{s}.{k}"] for k in ATTENTION_KEYS))
                        for s in ("self", "cross"))
        dec_layers.append(torch_decoder_layer(s_mha, c_mha, {k: P[f"dec.{i}.{k}"] for k in
                                                             attn.decoder.DECODER_KEYS}))
    # nn.Transformer with no final norms (attn's model has none); its constructor re-draws every weight
    # matrix (xavier), so the stacks with attn's weights are put in afterwards
    encoder = torch.nn.TransformerEncoder(enc_layers[0], N, norm=None, enable_nested_tensor=False)
    decoder = torch.nn.TransformerDecoder(dec_layers[0], N, norm=None)
    ref = torch.nn.Transformer(d, h, custom_encoder=encoder, custom_decoder=decoder, batch_first=True,
                               dtype=torch.float64)
    ref.encoder.layers, ref.decoder.layers = torch.nn.ModuleList(enc_layers), torch.nn.ModuleList(dec_layers)
    src_emb, tgt_emb, W_out, b_out = t(P["src_emb"]), t(P["tgt_emb"]), t(P["W_out"]), t(P["b_out"])
    pe = torch.from_numpy(model.pe)
    src_pad = torch.from_numpy(~attn.padding_mask(src_len, S))  # torch: True = padding (blocked)
    out = ref(src_emb[torch.from_numpy(src)] + pe[:S], tgt_emb[torch.from_numpy(tgt_in)] + pe[:T],
              tgt_mask=torch.from_numpy(~attn.causal_mask(T)), src_key_padding_mask=src_pad,
              memory_key_padding_mask=src_pad, tgt_is_causal=True)
    logits = out @ W_out + b_out
    real = torch.from_numpy(attn.padding_mask(tgt_len, T))
    loss_t = torch.nn.functional.cross_entropy(logits[real], torch.from_numpy(tgt_out)[real])
    loss_t.backward()

    assert loss == pytest.approx(loss_t.item(), rel=1e-12)
    for name, ref_t in (("src_emb", src_emb), ("tgt_emb", tgt_emb), ("W_out", W_out), ("b_out", b_out)):
        np.testing.assert_allclose(grads[name], ref_t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    for i, layer in enumerate(enc_layers):
        ref_g = attention_grads(layer.self_attn, h)
        ref_g.update(W1=layer.linear1.weight.grad.numpy().T, b1=layer.linear1.bias.grad.numpy(),
                     W2=layer.linear2.weight.grad.numpy().T, b2=layer.linear2.bias.grad.numpy(),
                     gamma1=layer.norm1.weight.grad.numpy(), beta1=layer.norm1.bias.grad.numpy(),
                     gamma2=layer.norm2.weight.grad.numpy(), beta2=layer.norm2.bias.grad.numpy())
        for name, g in ref_g.items():
            np.testing.assert_allclose(grads[f"enc.{i}.{name}"], g, rtol=1e-9, atol=1e-12, err_msg=f"enc.{i}.{name}")
    for i, layer in enumerate(dec_layers):
        for name, g in torch_decoder_grads(layer, h).items():
            np.testing.assert_allclose(grads[f"dec.{i}.{name}"], g, rtol=1e-9, atol=1e-12, err_msg=f"dec.{i}.{name}")
