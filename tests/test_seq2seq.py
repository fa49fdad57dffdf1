"""attn.training.seq2seq: finite differences for every parameter, a torch-autograd oracle, masks, ablations."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attn
from attn.training.seq2seq import Seq2Seq, replace_weights

V, E, H, A = 7, 3, 4, 3


def tiny(attention, seed=1):
    model = Seq2Seq(V, E, H, attention, d_attn=A, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    for p in model.params.values():
        p += 0.2 * rng.standard_normal(p.shape)  # non-zero, distinct biases too
    return model


def batch(seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.array([5, 3, 1])
    src = rng.integers(2, V, (3, 5))
    src[np.arange(5)[None, :] >= lengths[:, None]] = 0
    tgt_in = np.concatenate([np.ones((3, 1), int), src[:, :-1]], axis=1)
    return src, lengths, tgt_in, src, lengths


@pytest.mark.parametrize("attention", [False, True])
def test_finite_differences_every_parameter(attention):
    model = tiny(attention)
    data = batch()
    _, grads = model.loss_and_grads(*data)
    assert set(grads) == set(model.params)
    eps = 1e-5
    for name, p in model.params.items():
        num = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            old = p[i]
            p[i] = old + eps
            plus = model.loss_and_grads(*data)[0]
            p[i] = old - eps
            minus = model.loss_and_grads(*data)[0]
            p[i] = old
            num[i] = (plus - minus) / (2 * eps)
        rel = np.abs(num - grads[name]).max() / (np.abs(num).max() + np.abs(grads[name]).max())
        assert rel < 1e-6, (name, rel)


def torch_loss(model, src, src_len, tgt_in, tgt_out, tgt_len):
    """The same model written with torch autograd (GRUCell, explicit Bahdanau step)."""
    P = {k: torch.tensor(v, requires_grad=True) for k, v in model.params.items()}
    B, S = src.shape
    T = tgt_in.shape[1]

    def cell(prefix, D):
        module = torch.nn.GRUCell(D, H, dtype=torch.float64)
        weights = {"weight_ih": P[prefix + "W_ih"], "weight_hh": P[prefix + "W_hh"],
                   "bias_ih": P[prefix + "b_ih"], "bias_hh": P[prefix + "b_hh"]}
        return lambda x, h: torch.func.functional_call(module, weights, (x, h))

    enc = cell("enc_", E)
    h = torch.zeros(B, H, dtype=torch.float64)
    keys = []
    for t in range(S):
        new = enc(P["src_emb"][torch.from_numpy(src[:, t])], h)
        real = torch.from_numpy(t < src_len)[:, None]
        h = torch.where(real, new, h)
        keys.append(h)
    keys = torch.stack(keys, 1)  # (B, S, H)
    real_src = torch.from_numpy(np.arange(S)[None, :] < src_len[:, None])
    dec = cell("dec_", E + (H if model.attention else 0))
    s, loss = h, 0.0
    for t in range(T):
        y = P["tgt_emb"][torch.from_numpy(tgt_in[:, t])]
        if model.attention:
            e = torch.tanh((s @ P["W_a"].T)[:, None, :] + keys @ P["U_a"].T) @ P["v_a"]
            alpha = torch.softmax(e.masked_fill(~real_src, -torch.inf), dim=1)
            c = (alpha[:, :, None] * keys).sum(1)
            y = torch.cat([y, c], dim=1)
        s = dec(y, s)
        logits = s @ P["W_out"].T + P["b_out"]
        if model.attention:
            logits = logits + c @ P["W_ctx"].T
        logp = torch.log_softmax(logits, dim=1)
        picked = logp[torch.arange(B), torch.from_numpy(tgt_out[:, t])]
        loss = loss - (picked * torch.from_numpy((t < tgt_len).astype(float))).sum()
    loss = loss / float(tgt_len.sum())
    loss.backward()
    return float(loss.detach()), {k: v.grad.numpy() for k, v in P.items()}


@pytest.mark.oracle
@pytest.mark.parametrize("attention", [False, True])
def test_loss_and_grads_match_torch_autograd(attention):
    model = tiny(attention, seed=3)
    data = batch(seed=4)
    loss, grads = model.loss_and_grads(*data)
    ref_loss, ref_grads = torch_loss(model, *data)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    for k in model.params:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.mark.oracle
def test_attention_step_matches_torch():
    """One decoder step: query s_{t-1}, additive score, masked softmax, context, GRU cell."""
    model = tiny(True, seed=5)
    P = model.params
    rng = np.random.default_rng(6)
    B, S = 2, 4
    keys = rng.standard_normal((B, S, H))
    s_prev = rng.standard_normal((B, H))
    mask = np.array([[True] * 4, [True, True, False, False]])
    y = rng.standard_normal((B, E))
    from attn.training.gru import cell_forward

    alpha = attn.masked_softmax(attn.classic.additive_scores(s_prev @ P["W_a"].T, keys @ P["U_a"].T,
                                                             P["v_a"]), mask)
    c = (alpha[:, None, :] @ keys)[:, 0, :]
    x_gates = np.concatenate([y, c], axis=1) @ P["dec_W_ih"].T + P["dec_b_ih"]
    s_new, _ = cell_forward(x_gates, s_prev, P["dec_W_hh"], P["dec_b_hh"])

    t = {k: torch.from_numpy(v) for k, v in P.items()}
    e = torch.tanh((torch.from_numpy(s_prev) @ t["W_a"].T)[:, None] + torch.from_numpy(keys) @ t["U_a"].T) @ t["v_a"]
    a = torch.softmax(e.masked_fill(~torch.from_numpy(mask), -torch.inf), dim=1)
    cell = torch.nn.GRUCell(E + H, H, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(t["dec_W_ih"])
        cell.weight_hh.copy_(t["dec_W_hh"])
        cell.bias_ih.copy_(t["dec_b_ih"])
        cell.bias_hh.copy_(t["dec_b_hh"])
        ref = cell(torch.cat([torch.from_numpy(y), (a[:, :, None] * torch.from_numpy(keys)).sum(1)], 1),
                   torch.from_numpy(s_prev))
    np.testing.assert_allclose(alpha, a.numpy(), rtol=1e-12, atol=1e-15)
    assert np.all(alpha[1, 2:] == 0.0)
    np.testing.assert_allclose(s_new, ref.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("attention", [False, True])
def test_padding_neither_costs_nor_leaks(attention):
    model = tiny(attention)
    src, sl, tin, tout, tl = batch()
    loss, grads = model.loss_and_grads(src, sl, tin, tout, tl)
    src2, tout2 = src.copy(), tout.copy()
    src2[1, 3:] = 6  # junk in the padded source positions
    tout2[2, 1:] = 5  # and in the padded targets
    tin2 = np.concatenate([np.ones((3, 1), int), src2[:, :-1]], axis=1)
    tin2[:, 1:][np.arange(4)[None, :] >= tl[:, None] - 1] = 3
    loss2, grads2 = model.loss_and_grads(src2, sl, tin2, tout2, tl)
    assert loss2 == pytest.approx(loss, rel=1e-13)
    for k in grads:
        if k not in ("src_emb", "tgt_emb"):  # embeddings of junk tokens get zero, others the same
            np.testing.assert_allclose(grads2[k], grads[k], rtol=1e-11, atol=1e-14, err_msg=k)


def test_decoded_weights_are_zero_on_padding():
    model = tiny(True)
    src, sl, *_ = batch()
    tokens, w = model.greedy_decode(src, sl, 5, 1, return_weights=True)
    assert tokens.shape == (3, 5) and w.shape == (3, 5, 5)
    real = np.arange(5)[None, :] < sl[:, None]
    assert np.all(w[~np.broadcast_to(real[:, None, :], w.shape)] == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0)


def test_greedy_decode_float32_model_is_deterministic():
    model = Seq2Seq(V, E, H, True, d_attn=A, seed=0)
    src, sl, *_ = batch()
    a = model.greedy_decode(src, sl, 5, 1, attention_mode="permuted", rng=np.random.default_rng(0))
    b = model.greedy_decode(src, sl, 5, 1, attention_mode="permuted", rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- ablation weights
@settings(max_examples=40)
@given(lengths=st.lists(st.integers(1, 7), min_size=1, max_size=5), seed=st.integers(0, 1000))
def test_replaced_weights_are_distributions_over_real_positions(lengths, seed):
    lengths = np.array(lengths)
    S = int(lengths.max())
    rng = np.random.default_rng(seed)
    real = np.arange(S)[None, :] < lengths[:, None]
    alpha = attn.masked_softmax(rng.standard_normal((len(lengths), S)), real)
    for mode in ("uniform", "permuted", "shifted"):
        out = replace_weights(alpha, mode, lengths, np.random.default_rng(seed))
        assert np.all(out[~real] == 0.0)
        np.testing.assert_allclose(out.sum(1), 1.0)
        if mode != "uniform":  # a rearrangement of the same weights
            for b, L in enumerate(lengths):
                np.testing.assert_allclose(np.sort(out[b, :L]), np.sort(alpha[b, :L]))


def test_shift_moves_each_weight_one_position_right_cyclically():
    alpha = np.array([[0.7, 0.2, 0.1, 0.0], [0.5, 0.25, 0.125, 0.125]])
    out = replace_weights(alpha, "shifted", np.array([3, 4]))
    np.testing.assert_array_equal(out, [[0.1, 0.7, 0.2, 0.0], [0.125, 0.5, 0.25, 0.125]])


def test_uniform_is_one_over_length():
    out = replace_weights(np.zeros((2, 4)), "uniform", np.array([4, 2]))
    np.testing.assert_array_equal(out, [[0.25] * 4, [0.5, 0.5, 0.0, 0.0]])


# ---------------------------------------------------------------- validation
def test_rejects_unknown_mode():
    with pytest.raises(ValueError, match=r"mode must be one of \('learned', 'uniform', 'permuted', 'shifted'\)"):
        replace_weights(np.ones((1, 2)) / 2, "reversed", np.array([2]))


def test_permuted_needs_rng():
    with pytest.raises(ValueError, match=r"mode 'permuted' needs rng"):
        replace_weights(np.ones((1, 2)) / 2, "permuted", np.array([2]))


def test_rejects_float_tokens():
    model = tiny(False)
    src, sl, tin, tout, tl = batch()
    with pytest.raises(ValueError, match=r"src has shape \(3, 5\) and dtype float64; expected integers"):
        model.loss_and_grads(src.astype(float), sl, tin, tout, tl)


def test_rejects_tokens_outside_vocabulary():
    model = tiny(False)
    src, sl, tin, tout, tl = batch()
    tout = tout.copy()
    tout[0, 0] = V
    with pytest.raises(ValueError, match=r"tgt_out holds tokens outside \[0, V\) with V = 7"):
        model.loss_and_grads(src, sl, tin, tout, tl)


def test_rejects_mismatched_targets():
    model = tiny(False)
    src, sl, tin, tout, tl = batch()
    with pytest.raises(ValueError, match=r"tgt_in has shape \(3, 4\) and tgt_out \(3, 5\); expected both \(B, T\)"):
        model.loss_and_grads(src, sl, tin[:, :4], tout, tl)


def test_rejects_bad_lengths():
    model = tiny(False)
    src, sl, tin, tout, tl = batch()
    with pytest.raises(ValueError, match=r"src_len has shape \(2,\) and dtype int64; expected integers with shape \(B,\) = \(3,\)"):
        model.loss_and_grads(src, sl[:2], tin, tout, tl)
    with pytest.raises(ValueError, match=r"tgt_len must lie in \[1, 5\], got min 0 and max 5"):
        model.loss_and_grads(src, sl, tin, tout, np.array([5, 0, 1]))


def test_ablation_needs_an_attention_model():
    model = tiny(False)
    src, sl, *_ = batch()
    with pytest.raises(ValueError, match=r"attention_mode 'uniform' needs an attention model"):
        model.greedy_decode(src, sl, 5, 1, attention_mode="uniform")
