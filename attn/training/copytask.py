"""The copy task: data, evaluation, and both models trained side by side (by :mod:`attn.training.loop`).

A source is a random string of symbols; the target is the same string. Token
ids: ``0`` padding, ``1`` start-of-output, ``2 .. n_symbols + 1`` the symbols,
so chance accuracy per token is ``1 / n_symbols``. The decoder is run for
exactly as many steps as the source has tokens (the length is given), and
accuracy is the fraction of output positions equal to the source's.

Training batches are bucketed: each batch draws a top length ``L`` uniformly
in ``[min_len, max_len]`` and every sequence a length in
``[max(min_len, L - spread), L]``, so batches are mixed-length (padding and
masks are exercised) but hardly padded (short batches are cheap).

Every evaluation, during training and after it, scores the same sequences: those drawn from
``EVAL_SEED`` for each length. Mid-training evaluations use the first ``eval_mid_per_length`` of
them (a generator's draws do not depend on how many are asked for later), the final one all
``eval_per_length``.

Run from the terminal (both models in parallel, one process per core)::

    python -m attn.training.copytask            # full experiment, prints the accuracy table
    python -m attn.training.copytask --quick    # a short smoke run
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from .._parallel import map_in_two_processes
from . import loop
from .loop import TrainConfig
from .seq2seq import ATTENTION_MODES, Seq2Seq

PAD, BOS, FIRST_SYMBOL = 0, 1, 2
EVAL_LENGTHS = (5, 10, 20, 40, 60, 80)
EVAL_SEED = 12345  # the evaluation sequences: every model, checkpoint and ablation mode sees the same ones
TARGET_ACCURACY = 0.9  # "steps to a fixed accuracy": mean accuracy over EVAL_LENGTHS (steps_to_accuracy)


@dataclass(frozen=True)
class CopyConfig(TrainConfig):
    """Every knob of one training run (the same data, steps and schedule for both models).

    The loop's knobs (steps, rate, schedule, clipping, seed, ``eval_every``) are those of
    :class:`attn.training.loop.TrainConfig`, with this experiment's defaults.
    ``plain_long_factor`` is read by :func:`run_both` only: it also trains the plain model for
    ``plain_long_factor * steps`` steps (0 = not), to tell under-training from what more steps
    do not change.
    """

    steps: int = 2000
    lr: float = 5e-3
    eval_every: int = 250  # steps between mid-training evaluations (0 = none); the last step is evaluated too
    attention: bool = True
    n_symbols: int = 10
    emb_size: int = 16
    hidden_size: int = 64
    d_attn: int = 16
    batch_size: int = 64
    min_len: int = 5
    max_len: int = 90
    spread: int = 8
    ramp_steps: int = 0  # curriculum: the longest length grows from ramp_start to max_len over these steps
    ramp_start: int = 20
    eval_lengths: tuple = EVAL_LENGTHS
    eval_per_length: int = 1000
    eval_mid_per_length: int = 200  # the first ones of the final evaluation's sequences
    plain_long_factor: int = 2

    @property
    def vocab_size(self) -> int:
        return self.n_symbols + FIRST_SYMBOL


def make_batch(rng, batch_size, lengths, n_symbols):
    """Random sources padded to the longest.

    Parameters
    ----------
    rng : numpy Generator
    batch_size : int
    lengths : ndarray of int, shape (B,)
    n_symbols : int

    Returns
    -------
    src : ndarray of int, shape (B, S), ``S = max(lengths)``; padding is 0
    tgt_in : ndarray of int, shape (B, S)
        Start token then the source shifted right (teacher forcing).
    """
    S = int(lengths.max())
    src = rng.integers(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, size=(batch_size, S))
    src[np.arange(S)[None, :] >= lengths[:, None]] = PAD
    tgt_in = np.concatenate([np.full((batch_size, 1), BOS), src[:, :-1]], axis=1)
    return src, tgt_in


def training_lengths(rng, cfg, step=None):
    """Bucketed lengths of one training batch, shape (batch_size,).

    With ``cfg.ramp_steps`` the longest allowed length grows linearly from
    ``cfg.ramp_start`` to ``cfg.max_len`` over the first ``ramp_steps`` steps.
    """
    hi = cfg.max_len
    if step is not None and step < cfg.ramp_steps:
        hi = int(round(cfg.ramp_start + (cfg.max_len - cfg.ramp_start) * step / cfg.ramp_steps))
    top = rng.integers(cfg.min_len, hi + 1)
    low = max(cfg.min_len, top - cfg.spread)
    return rng.integers(low, top + 1, size=cfg.batch_size)


def eval_sources(lengths, per_length, n_symbols, seed=EVAL_SEED, chunk=500):
    """The evaluation sequences, in the chunks :func:`evaluate` decodes them.

    The sources depend only on ``seed`` and the length, and the first ``n`` of
    ``per_length`` are the ``n`` drawn with ``per_length = n``.

    Yields
    ------
    (L, src) : int and ndarray of int, shape (n, L) with ``n <= chunk``
    """
    for L in lengths:
        data_rng = np.random.default_rng([seed, L])
        for start in range(0, per_length, chunk):
            n = min(chunk, per_length - start)
            yield int(L), make_batch(data_rng, n, np.full(n, L), n_symbols)[0]


def sequence_scores(model, lengths, per_length, n_symbols, seed=EVAL_SEED, mode="learned", chunk=500):
    """Greedy decoding of the evaluation sequences: correct tokens of each sequence.

    Returns
    -------
    dict {length: ndarray of int, shape (per_length,)}
        How many of the ``L`` output tokens equal the source's.
    """
    out = {int(L): [] for L in lengths}
    rngs = {int(L): np.random.default_rng([seed, L, ATTENTION_MODES.index(mode)]) for L in lengths}
    for L, src in eval_sources(lengths, per_length, n_symbols, seed, chunk):
        n = len(src)
        pred = model.greedy_decode(src, np.full(n, L), L, BOS, attention_mode=mode, rng=rngs[L])
        out[L].append((pred == src).sum(axis=1))
    return {L: np.concatenate(parts) for L, parts in out.items()}


def evaluate(model, lengths, per_length, n_symbols, seed=EVAL_SEED, mode="learned", chunk=500):
    """Greedy per-token accuracy at each length, on the evaluation sequences of ``seed``.

    Every model and every ablation mode is scored on the same sequences
    (see :func:`eval_sources`).

    Returns
    -------
    dict {length: accuracy}
    """
    return _accuracy(sequence_scores(model, lengths, per_length, n_symbols, seed, mode, chunk))


def _accuracy(scores):
    # {length: correct tokens per sequence} -> {length: per-token accuracy}
    return {L: int(s.sum()) / (s.size * L) for L, s in scores.items()}


def standard_error(scores, length):
    """Standard error of a per-token accuracy measured on independent sequences.

    Tokens of one sequence are not independent (a model that loses the
    sequence loses many of them), so the unit is the sequence: the standard
    deviation of the per-sequence accuracies over the square root of their
    number.

    Parameters
    ----------
    scores : ndarray of int, shape (n,)
        Correct tokens per sequence, as :func:`sequence_scores` returns them; ``n >= 2``.
    length : int
        Tokens per sequence.
    """
    scores = np.asarray(scores)
    if scores.ndim != 1 or scores.size < 2:
        raise ValueError(f"scores has shape {scores.shape}; expected (n,) with n >= 2")
    return float(np.std(scores / length, ddof=1) / np.sqrt(scores.size))


def batches(data: CopyConfig):
    """The copy task's batch function for :func:`attn.training.loop.train`: bucketed lengths, random
    sources, the arguments of ``loss_and_grads`` (``src, src_len, tgt_in, tgt_out = src, tgt_len``)."""
    def batch(rng, step):
        lengths = training_lengths(rng, data, step)
        src, tgt_in = make_batch(rng, data.batch_size, lengths, data.n_symbols)
        return src, lengths, tgt_in, src, lengths
    return batch


def train(cfg: CopyConfig, progress: bool = False, position: int = 0):
    """Train one model with :func:`attn.training.loop.train` (Adam, warm-up + cosine decay, clipping).

    Returns
    -------
    model : Seq2Seq
    history : dict
        ``loss`` and ``grad_norm`` per step (lists), ``mid_eval`` as a list of
        ``(step, {length: accuracy})`` every ``eval_every`` steps and at the last step, on the first
        ``eval_mid_per_length`` evaluation sequences (at most ``eval_per_length``),
        ``mid_eval_se`` the same list with the standard errors (:func:`standard_error`), ``seconds``
        of the training loop (those evaluations included, wall clock) and ``cpu_seconds``
        (CPU time of this process).
    """
    model = Seq2Seq(cfg.vocab_size, cfg.emb_size, cfg.hidden_size, cfg.attention, cfg.d_attn, seed=cfg.seed)
    n_mid = min(cfg.eval_mid_per_length, cfg.eval_per_length)  # a subset of the final evaluation's sequences

    def evaluate_mid(model):
        scores = sequence_scores(model, cfg.eval_lengths, n_mid, cfg.n_symbols)
        errors = {L: standard_error(s, L) for L, s in scores.items()}
        return {"mid_eval": _accuracy(scores), "mid_eval_se": errors}

    history = loop.train(model, cfg, batches(cfg), evaluate_mid, progress=progress,
                         desc="atenção" if cfg.attention else "sem atenção", position=position)
    return model, history


def run_one(cfg: CopyConfig, progress: bool = False, position: int = 0, alignment_lengths=(8, 25, 60)):
    """Train one model and evaluate it (plus the ablations for an attention model).

    Returns a picklable dict: ``config``, ``params``, ``history``,
    ``accuracy`` {mode: {length: acc}} on all ``eval_per_length`` evaluation
    sequences, ``accuracy_se`` (the same dict, standard errors), and, with
    attention, ``alignments`` (a list of ``(src, pred, weights (L, L))``).
    """
    model, history = train(cfg, progress=progress, position=position)
    t0 = time.perf_counter()
    modes = ATTENTION_MODES if cfg.attention else ("learned",)
    scores = {m: sequence_scores(model, cfg.eval_lengths, cfg.eval_per_length, cfg.n_symbols, mode=m)
              for m in modes}
    accuracy = {m: _accuracy(sc) for m, sc in scores.items()}
    accuracy_se = {m: {L: standard_error(s, L) for L, s in sc.items()} for m, sc in scores.items()}
    result = {"config": asdict(cfg), "params": model.params, "history": history, "accuracy": accuracy,
              "accuracy_se": accuracy_se}
    if cfg.attention:
        rng = np.random.default_rng([cfg.seed, 99])
        result["alignments"] = []
        for L in alignment_lengths:
            src, _ = make_batch(rng, 1, np.array([L]), cfg.n_symbols)
            pred, w = model.greedy_decode(src, np.array([L]), L, BOS, return_weights=True)
            result["alignments"].append((src[0], pred[0], w[0]))
    result["eval_seconds"] = time.perf_counter() - t0
    return result


def _worker(args):
    cfg, progress, position = args
    return run_one(cfg, progress=progress, position=position)


def run_both(cfg: CopyConfig | None = None, progress: bool = False, parallel: bool = True):
    """Train the attention model and the plain baseline with the same data, steps and schedule.

    With ``cfg.plain_long_factor`` the plain model is also trained for that many
    times the steps (same schedule, stretched), as a third job.
    With ``parallel`` each model trains in its own *spawned* process whose
    BLAS is limited to one thread (set in the environment before NumPy is
    imported), so two cores are used and float32 sums are reproducible.

    Returns
    -------
    dict {"attention": result, "plain": result} (see :func:`run_one`),
    ``"plain_long"`` (a result, only with ``plain_long_factor``) and
    ``"wall_seconds"``.
    """
    cfg = cfg or CopyConfig()
    cfgs = [replace(cfg, attention=True), replace(cfg, attention=False)]
    names = ["attention", "plain"]
    if cfg.plain_long_factor:
        cfgs.append(replace(cfg, attention=False, steps=cfg.plain_long_factor * cfg.steps))
        names.append("plain_long")
    start = time.perf_counter()
    if parallel:
        results = map_in_two_processes(_worker, [(c, progress, i) for i, c in enumerate(cfgs)])
    else:
        results = [run_one(c, progress=progress, position=i) for i, c in enumerate(cfgs)]
    return {**dict(zip(names, results, strict=True)), "wall_seconds": time.perf_counter() - start}


def model_from_result(result) -> Seq2Seq:
    """Rebuild the trained :class:`~attn.training.seq2seq.Seq2Seq` of a :func:`run_one` result (config and
    weights).

    ``result["config"]`` may be the dict :func:`run_one` stores or a :class:`CopyConfig`.
    """
    cfg = result["config"]
    cfg = cfg if isinstance(cfg, CopyConfig) else CopyConfig(**cfg)
    model = Seq2Seq(cfg.vocab_size, cfg.emb_size, cfg.hidden_size, cfg.attention, cfg.d_attn, seed=cfg.seed)
    for k, v in result["params"].items():
        model.params[k][...] = v
    return model


def steps_to_accuracy(mid_eval, threshold: float = TARGET_ACCURACY):
    """First evaluated step whose accuracy, averaged over the lengths, reaches ``threshold``.

    Parameters
    ----------
    mid_eval : list of (int, dict {length: accuracy})
        A training history's ``mid_eval``.
    threshold : float
        Default ``TARGET_ACCURACY``, the level both copy-task pages report.

    Returns
    -------
    int or None
        None if no evaluation reached it.
    """
    return next((step for step, acc in mid_eval if np.mean(list(acc.values())) >= threshold), None)


def accuracy_table(results) -> str:
    """Plain-text accuracy table (rows: lengths; columns: models and ablations)."""
    att, plain = results["attention"]["accuracy"], results["plain"]["accuracy"]
    cols = [("sem atenção", plain["learned"]), ("atenção", att["learned"]),
            ("uniforme", att["uniform"]), ("permutada", att["permuted"]), ("deslocada", att["shifted"])]
    if "plain_long" in results:
        long = results["plain_long"]
        cols.insert(1, (f"sem, {long['config']['steps']} p.", long["accuracy"]["learned"]))
    lines = ["comprimento " + " ".join(f"{name:>12}" for name, _ in cols)]
    for L in att["learned"]:
        lines.append(f"{L:>11} " + " ".join(f"{100 * acc[L]:>11.2f}%" for _, acc in cols))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Copy task: GRU encoder-decoder with and without attention.")
    parser.add_argument("--steps", type=int, default=CopyConfig.steps)
    parser.add_argument("--seed", type=int, default=CopyConfig.seed)
    parser.add_argument("--quick", action="store_true", help="a 200-step smoke run, 100 sequences per length")
    parser.add_argument("--serial", action="store_true", help="train one model after the other")
    args = parser.parse_args(argv)
    cfg = CopyConfig(steps=args.steps, seed=args.seed)
    if args.quick:
        cfg = replace(cfg, steps=200, eval_per_length=100)  # mid-training evaluations: the same 100
    results = run_both(cfg, progress=sys.stderr.isatty(), parallel=not args.serial)
    print(f"Tarefa de cópia: {cfg.steps} passos por modelo, lotes de {cfg.batch_size}, "
          f"comprimentos de treinamento {cfg.min_len}..{cfg.max_len}, acaso = {100 / cfg.n_symbols:.1f}%")
    print(accuracy_table(results))
    for name in ("attention", "plain", "plain_long"):
        if name not in results:
            continue
        r = results[name]
        print(f"{name}: treinamento {r['history']['seconds']:.1f} s, avaliação {r['eval_seconds']:.1f} s")
    print(f"tempo total (paralelo): {results['wall_seconds']:.1f} s")


if __name__ == "__main__":
    main()
