"""The "Mostrar o código" toggles of hidden cells, written by our own visitor of myst-nb's node.

Upstream gap: myst-nb 1.4.0 (visit_HideCellInput) writes <summary aria-label="Toggle hidden
content"> holding two <p> titles: a summary takes phrasing content only, and an English label
overrides the visible Portuguese text as its name. This visitor writes the same element with no
aria-label and <span> titles (site.css styles them by class, as before).
"""

from __future__ import annotations

from html import escape

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
from sphinx.application import Sphinx


def visit_hidden_cell(self, node: nodes.Element) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<span class="collapsed admonition-title">{escape(node["prompt_show"])}</span>\n')
    self.body.append(f'<span class="expanded admonition-title">{escape(node["prompt_hide"])}</span>\n')
    self.body.append("</summary>\n")


def setup(app: Sphinx) -> None:
    # After myst_nb's setup (Jupyter Book loads it before the local extensions): this one wins.
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_HideCellInput))
