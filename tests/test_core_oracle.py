"""Oracle tests: attn.scaled_dot_product_attention against PyTorch on the same inputs (float64).

PyTorch's F.scaled_dot_product_attention uses the same boolean convention as attn
(True = may attend); the masks are still converted explicitly through one helper so
that a change of convention on either side shows up here.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn

pytestmark = pytest.mark.oracle


def torch_attention(Q, K, V, allowed=None):
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    kw = {}
    if allowed is not None:
        kw["attn_mask"] = t(allowed)  # torch SDPA: True = take part in attention
    out = F.scaled_dot_product_attention(t(Q), t(K), t(V), **kw)
    # the weights, recomputed the documented way
    scores = t(Q) @ t(K).transpose(-1, -2) / np.sqrt(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~t(allowed), float("-inf"))
    return out.numpy(), torch.softmax(scores, dim=-1).numpy()


@pytest.fixture
def qkv():
    rng = np.random.default_rng(1234)
    return rng.normal(size=(3, 2, 6, 8)), rng.normal(size=(3, 2, 6, 8)), rng.normal(size=(3, 2, 6, 5))


def test_no_mask(qkv):
    Q, K, V = qkv
    out, w = attn.scaled_dot_product_attention(Q, K, V)
    ref_out, ref_w = torch_attention(Q, K, V)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)


def test_causal_mask_matches_is_causal(qkv):
    Q, K, V = qkv
    out, _ = attn.scaled_dot_product_attention(Q, K, V, mask=attn.causal_mask(6))
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)), is_causal=True)
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_rectangular_causal_alignment():
    rng = np.random.default_rng(7)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    out, _ = attn.scaled_dot_product_attention(Q, K, V, mask=attn.causal_mask(3, 5))
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)), is_causal=True)
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_padding_mask(qkv):
    Q, K, V = qkv
    Q, K, V = Q[:, 0], K[:, 0], V[:, 0]  # (batch=3, n, d)
    mask = attn.padding_mask([6, 4, 1], 6, n_q=6)  # (3, 6, 6)
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask=mask)
    ref_out, ref_w = torch_attention(Q, K, V, allowed=mask)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)


def test_padding_and_causal(qkv):
    Q, K, V = (a[:, 1] for a in qkv)
    mask = attn.padding_mask([6, 3, 2], 6, n_q=6) & attn.causal_mask(6)
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask=mask)
    ref_out, ref_w = torch_attention(Q, K, V, allowed=mask)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("scale", [1.0, 0.2])
def test_scale_matches_torch_scale(qkv, scale):
    Q, K, V = qkv
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    ref = F.scaled_dot_product_attention(t(Q), t(K), t(V), scale=scale).numpy()
    out, _ = attn.scaled_dot_product_attention(Q, K, V, scale=scale)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
