"""Run independent training jobs in two fresh interpreters, reproducibly, and show their progress.

Used by :mod:`attn.training.copytask` and :mod:`attn.training.tasks`: each worker process is spawned with its
BLAS
limited to one thread (set in the environment before NumPy is imported there), so two cores are
used and the float32 sums do not depend on how many threads the machine offers: a product split
over threads may round differently (``tests/test_tasks.py`` finds two parallel runs equal bit for
bit, and a serial, multi-threaded run equal up to rounding). In the browser (Pyodide, no
processes) the jobs run one after the other; whether WebAssembly's sums match the native ones bit
for bit is not tested.

:class:`ProgressLine` is a job's optional progress line (the training loop's, :mod:`attn.training.loop`;
the in-browser short variants turn it on).
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


class ProgressLine:
    """A training job's text progress line (tqdm), updated every step, with the loss every 20 steps.

    With ``enabled`` false it does nothing and tqdm is not imported. ``position`` is the line's row
    when two jobs print at once.
    """

    def __init__(self, enabled: bool, total: int, desc: str, position: int = 0):
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm
            if sys.platform == "emscripten":  # no threads in Pyodide: no monitor thread (else a warning)
                tqdm.monitor_interval = 0
            self._bar = tqdm(total=total, position=position, leave=True, desc=desc)

    def step(self, step: int, loss: float) -> None:
        """Count step ``step`` (0-based) done, with its training loss."""
        if self._bar is not None:
            self._bar.update(1)
            if step % 20 == 0:
                self._bar.set_postfix(loss=f"{loss:.4f}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
