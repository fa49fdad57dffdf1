"""The suite's one Hypothesis profile, and the test tiers: one marker, ``full`` (pyproject.toml);
``make test`` runs ``-m "not full"``.

Hypothesis: no deadline (its default 200 ms per example fails a property test on a loaded machine's
slow first call, and tests never assert on time), and derandomized (every random draw is seeded: the
same examples on every run, machine and OpenBLAS kernel, so a failure reproduces). Every property test
inherits this profile; none sets a deadline of its own.

nbval's items are the cells of the executed notebooks (``_build/jupyter_execute``), which no decorator
can mark: the cells of the training pages (their full training; the pages that declare a short
in-browser variant) are marked here, at the repository's root so that it applies to ``_build/`` too.
"""

from pathlib import Path

import pytest
from helpers import short_variant_pages
from hypothesis import settings

settings.register_profile("attn", deadline=None, derandomize=True)
settings.load_profile("attn")

ROOT = Path(__file__).resolve().parent
TRAINING_NOTEBOOKS = {ROOT / "_build" / "jupyter_execute" / f"{page}.ipynb" for page in short_variant_pages()}


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).resolve() in TRAINING_NOTEBOOKS:
            item.add_marker(pytest.mark.full)
