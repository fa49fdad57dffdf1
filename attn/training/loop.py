"""The training loop every model of the book goes through, and its configuration.

One loop trains the GRU encoder–decoders (:mod:`attn.training.copytask`), the Transformer encoder
(:mod:`attn.training.tasks`) and the whole Transformer (:mod:`attn.training.copy_transformer`): at
each step a batch, the loss and its gradients (``model.loss_and_grads``), global-norm clipping, one
Adam update at the rate of the warm-up + cosine schedule (:mod:`attn.training.optim`), and, every
``eval_every`` steps, the evaluation the caller passes. A model's configuration subclasses
:class:`TrainConfig` and changes only the defaults that differ.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._parallel import ProgressLine
from ..measure import cpu_time
from .optim import Adam, clip_grad_norm, cosine_lr


@dataclass(frozen=True)
class TrainConfig:
    """The loop's knobs: steps, Adam's peak rate and ``beta2``, the schedule, clipping, seed, evaluations.

    The rate rises linearly for ``warmup`` steps to ``lr`` and decays along a cosine to ``final_lr``
    (:func:`attn.training.optim.cosine_lr`); gradients are clipped to a global norm of ``clip``.
    ``seed`` seeds the model's weights (the caller's) and the batches (the generator
    ``default_rng([seed, 1])`` that :func:`train` hands to the batch function). ``eval_every``: steps
    between evaluations (0 = none); the last step is evaluated too.
    """

    steps: int = 1000
    lr: float = 1e-3
    beta2: float = 0.999
    warmup: int = 100
    final_lr: float = 1e-4
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 0


def train(model, cfg: TrainConfig, batch, evaluate=None, *, evaluate_first: bool = False, watch=(),
          lr_scale=None, progress: bool = False, desc: str = "", position: int = 0) -> dict:
    """Train ``model`` in place for ``cfg.steps`` steps; return its history.

    Parameters
    ----------
    model : object with ``params`` (dict of arrays) and ``loss_and_grads(*batch) -> (loss, grads)``
    cfg : TrainConfig (or a subclass)
    batch : callable ``(rng, step) -> tuple``
        The arguments of ``model.loss_and_grads`` for step ``step`` (0-based), drawn from ``rng``.
    evaluate : callable ``model -> dict``, optional
        When ``cfg.eval_every > 0``, called after every ``cfg.eval_every`` steps and after the last
        one; with ``evaluate_first``, also before the first step. Each value is appended to
        ``history[key]`` as ``(steps done, value)``.
    watch : sequence of str
        Parameter names whose gradient norm (before clipping) is recorded at every step.
    lr_scale : dict of float, optional
        A factor on the learning rate of the parameters it names (:class:`attn.training.optim.Adam`).
    progress, desc, position
        A text progress line (``attn._parallel.ProgressLine``).

    Returns
    -------
    dict
        ``loss`` and ``grad_norm`` (the global norm before clipping) per step, one list per key
        ``evaluate`` returns, ``watched`` ({name: list of norms}, with ``watch``), ``seconds`` of the
        loop (evaluations included, wall clock) and ``cpu_seconds`` (CPU time of this process).
    """
    opt = Adam(model.params, lr=cfg.lr, betas=(0.9, cfg.beta2), lr_scale=lr_scale)
    rng = np.random.default_rng([cfg.seed, 1])
    history = {"loss": [], "grad_norm": []}
    if watch:
        history["watched"] = {name: [] for name in watch}

    def checkpoint(done):
        for key, value in evaluate(model).items():
            history.setdefault(key, []).append((done, value))

    bar = ProgressLine(progress, cfg.steps, desc, position)
    start, cpu_start = time.perf_counter(), cpu_time()
    if evaluate is not None and evaluate_first:
        checkpoint(0)
    for step in range(cfg.steps):
        loss, grads = model.loss_and_grads(*batch(rng, step))
        for name in watch:
            history["watched"][name].append(np.linalg.norm(grads[name]))
        history["grad_norm"].append(clip_grad_norm(grads, cfg.clip))
        opt.step(grads, lr=cosine_lr(step, cfg.steps, cfg.lr, cfg.warmup, cfg.final_lr))
        history["loss"].append(loss)
        done = step + 1
        if evaluate is not None and cfg.eval_every and (done % cfg.eval_every == 0 or done == cfg.steps):
            checkpoint(done)
        bar.step(step, loss)
    history["seconds"] = time.perf_counter() - start
    history["cpu_seconds"] = cpu_time() - cpu_start
    bar.close()
    return history
