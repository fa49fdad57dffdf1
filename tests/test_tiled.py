"""attn.tiled: tiled attention with an online softmax, forward and backward, against the dense version.

Every equality check is a plain function taking the tiled module, so that the last section can run the
same checks on a copy of attn/tiled.py with a deliberately wrong rescaling of the running sum ℓ and see
them fail. Oracles: torch's F.scaled_dot_product_attention (forward) and its autograd (backward).
"""
import inspect
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import ROOT, assert_close_grad, includes, numeric_grad, probe
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn
import attn.tiled
from attn.measure import peak_bytes
from attn.tiled import SoftmaxStats, tiled_attention, tiled_attention_backward
from attn.training.backward import attention_backward

TOL = {np.float64: 1e-12, np.float32: 1e-5}


def inputs(seed, batch, n_q, n_k, d_k=8, d_v=5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=batch + shape).astype(dtype) for shape in ((n_q, d_k), (n_k, d_k), (n_k, d_v)))
    return Q, K, V


def masks(batch, n_q, n_k, seed=0):
    """The four mask cases: none, causal, padding (one sequence fully padded) and random with blocked rows."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, n_k + 1, size=int(np.prod(batch)))
    lengths[0] = 0  # a fully padded sequence: every query of it has no allowed key
    padding = attn.padding_mask(lengths, n_k, n_q=n_q).reshape(batch + (n_q, n_k))
    rand = rng.random(batch + (n_q, n_k)) < 0.6
    rand[..., 1, :] = False  # a fully blocked query in every batch element
    return {"none": None, "causal": attn.causal_mask(n_q, n_k), "padding": padding,
            "random": rand}


def assert_forward_matches_dense(tiled, Q, K, V, mask, tile_q, tile_k):
    """Output equal to the dense version to TOL; stats equal to the masked scores' max and sum of exp."""
    tol = TOL[Q.dtype.type]
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask)
    got, stats = tiled.tiled_attention(Q, K, V, mask, tile_q=tile_q, tile_k=tile_k)
    assert got.dtype == Q.dtype and got.shape == out.shape
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, out, rtol=tol, atol=tol)
    scores = Q.astype(np.float64) @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(axis=-1)
    has_key = np.isfinite(m)
    np.testing.assert_array_equal(np.isneginf(stats.m), ~has_key)
    np.testing.assert_allclose(stats.m[has_key], m[has_key], rtol=tol, atol=tol)
    l = np.exp(scores - np.where(has_key, m, 0)[..., None]).sum(axis=-1)
    np.testing.assert_allclose(stats.l, l, rtol=10 * tol)
    np.testing.assert_array_equal(got[~has_key], 0.0)  # no allowed key: a zero row, never NaN


def assert_backward_matches_dense(tiled, Q, K, V, mask, tile_q, tile_k, seed=1):
    tol = TOL[Q.dtype.type]
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask)
    P = probe(out.shape, seed).astype(Q.dtype)
    got_out, stats = tiled.tiled_attention(Q, K, V, mask, tile_q=tile_q, tile_k=tile_k)
    ref = attention_backward(P, Q, K, V, w)
    got = tiled.tiled_attention_backward(P, Q, K, V, got_out, stats, mask, tile_q=tile_q, tile_k=tile_k)
    for name, a, b in zip(("dQ", "dK", "dV"), got, ref, strict=True):
        assert a.dtype == Q.dtype, name
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)


# ---------------------------------------------------------------- forward: fixed cases

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding", "random"])
@pytest.mark.parametrize("tile_q, tile_k", [(4, 4), (5, 7), (1, 3), (32, 32), (64, 1)])
def test_forward_equals_dense(dtype, mask_name, tile_q, tile_k):
    Q, K, V = inputs(0, (3,), 20, 28, dtype=dtype)  # 20 = 4 * 5, 28 = 4 * 7: tiles that divide and that do not
    assert_forward_matches_dense(attn.tiled, Q, K, V, masks((3,), 20, 28)[mask_name], tile_q, tile_k)


def test_exercise1_by_hand_with_one_key_per_tile():
    # Activity 4, Exercise 1: scores (1, 0, .5) and (0, 1, .5); one key per tile exercises every rescaling
    out, stats = tiled_attention(Q1, K1, V1, tile_q=1, tile_k=1)  # the inputs, defined below
    e = np.e
    np.testing.assert_allclose(stats.m, [1.0, 1.0], rtol=0)
    np.testing.assert_allclose(stats.l, [1 + np.exp(-1) + np.exp(-0.5)] * 2, rtol=1e-15)
    w1 = np.array([e, 1.0, np.sqrt(e)]) / (e + 1 + np.sqrt(e))
    np.testing.assert_allclose(out[0], [w1[0] + 0.5 * w1[2], w1[1] + 0.5 * w1[2]], rtol=1e-14)
    np.testing.assert_allclose(out[1], out[0][::-1], rtol=1e-14)


def test_fully_masked_everything_gives_zeros_not_nan():
    Q, K, V = inputs(1, (2,), 6, 9)
    out, stats = tiled_attention(Q, K, V, np.zeros((6, 9), bool), tile_q=4, tile_k=4)
    np.testing.assert_array_equal(out, 0.0)
    assert np.isneginf(stats.m).all() and np.all(stats.l == 0.0)


def test_huge_scores_do_not_overflow():
    Q, K, V = inputs(2, (), 7, 11)
    Q = Q * 300.0  # scores of the order of a thousand: exp would overflow without the running max
    assert_forward_matches_dense(attn.tiled, Q, K, V, None, 3, 4)


def test_stats_are_a_named_pair():
    Q, K, V = inputs(3, (), 3, 4)
    _, stats = tiled_attention(Q, K, V)
    assert isinstance(stats, SoftmaxStats) and stats.m.shape == stats.l.shape == (3,)


@pytest.mark.parametrize("scale", [1.0, 0.05, 3])
def test_scale_as_in_the_dense_version(scale):
    Q, K, V = inputs(17, (2,), 11, 13)
    mask = masks((2,), 11, 13)["random"]
    out, w = attn.scaled_dot_product_attention(Q, K, V, mask, scale)
    got, stats = tiled_attention(Q, K, V, mask, scale, tile_q=4, tile_k=5)
    np.testing.assert_allclose(got, out, rtol=1e-12, atol=1e-12)
    P = probe(out.shape, 18)
    ref = attention_backward(P, Q, K, V, w, scale)
    grads = tiled_attention_backward(P, Q, K, V, got, stats, mask, scale, tile_q=3, tile_k=7)
    for a, b in zip(grads, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- forward: properties

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def tiled_case(draw, with_mask=True):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 12)) for _ in range(4))
    Q = draw(arrays(np.float64, batch + (n_q, d_k), elements=finite))
    K = draw(arrays(np.float64, batch + (n_k, d_k), elements=finite))
    V = draw(arrays(np.float64, batch + (n_k, d_v), elements=finite))
    mask = None
    if with_mask and draw(st.booleans()):
        shape = draw(st.sampled_from([(n_q, n_k), batch + (n_q, n_k)]))  # 2-D: the same for every batch element
        mask = draw(arrays(bool, shape))
    tile_q = draw(st.integers(1, n_q + 2))  # divides n_q or not, and larger than n_q
    tile_k = draw(st.integers(1, n_k + 2))
    return Q, K, V, mask, tile_q, tile_k


@settings(max_examples=300)
@given(tiled_case())
def test_property_forward_equals_dense(case):
    assert_forward_matches_dense(attn.tiled, *case)


@settings(max_examples=150)
@given(tiled_case())
def test_property_backward_equals_dense(case):
    assert_backward_matches_dense(attn.tiled, *case)


@settings(max_examples=50)
@given(tiled_case(with_mask=False), st.integers(1, 13), st.integers(1, 13))
def test_property_result_does_not_depend_on_tile_sizes(case, tile_q2, tile_k2):
    Q, K, V, _, tile_q, tile_k = case
    a, sa = tiled_attention(Q, K, V, tile_q=tile_q, tile_k=tile_k)
    b, sb = tiled_attention(Q, K, V, tile_q=tile_q2, tile_k=tile_k2)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # the same max, up to rounding: BLAS may round a score differently in another tile shape
    np.testing.assert_allclose(sa.m, sb.m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sa.l, sb.l, rtol=1e-12)


# ---------------------------------------------------------------- memory: no n_q x n_k array

def assert_no_full_score_matrix(tile_q, tile_k, n=1024):
    """Peak memory of one call stays below a quarter of one n x n float64 matrix."""
    Q, K, V = inputs(4, (), n, n, d_k=16, d_v=16)
    mask = attn.causal_mask(n)  # made before tracing: the caller's array
    peak = peak_bytes(lambda: tiled_attention(Q, K, V, mask, tile_q=tile_q, tile_k=tile_k))
    assert peak < n * n * 8 / 4, f"peak {peak} bytes for n = {n}"


def test_memory_stays_below_the_score_matrix():
    assert_no_full_score_matrix(64, 64)
    assert_no_full_score_matrix(128, 32)


def test_memory_check_can_fail():
    with pytest.raises(AssertionError, match="peak"):
        assert_no_full_score_matrix(1024, 1024)  # one tile holds the whole matrix: the dense memory


# ---------------------------------------------------------------- backward

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding", "random"])
@pytest.mark.parametrize("tile_q, tile_k", [(4, 7), (3, 5), (32, 32)])
def test_backward_equals_dense(dtype, mask_name, tile_q, tile_k):
    Q, K, V = inputs(5, (3,), 20, 28, dtype=dtype)
    assert_backward_matches_dense(attn.tiled, Q, K, V, masks((3,), 20, 28)[mask_name], tile_q, tile_k)


def test_backward_tiles_need_not_be_the_forwards():
    Q, K, V = inputs(6, (2,), 13, 17)
    mask = masks((2,), 13, 17)["random"]
    out, stats = tiled_attention(Q, K, V, mask, tile_q=4, tile_k=3)
    P = probe(out.shape, 7)
    a = tiled_attention_backward(P, Q, K, V, out, stats, mask, tile_q=4, tile_k=3)
    b = tiled_attention_backward(P, Q, K, V, out, stats, mask, tile_q=13, tile_k=5)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("mask_name", ["causal", "padding", "random"])
def test_fd_backward(mask_name):
    Q, K, V = inputs(8, (2,), 5, 7, d_k=3, d_v=4)
    mask = masks((2,), 5, 7, seed=9)[mask_name]
    P = probe((2, 5, 4), 10)
    out, stats = tiled_attention(Q, K, V, mask, tile_q=2, tile_k=3)
    grads = tiled_attention_backward(P, Q, K, V, out, stats, mask, tile_q=2, tile_k=3)
    for name, arr, ana in zip("QKV", (Q, K, V), grads, strict=True):
        num = numeric_grad(lambda: np.sum(P * tiled_attention(Q, K, V, mask, tile_q=2, tile_k=3)[0]), arr)
        assert_close_grad(num, ana, name)
    if mask_name == "padding":
        assert np.all(grads[1][0] == 0.0) and np.all(grads[2][0] == 0.0)  # sequence 0 is all padding


# ---------------------------------------------------------------- PyTorch oracles

def tt(a, grad=False):
    return torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(grad)


@pytest.mark.oracle
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding_kept", "random_kept"])
def test_oracle_torch_forward_and_backward(mask_name):
    Q, K, V = inputs(11, (2, 3), 19, 23)
    mask = masks((2, 3), 19, 23, seed=12).get(mask_name.removesuffix("_kept"))
    if mask is not None and mask_name.endswith("_kept"):
        mask = mask.copy()
        mask[..., 0] = True  # torch gives NaN for a fully blocked query; attn gives 0 (tested above)
    kw = {} if mask is None else {"attn_mask": tt(mask)}  # torch SDPA: True = take part in attention
    Qt, Kt, Vt = tt(Q, True), tt(K, True), tt(V, True)
    out_t = F.scaled_dot_product_attention(Qt, Kt, Vt, **kw)
    P = probe(out_t.shape, 13)
    (out_t * tt(P)).sum().backward()
    out, stats = tiled_attention(Q, K, V, mask, tile_q=8, tile_k=5)
    np.testing.assert_allclose(out, out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    grads = tiled_attention_backward(P, Q, K, V, out, stats, mask, tile_q=6, tile_k=9)
    for name, g, ref in zip("QKV", grads, (Qt, Kt, Vt), strict=True):
        np.testing.assert_allclose(g, ref.grad.numpy(), rtol=1e-11, atol=1e-12, err_msg=name)


@pytest.mark.oracle
def test_oracle_torch_is_causal_float32():
    Q, K, V = inputs(14, (4,), 33, 33, dtype=np.float32)
    ref = F.scaled_dot_product_attention(tt(Q), tt(K), tt(V), is_causal=True).numpy()
    out, _ = tiled_attention(Q, K, V, attn.causal_mask(33), tile_q=8, tile_k=8)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- validation: the dense version's errors

Q1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
K1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
V1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
NAN_K = K1.copy()
NAN_K[1, 2] = np.nan
INF_V = V1.copy()
INF_V[0, 1] = np.inf
BAD = {
    "Q ndim": (Q1[0], K1, V1, None),
    "d_k": (Q1, K1[:, :3], V1, None),
    "n_k": (Q1, K1, V1[:2], None),
    "batch": (np.stack([Q1, Q1]), K1, V1, None),
    "mask dtype": (Q1, K1, V1, np.ones((2, 3))),
    "mask shape": (Q1, K1, V1, np.ones((3, 3), bool)),
    "mask batch": (np.stack([Q1, Q1]), np.stack([K1, K1]), np.stack([V1, V1]), np.ones((1, 2, 3), bool)),
    "nan": (Q1, NAN_K, V1, None),
    "inf": (Q1, K1, INF_V, None),
    "scale": (Q1, K1, V1, None, 0.0),
}


def _errors(args):
    """The messages of the dense version, the tiled forward and the tiled backward on the same inputs."""
    with pytest.raises(ValueError) as dense:
        attn.scaled_dot_product_attention(*args)
    with pytest.raises(ValueError) as tiled:
        tiled_attention(*args, tile_q=2, tile_k=2)
    out = np.zeros((2, 2))
    with pytest.raises(ValueError) as back:
        tiled_attention_backward(out, *args[:3], out, (np.zeros(2), np.ones(2)), *args[3:])
    return str(dense.value), str(tiled.value), str(back.value)


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_same_errors_as_the_dense_version(case):
    dense, tiled, back = _errors(BAD[case])
    assert tiled == dense
    assert back == dense


@pytest.mark.parametrize("tile", [0, -3, 2.5, True, None])
def test_error_tile_size(tile):
    with pytest.raises(ValueError, match=r"tile_k must be a positive integer"):
        tiled_attention(Q1, K1, V1, tile_k=tile)


def test_error_backward_shapes():
    out, stats = tiled_attention(Q1, K1, V1)
    with pytest.raises(ValueError, match=r"d_out has shape \(2, 3\); expected \(\.\.\., n_q, d_v\) = \(2, 2\)"):
        tiled_attention_backward(np.zeros((2, 3)), Q1, K1, V1, out, stats)
    with pytest.raises(ValueError, match=r"output has shape \(3, 2\); expected \(\.\.\., n_q, d_v\) = \(2, 2\)"):
        tiled_attention_backward(out, Q1, K1, V1, np.zeros((3, 2)), stats)
    with pytest.raises(ValueError, match=r"stats.l has shape \(3,\); expected \(\.\.\., n_q\) = \(2,\)"):
        tiled_attention_backward(out, Q1, K1, V1, out, (stats.m, np.ones(3)))
    with pytest.raises(ValueError, match=r"stats.m with shape \(2,\) contains NaN or inf"):
        tiled_attention_backward(out, Q1, K1, V1, out, (np.array([0.0, np.inf]), stats.l))
    with pytest.raises(ValueError, match=r"stats must be the pair \(m, l\) returned by tiled_attention"):
        tiled_attention_backward(out, Q1, K1, V1, out, stats.m)


# ---------------------------------------------------------------- the checks can fail: a wrong rescaling of ℓ

RIGHT = "l = alpha * l + p.sum(axis=-1)"


def tiled_copy(old, new):
    """attn.tiled executed from its source with ``old`` replaced by ``new`` (which must occur once)."""
    source = inspect.getsource(attn.tiled)
    assert source.count(old) == 1, f"{old!r} no longer occurs once in attn/tiled.py"
    module = types.ModuleType("attn._tiled_copy")
    module.__package__ = "attn"  # for the module's relative imports
    exec(compile(source.replace(old, new), "attn/tiled.py (test copy)", "exec"), module.__dict__)
    return module


def test_an_unchanged_copy_passes():  # the copy mechanism itself does not break the module
    same = tiled_copy(RIGHT, RIGHT)
    Q, K, V = inputs(15, (2,), 9, 10)
    assert_forward_matches_dense(same, Q, K, V, masks((2,), 9, 10)["random"], 4, 3)
    assert_backward_matches_dense(same, Q, K, V, masks((2,), 9, 10)["random"], 4, 3)


@pytest.mark.parametrize("wrong", ["l = l + p.sum(axis=-1)",  # the old sum is not rescaled
                                   "l = alpha * l + p.sum(axis=-1) * alpha",  # the new terms are
                                   "l = alpha ** 2 * l + p.sum(axis=-1)"])  # rescaled twice
@pytest.mark.parametrize("check", [assert_forward_matches_dense, assert_backward_matches_dense])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding"])
def test_a_wrong_rescaling_of_l_fails_the_checks(wrong, check, mask_name):
    broken = tiled_copy(RIGHT, wrong)
    Q, K, V = inputs(16, (2,), 12, 16)
    Q = Q * 3.0  # spread the scores so that the running max moves from tile to tile
    with pytest.raises(AssertionError):
        check(broken, Q, K, V, masks((2,), 12, 16)[mask_name], 4, 4)


# ---------------------------------------------------------------- attn.measure (what the bench and the page use)

def test_peak_bytes_counts_what_the_call_allocates():
    big = np.ones(10**6)  # exists before: not counted
    assert 8e6 <= peak_bytes(lambda: np.zeros(10**6) + 1.0) < 1.7e7  # two 8 MB buffers at most
    assert peak_bytes(lambda: big.sum()) < 1e5


def test_exponents_of_a_power_law_with_a_constant():
    from attn.measure import fitted_exponent, increment_exponent

    n = np.array([256, 512, 1024, 2048])
    assert fitted_exponent(n, 3 * n**2.0) == pytest.approx(2.0, abs=1e-12)
    y = 5e5 + 512.0 * n  # a fixed part plus a linear one, like the tiled memory
    assert fitted_exponent(n, y) < 0.8  # the fixed part hides the growth
    assert increment_exponent(n, y) == pytest.approx(1.0, abs=1e-12)


def test_dense_vs_tiled_rows_and_stopping_rule():
    from attn.measure import dense_vs_tiled, tile_sweep

    rows = dense_vs_tiled([64, 128, 256], d=8, tile=32, repeats=1, max_dense_bytes=1_000_000)
    assert [r["n"] for r in rows] == [64, 128, 256]
    assert rows[1]["dense_bytes"] > rows[1]["tiled_bytes"] > 0
    # dense: 64 -> 128 is predicted within the budget, 128 -> 256 is not, so n = 256 is skipped
    assert rows[0]["dense_bytes"] * 4 < 1_000_000 < rows[1]["dense_bytes"] * 4
    assert not np.isnan(rows[1]["dense_bytes"]) and np.isnan(rows[2]["dense_bytes"])
    assert not np.isnan(rows[2]["tiled_bytes"])
    sweep = tile_sweep(128, [16, 128], d=8, repeats=1)
    assert sweep[0]["bytes"] < sweep[1]["bytes"]  # a larger tile holds a larger block of scores


def test_bare_dense_attention_is_the_dense_formula():
    from attn.measure import bare_dense_attention

    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(7, 4)), rng.normal(size=(9, 4)) * 5, rng.normal(size=(9, 3))
    out, _ = attn.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(bare_dense_attention(Q, K, V), out, rtol=1e-13, atol=1e-15)


# ---------------------------------------------------------------- the page shows the code that runs

def test_page_includes_the_tiled_source_without_docstrings():
    text = (ROOT / "book" / "alem" / "atencao_em_blocos.md").read_text(encoding="utf-8")
    found = includes(text)
    for name in ("_online_softmax_step", "tiled_attention", "tiled_attention_backward"):
        assert found[name]["path"] == "../../attn/tiled.py", name
        assert "lines" not in found[name]["options"], name  # the build hides the docstring (listings.py)
        assert found[name]["label"] == "codigo-" + name.strip("_").replace("_", "-"), name
