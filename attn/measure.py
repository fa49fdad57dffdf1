"""Time and memory measurements: the CPU clock of every training loop, and dense against tiled
attention over the sequence length n.

:func:`cpu_time` is the clock the training loop (:mod:`attn.training.loop`) and the pages time CPU
with: ``time.process_time()``, except in the browser, where Pyodide's ``process_time()`` stays at 0
and the single-threaded process's wall clock stands in for it.

The attention comparison is one measurement for ``bench/tiled.py`` (``make bench``: n from 256 up to
what the machine allows) and for the page "Atenção em blocos" (a small range of n): both call
:func:`dense_vs_tiled`.

A third version, :func:`bare_dense_attention`, is the dense formula with no checks, the like-for-like
baseline of the tiled version's time: :func:`attn.core.scaled_dot_product_attention` also validates
its inputs.

* **Memory**: the peak of the bytes allocated *during* one call, from ``tracemalloc`` (NumPy
  reports its array buffers to it). The inputs exist before the call and are not counted; what the
  call returns is.
* **Time**: the best wall-clock time and the best CPU time of a few calls (after one untimed call),
  with ``tracemalloc`` off. The machine may be shared, so the best of several is the least
  disturbed; CPU time does not count the time the process waits for a core.

:func:`measure_single_thread` runs both measurements in a fresh process whose BLAS uses one thread
(as ``make bench`` does), so that a small product is not split across cores that are busy.
"""
from __future__ import annotations

import sys
import time
import tracemalloc
from functools import partial

import numpy as np

from ._checks import array, positive_int
from ._parallel import map_in_two_processes
from .core import scaled_dot_product_attention
from .tiled import tiled_attention


def cpu_time() -> float:
    """Seconds of CPU used by this process so far (only differences are meaningful).

    ``time.process_time()``; in Pyodide (``sys.platform == "emscripten"``), where it does not advance,
    ``time.perf_counter()``: the browser runs the kernel in one thread, so its wall time is the
    nearest to its CPU time there is (it also counts the time the tab waits for a core).
    """
    return time.perf_counter() if sys.platform == "emscripten" else time.process_time()


def peak_bytes(f) -> int:
    """Peak number of bytes allocated while ``f()`` runs (``tracemalloc``), above what existed before."""
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def best_seconds(f, repeats: int, warm_up: bool = True) -> tuple[float, float]:
    """Best wall-clock and best CPU time (s) of ``repeats`` calls of ``f()``, after one more if warm_up."""
    if warm_up:
        f()
    wall = cpu = np.inf
    for _ in range(positive_int(repeats, "repeats")):
        start, start_cpu = time.perf_counter(), cpu_time()
        f()
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, cpu_time() - start_cpu)
    return wall, cpu


def bare_dense_attention(Q, K, V):
    r""":math:`\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V` for Q (n_q, d_k), K (n_k, d_k), V (n_k, d_v),
    with no mask and no checks: the dense computation alone, for timing. Returns (n_q, d_v)."""
    scores = Q @ K.T / np.sqrt(Q.shape[-1])  # (n_q, n_k)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (n_q, n_k)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ V  # (n_q, d_v)


def dense_vs_tiled(ns, *, d: int = 64, tile: int = 128, repeats: int = 3, seed: int = 0,
                   max_dense_bytes: float = np.inf, max_seconds: float = np.inf) -> list[dict]:
    """Measure both versions of attention on random (n, d) inputs for each n in ``ns`` (increasing).

    A version stops (its later rows hold NaN) once its next run is predicted to need more than
    ``max_dense_bytes`` (the two dense ones only) or ``max_seconds`` per call: each doubling of n is predicted
    to
    multiply the dense memory and both times by 4 (the ratio of the ``n × n`` entries). The memory
    run is the timing's warm-up call; a run predicted to take over a second is timed once.

    Returns
    -------
    list of dict
        One row per n with keys ``n`` and, for ``v`` in ``dense``, ``bare`` (:func:`bare_dense_attention`)
        and ``tiled``: ``v_bytes`` (peak
        memory), ``v_s`` (wall-clock seconds) and ``v_cpu_s`` (CPU seconds).
    """
    rng = np.random.default_rng(seed)
    tile = positive_int(tile, "tile")
    versions = {"dense": scaled_dot_product_attention, "bare": bare_dense_attention,
                "tiled": partial(tiled_attention, tile_q=tile, tile_k=tile)}
    rows, last, stopped = [], {}, set()
    for n in ns:
        Q, K, V = (rng.standard_normal((positive_int(n, "n"), d)) for _ in range(3))  # (n, d) each
        row = {"n": n}
        for name, f in versions.items():
            predicted_s = 0.0
            if name in last:
                prev_n, prev_bytes, prev_s = last[name]
                grow = (n / prev_n) ** 2
                predicted_s = prev_s * grow
                if predicted_s > max_seconds or (name != "tiled" and prev_bytes * grow > max_dense_bytes):
                    stopped.add(name)
            if name in stopped:
                row[f"{name}_bytes"] = row[f"{name}_s"] = row[f"{name}_cpu_s"] = np.nan
                continue
            call = partial(f, Q, K, V)
            row[f"{name}_bytes"] = peak_bytes(call)
            row[f"{name}_s"], row[f"{name}_cpu_s"] = best_seconds(call, repeats if predicted_s < 1 else 1,
                                                                  warm_up=False)
            last[name] = (n, row[f"{name}_bytes"], row[f"{name}_s"])
        rows.append(row)
    return rows


def tile_sweep(n: int, tiles, *, d: int = 64, repeats: int = 3, seed: int = 0) -> list[dict]:
    """Peak memory and best time of :func:`attn.tiled.tiled_attention` at one ``n`` for square tiles.

    Returns one dict per tile size with keys ``tile``, ``bytes``, ``s`` (wall clock), ``cpu_s``.
    """
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((positive_int(n, "n"), d)) for _ in range(3))  # (n, d) each
    rows = []
    for tile in tiles:
        call = partial(tiled_attention, Q, K, V, tile_q=tile, tile_k=tile)
        peak = peak_bytes(call)  # also the timing's warm-up call
        wall, cpu = best_seconds(call, repeats, warm_up=False)
        rows.append({"tile": tile, "bytes": peak, "s": wall, "cpu_s": cpu})
    return rows


def _both(job: dict) -> tuple[list[dict], list[dict]]:
    return dense_vs_tiled(**job["dense_vs_tiled"]), tile_sweep(**job["tile_sweep"])


def measure_single_thread(ns, sweep_n: int, tiles, **kwargs) -> tuple[list[dict], list[dict]]:
    """``dense_vs_tiled(ns, **kwargs)`` and ``tile_sweep(sweep_n, tiles)``, in one fresh process whose
    BLAS uses a single thread (in the browser, where there are no processes, in this one).

    ``kwargs`` go to :func:`dense_vs_tiled`; ``d`` and ``repeats`` also to :func:`tile_sweep`.
    """
    sweep = {k: kwargs[k] for k in ("d", "repeats") if k in kwargs}
    job = {"dense_vs_tiled": dict(kwargs, ns=list(ns)),
           "tile_sweep": dict(sweep, n=sweep_n, tiles=list(tiles))}
    return map_in_two_processes(_both, [job])[0]


def fitted_exponent(n, y) -> float:
    """Slope of the least-squares line through ``(log n, log y)``: ``y ∝ n^slope``.

    ``n`` and ``y`` have shape (k,).
    """
    dims = {}
    n, y = array(n, "n", "(k,)", dims), array(y, "y", "(k,)", dims)  # (k,) each
    return float(np.polyfit(np.log(n), np.log(y), 1)[0])


def increment_exponent(n, y) -> float:
    """Fitted exponent of the growth of ``y``: of ``y[i+1] - y[i]`` against ``n[i]``.

    ``n`` and ``y`` have shape (k,), k ≥ 3.

    A part of ``y`` that does not depend on n cancels in the differences, so for
    ``y = a + b n^k`` (and ``n`` doubling) this is ``k`` whatever ``a`` is.
    """
    dims = {}
    n, y = array(n, "n", "(k,)", dims), array(y, "y", "(k,)", dims)  # (k,) each
    return fitted_exponent(n[:-1], np.diff(y))
