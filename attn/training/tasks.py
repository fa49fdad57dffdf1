"""Two synthetic tasks whose right attention pattern is known in advance; training of the encoder model.

* ``reverse``: output position ``i`` is the input token at ``n - 1 - i``. A
  head must look at the mirror position (an anti-diagonal map), which needs
  positional information: without it a model is capped at
  :func:`best_position_blind_accuracy`, well below 1.
* ``count``: output position ``i`` is how many times token ``i`` occurs in the
  whole sequence (class ``count - 1``). A head must look at the positions
  holding the same token; position plays no part.

Sequences have a fixed length ``n``; tokens are drawn uniformly from
``n_symbols`` ids. :func:`baselines` gives each task's exact chance and
majority-class accuracies, :func:`best_position_blind_accuracy` the exact
ceiling of ``reverse`` without positions; :mod:`attn.training.interpret` measures the
trained models.

Run from the terminal (both tasks in parallel, one process per core)::

    python -m attn.training.tasks            # train both models, print accuracies and times
    python -m attn.training.tasks --quick    # a short smoke run
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._checks import positive_int
from .._parallel import map_in_two_processes
from . import loop
from .encoder_model import TransformerEncoder
from .interpret import attention_entropy
from .loop import TrainConfig

TASKS = ("reverse", "count")
STEPS = {"reverse": 300, "count": 900}  # training steps of the page's models (reversal is learned fast)


@dataclass(frozen=True)
class TaskConfig(TrainConfig):
    """Every knob of one training run (the loop's: :class:`attn.training.loop.TrainConfig`)."""

    steps: int = 1200
    lr: float = 3e-3
    eval_every: int = 100  # steps between accuracy checks on held-out sequences (0 = none)
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
    qk_lr_scale: float = 1.0  # a factor on the learning rate of W_q and W_k only (every layer)
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


def eval_batch(cfg: TaskConfig, size: int, seed: int):
    """The ``size`` held-out sequences drawn from ``seed`` (the same for every model).

    Returns ``tokens, targets``: int arrays of shape (size, cfg.length), as :func:`make_batch`.
    """
    return make_batch(np.random.default_rng([seed, 5]), cfg.task, size, cfg.length, cfg.n_symbols)


def evaluate(model, cfg: TaskConfig, size: int, seed: int) -> float:
    """Token accuracy on the held-out sequences of :func:`eval_batch`."""
    tokens, targets = eval_batch(cfg, size, seed)
    return float((model.predict(tokens) == targets).mean())


def _checkpoint(model, cfg: TaskConfig) -> dict:
    """Accuracy (``mid_eval``) and attention entropy (``entropy``, (L, h)) on the mid-training sequences."""
    tokens, targets = eval_batch(cfg, cfg.eval_mid_size, seed=cfg.seed + 7)
    logits, cache = model.forward(tokens)  # (B, n, C)
    weights = np.stack([c["weights"] for c in cache["blocks"]])  # (L, B, h, n, n)
    accuracy = float((logits.argmax(axis=-1) == targets).mean())
    return {"mid_eval": accuracy, "entropy": attention_entropy(weights)}


def class_prior(task: str, length: int, n_symbols: int) -> np.ndarray:
    r"""Exact probability of each target class at one position of a random sequence.

    ``reverse``: uniform over the ``n_symbols`` symbols. ``count``: the other :math:`n - 1` positions
    hold the position's symbol independently with probability :math:`p = 1/\text{n\_symbols}`, so class
    :math:`k` (count :math:`k + 1`) has probability :math:`\binom{n-1}{k} p^k (1-p)^{n-1-k}`.

    Returns
    -------
    ndarray, shape (C,)
        ``C = n_symbols`` (reverse) or ``length`` (count); sums to 1.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    n, V = positive_int(length, "length"), positive_int(n_symbols, "n_symbols")
    if task == "reverse":
        return np.full(V, 1 / V)
    k = np.arange(n)
    return np.array([math.comb(n - 1, int(j)) for j in k]) * (1 / V) ** k * (1 - 1 / V) ** (n - 1 - k)


def baselines(task: str, length: int, n_symbols: int) -> dict:
    """The accuracies and the loss of models that ignore the input, computed exactly from :func:`class_prior`.

    Returns
    -------
    dict of float
        ``chance``: a uniform guess among the C classes (1 / C); ``majority``: always the most likely
        class; ``prior_loss``: the cross-entropy (nats) of always predicting the prior itself, its entropy.
    """
    prior = class_prior(task, length, n_symbols)  # (C,)
    return {"chance": 1 / len(prior), "majority": float(prior.max()),
            "prior_loss": float(-np.sum(prior * np.log(prior)))}


def _partitions(total: int, parts: int, largest: int):
    """Non-increasing tuples of ``parts`` ints in ``[0, largest]`` summing to ``total``."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    for first in range(min(total, largest), -1, -1):
        if first * parts < total:
            break
        for rest in _partitions(total - first, parts - 1, first):
            yield (first,) + rest


def best_position_blind_accuracy(length: int, n_symbols: int) -> Fraction:
    r"""Exact expected accuracy on ``reverse`` of the best guess that does not know the positions.

    Without positional information the encoder is permutation-equivariant, so its output at
    position :math:`i` is a function of the token :math:`x_i = a` and of the multiset of tokens (the
    counts :math:`c_s`) only. Given those, the mirror position :math:`n - 1 - i \ne i` (``length``
    even) is any of the other :math:`n - 1` positions with equal probability, so it holds symbol
    :math:`s` with probability :math:`(c_s - [s = a])/(n - 1)`; the best guess is the largest, and

    .. math:: \text{acc} = \mathbb E_c\Big[\sum_a \frac{c_a}{n}\,
              \frac{\max(c_a - 1,\ \max_{s \ne a} c_s)}{n - 1}\Big],

    the expectation taken exactly over the count vectors of uniform random sequences (grouped by
    the sorted counts: a few dozen terms, in rational arithmetic).

    Returns
    -------
    fractions.Fraction
    """
    n, V = positive_int(length, "length"), positive_int(n_symbols, "n_symbols")
    if n % 2 or n < 2:
        raise ValueError(f"length must be even and >= 2 (no middle position), got {length!r}")
    total = Fraction(0)
    for counts in _partitions(n, V, n):
        arrangements = math.factorial(V)  # symbols -> counts, divided by repeated counts below
        for value in set(counts):
            arrangements //= math.factorial(counts.count(value))
        sequences = math.factorial(n)
        for c in counts:
            sequences //= math.factorial(c)
        hits = 0  # sum over positions of the best guess's chance, times (n - 1)
        for a, c_a in enumerate(counts):
            if c_a:
                others = max((c for s, c in enumerate(counts) if s != a), default=0)
                hits += c_a * max(c_a - 1, others)
        total += Fraction(arrangements * sequences * hits, n * (n - 1))
    return total / V ** n


def train(cfg: TaskConfig, progress: bool = False, position: int = 0):
    """Train one model with :func:`attn.training.loop.train` (Adam, warm-up + cosine decay, clipping).

    Returns
    -------
    model : TransformerEncoder
    history : dict
        ``loss`` per step; ``grad_norm``: the norms of the gradients of ``W_q`` and ``W_k`` of every
        layer before clipping, ``{"W_q": (steps, L), "W_k": (steps, L)}``; every ``eval_every``
        steps, after the last one and before the first one (step 0), ``mid_eval``, a list of
        ``(step, accuracy)``, and ``entropy``, a list of ``(step, (L, h) array)`` of
        :func:`attn.training.interpret.attention_entropy`, both on the same ``eval_mid_size``
        held-out sequences; ``seconds`` of training (wall clock) and ``cpu_seconds`` (CPU time of
        this process: what the wall time would be on an idle core).
    """
    model = new_model(cfg)
    watched = {key: [f"{layer}.{key}" for layer in range(cfg.num_layers)] for key in ("W_q", "W_k")}

    def batch(rng, step):
        return make_batch(rng, cfg.task, cfg.batch_size, cfg.length, cfg.n_symbols)

    qk = [k for k in model.params if k.endswith((".W_q", ".W_k"))]
    lr_scale = {k: cfg.qk_lr_scale for k in qk} if cfg.qk_lr_scale != 1.0 else None
    history = loop.train(model, cfg, batch, lambda model: _checkpoint(model, cfg), evaluate_first=True,
                         lr_scale=lr_scale,
                         watch=[name for names in watched.values() for name in names],
                         progress=progress, desc=cfg.task, position=position)
    norms = history.pop("watched")
    history["grad_norm"] = {key: np.array([norms[name] for name in names], dtype=np.float64).T  # (steps, L)
                            for key, names in watched.items()}
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
    before NumPy is imported in the fresh interpreter); ``tests/test_tasks.py``
    checks that two parallel runs agree bit for bit, and the serial one (multi-threaded BLAS) up to
    rounding.

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
              f"acurácia por token {100 * r['accuracy']:.2f}%, treinamento {r['history']['seconds']:.1f} s "
              f"({r['history']['cpu_seconds']:.1f} s de CPU)")
    print(f"tempo total (paralelo): {wall:.1f} s")


if __name__ == "__main__":
    main()
