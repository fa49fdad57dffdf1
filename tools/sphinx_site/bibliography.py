"""The reference list's entries as list items, amended as the page is written (node_html.py).

Upstream gap: docutils 0.21.2 writes each citation (sphinxcontrib-bibtex's bibliography entries)
with role="doc-biblioentry", a role that requires a role="doc-bibliography" parent, inside its own
role="list" wrapper; as role="listitem" the entries are what the wrapper says they are.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from .node_html import amend_html


def setup(app: Sphinx) -> None:
    amend_html(app, nodes.citation,
               lambda node, part: part.replace('role="doc-biblioentry"', 'role="listitem"'))
