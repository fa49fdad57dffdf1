"""A notebook page's runnable notebook, with its prose as the page shows it (plain Jupyter Markdown).

The prose of a MyST notebook page is MyST: glue roles, ``literalinclude``, admonitions, dropdowns,
exercise blocks, ``(label)=`` lines and ``{doc}``/``{ref}``/``{numref}``/``{cite}`` roles. Jupyter
renders none of them. Rather than re-parse that source, the notebook's Markdown is written from the
page's *resolved* doctree (Sphinx's ``doctree-resolved`` event, in the HTML build): glue roles are
already their text, references already point to their page and carry their number ("Fig. 2"),
citations already read "Vaswani et al. (2017)", and ``literalinclude`` already holds the source.

The doctree is rendered by sphinx-markdown-builder's ``MarkdownTranslator`` (a maintained
docutils -> Markdown translator), extended in ``markdown_translator.py``; this module puts the
rendered text back into the notebook's cells and writes the notebook in the HTML build.

Cells: myst-nb records where each cell starts in the ``.md`` (``metadata.source_map``) and every
doctree node its source line, so each rendered block is put back into the cell it came from. Code
cells are the page's own (removed cells included: later cells need what they define), without
outputs. A figure caption of a code cell's output becomes a Markdown cell right after that cell.
"""

from __future__ import annotations

import base64
import posixpath
import re
from pathlib import Path

from docutils import nodes

from .markdown_translator import MARK_RE, MYST_SYNTAX, CellStart, NotebookMarkdown

# --------------------------------------------------------------------------- doctree -> cells


def _mark_cell_starts(doctree: nodes.document, notebook: dict) -> None:
    """Insert a CellStart before the first node of each Markdown cell (by source line)."""
    starts = notebook["metadata"].get("source_map")
    if not starts:
        raise ValueError("the notebook has no metadata.source_map (read it with add_source_map=True)")
    # myst-nb gives a cell's tokens the lines source_map[i] + 1 + offset (base 1)
    bounds = [*(s + 1 for s in starts), float("inf")]
    wanted = {i: (bounds[i], bounds[i + 1]) for i, cell in enumerate(notebook["cells"])
              if cell["cell_type"] == "markdown"}
    for node in list(doctree.findall(nodes.Element)):
        line = node.line
        if line is None or node.parent is None:
            continue
        for index, (low, high) in list(wanted.items()):
            if low <= line < high:
                node.parent.insert(node.parent.index(node), CellStart(index=index))
                del wanted[index]
                break


def notebook_from_doctree(doctree: nodes.document, notebook: dict, builder, docname: str,
                          page_url: str) -> dict:
    """The runnable notebook of a page: ``notebook`` (myst-nb's reading of the page, with its
    ``source_map``) with each Markdown cell replaced by the page's rendering of it, no outputs."""
    doctree = doctree.deepcopy()
    _mark_cell_starts(doctree, notebook)
    translator = NotebookMarkdown(doctree, builder, docname, page_url)
    doctree.walkabout(translator)
    text = translator.astext()
    pieces = MARK_RE.split(text)  # [before, kind, index, text, kind, index, text, ...]
    markdown = {("markdown", 0): pieces[0]} if pieces[0].strip() else {}
    for kind, index, body in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
        key = (kind, int(index))
        markdown[key] = markdown.get(key, "") + body

    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            cells.append({"cell_type": "code", "execution_count": None, "id": f"cell-{index}",
                          "metadata": dict(cell.get("metadata", {})), "outputs": [],
                          "source": cell["source"]})
            after = markdown.get(("code", index), "").strip()
            if after:
                cells.append(_markdown_cell(f"cell-{index}-caption", after, translator.attachments))
        elif cell["cell_type"] == "markdown":
            body = markdown.get(("markdown", index), "").strip()
            if body:
                cells.append(_markdown_cell(f"cell-{index}", body, translator.attachments))
        else:
            cells.append(dict(cell))
    metadata = {k: v for k, v in notebook["metadata"].items() if k not in ("source_map", "jupytext")}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def _markdown_cell(cell_id: str, text: str, attachments: dict[str, tuple[str, bytes]]) -> dict:
    cell = {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text + "\n"}
    used = {name: {mime: base64.b64encode(data).decode("ascii")}
            for name, (mime, data) in attachments.items() if f"attachment:{name}" in text}
    if used:
        cell["attachments"] = used
    return cell


# Fenced code blocks and inline code (not a directive's fence, not a role's content).
CODE = re.compile(r"^(`{3,})(?!\{).*?^\1\s*$|(?<!\})`[^`\n]+`", re.M | re.S)


def myst_leftovers(text: str) -> list[str]:
    """MyST directive, role or label syntax in a notebook's Markdown outside code (none should be
    left; code blocks may show any text, e.g. a docstring's reST roles)."""
    return [m.group(0) for m in MYST_SYNTAX.finditer(CODE.sub("", text))]


def page_url(site_url: str, docname: str) -> str:
    """The published URL of a page (``html_baseurl`` + ``docname.html``)."""
    return site_url.rstrip("/") + "/" + posixpath.normpath(docname) + ".html"


# --------------------------------------------------------------------------- in the HTML build

STORE = "runnable-notebooks"  # beside the doctrees: one converted notebook per notebook page


def converted_path(app, docname: str) -> Path:
    return Path(app.doctreedir).parent / STORE / f"{docname}.ipynb"


def _convert(app, doctree: nodes.document, docname: str) -> None:
    """Write the page's runnable notebook (read by downloads.py when the build finishes)."""
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(docname, {}):
        return
    import json

    from myst_nb.core.read import read_myst_markdown_notebook

    source = Path(app.env.doc2path(docname)).read_text(encoding="utf-8")
    notebook = read_myst_markdown_notebook(source, add_source_map=True)
    converted = notebook_from_doctree(doctree, notebook, app.builder, docname,
                                      page_url(app.config.html_baseurl, docname))
    path = converted_path(app, docname)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(converted, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def setup(app) -> None:
    app.setup_extension("sphinx_markdown_builder")  # its translator's config values (defaults kept)
    app.connect("doctree-resolved", _convert)
