"""attn.decoder and attn.training.transformer forwards: the key/value cache equals full recomputation, causality, masks.

The cached greedy decode (one query row per new token and block) is compared in float64 with a decode
that runs the whole prefix again at every step, on random models, source lengths and output lengths
(hypothesis). A fixture with a deliberately stale cache shows that the comparison can fail.
"""
import numpy as np
import pytest
from helpers import block_params, random_model
from hypothesis import given, settings
from hypothesis import strategies as st

import attn
from attn.decoder import (
    cross_attention_cache,
    decoder_block_step,
    empty_self_cache,
    transformer_decoder_block,
)


def norms(p):
    return {k: v for k, v in p.items() if k.startswith(("gamma", "beta"))}


def assert_same_decode(a, b):
    """The tokens are equal and the logits and every attention map agree to float64 rounding."""
    (tok_a, log_a, w_a), (tok_b, log_b, w_b) = a, b
    np.testing.assert_array_equal(tok_a, tok_b)
    np.testing.assert_allclose(log_a, log_b, rtol=1e-10, atol=1e-12)
    for site in ("self", "cross"):
        np.testing.assert_allclose(w_a[site], w_b[site], rtol=1e-10, atol=1e-12, err_msg=site)


# ---------------------------------------------------------------- the key/value cache

@settings(max_examples=40)
@given(d_k=st.integers(1, 4), num_heads=st.integers(1, 3), num_layers=st.integers(1, 3),
       batch=st.integers(1, 4), S=st.integers(1, 9), out_len=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_cached_decode_equals_full_recomputation(d_k, num_heads, num_layers, batch, S, out_len, seed):
    model = random_model(d_k * num_heads, num_heads, num_layers, seed)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, model.V, (batch, S))
    src_len = rng.integers(1, S + 1, batch)
    cached = model.generate(src, src_len, out_len, bos=1, use_cache=True)
    full = model.generate(src, src_len, out_len, bos=1, use_cache=False)
    assert_same_decode(cached, full)
    # and the logits are those of one teacher-forced forward on the generated prefix
    tgt_in = np.concatenate([np.ones((batch, 1), dtype=int), cached[0][:, :-1]], axis=1)
    np.testing.assert_allclose(model.forward(src, src_len, tgt_in)[0], cached[1], rtol=1e-10, atol=1e-12)


def test_fixture_a_stale_cache_fails_the_comparison():
    """If a step forgot to store its key and value, the comparison above would catch it."""
    model = random_model(8, 2, 2, seed=3)
    rng = np.random.default_rng(3)
    src, src_len = rng.integers(0, model.V, (3, 6)), np.array([6, 4, 1])

    def forgetful_step(y_t, self_cache, *args, **kwargs):
        saved = self_cache["k"].copy()
        out = decoder_block_step(y_t, self_cache, *args, **kwargs)
        self_cache["k"][...] = saved  # the new key is lost: later queries see zeros there
        return out

    import attn.training.transformer as encdec
    real_step, encdec.decoder_block_step = encdec.decoder_block_step, forgetful_step
    try:
        stale = model.generate(src, src_len, 7, bos=1)
    finally:
        encdec.decoder_block_step = real_step
    with pytest.raises(AssertionError):
        assert_same_decode(stale, model.generate(src, src_len, 7, bos=1, use_cache=False))


def test_block_step_is_the_last_row_of_the_full_block():
    rng = np.random.default_rng(5)
    d, h, B, T, S = 8, 2, 3, 6, 5
    s_mha, c_mha = attn.MultiHeadAttention(d, h, rng=rng), attn.MultiHeadAttention(d, h, rng=rng)
    p = block_params(rng, d, 16)
    y, memory = rng.normal(size=(B, T, d)), rng.normal(size=(B, S, d))
    key_mask = attn.padding_mask(np.array([5, 3, 1]), S)  # (B, S)
    full = transformer_decoder_block(y, memory, s_mha, c_mha, p["W1"], p["b1"], p["W2"], p["b2"],
                                     cross_mask=np.repeat(key_mask[:, None], T, axis=1),
                                     **norms(p))
    past, cross = empty_self_cache(B, T, s_mha, np.float64), cross_attention_cache(memory, c_mha)
    for t in range(T):
        out, w_self, w_cross = decoder_block_step(y[:, t:t + 1], past, cross, s_mha, c_mha, p, key_mask)
        np.testing.assert_allclose(out[:, 0], full[:, t], rtol=1e-12, atol=1e-13)
        assert w_self.shape == (B, h, 1, t + 1) and w_cross.shape == (B, h, 1, S)
        np.testing.assert_allclose(w_self.sum(axis=-1), 1.0, rtol=1e-13)
        assert np.all(w_cross[~key_mask[:, None, None, :].repeat(h, 1)] == 0.0)  # padded keys: exactly 0
    assert past["t"] == T


@settings(max_examples=25)
@given(self_scale=st.sampled_from([None, 1.0, 0.1, 0.35, 2.0]), cross_scale=st.sampled_from([None, 1.0, 0.2, 3.0]),
       num_heads=st.integers(1, 3), T=st.integers(1, 6), seed=st.integers(0, 2**16),
       eps=st.sampled_from([1e-5, 0.1, 1.0]))
def test_block_step_keeps_each_layers_scale(self_scale, cross_scale, num_heads, T, seed, eps):
    """The cached step goes through MultiHeadAttention.attend, so any score factor (and any layer-norm
    ``eps``) gives the full block's rows.

    (Issue 30: the step called the core without the layer's ``scale``; with ``scale=1.0`` it
    differed from the full block by up to 0.8.)
    """
    rng = np.random.default_rng(seed)
    d, B, S = 2 * num_heads, 2, 4
    s_mha = attn.MultiHeadAttention(d, num_heads, rng=rng, scale=self_scale)
    c_mha = attn.MultiHeadAttention(d, num_heads, rng=rng, scale=cross_scale)
    for mha in (s_mha, c_mha):  # weights large enough that the score factor matters
        mha.W_q, mha.W_k = 3 * mha.W_q, 3 * mha.W_k
    p = block_params(rng, d, 2 * d)
    y, memory = rng.normal(size=(B, T, d)), rng.normal(size=(B, S, d))
    key_mask = attn.padding_mask(np.array([S, 2]), S)  # (B, S)
    full = transformer_decoder_block(y, memory, s_mha, c_mha, p["W1"], p["b1"], p["W2"], p["b2"],
                                     cross_mask=np.repeat(key_mask[:, None], T, axis=1), eps=eps, **norms(p))
    past, cross = empty_self_cache(B, T, s_mha, np.float64), cross_attention_cache(memory, c_mha)
    for t in range(T):
        out, _, _ = decoder_block_step(y[:, t:t + 1], past, cross, s_mha, c_mha, p, key_mask, eps=eps)
        np.testing.assert_allclose(out[:, 0], full[:, t], rtol=1e-12, atol=1e-12)


def test_a_step_without_the_layers_scale_would_fail_the_comparison():
    """The comparison above can fail: attending with the default factor instead of scale=1.0 moves the rows."""
    rng = np.random.default_rng(8)
    d, B, T, S = 4, 2, 4, 3
    s_mha, c_mha = (attn.MultiHeadAttention(d, 2, rng=rng, scale=1.0) for _ in range(2))
    p = block_params(rng, d, 8)
    y, memory = 3 * rng.normal(size=(B, T, d)), rng.normal(size=(B, S, d))
    key_mask = np.ones((B, S), dtype=bool)
    full = transformer_decoder_block(y, memory, s_mha, c_mha, p["W1"], p["b1"], p["W2"], p["b2"], **norms(p))
    forgetful = [attn.MultiHeadAttention.from_weights(m.W_q, m.W_k, m.W_v, m.W_o) for m in (s_mha, c_mha)]
    past, cross = empty_self_cache(B, T, s_mha, np.float64), cross_attention_cache(memory, c_mha)
    rows = [decoder_block_step(y[:, t:t + 1], past, cross, *forgetful, p, key_mask)[0][:, 0] for t in range(T)]
    assert np.abs(np.stack(rows, axis=1) - full).max() > 1e-3


def test_block_with_its_cache_is_the_block_bit_for_bit():
    rng = np.random.default_rng(6)
    d, T, S = 8, 5, 4
    s_mha, c_mha = attn.MultiHeadAttention(d, 2, rng=rng), attn.MultiHeadAttention(d, 2, rng=rng)
    p = block_params(rng, d, 32)
    y, memory = rng.normal(size=(2, T, d)), rng.normal(size=(2, S, d))
    cross_mask = attn.padding_mask(np.array([4, 2]), S, n_q=T)
    out, _ = transformer_decoder_block(y, memory, s_mha, c_mha, self_mask=attn.causal_mask(T),
                                       cross_mask=cross_mask, return_cache=True, **p)
    ref = transformer_decoder_block(y, memory, s_mha, c_mha, p["W1"], p["b1"], p["W2"], p["b2"],
                                    cross_mask=cross_mask, **norms(p))
    np.testing.assert_array_equal(out, ref)


# ---------------------------------------------------------------- causality and padding

@settings(max_examples=25)
@given(t=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_future_target_tokens_change_no_earlier_logit(t, seed):
    model = random_model(8, 2, 2, seed)
    rng = np.random.default_rng(seed)
    src, src_len = rng.integers(0, model.V, (2, 5)), np.array([5, 3])
    tgt = rng.integers(0, model.V, (2, 8))
    other = tgt.copy()
    other[:, t + 1:] = rng.integers(0, model.V, (2, 7 - t))
    a, b = model.forward(src, src_len, tgt)[0], model.forward(src, src_len, other)[0]
    np.testing.assert_array_equal(a[:, :t + 1], b[:, :t + 1])


def test_padded_source_tokens_change_nothing():
    model = random_model(8, 2, 2, seed=7)
    rng = np.random.default_rng(7)
    src, src_len, tgt = rng.integers(0, model.V, (3, 6)), np.array([6, 2, 4]), rng.integers(0, model.V, (3, 5))
    other = src.copy()
    other[1, 2:], other[2, 4:] = 0, model.V - 1
    np.testing.assert_array_equal(model.forward(src, src_len, tgt)[0], model.forward(other, src_len, tgt)[0])


def test_removed_head_contributes_nothing():
    model = random_model(8, 2, 1, seed=8)
    rng = np.random.default_rng(8)
    src, src_len = rng.integers(0, model.V, (2, 5)), np.array([5, 4])
    ablated = model.without_heads([("cross", 0, 1)])
    assert np.all(ablated.params["dec.0.cross.W_o"][4:] == 0) and np.any(model.params["dec.0.cross.W_o"][4:])
    # the removed head's output no longer reaches the next layer: any change of its values is invisible
    _, base = ablated.forward(src, src_len, src)
    ablated.params["dec.0.cross.W_v"][1] += 1.0
    _, moved = ablated.forward(src, src_len, src)
    np.testing.assert_allclose(base["dec"]["out"], moved["dec"]["out"], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("memory, cross_mask, message", [
    ((3, 5, 4), None, r"memory has shape \(3, 5, 4\); expected \(\.\.\., S, d_model\) with \.\.\. = \(2,\), "
                      r"d_model = 4$"),
    # a cross mask is (T, S) or (..., T, S), the same for every head
    ((2, 5, 4), (2, 2, 3, 5), r"cross_mask has shape \(2, 2, 3, 5\); expected \(\.\.\., n_q, n_k\) with "
                              r"\.\.\. = \(2,\), n_q = 3, n_k = 5$"),
])
def test_error_decoder_block_shapes(memory, cross_mask, message):
    rng = np.random.default_rng(9)
    mha = attn.MultiHeadAttention(4, 2, rng=rng)
    p = block_params(rng, 4, 8)
    mask = None if cross_mask is None else np.ones(cross_mask, dtype=bool)
    with pytest.raises(ValueError, match=message):
        transformer_decoder_block(np.zeros((2, 3, 4)), np.zeros(memory), mha, mha, p["W1"], p["b1"], p["W2"],
                                  p["b2"], cross_mask=mask)


def test_error_step_full_cache():
    rng = np.random.default_rng(10)
    mha = attn.MultiHeadAttention(4, 2, rng=rng)
    p = block_params(rng, 4, 8)
    past, cross = empty_self_cache(1, 1, mha, np.float64), cross_attention_cache(np.zeros((1, 2, 4)), mha)
    decoder_block_step(np.zeros((1, 1, 4)), past, cross, mha, mha, p, np.ones((1, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"self_cache is full: it holds t = 1 of max_steps = 1"):
        decoder_block_step(np.zeros((1, 1, 4)), past, cross, mha, mha, p, np.ones((1, 2), dtype=bool))


def test_error_model_inputs():
    model = random_model(4, 2, 1, seed=11, max_len=6)
    with pytest.raises(ValueError, match=r"src holds tokens outside \[0, V\) with V = 9"):
        model.forward(np.array([[9]]), np.array([1]), np.array([[1]]))
    with pytest.raises(ValueError, match=r"the output has 7 positions; expected at most max_len = 6"):
        model.generate(np.array([[2]]), np.array([1]), 7, bos=1)
    with pytest.raises(ValueError, match=r"head \('cross', 1, 0\) is not one of the model's"):
        model.without_heads([("cross", 1, 0)])
