"""Benchmark of the Transformer-encoder training step: NumPy (attn.training.encoder_model) vs the same model
in PyTorch.

Both run with one BLAS / intra-op thread, float32, the default TaskConfig sizes (2 layers, 2 heads,
d_model 32, d_ff 128, batch 64, n 12). Prints milliseconds per training step (forward, backward,
clipping and Adam), both wall-clock (best of several: the machine may be shared) and CPU time, the
share of the NumPy step spent in input validation, and the training time of the page's two models
predicted from the per-step time. `make transformer` (python -m attn.training.tasks) times the real parallel
run.

    python bench/transformer.py
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported
import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from attn.training.optim import Adam, clip_grad_norm  # noqa: E402
from attn.training.tasks import STEPS, TASKS, TaskConfig, make_batch, new_model  # noqa: E402


def batch(cfg):
    return make_batch(np.random.default_rng(0), cfg.task, cfg.batch_size, cfg.length, cfg.n_symbols)


def best_of(step, repeats):
    """Best wall-clock and best CPU time of ``repeats`` calls (after one warm-up call)."""
    step()
    wall = cpu = np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu


def numpy_step(cfg):
    model = new_model(cfg)
    opt = Adam(model.params, lr=1e-3)
    tokens, targets = batch(cfg)

    def step():
        _, g = model.loss_and_grads(tokens, targets)
        clip_grad_norm(g, cfg.clip)
        opt.step(g)

    return step


def torch_step(cfg):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    d = cfg.d_model
    emb = torch.nn.Embedding(cfg.n_symbols, d)
    layers = torch.nn.ModuleList(
        torch.nn.TransformerEncoderLayer(d, cfg.num_heads, cfg.d_ff, dropout=0.0, batch_first=True)
        for _ in range(cfg.num_layers))
    out = torch.nn.Linear(d, cfg.n_classes)
    pe = torch.from_numpy(new_model(cfg).pe[:cfg.length])
    params = [*emb.parameters(), *layers.parameters(), *out.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    tokens, targets = batch(cfg)
    tok_t, tgt_t = torch.from_numpy(tokens), torch.from_numpy(targets)

    def step():
        opt.zero_grad()
        x = emb(tok_t) + pe
        for layer in layers:
            x = layer(x)
        loss = torch.nn.functional.cross_entropy(out(x).reshape(-1, cfg.n_classes), tgt_t.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()

    return step


def validation_share(cfg, steps=30):
    """Fraction of the NumPy step's time spent in attn._checks (input validation), by profiling."""
    step = numpy_step(cfg)
    step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(tt for (_, _, _), (_, _, tt, _, _) in stats.items())
    checks = sum(tt for (f, _, _), (_, _, tt, _, _) in stats.items() if f.endswith("_checks.py"))
    return checks / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    print(f"transformer encoder: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'task':<8} {'impl':<6} {'wall ms':>8} {'cpu ms':>8} {'steps':>6} {'run cpu s':>10}")
    for task in TASKS:
        cfg = TaskConfig(task=task)
        impls = [("numpy", numpy_step)] + ([] if args.no_torch else [("torch", torch_step)])
        times = {}
        for impl, make in impls:
            wall, cpu = times[impl] = best_of(make(cfg), args.repeats)
            print(f"{task:<8} {impl:<6} {1000 * wall:>8.2f} {1000 * cpu:>8.2f} {STEPS[task]:>6} "
                  f"{cpu * STEPS[task]:>10.1f}")
        if "torch" in times:
            ratio = times["numpy"][1] / times["torch"][1]
            print(f"{task:<8} ratio  {ratio:>17.2f}   (numpy cpu / torch cpu)")
    share = validation_share(TaskConfig(task="count"))
    print(f"input validation (attn._checks): {100 * share:.1f}% of the NumPy step's profiled time")


if __name__ == "__main__":
    main()
