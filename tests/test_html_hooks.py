"""The HTML fixes made by Sphinx hooks (tools/sphinx_site/: node visitors and post-transforms).

A small Sphinx project holding one of each thing a hook fixes (a figure, a scaled image, a pandas
table in raw HTML, a citation, an API field whose body is a list, two exercises, a hidden cell's
toggle) is built twice: bare, where each upstream gap shows (so each check below can fail), and
with the site's hook modules, where none does. Templates (tools/templates/layout.html) are checked
on the built site by tests/test_reader.py and tests/test_html_valid.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from sphinx_site.html_fixes import FIGURE_LINK_TITLE

ROOT = Path(__file__).resolve().parent.parent

HOOKS = ["sphinx_site.bibliography", "sphinx_site.html_fixes", "sphinx_site.listings"]

FIXTURE_EXT = '''
from docutils import nodes
from docutils.parsers.rst import Directive
from myst_nb.sphinx_ import HideCodeCellNode


class HiddenCell(Directive):
    has_content = True

    def run(self):
        node = HideCodeCellNode(prompt_show="Mostrar o código", prompt_hide="Ocultar o código")
        node["classes"].append("above-input")
        node += nodes.literal_block("", "\\n".join(self.content))
        return [node]


def setup(app):
    HideCodeCellNode.add_to_app(app)  # myst-nb's own visitor, as myst_nb's setup registers it
    app.add_directive("hidden-cell", HiddenCell)
'''

PAGE = """\
Página
======

.. image:: fig.png
   :alt: Figura de teste

.. image:: fig.png
   :alt: Figura reduzida
   :width: 50%

.. raw:: html

   <style scoped>
       .dataframe tbody tr th { vertical-align: top; }
   </style>
   <table border="1" class="dataframe">
     <thead>
       <tr><th></th><th halign="left">a</th></tr>
     </thead>
     <tbody><tr><th>0</th><td>1</td></tr></tbody>
   </table>

Como em [Doe2020]_.

.. [Doe2020] Doe, J. Um texto.

.. py:function:: f(x)

   :returns: * **a** -- o primeiro
             * **b** -- o segundo

.. exercise:: Primeiro

   Faça a.

.. exercise:: Segundo

   Faça b.

.. hidden-cell::

   print(1)

.. literalinclude:: listed.py
   :language: python
   :pyobject: Modelo.dobro
   :dedent: 4
"""

LISTED = '''class Modelo:
    def dobro(self, x):
        """O dobro.

        .. math:: y = 2x
        """
        return 2 * x  # (n,)
'''


def _start_build(root: Path, extensions: list[str]) -> subprocess.Popen:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "fixture_ext.py").write_text(FIXTURE_EXT, encoding="utf-8")
    (src / "conf.py").write_text(
        f"extensions = ['sphinx_exercise', 'fixture_ext', *{extensions!r}]\n"
        "html_theme = 'basic'\nlanguage = 'pt_BR'\n", encoding="utf-8")
    (src / "index.rst").write_text(PAGE, encoding="utf-8")
    (src / "listed.py").write_text(LISTED, encoding="utf-8")
    Image.new("RGB", (40, 20), "white").save(src / "fig.png")
    # one process per build: docutils' node registry
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT / "tools")])}  # the extensions
    return subprocess.Popen([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(root / "html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    roots = {"bare": tmp_path_factory.mktemp("bare"), "hooked": tmp_path_factory.mktemp("hooked")}
    builds = {"bare": _start_build(roots["bare"], []), "hooked": _start_build(roots["hooked"], HOOKS)}
    errors = {name: build.communicate()[1] for name, build in builds.items()}  # the two run side by side
    for name, build in builds.items():
        assert build.returncode == 0, f"{name}: {errors[name]}"
    return {name: (root / "html" / "index.html").read_text(encoding="utf-8") for name, root in roots.items()}


def _imgs(page: str) -> list[str]:
    return re.findall(r"(?:<a [^>]*>)?<img [^>]*>", page)


def test_figures_load_lazily_and_link_their_full_size_file(pages):
    assert not any("loading=" in img or "figure-full-size" in img for img in _imgs(pages["bare"]))
    plain, scaled = _imgs(pages["hooked"])
    assert plain == (f'<a class="figure-full-size" href="_images/fig.png" title="{FIGURE_LINK_TITLE}">'
                     '<img loading="lazy" alt="Figura de teste" src="_images/fig.png" />')
    assert scaled.startswith('<a class="reference internal image-reference" href="_images/fig.png">'
                             '<img loading="lazy" alt="Figura reduzida"')  # Sphinx's own link kept


def test_pandas_tables_lose_what_html_has_no_place_for(pages):
    assert "<style scoped>" in pages["bare"] and 'halign="left"' in pages["bare"]
    assert "<tr><th></th>" in pages["bare"]
    table = pages["hooked"][pages["hooked"].index('<table border="1"'):]
    assert "<style" not in pages["hooked"] and "halign" not in table
    assert "<tr><td></td><th>a</th></tr>" in table and "<tr><th>0</th>" in table  # body headers stay


def test_citations_are_list_items_of_their_list(pages):
    assert 'role="doc-biblioentry"' in pages["bare"]
    assert 'role="doc-biblioentry"' not in pages["hooked"]
    assert re.search(r'<div role="list" class="citation-list">\n<div class="citation" id="[^"]+" '
                     r'role="listitem">', pages["hooked"])


def test_a_field_whose_body_is_a_list_holds_the_list(pages):
    assert re.search(r'<p><ul class="simple">', pages["bare"])
    assert "<p><ul" not in pages["hooked"]
    assert re.search(r'<dd class="field-odd"><ul class="simple">\n<li><p><strong>a</strong>', pages["hooked"])


def test_each_exercise_body_has_its_own_id(pages):
    assert re.findall(r'id="(exercise-content[^"]*)"', pages["bare"]) == ["exercise-content"] * 2
    assert re.findall(r'id="(exercise-content[^"]*)"', pages["hooked"]) == ["exercise-content",
                                                                            "exercise-content-2"]


def test_hidden_cell_toggles_hold_phrasing_content_named_by_their_text(pages):
    assert '<summary aria-label="Toggle hidden content">' in pages["bare"]
    summary = re.search(r"<summary[^>]*>.*?</summary>", pages["hooked"], re.S).group(0)
    assert summary == ('<summary>\n<span class="collapsed admonition-title">Mostrar o código</span>\n'
                       '<span class="expanded admonition-title">Ocultar o código</span>\n</summary>')


def test_a_listing_of_a_method_shows_its_signature_and_body_without_the_docstring(pages):
    assert ".. math:: y = 2x" in pages["bare"]
    listing = re.sub(r"<[^>]+>", "", re.search(r'<div class="highlight-python.*?</pre>', pages["hooked"], re.S).group(0))
    assert "O dobro" not in listing and ".. math::" not in listing
    assert listing.split("\n")[:2] == ["def dobro(self, x):", "    return 2 * x  # (n,)"]
