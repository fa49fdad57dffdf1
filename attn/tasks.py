"""Two synthetic tasks whose right attention pattern is known in advance; training of the encoder model.

* ``reverse``: output position ``i`` is the input token at ``n - 1 - i``. A
  head must look at the mirror position (an anti-diagonal map), which needs
  positional information: without it the task is impossible.
* ``count``: output position ``i`` is how many times token ``i`` occurs in the
  whole sequence (class ``count - 1``). A head must look at the positions
  holding the same token; position plays no part.

Sequences have a fixed length ``n``; tokens are drawn uniformly from
``n_symbols`` ids, so chance accuracy of ``reverse`` is ``1 / n_symbols``.

Run from the terminal (both tasks in parallel, one process per core)::

    python -m attn.tasks            # train both models, print accuracies and times
    python -m attn.tasks --quick    # a short smoke run
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from ._parallel import map_in_two_processes
from .optim import Adam, clip_grad_norm, cosine_lr
from .transformer import TransformerEncoder

TASKS = ("reverse", "count")
STEPS = {"reverse": 400, "count": 1200}  # training steps of the page's models (reversal is learned fast)


@dataclass(frozen=True)
class TaskConfig:
    """Every knob of one training run."""

    task: str = "reverse"
    n_symbols: int = 10
    length: int = 12
    d_model: int = 32
    num_heads: int = 2
    d_ff: int = 128
    num_layers: int = 2
    positional: bool = True
    scaled: bool = True
    batch_size: int = 64
    steps: int = 1200
    lr: float = 3e-3
    warmup: int = 100
    final_lr: float = 1e-4
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 100  # steps between accuracy checks on held-out sequences (0 = none)
    eval_mid_size: int = 256
    eval_size: int = 2000

    @property
    def n_classes(self) -> int:
        return self.n_symbols if self.task == "reverse" else self.length


def make_batch(rng, task, batch_size, length, n_symbols):
    """Random sequences and their per-position targets.

    Returns
    -------
    tokens : ndarray of int, shape (B, n)
    targets : ndarray of int, shape (B, n)
        ``reverse``: ``tokens[:, ::-1]``; ``count``: occurrences of each token in its sequence, minus 1.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    tokens = rng.integers(0, n_symbols, size=(batch_size, length))  # (B, n)
    if task == "reverse":
        return tokens, tokens[:, ::-1].copy()
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, n, n)
    return tokens, same.sum(axis=2) - 1


def new_model(cfg: TaskConfig, dtype=np.float32) -> TransformerEncoder:
    """The untrained model of a configuration (same seed, same initial weights)."""
    return TransformerEncoder(cfg.n_symbols, cfg.n_classes, cfg.d_model, cfg.num_heads, cfg.d_ff,
                              cfg.num_layers, max_len=cfg.length, positional=cfg.positional,
                              scaled=cfg.scaled, seed=cfg.seed, dtype=dtype)


def model_from_params(cfg: TaskConfig, params: dict) -> TransformerEncoder:
    """Rebuild a trained model from its configuration and weights."""
    model = new_model(cfg)
    for k, v in params.items():
        model.params[k][...] = v
    return model


def evaluate(model, cfg: TaskConfig, size: int, seed: int) -> float:
    """Token accuracy on ``size`` fresh sequences drawn from ``seed`` (the same for every model)."""
    tokens, targets = make_batch(np.random.default_rng([seed, 5]), cfg.task, size, cfg.length, cfg.n_symbols)
    return float((model.predict(tokens) == targets).mean())


def pattern_scores(weights, tokens):
    """How much each head looks at the mirror position and at equal tokens.

    Parameters
    ----------
    weights : ndarray, shape (num_layers, B, h, n, n)
        Attention maps (:meth:`attn.transformer.TransformerEncoder.attention_maps`).
    tokens : ndarray of int, shape (B, n)

    Returns
    -------
    dict of ndarray, shape (num_layers, h)
        ``anti_diagonal``: mean weight that query ``i`` puts on key ``n - 1 - i`` (``1 / n`` for
        uniform weights). ``equal_token``: mean total weight on the keys holding the query's own token,
        itself included (``equal_token_uniform``, a float, for uniform weights). ``equal_token_rank``:
        the probability that, for the same query, another key with the query's token gets more weight
        than a key with a different token (ties count 1/2; 0.5 for any head blind to the tokens, 1 for
        a head that always ranks equal tokens first), averaged over the queries that have both kinds.
    """
    n = tokens.shape[1]
    i = np.arange(n)
    anti = weights[..., i, n - 1 - i].mean(axis=(1, 3))  # (layers, h)
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, n, n)
    equal = np.sum(weights * same[None, :, None], axis=-1).mean(axis=(1, 3))  # (layers, h)
    w_pos, w_neg = weights[..., :, :, None], weights[..., :, None, :]  # keys j (equal) vs k (different)
    wins = (w_pos > w_neg) + 0.5 * (w_pos == w_neg)  # (layers, B, h, n, n, n)
    pairs = (same & ~np.eye(n, dtype=bool))[:, :, :, None] & ~same[:, :, None, :]  # (B, n, j, k)
    per_query = np.sum(wins * pairs[None, :, None], axis=(-1, -2))  # (layers, B, h, n)
    count = pairs.sum(axis=(-1, -2))  # (B, n)
    rank = np.moveaxis(per_query / np.maximum(count[:, None], 1), 2, 1)  # (layers, h, B, n)
    rank = rank[..., count > 0]  # (layers, h, queries with both kinds)
    return {"anti_diagonal": anti, "equal_token": equal, "equal_token_uniform": float(same.mean()),
            "equal_token_rank": rank.mean(axis=-1)}


def train(cfg: TaskConfig, progress: bool = False, position: int = 0):
    """Train one model with Adam, warm-up + cosine decay and global-norm clipping.

    Returns
    -------
    model : TransformerEncoder
    history : dict
        ``loss`` per step, ``mid_eval`` as a list of ``(step, accuracy)``, ``seconds`` of training
        (wall clock) and ``cpu_seconds`` (CPU time of this process: what the wall time would be on an
        idle core).
    """
    model = new_model(cfg)
    opt = Adam(model.params, lr=cfg.lr)
    rng = np.random.default_rng([cfg.seed, 1])
    history = {"loss": [], "mid_eval": []}
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=cfg.steps, position=position, leave=True, desc=cfg.task)
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(cfg.steps):
        tokens, targets = make_batch(rng, cfg.task, cfg.batch_size, cfg.length, cfg.n_symbols)
        loss, grads = model.loss_and_grads(tokens, targets)
        clip_grad_norm(grads, cfg.clip)
        opt.step(grads, lr=cosine_lr(step, cfg.steps, cfg.lr, cfg.warmup, cfg.final_lr))
        history["loss"].append(loss)
        if cfg.eval_every and (step + 1) % cfg.eval_every == 0:
            history["mid_eval"].append((step + 1, evaluate(model, cfg, cfg.eval_mid_size, seed=cfg.seed + 7)))
        if bar is not None:
            bar.update(1)
            if step % 20 == 0:
                bar.set_postfix(loss=f"{loss:.4f}")
    history["seconds"] = time.perf_counter() - start
    history["cpu_seconds"] = time.process_time() - cpu_start
    if bar is not None:
        bar.close()
    return model, history


def run_one(cfg: TaskConfig, progress: bool = False, position: int = 0):
    """Train one model and score it on fresh sequences.

    Returns a picklable dict: ``config`` (the TaskConfig), ``params``, ``history``, ``accuracy``.
    """
    model, history = train(cfg, progress=progress, position=position)
    return {"config": cfg, "params": model.params, "history": history,
            "accuracy": evaluate(model, cfg, cfg.eval_size, seed=12345)}


def _worker(args):
    cfg, progress, position = args
    return run_one(cfg, progress=progress, position=position)


def run_many(cfgs, progress: bool = False, parallel: bool = True):
    """Train several configurations, two at a time (one *spawned* process per core).

    Each worker's BLAS is limited to one thread (set in the environment
    before NumPy is imported in the fresh interpreter), so float32 sums are
    reproducible bit for bit.

    Returns
    -------
    list of dicts from :func:`run_one` (in the order of ``cfgs``), and the wall time in seconds.
    """
    cfgs = list(cfgs)
    start = time.perf_counter()
    if parallel:
        results = map_in_two_processes(_worker, [(c, progress, i % 2) for i, c in enumerate(cfgs)])
    else:
        results = [run_one(c, progress=progress, position=0) for c in cfgs]
    return results, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description="NumPy Transformer encoder on reversal and counting.")
    parser.add_argument("--steps", type=int, default=None, help=f"steps per task (default {STEPS})")
    parser.add_argument("--seed", type=int, default=TaskConfig.seed)
    parser.add_argument("--quick", action="store_true", help="a 200-step smoke run")
    parser.add_argument("--serial", action="store_true", help="train one model after the other")
    args = parser.parse_args(argv)
    cfgs = [TaskConfig(task=t, seed=args.seed, steps=200 if args.quick else args.steps or STEPS[t])
            for t in TASKS]
    results, wall = run_many(cfgs, progress=sys.stderr.isatty(), parallel=not args.serial)
    for r in results:
        c = r["config"]
        print(f"{c.task}: {c.steps} passos, lotes de {c.batch_size}, n = {c.length}, "
              f"acurácia por token {100 * r['accuracy']:.2f}%, treino {r['history']['seconds']:.1f} s "
              f"({r['history']['cpu_seconds']:.1f} s de CPU)")
    print(f"tempo total (paralelo): {wall:.1f} s")


if __name__ == "__main__":
    main()
