"""attn.training.gru: hand values, finite differences, validation, and torch.nn.GRU / GRUCell as oracles."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attn.training.gru import cell_backward, cell_forward, gru_backward, gru_forward, init_gru


def weights64(D, H, seed):
    rng = np.random.default_rng(seed)
    w = init_gru(D, H, rng, dtype=np.float64)
    # distinct, clearly non-zero biases so that b_hn's place (inside r * (...)) matters
    w["b_ih"] = rng.uniform(-0.8, 0.8, 3 * H)
    w["b_hh"] = rng.uniform(-0.8, 0.8, 3 * H)
    return w


def torch_gru(w):
    D = w["W_ih"].shape[1]
    H = w["W_hh"].shape[1]
    gru = torch.nn.GRU(D, H, dtype=torch.float64)
    with torch.no_grad():
        for k, name in (("W_ih", "weight_ih_l0"), ("W_hh", "weight_hh_l0"), ("b_ih", "bias_ih_l0"),
                        ("b_hh", "bias_hh_l0")):
            getattr(gru, name).copy_(torch.from_numpy(w[k]))
    return gru


def test_zero_weights_halve_the_state():
    # r = z = sigmoid(0) = 1/2, n = tanh(0) = 0  =>  h' = (1 - z) n + z h = h / 2
    w = {"W_ih": np.zeros((6, 3)), "W_hh": np.zeros((6, 2)), "b_ih": np.zeros(6), "b_hh": np.zeros(6)}
    h0 = np.array([[1.0, -4.0]])
    hs, _ = gru_forward(np.ones((2, 1, 3)), h0, w)
    np.testing.assert_allclose(hs[:, 0], [[0.5, -2.0], [0.25, -1.0]])


def test_closed_update_gate_keeps_the_state():
    # a huge b_iz makes z = 1, so h' = h whatever the input
    w = {"W_ih": np.ones((6, 1)), "W_hh": np.ones((6, 2)), "b_ih": np.zeros(6), "b_hh": np.zeros(6)}
    w["b_ih"][2:4] = 50.0
    h0 = np.array([[0.3, -0.7]])
    hs, _ = gru_forward(np.full((3, 1, 1), 2.0), h0, w)
    np.testing.assert_allclose(hs[-1], h0, atol=1e-12)


def test_masked_steps_carry_the_state():
    w = weights64(3, 4, 0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 3))
    mask = np.array([[True, True]] * 3 + [[True, False]] * 2)  # second sequence has length 3
    hs, _ = gru_forward(x, np.zeros((2, 4)), w, mask)
    np.testing.assert_array_equal(hs[3, 1], hs[2, 1])
    np.testing.assert_array_equal(hs[4, 1], hs[2, 1])
    alone, _ = gru_forward(x[:3, 1:], np.zeros((1, 4)), w)
    np.testing.assert_allclose(hs[-1, 1], alone[-1, 0], rtol=1e-14)


def test_float32_in_float32_out():
    w = init_gru(3, 4, np.random.default_rng(0))
    hs, cache = gru_forward(np.ones((2, 5, 3), np.float32), np.zeros((5, 4), np.float32), w)
    dx, dh0, g = gru_backward(np.ones_like(hs), cache)
    assert hs.dtype == dx.dtype == dh0.dtype == np.float32
    assert all(v.dtype == np.float32 for v in g.values())


def _loss(hs, proj):
    return float((hs * proj).sum())


@pytest.mark.parametrize("masked", [False, True])
def test_finite_differences(masked):
    T, B, D, H = 4, 3, 2, 3
    rng = np.random.default_rng(2)
    w = weights64(D, H, 3)
    x = rng.standard_normal((T, B, D))
    h0 = rng.standard_normal((B, H))
    mask = np.arange(T)[:, None] < np.array([4, 2, 1])[None, :] if masked else None
    proj = rng.standard_normal((T, B, H))
    hs, cache = gru_forward(x, h0, w, mask)
    dx, dh0, grads = gru_backward(proj, cache)
    eps = 1e-6

    def numeric(arr):
        out = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + eps
            plus = _loss(gru_forward(x, h0, w, mask)[0], proj)
            arr[i] = old - eps
            minus = _loss(gru_forward(x, h0, w, mask)[0], proj)
            arr[i] = old
            out[i] = (plus - minus) / (2 * eps)
        return out

    for name, arr, analytic in [("x", x, dx), ("h0", h0, dh0)] + [(k, w[k], grads[k]) for k in w]:
        num = numeric(arr)
        rel = np.abs(num - analytic).max() / (np.abs(num).max() + np.abs(analytic).max())
        assert rel < 1e-6, (name, rel)


@pytest.mark.oracle
def test_cell_matches_torch_grucell():
    B, D, H = 3, 4, 5
    w = weights64(D, H, 4)
    rng = np.random.default_rng(5)
    x, h = rng.standard_normal((B, D)), rng.standard_normal((B, H))
    dh_new = rng.standard_normal((B, H))
    h_new, cache = cell_forward(x @ w["W_ih"].T + w["b_ih"], h, w["W_hh"], w["b_hh"])
    d_xg, d_hg, dh = cell_backward(dh_new, cache, w["W_hh"])

    cell = torch.nn.GRUCell(D, H, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.from_numpy(w["W_ih"]))
        cell.weight_hh.copy_(torch.from_numpy(w["W_hh"]))
        cell.bias_ih.copy_(torch.from_numpy(w["b_ih"]))
        cell.bias_hh.copy_(torch.from_numpy(w["b_hh"]))
    xt = torch.from_numpy(x).requires_grad_()
    ht = torch.from_numpy(h).requires_grad_()
    out = cell(xt, ht)
    out.backward(torch.from_numpy(dh_new))
    np.testing.assert_allclose(h_new, out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dh, ht.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(d_xg @ w["W_ih"], xt.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(d_hg.T @ h, cell.weight_hh.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(d_xg.sum(0), cell.bias_ih.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(d_hg.sum(0), cell.bias_hh.grad.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.oracle
@settings(max_examples=15)
@given(T=st.integers(1, 6), B=st.integers(1, 4), D=st.integers(1, 5), H=st.integers(1, 5),
       seed=st.integers(0, 10_000))
def test_sequence_matches_torch_gru(T, B, D, H, seed):
    w = weights64(D, H, seed)
    rng = np.random.default_rng(seed + 1)
    x, h0 = rng.standard_normal((T, B, D)), rng.standard_normal((B, H))
    d_hs = rng.standard_normal((T, B, H))
    hs, cache = gru_forward(x, h0, w)
    dx, dh0, grads = gru_backward(d_hs, cache)

    gru = torch_gru(w)
    xt = torch.from_numpy(x).requires_grad_()
    ht = torch.from_numpy(h0[None]).requires_grad_()
    out, _ = gru(xt, ht)
    out.backward(torch.from_numpy(d_hs))
    np.testing.assert_allclose(hs, out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dh0, ht.grad.numpy()[0], rtol=1e-9, atol=1e-12)
    for k, name in (("W_ih", "weight_ih_l0"), ("W_hh", "weight_hh_l0"), ("b_ih", "bias_ih_l0"),
                    ("b_hh", "bias_hh_l0")):
        np.testing.assert_allclose(grads[k], getattr(gru, name).grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.oracle
def test_masked_batch_matches_packed_torch_gru():
    T, B, D, H = 6, 3, 2, 4
    lengths = np.array([6, 2, 4])
    w = weights64(D, H, 8)
    rng = np.random.default_rng(9)
    x, h0 = rng.standard_normal((T, B, D)), rng.standard_normal((B, H))
    mask = np.arange(T)[:, None] < lengths[None, :]
    d_last = rng.standard_normal((B, H))
    hs, cache = gru_forward(x, h0, w, mask)
    d_hs = np.zeros((T, B, H))
    d_hs[-1] = d_last
    _, _, grads = gru_backward(d_hs, cache)

    gru = torch_gru(w)
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), torch.from_numpy(lengths),
                                                     enforce_sorted=False)
    _, h_last = gru(packed, torch.from_numpy(h0[None]))
    (h_last[0] * torch.from_numpy(d_last)).sum().backward()
    np.testing.assert_allclose(hs[-1], h_last[0].detach().numpy(), rtol=1e-12, atol=1e-14)
    for k, name in (("W_ih", "weight_ih_l0"), ("W_hh", "weight_hh_l0"), ("b_ih", "bias_ih_l0"),
                    ("b_hh", "bias_hh_l0")):
        np.testing.assert_allclose(grads[k], getattr(gru, name).grad.numpy(), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- validation
def _ok():
    return np.zeros((2, 3, 4)), np.zeros((3, 5)), init_gru(4, 5, np.random.default_rng(0), np.float64)


def test_rejects_x_with_wrong_ndim():
    _, h0, w = _ok()
    with pytest.raises(ValueError, match=r"x has shape \(3, 4\) \(2 dimensions\); expected \(T, B, D\)"):
        gru_forward(np.zeros((3, 4)), h0, w)


def test_rejects_missing_weight():
    x, h0, w = _ok()
    del w["b_hh"]
    with pytest.raises(ValueError, match=r"weights is missing 'b_hh'"):
        gru_forward(x, h0, w)


def test_rejects_W_hh_not_3H_by_H():
    x, h0, w = _ok()
    w["W_hh"] = np.zeros((14, 5))
    with pytest.raises(ValueError, match=r"W_hh has shape \(14, 5\); expected \(3H, H\) = \(15, 5\)"):
        gru_forward(x, h0, w)


def test_rejects_W_ih_with_wrong_input_size():
    x, h0, w = _ok()
    w["W_ih"] = np.zeros((15, 3))
    with pytest.raises(ValueError, match=r"W_ih has shape \(15, 3\); expected \(3H, D\) = \(15, 4\)"):
        gru_forward(x, h0, w)


def test_rejects_bias_with_wrong_size():
    x, h0, w = _ok()
    w["b_ih"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"b_ih has shape \(5,\); expected \(3H,\) = \(15,\)"):
        gru_forward(x, h0, w)
    w["b_ih"] = np.zeros(15)
    w["b_hh"] = np.zeros(16)
    with pytest.raises(ValueError, match=r"b_hh has shape \(16,\); expected \(3H,\) = \(15,\)"):
        gru_forward(x, h0, w)


def test_rejects_h0_with_wrong_shape():
    x, _, w = _ok()
    with pytest.raises(ValueError, match=r"h0 has shape \(5,\); expected \(B, H\) = \(3, 5\)"):
        gru_forward(x, np.zeros(5), w)


def test_rejects_mask_of_wrong_dtype_or_shape():
    x, h0, w = _ok()
    with pytest.raises(ValueError, match=r"mask must be a boolean array"):
        gru_forward(x, h0, w, np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"mask has shape \(3, 2\); expected \(T, B\) = \(2, 3\)"):
        gru_forward(x, h0, w, np.ones((3, 2), bool))


def test_rejects_d_hs_of_wrong_shape():
    x, h0, w = _ok()
    _, cache = gru_forward(x, h0, w)
    with pytest.raises(ValueError, match=r"d_hs has shape \(2, 3\); expected \(T, B, H\) = \(2, 3, 5\)"):
        gru_backward(np.zeros((2, 3)), cache)


def test_rejects_nan_input():
    x, h0, w = _ok()
    x[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"x with shape \(2, 3, 4\) contains NaN"):
        gru_forward(x, h0, w)
