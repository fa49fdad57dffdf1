"""What attn does differently in the browser (Pyodide: ``sys.platform == "emscripten"``), simulated here.

Pyodide's ``time.process_time()`` stays at 0 and it cannot start threads. The Transformer copy page's
short variant divided by a CPU time of 0 (ZeroDivisionError) until every CPU time went through
:func:`attn.measure.cpu_time`; tqdm's monitor thread printed a warning in every progress line's cell
until :class:`attn._parallel.ProgressLine` turned it off there. The in-browser run itself is
``tests/test_lite.py`` (browser stage).
"""
from __future__ import annotations

import sys
import time

import pytest
import tqdm.auto

from attn._parallel import ProgressLine
from attn.measure import best_seconds, cpu_time


@pytest.fixture
def frozen_process_time(monkeypatch):
    """process_time() as Pyodide gives it: always 0."""
    monkeypatch.setattr(time, "process_time", lambda: 0.0)


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_in_the_browser_cpu_time_advances_with_the_work(frozen_process_time, monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    start = cpu_time()
    _spin(0.02)
    assert cpu_time() - start >= 0.02
    wall, cpu = best_seconds(lambda: _spin(0.01), repeats=2, warm_up=False)
    assert cpu >= 0.01 and wall >= 0.01


def test_natively_cpu_time_is_the_process_time(frozen_process_time):
    # the fixture for the test above: without the browser's stand-in, a frozen clock gives 0
    start = cpu_time()
    _spin(0.02)
    assert cpu_time() - start == 0.0
    assert best_seconds(lambda: _spin(0.01), repeats=1, warm_up=False)[1] == 0.0


def test_a_progress_line_counts_every_step_to_its_last(capsys):
    bar = ProgressLine(True, 3, "reverse")
    for step in range(3):
        bar.step(step, loss=1.0 / (step + 1))
    bar.close()
    err = capsys.readouterr().err
    assert "reverse: 100%" in err and "3/3" in err and "loss=1.0000" in err


def test_a_disabled_progress_line_prints_nothing(capsys):
    bar = ProgressLine(False, 3, "reverse")
    for step in range(3):
        bar.step(step, loss=1.0)
    bar.close()
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("platform, monitor", [("emscripten", 0), ("linux", 10)])
def test_in_the_browser_the_progress_line_starts_no_monitor_thread(monkeypatch, platform, monitor):
    monkeypatch.setattr(tqdm.auto.tqdm, "monitor_interval", 10)  # tqdm's default
    monkeypatch.setattr(sys, "platform", platform)
    ProgressLine(True, 1, "count").close()
    assert tqdm.auto.tqdm.monitor_interval == monitor  # linux: the fixture showing the setting is the browser's
