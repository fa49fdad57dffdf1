"""The notebooks the site offers read like their pages (issue 24).

Every notebook page's download (``_sources/**/*.ipynb``) and in-browser copy (``lite/files/``) has
its prose in plain Jupyter Markdown, written from the page's resolved doctree
(tools/sphinx_site/notebook_markdown.py): no MyST directive, role or label is left; glued values are
their text; ``literalinclude`` listings hold the included source; and no code cell of the page is
lost or reordered. Reads the built site (``make book``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from export_executed import toc_pages
from helpers import EXECUTED, HTML_DIR, ROOT, glue_roles, page_glue_values, rendered_glue
from myst_nb.core.read import read_myst_markdown_notebook
from sphinx_site.downloads import SETUP_TAG
from sphinx_site.notebook_markdown import myst_leftovers

PAGES = [p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()]
EX1 = "book/atividade4/ex1_atencao_produto_escalar"


def _offered(page: str) -> dict[str, Path]:
    return {"download": HTML_DIR / "_sources" / f"{page}.ipynb", "lite": HTML_DIR / "lite" / "files" / f"{page}.ipynb"}


def _markdown(path: Path) -> str:
    assert path.is_file(), f"{path} is missing: run `make book`"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")


def test_the_check_finds_myst_syntax_and_ignores_code():
    """The leftover check fails on what the downloads held before (the page's own MyST) and passes
    over code, where any text may stand."""
    source = (ROOT / f"{EX1}.md").read_text(encoding="utf-8")
    found = myst_leftovers(source)
    assert any(f.startswith("{glue:text}`") for f in found)
    assert any("{literalinclude}" in f for f in found) and any(f.startswith("(ex1-") for f in found)
    assert any(f.startswith("{numref}`") for f in found) and any(f.startswith("{cite}`") for f in found)
    assert myst_leftovers("```python\n:math:`x` {numref}`y`\n```\n\nTexto com `{doc}`z`` em código.") == []


@pytest.mark.parametrize("page", PAGES)
def test_no_myst_syntax_in_any_offered_notebook(page):
    bad = {kind: myst_leftovers(_markdown(path))[:5] for kind, path in _offered(page).items()}
    assert not {k: v for k, v in bad.items() if v}, bad


@pytest.mark.parametrize("page", PAGES)
def test_the_offered_notebooks_keep_every_code_cell_in_order(page):
    source = read_myst_markdown_notebook((ROOT / f"{page}.md").read_text(encoding="utf-8"))
    expected = [c["source"] for c in source.cells if c["cell_type"] == "code"]
    download = json.loads(_offered(page)["download"].read_text(encoding="utf-8"))
    code = [c for c in download["cells"] if c["cell_type"] == "code"]
    assert SETUP_TAG in code[0]["metadata"]["tags"]
    assert ["".join(c["source"]) for c in code[1:]] == expected


def test_every_glued_value_of_ex1_is_in_its_notebooks_markdown():
    values = page_glue_values(EXECUTED / f"{EX1}.ipynb")
    roles = glue_roles((ROOT / f"{EX1}.md").read_text(encoding="utf-8"))
    assert len(roles) > 20 and values
    for kind, path in _offered(EX1).items():
        markdown = " ".join(_markdown(path).split())
        missing = []
        for role, content in roles:
            text, _ = rendered_glue(role, content, values)
            if " ".join(text.split()) not in markdown:
                missing.append(f"{{{role}}}`{content}` = {text!r}")
        assert not missing, f"{kind}: {missing}"


def test_ex1_listings_are_the_included_source_with_their_captions():
    """Each ``literalinclude`` of Ex 1 is a fenced Python block holding the function, after its
    numbered caption, as on the page."""
    markdown = _markdown(_offered(EX1)["download"])
    for name in ("softmax", "_softmax", "scaled_dot_product_attention", "_attention", "_masked_softmax"):
        caption = re.escape("\\" * name.startswith("_") + name)  # Markdown escapes a leading "_"
        block = re.search(rf"\*\*Listagem \d+\*\* \*attn/core\.py — {caption}\*\s+"
                          rf"```python\ndef {name}\((.*?)```", markdown, re.S)
        assert block, f"no listing of {name}"
        assert "return" in block.group(1) and '"""' not in block.group(1)


# A captioned listing on a page (literalinclude: Sphinx's literal-block-wrapper) and a docstring in it
# (Pygments' String.Doc token).
LISTING = re.compile(r'<div class="literal-block-wrapper.*?</pre>', re.S)
DOCSTRING = re.compile(r'<span class="sd">')


@pytest.mark.parametrize("page", PAGES)
def test_no_listing_on_a_page_shows_a_docstring(page):
    """Decided once for every page (tools/sphinx_site/listings.py): a listing of attn shows the code
    that runs, not the docstring, whose reST markup (``.. math::``, ``:func:``) would show raw."""
    html = (HTML_DIR / f"{page}.html").read_text(encoding="utf-8")
    shown = [m.group(0) for m in LISTING.finditer(html) if DOCSTRING.search(m.group(0))]
    assert not shown, [re.sub(r"<[^>]+>", "", s)[:300] for s in shown]


def test_ex1_references_and_boxes_are_plain_markdown():
    markdown = _markdown(_offered(EX1)["download"])
    site = json.loads((HTML_DIR.parent / "site-identity.json").read_text(encoding="utf-8"))["site_url"]
    assert f"]({site}book/api.html)" in markdown  # {doc} -> the published page
    assert re.search(rf"\[Fig\. 1\]\({re.escape(site)}book/atividade4/ex1_atencao_produto_escalar\.html#", markdown)
    assert re.search(r"\[\[Vaswani \*et al\.\*, 2017\]\(", markdown)  # {cite} -> the reference's text
    assert "> **Enunciado**" in markdown  # admonition -> a quote block with its title
    assert "<details>\n<summary>Derivação" in markdown  # dropdown -> <details>
    assert "$$\n\\text{Atenção}(Q, K, V)" in markdown  # math stays TeX
