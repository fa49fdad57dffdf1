"""The copy task of lesson 5.10 for the encoder–decoder Transformer: the GRU experiment's data and evaluation.

Everything about the task comes from :mod:`attn.training.copytask` and is imported, never re-typed: the
batches (:func:`attn.training.copytask.batches`, drawn from the generator ``default_rng([seed, 1])`` of
:func:`attn.training.loop.train`, so seed 0 sees the GRU's batches), the lengths and the evaluation
(:func:`attn.training.copytask.evaluate`, the same sequences for every model). The model is
:class:`attn.training.transformer.EncoderDecoder`, trained by the GRUs' loop.

For the length-generalisation experiment, :func:`run_job` also trains the GRU models of
:mod:`attn.training.copytask` on shorter sequences, so that one process pool runs every model of the page.

Run from the terminal (one model per core)::

    python -m attn.training.copy_transformer            # three seeds, prints accuracy per length and times
    python -m attn.training.copy_transformer --quick    # a short smoke run
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._parallel import map_in_two_processes
from . import copytask, loop
from .copytask import CopyConfig
from .loop import TrainConfig
from .seq2seq import Seq2Seq
from .transformer import SITES, EncoderDecoder


@dataclass(frozen=True)
class TransformerCopyConfig(TrainConfig):
    """Every knob of one Transformer run; ``data`` holds the task (the GRU experiment's by default).

    The loop's knobs are :class:`attn.training.loop.TrainConfig`'s, with this model's defaults (the
    batches come from ``data``; its own ``steps``, rate and schedule are the GRU's, unused here).
    """

    steps: int = 300
    lr: float = 1e-2
    beta2: float = 0.98
    warmup: int = 50
    eval_every: int = 100  # steps between mid-training evaluations (0 = none)
    data: CopyConfig = field(default_factory=CopyConfig)
    d_model: int = 32
    num_heads: int = 2
    d_ff: int = 64
    num_layers: int = 1
    max_len: int = 128  # rows of the PE table: the longest sequence the model can read


def new_model(cfg: TransformerCopyConfig, dtype=np.float32) -> EncoderDecoder:
    """The untrained model of a configuration."""
    return EncoderDecoder(cfg.data.vocab_size, cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.num_layers,
                          max_len=cfg.max_len, seed=cfg.seed, dtype=dtype)


def _with_params(model, params: dict):
    for k, v in params.items():
        model.params[k][...] = v
    return model


def model_from_params(cfg: TransformerCopyConfig, params: dict) -> EncoderDecoder:
    """Rebuild a trained model from its configuration and weights."""
    return _with_params(new_model(cfg), params)


def mid_evaluation(model, data: CopyConfig) -> dict:
    """The GRU experiment's mid-training evaluation: the first ``data.eval_mid_per_length`` sequences
    per length of the final evaluation set (``copytask.EVAL_SEED``), as the GRU models are scored."""
    return copytask.evaluate(model, data.eval_lengths, data.eval_mid_per_length, data.n_symbols)


def train(cfg: TransformerCopyConfig, progress: bool = False, position: int = 0):
    """Train one model with :func:`attn.training.loop.train`, on the batches of
    :func:`attn.training.copytask.batches` (the GRU's batches for the same seed).

    With ``progress``, a text line (``attn._parallel.ProgressLine``) shows the steps done.

    Returns
    -------
    model : EncoderDecoder
    history : dict
        ``loss`` and ``grad_norm`` per step, ``mid_eval`` as a list of ``(step, {length: accuracy})``
        (the evaluation of :func:`mid_evaluation`), ``seconds`` (wall clock) and ``cpu_seconds`` of the
        training loop, its evaluations included, as for the GRUs.
    """
    model = new_model(cfg)
    history = loop.train(model, cfg, copytask.batches(cfg.data),
                         lambda model: {"mid_eval": mid_evaluation(model, cfg.data)},
                         progress=progress, desc=f"Transformer, semente {cfg.seed}", position=position)
    return model, history


def head_scores(weights) -> dict:
    """How much each decoder head looks where a copy needs it, in the maps of a greedy decode.

    Output position ``t`` must emit source token ``t``; every sequence has ``T = S = L``.

    Parameters
    ----------
    weights : dict
        ``self`` (N, B, h, L, L) and ``cross`` (N, B, h, L, L) attention weights.

    Returns
    -------
    dict of ndarray, shape (N, h), and their uniform baselines (floats)
        ``cross_diagonal``: mean cross-attention weight of query ``t`` on source position ``t``
        (``cross_diagonal_uniform`` = 1 / L for uniform weights). ``self_previous``: mean
        self-attention weight of query ``t >= 1`` on position ``t - 1``, the one that holds token
        ``t - 1``'s prediction fed back; ``self_current``: on position ``t`` itself;
        ``self_first``: on position 0 (the start token); ``self_uniform``: what uniform causal
        weights give to any one of them, the mean of 1 / (t + 1) over ``t >= 1``.
    """
    cross, self_w = weights["cross"], weights["self"]
    L = cross.shape[-1]
    t = np.arange(L)
    later = t[1:]
    return {"cross_diagonal": cross[..., t, t].mean(axis=(1, 3)),  # (N, h)
            "cross_diagonal_uniform": 1.0 / L,
            "self_previous": self_w[..., later, later - 1].mean(axis=(1, 3)),  # (N, h)
            "self_current": self_w[..., later, later].mean(axis=(1, 3)),  # (N, h)
            "self_first": self_w[..., later, 0].mean(axis=(1, 3)),  # (N, h)
            "self_uniform": float(np.mean(1.0 / (later + 1)))}


def ablation(model, data: CopyConfig, per_length: int, seed: int = 2024) -> dict:
    """Accuracy per length with each head removed in turn
    (:meth:`~attn.training.transformer.EncoderDecoder.without_heads`).

    Returns
    -------
    dict {(site, layer, head): {length: accuracy}}, plus ``"none"``: the intact model, on the same
    sequences (:func:`attn.training.copytask.evaluate` with ``seed``).
    """
    out = {"none": copytask.evaluate(model, data.eval_lengths, per_length, data.n_symbols, seed=seed)}
    for site in SITES:
        for layer in range(model.num_layers):
            for head in range(model.num_heads):
                ablated = model.without_heads([(site, layer, head)])
                out[(site, layer, head)] = copytask.evaluate(ablated, data.eval_lengths, per_length,
                                                             data.n_symbols, seed=seed)
    return out


def run_one(cfg: TransformerCopyConfig, progress: bool = False, position: int = 0) -> dict:
    """Train one Transformer and score it on the GRU experiment's final evaluation set.

    Returns a picklable dict: ``kind`` ("transformer"), ``config``, ``params``, ``n_params``,
    ``history``, ``accuracy`` {length: acc}.
    """
    model, history = train(cfg, progress, position)
    accuracy = copytask.evaluate(model, cfg.data.eval_lengths, cfg.data.eval_per_length, cfg.data.n_symbols)
    return {"kind": "transformer", "config": cfg, "params": model.params, "n_params": model.n_params(),
            "history": history, "accuracy": accuracy}


def run_gru(cfg: CopyConfig, progress: bool = False, position: int = 0) -> dict:
    """Train one GRU model of :mod:`attn.training.copytask` and score it on the same final evaluation set.

    Returns a picklable dict like :func:`run_one` (``kind`` "gru").
    """
    model, history = copytask.train(cfg, progress, position)
    accuracy = copytask.evaluate(model, cfg.eval_lengths, cfg.eval_per_length, cfg.n_symbols)
    return {"kind": "gru", "config": cfg, "params": model.params, "n_params": model.n_params(),
            "history": history, "accuracy": accuracy}


def trained_model(result: dict):
    """The trained model of a :func:`run_job` result: an EncoderDecoder or a
    :class:`attn.training.seq2seq.Seq2Seq`."""
    if result["kind"] == "transformer":
        return model_from_params(result["config"], result["params"])
    cfg = result["config"]
    model = Seq2Seq(cfg.vocab_size, cfg.emb_size, cfg.hidden_size, cfg.attention, cfg.d_attn, seed=cfg.seed)
    return _with_params(model, result["params"])


def run_job(cfg, progress: bool = False, position: int = 0) -> dict:
    """:func:`run_one` for a TransformerCopyConfig, :func:`run_gru` for a CopyConfig."""
    return (run_gru if isinstance(cfg, CopyConfig) else run_one)(cfg, progress, position)


def _worker(args) -> dict:
    return run_job(*args)


def run_many(cfgs, parallel: bool = True, progress: bool = False):
    """Run several jobs (Transformer or GRU configurations), two at a time, one spawned process per core.

    With ``progress`` each job shows a text progress line (the page's short in-browser variant).

    Returns
    -------
    list of dicts from :func:`run_job` (in the order of ``cfgs``), and the wall time in seconds.
    """
    cfgs = list(cfgs)
    start = time.perf_counter()
    jobs = [(c, progress, i % 2 if parallel else 0) for i, c in enumerate(cfgs)]
    results = map_in_two_processes(_worker, jobs) if parallel else [_worker(j) for j in jobs]
    return results, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description="Copy task: the encoder-decoder Transformer, several seeds.")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a 60-step smoke run, 50 sequences per length")
    args = parser.parse_args(argv)
    base = TransformerCopyConfig()
    if args.quick:
        base = replace(base, steps=60, eval_every=20, data=replace(base.data, eval_per_length=50))
    results, wall = run_many([replace(base, seed=s) for s in range(args.seeds)])
    lengths = base.data.eval_lengths
    print("semente " + " ".join(f"{L:>7}" for L in lengths) + "   CPU (s)")
    for r in results:
        print(f"{r['config'].seed:>7} " + " ".join(f"{100 * r['accuracy'][L]:>6.2f}%" for L in lengths)
              + f"   {r['history']['cpu_seconds']:.1f}")
    print(f"{results[0]['n_params']} parâmetros, {base.steps} passos; tempo total (paralelo): {wall:.1f} s")


if __name__ == "__main__":
    main()
