"""The test tiers: one marker, ``full`` (pyproject.toml); ``make test`` runs ``-m "not full"``.
(The Hypothesis profile is in tests/conftest.py.)

nbval's items are the cells of the executed notebooks (``_build/jupyter_execute``), which no decorator
can mark: the cells of the training pages (their full training; the pages that declare a short
in-browser variant) are marked here, at the repository's root so that it applies to ``_build/`` too.
"""

from pathlib import Path

import pytest
from helpers import short_variant_pages

ROOT = Path(__file__).resolve().parent
TRAINING_NOTEBOOKS = {ROOT / "_build" / "jupyter_execute" / f"{page}.ipynb" for page in short_variant_pages()}


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).resolve() in TRAINING_NOTEBOOKS:
            item.add_marker(pytest.mark.full)
