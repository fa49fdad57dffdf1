"""Benchmark of the encoder–decoder training step (copy task): NumPy (attn.training.transformer) vs the same
model in torch.

Both run with one BLAS / intra-op thread, float32, the sizes of TransformerCopyConfig (the page
"O Transformer completo na tarefa de cópia") and one batch of the copy task at each of three lengths.
Prints milliseconds per training step (forward, backward, clipping and Adam), wall clock (best of
several: the machine may be shared) and CPU time. The page itself times the greedy decode with and
without the key/value cache.

    python bench/decoder.py
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported
import argparse  # noqa: E402

import numpy as np  # noqa: E402
from transformer import best_of  # noqa: E402  (bench/transformer.py: run as a script, bench/ is on the path)

from attn.training.copy_transformer import TransformerCopyConfig, new_model  # noqa: E402
from attn.training.copytask import make_batch  # noqa: E402
from attn.training.optim import Adam, clip_grad_norm  # noqa: E402


def batch(cfg, L):
    lengths = np.full(cfg.data.batch_size, L)
    src, tgt_in = make_batch(np.random.default_rng(0), cfg.data.batch_size, lengths, cfg.data.n_symbols)
    return src, lengths, tgt_in


def numpy_step(cfg, L):
    model = new_model(cfg)
    opt = Adam(model.params, lr=1e-3)
    src, lengths, tgt_in = batch(cfg, L)

    def step():
        _, g = model.loss_and_grads(src, lengths, tgt_in, src, lengths)
        clip_grad_norm(g, cfg.clip)
        opt.step(g)

    return step


def torch_step(cfg, L):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, V = cfg.d_model, cfg.data.vocab_size
    src_emb, tgt_emb, out = torch.nn.Embedding(V, d), torch.nn.Embedding(V, d), torch.nn.Linear(d, V)
    net = torch.nn.Transformer(d, cfg.num_heads, cfg.num_layers, cfg.num_layers, cfg.d_ff, dropout=0.0,
                               batch_first=True)
    net.encoder.norm = net.decoder.norm = None  # attn's model has no final norms
    pe = torch.from_numpy(new_model(cfg).pe[:L])
    params = [*src_emb.parameters(), *tgt_emb.parameters(), *net.parameters(), *out.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    src, lengths, tgt_in = (torch.from_numpy(a) for a in batch(cfg, L))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(L)

    def step():
        opt.zero_grad()
        y = net(src_emb(src) + pe, tgt_emb(tgt_in) + pe, tgt_mask=causal, tgt_is_causal=True)
        loss = torch.nn.functional.cross_entropy(out(y).reshape(-1, V), src.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    cfg = TransformerCopyConfig()
    print(f"encoder-decoder (copy task): load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'length':>6} {'impl':<6} {'wall ms':>8} {'cpu ms':>8}")
    for L in (10, 45, 90):
        impls = [("numpy", numpy_step)] + ([] if args.no_torch else [("torch", torch_step)])
        times = {}
        for impl, make in impls:
            wall, cpu = times[impl] = best_of(make(cfg, L), args.repeats)
            print(f"{L:>6} {impl:<6} {1000 * wall:>8.2f} {1000 * cpu:>8.2f}")
        if "torch" in times:
            print(f"{L:>6} ratio  {times['numpy'][1] / times['torch'][1]:>17.2f}   (numpy cpu / torch cpu)")


if __name__ == "__main__":
    main()
