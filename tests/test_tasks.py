"""attn.training.tasks and attn.training.interpret: targets, exact baselines, training logs, ablations, probes, reproducibility.

The baselines are checked against values worked out by hand and against a brute-force enumeration of
every sequence; a zero ablation against the equivalent model with the head's rows of W_o set to zero;
the parallel training (spawned processes) against a second parallel run, bit for bit, and against the
serial one up to rounding.
"""
import itertools
import os
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from attn._parallel import map_in_two_processes
from attn.training import interpret
from attn.training.tasks import (
    TaskConfig,
    baselines,
    best_position_blind_accuracy,
    class_prior,
    eval_batch,
    make_batch,
    new_model,
    run_many,
    train,
)

TINY = TaskConfig(task="count", steps=12, eval_every=4, eval_mid_size=16, eval_size=32, length=6, d_model=8,
                  d_ff=16, batch_size=8)


def test_task_targets_hand_values():
    class Fixed:
        def integers(self, lo, hi, size):
            return np.array([[3, 1, 3, 2]])

    tokens, targets = make_batch(Fixed(), "reverse", 1, 4, 5)
    np.testing.assert_array_equal(targets, [[2, 3, 1, 3]])
    tokens, targets = make_batch(Fixed(), "count", 1, 4, 5)
    np.testing.assert_array_equal(targets, [[1, 0, 1, 0]])  # 3 occurs twice -> class 1


# ---------------------------------------------------------------- exact baselines


def test_class_prior_and_baselines_hand_values():
    # count, n = 4, 2 symbols: the other 3 positions repeat the symbol with p = 1/2 -> C(3, k) / 8
    np.testing.assert_allclose(class_prior("count", 4, 2), [1 / 8, 3 / 8, 3 / 8, 1 / 8], rtol=1e-15)
    b = baselines("count", 4, 2)
    assert b["chance"] == 1 / 4 and b["majority"] == pytest.approx(3 / 8, rel=1e-15)
    assert b["prior_loss"] == pytest.approx(-(2 / 8 * np.log(1 / 8) + 6 / 8 * np.log(3 / 8)), rel=1e-14)
    r = baselines("reverse", 12, 10)
    assert r["chance"] == r["majority"] == pytest.approx(0.1) and r["prior_loss"] == pytest.approx(np.log(10))


def test_count_prior_matches_the_sampled_targets():
    _, targets = make_batch(np.random.default_rng(0), "count", 20000, 12, 10)
    freq = np.bincount(targets.ravel(), minlength=12) / targets.size
    np.testing.assert_allclose(freq, class_prior("count", 12, 10), atol=0.005)


def brute_force_position_blind(n, V):
    """The best accuracy of any function of (sorted tokens, own token), by enumerating every sequence."""
    groups = {}
    for seq in itertools.product(range(V), repeat=n):
        for i in range(n):
            counter = groups.setdefault((tuple(sorted(seq)), seq[i]), {})
            counter[seq[n - 1 - i]] = counter.get(seq[n - 1 - i], 0) + 1
    return Fraction(sum(max(c.values()) for c in groups.values()), V ** n * n)


@pytest.mark.parametrize("n, V", [(2, 3), (4, 2), (4, 3), (6, 2), (4, 5)])
def test_best_position_blind_accuracy_is_the_brute_force_optimum(n, V):
    assert best_position_blind_accuracy(n, V) == brute_force_position_blind(n, V)


def test_best_position_blind_accuracy_page_value():
    value = best_position_blind_accuracy(12, 10)
    assert isinstance(value, Fraction) and float(value) == pytest.approx(0.26625, abs=5e-5)
    with pytest.raises(ValueError, match=r"length must be even and >= 2 \(no middle position\), got 5"):
        best_position_blind_accuracy(5, 10)


# ---------------------------------------------------------------- interpret


def test_attention_entropy_extremes():
    n = 5
    uniform = np.full((1, 2, 1, n, n), 1 / n)
    one_hot = np.broadcast_to(np.eye(n), (1, 2, 1, n, n))
    np.testing.assert_allclose(interpret.attention_entropy(uniform), [[np.log(n)]], rtol=1e-14)
    np.testing.assert_array_equal(interpret.attention_entropy(one_hot), [[0.0]])
    with pytest.raises(ValueError, match=r"weights has shape \(2, 1, 5, 5\) \(4 dimensions\); expected \(L, B, h, n, n\)"):
        interpret.attention_entropy(uniform[0])


def test_pattern_scores_hand_values():
    n = 4
    tokens = np.array([[1, 2, 1, 3]])
    anti = np.eye(n)[::-1]  # query i attends only to n - 1 - i
    same = (tokens[0][:, None] == tokens[0][None, :]).astype(float)
    equal = same / same.sum(axis=1, keepdims=True)  # uniform over equal tokens (self included)
    uniform = np.full((n, n), 1 / n)
    weights = np.stack([anti, equal, uniform])[:, None, None]  # (3 layers, B=1, h=1, n, n)
    s = interpret.pattern_scores(weights, tokens)
    np.testing.assert_allclose(s["anti_diagonal"][:, 0], [1.0, 0.0, 1 / n])
    np.testing.assert_allclose(s["equal_token"][:, 0], [0.0, 1.0, same.mean()])
    # anti, query 0: equal key 2 (weight 0) vs different keys 1 (0, a tie: 1/2) and 3 (1, a loss: 0) -> 1/4;
    # query 2 likewise; queries 1 and 3 have no other equal token and are left out
    np.testing.assert_allclose(s["equal_token_rank"][:, 0], [0.25, 1.0, 0.5])


def test_zero_ablation_equals_zero_rows_of_w_o():
    cfg = replace(TINY, task="reverse")
    model = new_model(cfg, dtype=np.float64)
    tokens, _ = eval_batch(cfg, 5, seed=1)
    d_k = model.d_k
    for layer, heads in ((0, [1]), (1, [0]), (1, [0, 1])):
        zeroed = interpret.ablated(model, layer, heads, np.zeros((len(heads), cfg.length, d_k)))
        reference = new_model(cfg, dtype=np.float64)  # the same initial weights
        for head in heads:
            reference.blocks[layer][0].W_o[head * d_k:(head + 1) * d_k] = 0.0  # the head's rows of W_o
        np.testing.assert_allclose(zeroed.forward(tokens)[0], reference.forward(tokens)[0], rtol=1e-5, atol=1e-6)
        assert not np.allclose(zeroed.forward(tokens)[0], model.forward(tokens)[0])
    np.testing.assert_array_equal(model.forward(tokens)[0], new_model(cfg, dtype=np.float64).forward(tokens)[0])


@pytest.mark.parametrize("scaled", [True, False])
def test_replacing_a_head_by_its_own_output_changes_nothing(scaled):
    """Also without the 1/sqrt(d_k) factor: the ablated copy keeps each layer's own scale."""
    model = new_model(replace(TINY, scaled=scaled), dtype=np.float64)
    tokens, _ = eval_batch(TINY, 1, seed=2)
    outputs = interpret.head_outputs(model, tokens)  # (L, 1, h, n, d_k)
    assert outputs.shape == (2, 1, 2, TINY.length, model.d_k)
    same = interpret.ablated(model, 1, 1, outputs[1, 0, 1])
    np.testing.assert_allclose(same.forward(tokens)[0], model.forward(tokens)[0], rtol=1e-12, atol=1e-12)


def test_head_ablations_against_each_replacement_built_here():
    cfg = replace(TINY, task="reverse")
    model = new_model(cfg, dtype=np.float64)
    L, h, n, d_k = cfg.num_layers, cfg.num_heads, cfg.length, model.d_k
    tokens, targets = eval_batch(cfg, 200, seed=3)
    reference = eval_batch(cfg, 30, seed=4)[0]
    acc = interpret.head_ablations(model, tokens, targets, reference)
    groups = [(c, (i,)) for c in range(L) for i in range(h)] + [(c, tuple(range(h))) for c in range(L)]
    modes = ("zero", "constant", "position mean")
    assert list(acc) == ["none"] + [(c, k, m) for c, k in groups for m in modes]
    assert acc["none"] == float((model.predict(tokens) == targets).mean())
    outputs = interpret.head_outputs(model, reference)  # (L, B_ref, h, n, d_k)
    for c, k in groups:
        per_position = outputs[c][:, list(k)].mean(axis=0)  # (k, n, d_k): over the reference sequences
        constant = np.repeat(per_position.mean(axis=1, keepdims=True), n, axis=1)  # (k, n, d_k)
        for mode, replacement in zip(modes, (np.zeros((len(k), n, d_k)), constant, per_position), strict=True):
            expected = float((interpret.ablated(model, c, k, replacement).predict(tokens) == targets).mean())
            assert acc[(c, k, mode)] == pytest.approx(expected, abs=1e-12), (c, k, mode)
    assert len({acc[(c, k, m)] for c, k in groups for m in modes}) > 3  # the replacements change the accuracy
    # one reference sequence, scored itself: the mean per position is each head's own output
    one = interpret.head_ablations(model, tokens[:1], targets[:1], tokens[:1])
    assert all(one[(c, k, "position mean")] == one["none"] for c, k in groups)


def test_error_head_ablations():
    model = new_model(TINY)
    tokens, targets = eval_batch(TINY, 3, seed=1)
    with pytest.raises(ValueError, match=r"targets has shape \(3, 5\) and dtype int64; expected integers with shape \(B, n\) = \(3, 6\)"):
        interpret.head_ablations(model, tokens, targets[:, :5], tokens)
    with pytest.raises(ValueError, match=r"reference_tokens has shape \(3, 5\); expected \(B_ref, n\) with n = 6 \(n from tokens\)"):
        interpret.head_ablations(model, tokens, targets, tokens[:, :5])


def test_score_gradients_give_the_query_and_key_gradients():
    # dq = c dS k and dk = c dS^T q, projected back through x: the W_q and W_k gradients of the model
    for scaled in (True, False):
        cfg = replace(TINY, scaled=scaled)
        model = new_model(cfg, dtype=np.float64)
        tokens, targets = make_batch(np.random.default_rng(5), cfg.task, 4, cfg.length, cfg.n_symbols)
        dS = interpret.score_gradients(model, tokens, targets)  # (L, B, h, n, n)
        _, grads = model.loss_and_grads(tokens, targets)
        blocks = model.forward(tokens)[1]["blocks"]
        c = 1 / np.sqrt(model.d_k) if scaled else 1.0
        for layer, block in enumerate(blocks):
            x, mha = block["x"], block["mha"]
            q, k = (np.einsum("bnd,hdk->bhnk", x, W) for W in (mha.W_q, mha.W_k))  # (B, h, n, d_k)
            dq, dk = c * dS[layer] @ k, c * np.swapaxes(dS[layer], -1, -2) @ q
            np.testing.assert_allclose(np.einsum("bnd,bhnk->hdk", x, dq), grads[f"{layer}.W_q"], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(np.einsum("bnd,bhnk->hdk", x, dk), grads[f"{layer}.W_k"], rtol=1e-9, atol=1e-12)
        assert np.abs(dS).max() > 0


def test_qk_lr_scale_scales_only_the_query_and_key_steps():
    cfg = replace(TINY, steps=1, eval_every=0)
    start, plain, scaled = new_model(cfg), train(cfg)[0], train(replace(cfg, qk_lr_scale=0.5))[0]
    for k, p in start.params.items():  # one step from the same weights and batch: the same gradients
        if k.endswith((".W_q", ".W_k")):
            np.testing.assert_allclose(scaled.params[k] - p, 0.5 * (plain.params[k] - p), rtol=0, atol=2e-7, err_msg=k)
            assert np.abs(plain.params[k] - p).max() > 1e-6
        else:
            np.testing.assert_array_equal(scaled.params[k], plain.params[k], err_msg=k)


def test_error_ablated():
    model = new_model(TINY)
    with pytest.raises(ValueError, match=r"heads must be distinct heads in \[0, h\) with h = 2, got \[2\]"):
        interpret.ablated(model, 0, 2, np.zeros((6, 4)))
    with pytest.raises(ValueError, match=r"heads must be distinct heads in \[0, h\) with h = 2, got \[1, 1\]"):
        interpret.ablated(model, 0, (1, 1), np.zeros((2, 6, 4)))
    with pytest.raises(ValueError, match=r"replacement has shape \(1, 6, 3\); expected \(k, n, d_k\) = \(1, 6, 4\)"):
        interpret.ablated(model, 0, 0, np.zeros((6, 3)))
    with pytest.raises(ValueError, match=r"replacement has shape \(1, 6, 4\); expected \(k, n, d_k\) = \(2, 6, 4\)"):
        interpret.ablated(model, 0, (0, 1), np.zeros((6, 4)))


def test_probe_accuracy_separable_and_blind():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 600)
    x = np.eye(3)[y] * 5 + rng.normal(size=(600, 3)) * 0.1  # the label is linear in x
    assert interpret.probe_accuracy(x[:300], y[:300], x[300:], y[300:], 3) == 1.0
    noise = rng.normal(size=(600, 4))  # nothing to read: near chance (1/3)
    assert abs(interpret.probe_accuracy(noise[:300], y[:300], noise[300:], y[300:], 3) - 1 / 3) < 0.1
    with pytest.raises(ValueError, match=r"train_y holds labels outside \[0, C\) with C = 2"):
        interpret.probe_accuracy(x[:300], y[:300], x[300:], y[300:], 2)
    with pytest.raises(ValueError, match=r"test_x has shape \(300, 4\); expected \(M, d\) = \(300, 3\)"):
        interpret.probe_accuracy(x[:300], y[:300], noise[300:], y[300:], 3)


def test_probe_ridge_is_relative_to_the_mean_diagonal_of_the_gram_matrix():
    # lambda = ridge * N * mean([X, 1]^2), the bias row penalised too: the docstring's ridge solution
    rng = np.random.default_rng(7)
    x = 3 * rng.normal(size=(400, 5))
    y = (x[:, :3] + rng.normal(size=(400, 3)) * 3).argmax(axis=1)  # labels with noise, in [0, 3)
    test_x, test_y = x[200:], y[200:]
    X = np.hstack([x[:200], np.ones((200, 1))])  # (N, d + 1)
    Y = np.eye(3)[y[:200]]  # (N, C)

    def accuracy(lam, penalised):
        W = np.linalg.solve(X.T @ X + lam * np.diag(penalised), X.T @ Y)  # (d + 1, C)
        return float(((np.hstack([test_x, np.ones((200, 1))]) @ W).argmax(axis=1) == test_y).mean())

    everything, weights_only = np.ones(6), np.r_[np.ones(5), 0.0]
    for ridge in (1.0, 30.0):
        lam = ridge * 200 * np.mean(X * X)
        got = interpret.probe_accuracy(x[:200], y[:200], test_x, test_y, 3, ridge=ridge)
        assert got == accuracy(lam, everything)
        assert got != accuracy(lam / 200, everything) and got != accuracy(lam, weights_only)  # the test can fail


def test_pair_contrast_hand_values():
    states = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])  # positions 0 and 1 point the same way
    labels = np.array([[0, 0, 1]])
    everything = np.ones((1, 3, 3), dtype=bool)
    assert interpret.pair_contrast(states, labels, everything) == pytest.approx(1.0)  # cos 1 vs cos 0
    keep = everything.copy()
    keep[0, 0, 1] = keep[0, 1, 0] = False  # without the only equal-label pair there is nothing to compare
    with pytest.warns(RuntimeWarning):
        assert np.isnan(interpret.pair_contrast(states, labels, keep))


# ---------------------------------------------------------------- training logs and reproducibility


def test_training_history_logs_entropy_and_query_key_gradients():
    model, history = train(TINY)
    assert [s for s, _ in history["mid_eval"]] == [0, 4, 8, 12] == [s for s, _ in history["entropy"]]
    tokens, _ = eval_batch(TINY, TINY.eval_mid_size, seed=TINY.seed + 7)
    np.testing.assert_allclose(history["entropy"][0][1],
                               interpret.attention_entropy(new_model(TINY).attention_maps(tokens)), rtol=1e-6)
    assert history["grad_norm"]["W_q"].shape == history["grad_norm"]["W_k"].shape == (TINY.steps, 2)
    # step 0's gradient, recomputed on the first training batch with the initial weights
    first = make_batch(np.random.default_rng([TINY.seed, 1]), TINY.task, TINY.batch_size, TINY.length,
                       TINY.n_symbols)
    _, grads = new_model(TINY).loss_and_grads(*first)
    np.testing.assert_allclose(history["grad_norm"]["W_k"][0], [np.linalg.norm(grads[f"{la}.W_k"]) for la in (0, 1)],
                               rtol=1e-6)


def test_each_worker_process_gets_one_blas_thread(monkeypatch):
    # what makes the parallel runs independent of the machine's thread count; this process's own
    # setting is left as it was
    names = ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"]
    for name in names:
        monkeypatch.setenv(name, "2")
    assert map_in_two_processes(os.getenv, names) == ["1", "1", "1"]
    assert [os.environ[name] for name in names] == ["2", "2", "2"]


def test_run_many_in_two_processes_repeats_bit_for_bit_and_is_the_serial_run_up_to_rounding():
    # the page's sizes (batch 64, n = 12, d_model 32, d_ff 128: products large enough for a
    # multi-threaded BLAS in this process, the serial run), a few steps each
    page = TaskConfig(task="count", steps=4, eval_every=2, eval_mid_size=64, eval_size=256)
    cfgs = [page, replace(page, task="reverse", seed=1, scaled=False, qk_lr_scale=0.25)]
    parallel, _ = run_many(cfgs, parallel=True)  # two spawned interpreters, one BLAS thread each
    again, _ = run_many(cfgs, parallel=True)
    # this process, with its BLAS threads: a product split over threads may round differently (on an
    # AMD EPYC's OpenBLAS the first loss differs in the 7th digit), so it is compared up to rounding
    serial, _ = run_many(cfgs, parallel=False)
    assert [r["config"] for r in parallel] == cfgs
    for a, b, c in zip(parallel, serial, again, strict=True):
        assert a["history"]["loss"] == c["history"]["loss"] and a["accuracy"] == c["accuracy"]
        np.testing.assert_allclose(a["history"]["loss"], b["history"]["loss"], rtol=1e-5)
        for k in a["params"]:
            np.testing.assert_array_equal(a["params"][k], c["params"][k], err_msg=k)
            np.testing.assert_allclose(a["params"][k], b["params"][k], rtol=1e-4, atol=1e-6, err_msg=k)
