"""Peak memory and wall time of dense against tiled attention, over the sequence length n.

One measurement for ``bench/tiled.py`` (``make bench``: n from 256 up to what the machine allows) and
for the page "Atenção em blocos" (a small range of n): both call :func:`dense_vs_tiled`.

* **Memory**: the peak of the bytes allocated *during* one call, from :mod:`tracemalloc` (NumPy
  reports its array buffers to it). The inputs exist before the call and are not counted; what the
  call returns is.
* **Time**: the best wall-clock time of a few calls (after one untimed call), with :mod:`tracemalloc`
  off. The machine may be shared, so the best of several is the least disturbed.
"""
from __future__ import annotations

import time
import tracemalloc
from functools import partial

import numpy as np

from ._checks import positive_int
from .core import scaled_dot_product_attention
from .tiled import tiled_attention


def peak_bytes(f) -> int:
    """Peak number of bytes allocated while ``f()`` runs (``tracemalloc``), above what existed before."""
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def best_seconds(f, repeats: int, warm_up: bool = True) -> float:
    """Best wall-clock time of ``repeats`` calls of ``f()``, after one untimed call if ``warm_up``."""
    if warm_up:
        f()
    best = np.inf
    for _ in range(positive_int(repeats, "repeats")):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best


def dense_vs_tiled(ns, *, d: int = 64, tile: int = 128, repeats: int = 3, seed: int = 0,
                   max_dense_bytes: float = np.inf, max_seconds: float = np.inf) -> list[dict]:
    """Measure both versions of attention on random (n, d) inputs for each n in ``ns`` (increasing).

    A version stops (its later rows hold NaN) once its next run is predicted to need more than
    ``max_dense_bytes`` (dense only) or ``max_seconds`` per call: each doubling of n is predicted to
    multiply the dense memory and both times by 4 (the ratio of the ``n × n`` entries). The memory
    run is the timing's warm-up call; a run predicted to take over a second is timed once.

    Returns
    -------
    list of dict
        One row per n with keys ``n``, ``dense_bytes``, ``tiled_bytes``, ``dense_s``, ``tiled_s``.
    """
    rng = np.random.default_rng(seed)
    tile = positive_int(tile, "tile")
    versions = {"dense": scaled_dot_product_attention,
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
                if predicted_s > max_seconds or (name == "dense" and prev_bytes * grow > max_dense_bytes):
                    stopped.add(name)
            if name in stopped:
                row[f"{name}_bytes"] = row[f"{name}_s"] = np.nan
                continue
            call = partial(f, Q, K, V)
            row[f"{name}_bytes"] = peak_bytes(call)
            row[f"{name}_s"] = best_seconds(call, repeats if predicted_s < 1 else 1, warm_up=False)
            last[name] = (n, row[f"{name}_bytes"], row[f"{name}_s"])
        rows.append(row)
    return rows


def tile_sweep(n: int, tiles, *, d: int = 64, repeats: int = 3, seed: int = 0) -> list[dict]:
    """Peak memory and best time of :func:`attn.tiled.tiled_attention` at one ``n`` for square tiles.

    Returns one dict per tile size with keys ``tile``, ``bytes``, ``s``.
    """
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((positive_int(n, "n"), d)) for _ in range(3))  # (n, d) each
    rows = []
    for tile in tiles:
        call = partial(tiled_attention, Q, K, V, tile_q=tile, tile_k=tile)
        rows.append({"tile": tile, "bytes": peak_bytes(call), "s": best_seconds(call, repeats)})
    return rows


def fitted_exponent(n, y) -> float:
    """Slope of the least-squares line through ``(log n, log y)``: ``y ∝ n^slope``."""
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    return float(np.polyfit(np.log(n), np.log(y), 1)[0])


def increment_exponent(n, y) -> float:
    """Fitted exponent of the growth of ``y``: of ``y[i+1] - y[i]`` against ``n[i]``.

    A part of ``y`` that does not depend on n cancels in the differences, so for
    ``y = a + b n^k`` (and ``n`` doubling) this is ``k`` whatever ``a`` is.
    """
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    return fitted_exponent(n[:-1], np.diff(y))
