"""Run independent training jobs in two fresh interpreters, reproducibly.

Used by :mod:`attn.copytask` and :mod:`attn.tasks`: each worker process is spawned with its BLAS
limited to one thread (set in the environment before NumPy is imported there), so two cores are
used and float32 sums are bit-for-bit the same as in a serial run (``tests/test_tasks.py`` compares
the two). In the browser (Pyodide, no processes) the jobs run one after the other; whether
WebAssembly's sums match the native ones bit for bit is not tested.
"""
from __future__ import annotations

import os
import sys

_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def map_in_two_processes(worker, jobs: list) -> list:
    """``[worker(job) for job in jobs]``, computed by two spawned processes with single-thread BLAS."""
    if sys.platform == "emscripten":  # Pyodide (the site's in-browser notebooks) has no processes
        return [worker(job) for job in jobs]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    saved = {k: os.environ.get(k) for k in _BLAS_THREADS}
    os.environ.update(dict.fromkeys(_BLAS_THREADS, "1"))
    try:
        with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
            return list(pool.map(worker, jobs))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
