"""One node's HTML, amended as the page is written: the translator's own visitor writes the node,
then a rewrite runs over the few strings that visitor appended, and over nothing else of the page.

The hook for third-party HTML that is right but for an attribute or a wrapper: the modules that
use it (figures.py, dataframes.py, bibliography.py) register a rewrite per node class, and each
names the upstream gap it fills. The rewrite sees only the node's own markup, never the theme's or
another node's; the doctree is left as it is (the runnable notebooks are written from it).
"""

from __future__ import annotations

from collections.abc import Callable

from docutils import nodes
from sphinx.application import Sphinx

Rewrite = Callable[[nodes.Element, str], str]


def amend_html(app: Sphinx, node_class: type[nodes.Element], rewrite: Rewrite) -> None:
    """After the HTML translator's ``visit_<node>``, ``rewrite(node, part)`` each string it appended.

    The translator's class method runs (the theme's translator keeps its own), so one node class
    takes one rewrite; ``nodes.SkipNode`` from the visitor still skips the children.
    """
    name = node_class.__name__

    def visit(self, node: nodes.Element) -> None:
        start = len(self.body)
        try:
            getattr(type(self), f"visit_{name}")(self, node)
        finally:
            self.body[start:] = [rewrite(node, part) for part in self.body[start:]]

    def depart(self, node: nodes.Element) -> None:
        getattr(type(self), f"depart_{name}")(self, node)

    app.add_node(node_class, override=True, html=(visit, depart))
