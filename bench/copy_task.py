"""Benchmark of the copy-task training step: NumPy (attn.training.seq2seq) vs the same model in PyTorch CPU.

Both run with one BLAS / intra-op thread, float32, batch 64, the default
CopyConfig sizes. Prints CPU milliseconds per training step (forward, backward,
clipping and Adam; best of several, CPU time so that a shared machine's waits
do not count) at several sequence lengths, the expected CPU time of a whole
training run (the lengths are bucketed, so a step costs the average over the
length distribution). `make copy-task` times the real parallel run.

    python bench/copy_task.py            # per-step figures
    make copy-task                       # the full two-model run (as in the notebook), with wall times
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported
import argparse  # noqa: E402

import numpy as np  # noqa: E402
from transformer import best_of  # noqa: E402  (bench/transformer.py: run as a script, bench/ is on the path)

from attn.training.copytask import CopyConfig, make_batch, training_lengths  # noqa: E402
from attn.training.optim import Adam, clip_grad_norm  # noqa: E402
from attn.training.seq2seq import Seq2Seq  # noqa: E402

LENGTHS = (10, 30, 50, 70, 90)


def time_numpy(cfg, attention, L, repeats):
    model = Seq2Seq(cfg.vocab_size, cfg.emb_size, cfg.hidden_size, attention, cfg.d_attn, seed=0)
    opt = Adam(model.params, lr=1e-3)
    lengths = np.full(cfg.batch_size, L)
    src, tgt_in = make_batch(np.random.default_rng(0), cfg.batch_size, lengths, cfg.n_symbols)

    def step():
        _, g = model.loss_and_grads(src, lengths, tgt_in, src, lengths)
        clip_grad_norm(g, 1.0)
        opt.step(g)

    return best_of(step, repeats)[1]  # CPU seconds


def time_torch(cfg, attention, L, repeats):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    V, E, H, A, B = cfg.vocab_size, cfg.emb_size, cfg.hidden_size, cfg.d_attn, cfg.batch_size

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb, self.tgt_emb = torch.nn.Embedding(V, E), torch.nn.Embedding(V, E)
            self.enc = torch.nn.GRU(E, H)
            self.dec = torch.nn.GRUCell(E + (H if attention else 0), H)
            self.W_a, self.U_a = torch.nn.Linear(H, A, bias=False), torch.nn.Linear(H, A, bias=False)
            self.v_a = torch.nn.Linear(A, 1, bias=False)
            self.out = torch.nn.Linear(H, V)
            self.ctx = torch.nn.Linear(H, V, bias=False)

        def forward(self, src, tgt_in):
            keys, h = self.enc(self.src_emb(src.T))  # (S, B, H)
            keys = keys.transpose(0, 1)  # (B, S, H)
            keys_proj = self.U_a(keys)
            s, logits = h[0], []
            y = self.tgt_emb(tgt_in.T)
            for t in range(tgt_in.shape[1]):
                if attention:
                    e = self.v_a(torch.tanh(keys_proj + self.W_a(s)[:, None]))[..., 0]
                    c = (torch.softmax(e, dim=1)[:, :, None] * keys).sum(1)
                    s = self.dec(torch.cat([y[t], c], 1), s)
                    logits.append(self.out(s) + self.ctx(c))
                else:
                    s = self.dec(y[t], s)
                    logits.append(self.out(s))
            return torch.stack(logits, 1)

    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lengths = np.full(B, L)
    src, tgt_in = make_batch(np.random.default_rng(0), B, lengths, cfg.n_symbols)
    src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(tgt_in)

    def step():
        opt.zero_grad()
        logits = model(src_t, tgt_t)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), src_t.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return best_of(step, repeats)[1]  # CPU seconds


def expected_run_seconds(cfg, per_step):
    """Training time predicted from per-step times (linear interpolation in the padded length)."""
    rng = np.random.default_rng([cfg.seed, 1])
    tops = [int(training_lengths(rng, cfg).max()) for _ in range(cfg.steps)]
    return float(np.interp(tops, LENGTHS, per_step).sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    cfg = CopyConfig()
    print(f"copy task, batch {cfg.batch_size}, E={cfg.emb_size} H={cfg.hidden_size} d_attn={cfg.d_attn}, "
          f"float32, 1 thread; best of {args.repeats}, CPU ms per training step")
    header = f"{'model':<12} {'impl':<7}" + "".join(f"{'L=' + str(L):>9}" for L in LENGTHS)
    print(header + f"{'run cpu s':>10}")
    for attention in (True, False):
        name = "attention" if attention else "plain"
        impls = [("numpy", time_numpy)] + ([] if args.no_torch else [("torch", time_torch)])
        rows = {}
        for impl, fn in impls:
            rows[impl] = [fn(cfg, attention, L, args.repeats) for L in LENGTHS]
            est = expected_run_seconds(cfg, rows[impl])
            cells = "".join(f"{1000 * t:>9.1f}" for t in rows[impl])
            print(f"{name:<12} {impl:<7}{cells}{est:>10.1f}")
        if "torch" in rows:
            ratio = np.array(rows["torch"]) / np.array(rows["numpy"])
            print(f"{name:<12} {'ratio':<7}" + "".join(f"{r:>9.2f}" for r in ratio) + "   (torch / numpy)")


if __name__ == "__main__":
    main()
