"""attn.training.optim: Adam and clipping against torch, the schedule by hand; attn.training.copytask data and determinism."""
import math

import numpy as np
import pytest
import torch

from attn.training.copytask import BOS, PAD, CopyConfig, evaluate, make_batch, train
from attn.training.optim import Adam, clip_grad_norm, cosine_lr


@pytest.mark.oracle
def test_adam_matches_torch_adam():
    rng = np.random.default_rng(0)
    params = {"a": rng.standard_normal((3, 2)), "b": rng.standard_normal(4)}
    tparams = [torch.tensor(params[k].copy(), requires_grad=True) for k in ("a", "b")]
    opt = Adam(params, lr=0.01)
    topt = torch.optim.Adam(tparams, lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    for _ in range(5):
        grads = {"a": rng.standard_normal((3, 2)), "b": rng.standard_normal(4)}
        for t, k in zip(tparams, ("a", "b"), strict=True):
            t.grad = torch.from_numpy(grads[k].copy())
        opt.step(grads)
        topt.step()
    for t, k in zip(tparams, ("a", "b"), strict=True):
        np.testing.assert_allclose(params[k], t.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.oracle
def test_clip_matches_torch_clip_grad_norm():
    rng = np.random.default_rng(1)
    grads = {"a": 10 * rng.standard_normal((3, 2)), "b": 10 * rng.standard_normal(4)}
    tparams = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads.values()]
    for t, g in zip(tparams, grads.values(), strict=True):
        t.grad = torch.from_numpy(g.copy())
    ref = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
    norm = clip_grad_norm(grads, 1.0)
    assert norm == pytest.approx(float(ref), rel=1e-12)
    for t, g in zip(tparams, grads.values(), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-6)  # torch adds 1e-6 to the norm


def test_clip_leaves_small_gradients_alone():
    grads = {"a": np.array([0.3, 0.4])}
    assert clip_grad_norm(grads, 1.0) == pytest.approx(0.5)
    np.testing.assert_array_equal(grads["a"], [0.3, 0.4])


def test_clip_rejects_non_positive_threshold():
    with pytest.raises(ValueError, match=r"max_norm must be > 0, got 0"):
        clip_grad_norm({"a": np.ones(2)}, 0)


def test_adam_rejects_gradient_of_wrong_shape():
    opt = Adam({"a": np.zeros(3)})
    with pytest.raises(ValueError, match=r"grads\['a'\] has shape \(2,\); expected \(3,\)"):
        opt.step({"a": np.zeros(2)})


def test_cosine_schedule_by_hand():
    assert cosine_lr(0, 110, 1.0, warmup=10) == pytest.approx(0.1)
    assert cosine_lr(9, 110, 1.0, warmup=10) == pytest.approx(1.0)
    assert cosine_lr(10, 110, 1.0, warmup=10) == pytest.approx(1.0)
    assert cosine_lr(60, 110, 1.0, warmup=10) == pytest.approx(0.5)  # half-way: cos(pi/2) = 0
    assert cosine_lr(110, 110, 1.0, warmup=10, final=0.1) == pytest.approx(0.1)
    assert cosine_lr(35, 110, 2.0, warmup=10, final=0.0) == pytest.approx(1.0 + math.cos(math.pi / 4))


def test_make_batch_pads_and_shifts():
    src, tgt_in = make_batch(np.random.default_rng(0), 3, np.array([4, 1, 2]), 5)
    assert src.shape == tgt_in.shape == (3, 4)
    assert np.all(src[1, 1:] == PAD) and np.all(src[2, 2:] == PAD)
    assert np.all((src[0] >= 2) & (src[0] < 7))
    np.testing.assert_array_equal(tgt_in[:, 0], BOS)
    np.testing.assert_array_equal(tgt_in[:, 1:], src[:, :-1])


def test_short_training_is_reproducible_and_learns():
    cfg = CopyConfig(steps=30, batch_size=16, hidden_size=16, d_attn=8, max_len=12, warmup=5)
    m1, h1 = train(cfg)
    m2, h2 = train(cfg)
    assert h1["loss"] == h2["loss"]  # bit-identical
    assert np.mean(h1["loss"][-5:]) < np.mean(h1["loss"][:5])
    acc1 = evaluate(m1, (5, 8), 50, cfg.n_symbols, seed=3, mode="permuted")
    acc2 = evaluate(m2, (5, 8), 50, cfg.n_symbols, seed=3, mode="permuted")
    assert acc1 == acc2
