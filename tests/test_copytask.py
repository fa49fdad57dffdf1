"""attn.training.copytask: one evaluation set for every column, standard errors, the long plain run, rebuilt models."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn.training.copytask import (
    BOS,
    EVAL_SEED,
    CopyConfig,
    eval_sources,
    evaluate,
    model_from_result,
    run_both,
    run_one,
    sequence_scores,
    standard_error,
    train,
)
from attn.training.seq2seq import Seq2Seq

TINY = CopyConfig(steps=12, batch_size=8, hidden_size=8, emb_size=4, d_attn=4, min_len=3, max_len=8, warmup=2,
                  eval_lengths=(3, 6), eval_per_length=40, eval_every=5, eval_mid_per_length=15)


def _sources(lengths, n, n_symbols, seed=EVAL_SEED, chunk=500):
    out = {}
    for L, src in eval_sources(lengths, n, n_symbols, seed, chunk):
        out.setdefault(L, []).append(src)
    return {L: np.concatenate(parts) for L, parts in out.items()}


@settings(max_examples=30)
@given(n=st.integers(1, 30), extra=st.integers(0, 30), chunk=st.integers(1, 12), L=st.integers(1, 9))
def test_first_sequences_of_a_larger_set_are_the_smaller_set(n, extra, chunk, L):
    small = _sources((L,), n, 10, chunk=chunk)[L]
    large = _sources((L,), n + extra, 10, chunk=chunk)[L]
    assert small.shape == (n, L) and large.shape == (n + extra, L)
    np.testing.assert_array_equal(large[:n], small)


def test_evaluation_sets_depend_on_the_seed_and_the_length():
    a = _sources((5, 6), 20, 10)
    b = _sources((5,), 20, 10, seed=EVAL_SEED + 1)
    assert not np.array_equal(a[5], b[5])  # the fixture that shows the prefix test could fail
    assert not np.array_equal(a[5], a[6][:, :5])
    assert np.all((a[5] >= 2) & (a[5] < 12))  # symbols only: no padding, no start token


def test_evaluate_is_the_token_accuracy_of_the_sequence_scores():
    model = Seq2Seq(12, 4, 8, True, 4, seed=3)
    scores = sequence_scores(model, (4, 7), 30, 10, mode="permuted", chunk=7)
    acc = evaluate(model, (4, 7), 30, 10, mode="permuted", chunk=7)
    for L in (4, 7):
        assert scores[L].shape == (30,) and scores[L].min() >= 0 and scores[L].max() <= L
        assert acc[L] == scores[L].sum() / (30 * L)
    # by hand: decode the same sources and count
    src = _sources((4,), 30, 10)[4]
    rng = np.random.default_rng([EVAL_SEED, 4, 2])  # mode "permuted" is ATTENTION_MODES[2]
    pred = np.concatenate([model.greedy_decode(src[i:i + 7], np.full(len(src[i:i + 7]), 4), 4, BOS,
                                               attention_mode="permuted", rng=rng) for i in range(0, 30, 7)])
    np.testing.assert_array_equal(scores[4], (pred == src).sum(axis=1))


def test_standard_error_by_hand():
    # per-sequence accuracies 0 and 1: sample std sqrt(1/2), over sqrt(2) -> 1/2
    assert standard_error(np.array([0, 4]), 4) == pytest.approx(0.5)
    # 1/4, 2/4, 3/4: std 1/4, over sqrt(3)
    assert standard_error(np.array([1, 2, 3]), 4) == pytest.approx(0.25 / np.sqrt(3))
    assert standard_error(np.array([2, 2, 2]), 4) == 0.0


def test_standard_error_counts_sequences_not_tokens():
    # every sequence all right or all wrong: tokens are not independent, the error is that of 10 draws
    scores = np.array([5] * 5 + [0] * 5)
    per_token = np.sqrt(0.25 / (10 * 5))
    assert standard_error(scores, 5) == pytest.approx(np.sqrt(0.25 * 10 / 9) / np.sqrt(10))
    assert standard_error(scores, 5) > 2 * per_token


@pytest.mark.parametrize("bad", [np.array([3]), np.zeros((2, 2), int)])
def test_standard_error_rejects_too_few_or_2d_scores(bad):
    with pytest.raises(ValueError, match=r"scores has shape .*; expected \(n,\) with n >= 2"):
        standard_error(bad, 4)


@pytest.fixture(scope="module")
def trained():
    model, history = train(replace(TINY, attention=False))
    return model, history


def test_mid_training_evaluations_include_the_last_step(trained):
    _, history = trained
    assert [s for s, _ in history["mid_eval"]] == [5, 10, 12]
    assert [s for s, _ in history["mid_eval_se"]] == [5, 10, 12]
    for (_, acc), (_, se) in zip(history["mid_eval"], history["mid_eval_se"], strict=True):
        assert set(acc) == set(se) == {3, 6}
        assert all(0 <= v <= 1 for v in acc.values()) and all(v >= 0 for v in se.values())


def test_last_mid_evaluation_scores_the_first_sequences_of_the_final_set(trained):
    model, history = trained
    final = sequence_scores(model, TINY.eval_lengths, TINY.eval_per_length, TINY.n_symbols)
    last = history["mid_eval"][-1][1]
    for L in TINY.eval_lengths:
        assert last[L] == final[L][:TINY.eval_mid_per_length].sum() / (TINY.eval_mid_per_length * L)
    # the old mid-training set (another seed) is another set: it would not have matched
    other = evaluate(model, TINY.eval_lengths, TINY.eval_mid_per_length, TINY.n_symbols, seed=TINY.seed + 7)
    assert other != last


def test_mid_evaluation_never_exceeds_the_final_set():
    cfg = replace(TINY, attention=False, steps=5, eval_per_length=6, eval_mid_per_length=50)
    model, history = train(cfg)
    assert history["mid_eval"][-1][1] == evaluate(model, cfg.eval_lengths, 6, cfg.n_symbols)


def test_run_both_trains_the_long_plain_run_and_rebuilds_models():
    out = run_both(replace(TINY, steps=6, eval_every=3), parallel=False)
    assert set(out) == {"attention", "plain", "plain_long", "wall_seconds"}
    assert out["plain_long"]["config"]["steps"] == 12 and not out["plain_long"]["config"]["attention"]
    assert [s for s, _ in out["plain_long"]["history"]["mid_eval"]] == [3, 6, 9, 12]
    # the long run repeats the short one's batches: its first losses are the same until the schedules part
    assert out["plain_long"]["history"]["loss"][0] == out["plain"]["history"]["loss"][0]
    for name in ("attention", "plain_long"):
        r = out[name]
        model = model_from_result(r)
        assert model.attention == r["config"]["attention"]
        assert evaluate(model, TINY.eval_lengths, TINY.eval_per_length, TINY.n_symbols) == r["accuracy"]["learned"]
        assert set(r["accuracy_se"]["learned"]) == set(TINY.eval_lengths)
        again = model_from_result({**r, "config": CopyConfig(**r["config"])})  # a CopyConfig works too
        assert all(np.array_equal(again.params[k], v) for k, v in model.params.items())
    assert "plain_long" not in run_both(replace(TINY, steps=2, eval_every=0, plain_long_factor=0), parallel=False)


def test_run_one_standard_errors_match_the_final_scores():
    cfg = replace(TINY, attention=True, steps=3, eval_every=0)
    r = run_one(cfg, alignment_lengths=(4,))
    model = model_from_result(r)
    for mode in ("learned", "shifted"):
        scores = sequence_scores(model, cfg.eval_lengths, cfg.eval_per_length, cfg.n_symbols, mode=mode)
        for L in cfg.eval_lengths:
            assert r["accuracy_se"][mode][L] == standard_error(scores[L], L)
