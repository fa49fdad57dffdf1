"""Checks on the notebook pages and on what the book build executed.

nbval (run by `make test` over _build/jupyter_execute) re-executes every executed
notebook and compares its text outputs. It passes vacuously on a notebook that has no
outputs (what myst-nb writes when it serves a page from a stale cache), so these tests
first make sure that every code cell of every notebook page really ran in the build.
"""
import pathlib
import re

import jupytext
import nbformat
import pytest
from export_executed import toc_pages  # one TOC reader for the build and the tests

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXECUTED = ROOT / "_build" / "jupyter_execute"
PAGES = toc_pages()
IDS = [str(p.relative_to(ROOT)) for p in PAGES]


def test_there_are_notebook_pages():
    assert len(PAGES) >= 1


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_page_is_a_myst_notebook_with_clean_cells(page):
    nb = jupytext.read(page)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "myst"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook page needs code cells"
    for cell in code:
        src = cell.source
        tags = cell.metadata.get("tags", [])
        assert not re.search(r"\bsys\.path\b", src), "attn is importable because it is installed, not via an import-path edit"
        assert 'matplotlib.use(' not in src, "matplotlib.use() turns glued figures into text"
        if re.search(r"\bglue\(", src):
            assert "nbval-ignore-output" in tags, (
                f"cell calling glue() must be tagged nbval-ignore-output (myst-nb strips glue outputs):\n{src[:200]}"
            )


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_code_cell_ran_in_the_build(page):
    executed = EXECUTED / page.relative_to(ROOT).with_suffix(".ipynb")
    assert executed.exists(), f"{executed} missing: run `make book` first"
    nb = nbformat.read(executed, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    not_run = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not not_run, f"code cells {not_run} of {executed.name} have no execution count (stale cache?)"
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), "cells must run top to bottom"
    outputs = sum(len(c.get("outputs", [])) for c in code)
    assert outputs > 0, f"{executed.name} has no outputs at all: nbval would compare nothing"
    # An error or a stderr output fails the strict build (_config.yml: allow_errors false, stderr_output warn).


def test_no_stray_executed_notebooks():
    """Every executed notebook corresponds to a page in the TOC (nbval runs them all)."""
    expected = {(p.relative_to(ROOT).with_suffix(".ipynb")) for p in PAGES}
    found = {p.relative_to(EXECUTED) for p in EXECUTED.rglob("*.ipynb")}
    assert found == expected
