"""attn.training.copy_transformer: same batches and evaluation as the GRU experiment, hand-computed scores, reproducibility."""
from dataclasses import replace

import numpy as np
import pytest

from attn.training import copytask
from attn.training.copy_transformer import TransformerCopyConfig, head_scores, new_model, run_many, run_one
from attn.training.copytask import CopyConfig, steps_to_accuracy
from attn.training.seq2seq import Seq2Seq
from attn.training.transformer import EncoderDecoder

TINY = replace(CopyConfig(), steps=6, max_len=8, eval_lengths=(3, 6), eval_per_length=8, eval_every=3,
               eval_mid_per_length=4, batch_size=8, hidden_size=8, emb_size=4, d_attn=4)


def recorded_batches(monkeypatch, model_cls, train):
    seen = []
    real = model_cls.loss_and_grads

    def spy(self, src, src_len, tgt_in, tgt_out, tgt_len):
        seen.append((src.copy(), src_len.copy(), tgt_in.copy()))
        return real(self, src, src_len, tgt_in, tgt_out, tgt_len)

    monkeypatch.setattr(model_cls, "loss_and_grads", spy)
    train()
    return seen


def test_transformer_sees_the_gru_batches(monkeypatch):
    gru = recorded_batches(monkeypatch, Seq2Seq, lambda: copytask.train(TINY))
    ours = recorded_batches(monkeypatch, EncoderDecoder, lambda: run_one(
        TransformerCopyConfig(data=TINY, steps=6, d_model=8, d_ff=8, eval_every=3, max_len=8)))
    assert len(gru) == len(ours) == 6
    for a, b in zip(gru, ours, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_evaluation_is_the_gru_evaluation():
    """Both models are scored on the same sequences: a model that copies perfectly gets exactly 1."""
    class Copier:
        def greedy_decode(self, src, src_len, out_len, bos, attention_mode="learned", rng=None):
            return src[:, :out_len]

    assert copytask.evaluate(Copier(), (3, 7), 10, 4, seed=1) == {3: 1.0, 7: 1.0}


def test_steps_to_accuracy_hand_values():
    history = [(50, {5: 0.8, 10: 0.9}), (100, {5: 0.95, 10: 0.86}), (150, {5: 1.0, 10: 1.0})]
    assert steps_to_accuracy(history, 0.9) == 100  # mean 0.905
    assert steps_to_accuracy(history, 0.99) == 150
    assert steps_to_accuracy(history[:1], 0.9) is None


def test_head_scores_hand_values():
    L = 4
    diagonal, uniform = np.eye(L), np.full((L, L), 1 / L)
    previous = np.eye(L, k=-1)
    previous[0, 0] = 1.0
    first = np.zeros((L, L))
    first[:, 0] = 1.0
    cross = np.stack([diagonal, uniform])[None, None]  # (N=1, B=1, h=2, L, L)
    self_w = np.stack([previous, first])[None, None]
    s = head_scores({"cross": cross, "self": self_w})
    np.testing.assert_allclose(s["cross_diagonal"], [[1.0, 1 / L]])
    np.testing.assert_allclose(s["self_previous"], [[1.0, 1 / 3]])  # first: t = 1 looks at 0 = t - 1
    np.testing.assert_allclose(s["self_first"], [[1 / 3, 1.0]])
    np.testing.assert_allclose(s["self_current"], [[0.0, 0.0]])
    assert s["cross_diagonal_uniform"] == 1 / L
    assert s["self_uniform"] == pytest.approx(np.mean([1 / 2, 1 / 3, 1 / 4]))


def test_training_is_bit_reproducible_across_the_process_pool():
    cfg = TransformerCopyConfig(data=TINY, steps=6, d_model=8, d_ff=8, eval_every=3, max_len=8)
    cfgs = [cfg, replace(cfg, seed=1), replace(TINY, attention=True)]
    pooled, _ = run_many(cfgs)
    serial, _ = run_many(cfgs, parallel=False)
    for a, b in zip(pooled, serial, strict=True):
        assert a["history"]["loss"] == b["history"]["loss"] and a["accuracy"] == b["accuracy"]
        for k in a["params"]:
            np.testing.assert_array_equal(a["params"][k], b["params"][k], err_msg=k)
    assert pooled[0]["history"]["loss"] != pooled[1]["history"]["loss"]  # the seed matters
    assert [r["kind"] for r in pooled] == ["transformer", "transformer", "gru"]
    assert pooled[0]["n_params"] == new_model(cfg).n_params()
