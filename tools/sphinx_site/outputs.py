"""The lessons' deliverable files: ``outputs/*.md`` published byte for byte at ``<site>/outputs/``.

These are the prompt files that lessons 5.10 and 7.02 ask for; the prompt pages link them there and
show the same files with ``literalinclude``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

from .paths import ROOT

OUTPUTS = ROOT / "outputs"  # the lessons' deliverable files, published as they are


def _copy_outputs(app: Sphinx, exception: Exception | None) -> None:
    """Publish ``outputs/*.md`` at ``<site>/outputs/`` byte for byte (the pages link them there)."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "outputs"
    target.mkdir(exist_ok=True)
    for path in sorted(OUTPUTS.glob("*.md")):
        shutil.copyfile(path, target / path.name)


def setup(app: Sphinx) -> None:
    app.connect("build-finished", _copy_outputs)
