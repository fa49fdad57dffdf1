"""Benchmark of dense against tiled attention (attn.tiled): peak memory (tracemalloc) and wall time over n.

Random float64 inputs Q, K, V of shape (n, d), one BLAS thread, n = 256, 512, ... doubling. The dense
version stops when its next run is predicted to need more memory than --max-dense-mb (default: a
quarter of the memory available, at most 2048 MB); either stops when its next call is predicted to
take more than --max-seconds. Then a tile-size sweep of the tiled version at one n. The measurement
is attn.measure's, the same as on the page "Atenção em blocos".

    python bench/tiled.py [--max-seconds 20] [--max-dense-mb MB] [--d 64] [--tile 128]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported
import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from attn.measure import dense_vs_tiled, fitted_exponent, increment_exponent, tile_sweep  # noqa: E402

MB = 1e6


def available_mb() -> float:
    """MemAvailable from /proc/meminfo in MB (Linux), or 8 GB when it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f)
        return float(fields["MemAvailable"].split()[0]) * 1024 / MB
    except (OSError, KeyError, ValueError):
        return 8000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=20.0, help="per call (default 20)")
    parser.add_argument("--max-dense-mb", type=float, default=min(2048.0, available_mb() / 4))
    parser.add_argument("--max-n", type=int, default=65536)
    parser.add_argument("--d", type=int, default=64, help="d_k = d_v (default 64)")
    parser.add_argument("--tile", type=int, default=128, help="tile_q = tile_k (default 128)")
    parser.add_argument("--sweep-n", type=int, default=2048)
    args = parser.parse_args()
    ns = [256 * 2 ** k for k in range(20) if 256 * 2 ** k <= args.max_n]
    start = time.perf_counter()
    print(f"Dense vs tiled attention (attn.tiled), float64, d_k = d_v = {args.d}, tiles {args.tile} x "
          f"{args.tile}, one BLAS thread; dense memory budget {args.max_dense_mb:.0f} MB, "
          f"{args.max_seconds:g} s per call")
    rows = dense_vs_tiled(ns, d=args.d, tile=args.tile, max_dense_bytes=args.max_dense_mb * MB,
                          max_seconds=args.max_seconds)
    print("(s: best wall-clock time of a call; cpu: best CPU time; ratio: tiled / dense wall-clock;\n"
          " bare: the dense formula without checks, attn.measure.bare_dense_attention)")
    print(f"{'n':>7} {'dense MB':>10} {'tiled MB':>10} {'dense s':>9} {'tiled s':>9} {'dense cpu':>10} "
          f"{'tiled cpu':>10} {'ratio':>7} {'bare cpu':>10} {'tiled/bare':>10}")
    for r in rows:
        if np.isnan(r["tiled_s"]):
            break
        print(f"{r['n']:>7} {r['dense_bytes'] / MB:>10.2f} {r['tiled_bytes'] / MB:>10.2f} "
              f"{r['dense_s']:>9.4f} {r['tiled_s']:>9.4f} {r['dense_cpu_s']:>10.4f} "
              f"{r['tiled_cpu_s']:>10.4f} {r['tiled_s'] / r['dense_s']:>7.2f} {r['bare_cpu_s']:>10.4f} "
              f"{r['tiled_cpu_s'] / r['bare_cpu_s']:>10.2f}")
    for name in ("dense", "tiled"):
        done = [r for r in rows if not np.isnan(r[f"{name}_bytes"])]
        n, y = [r["n"] for r in done], [r[f"{name}_bytes"] for r in done]
        print(f"{name}: peak memory ∝ n^{fitted_exponent(n, y):.2f}, its growth (differences from one n to "
              f"the next) ∝ n^{increment_exponent(n, y):.2f}; fit over n = {n[0]}..{n[-1]} (the largest run)")
    print(f"\nTile sweep of the tiled version at n = {args.sweep_n}:")
    print(f"{'tile':>6} {'MB':>8} {'s':>9} {'cpu':>9}")
    for r in tile_sweep(args.sweep_n, [16, 32, 64, 128, 256, 512, 1024, 2048], d=args.d):
        print(f"{r['tile']:>6} {r['bytes'] / MB:>8.2f} {r['s']:>9.4f} {r['cpu_s']:>9.4f}")
    print(f"(benchmark wall time {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
