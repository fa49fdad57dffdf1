"""A Portuguese ``<meta name="description">`` on every page: its first paragraph of prose."""

from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.application import Sphinx

DESCRIPTION_CHARS = 155
DESCRIPTION_SKIPS = (nodes.Admonition, nodes.sidebar, nodes.topic, nodes.table, nodes.citation)


def _inside(node: nodes.Node, kinds: tuple) -> bool:
    while node.parent is not None:
        node = node.parent
        if isinstance(node, kinds):
            return True
    return False


def _page_description(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """A Portuguese <meta name="description">: the page's first paragraph of prose without math (search
    engines show it under the title), or the page and book titles for generated pages."""
    text = ""
    if doctree is not None:
        for para in doctree.findall(nodes.paragraph):
            if para.next_node(nodes.math) or _inside(para, DESCRIPTION_SKIPS):
                continue
            words = re.sub(r"\s+", " ", para.astext()).strip()
            if len(words) >= 40:
                text = words
                break
    if not text:
        title = re.sub(r"<[^>]+>", "", context.get("title") or "")
        text = (f"{title}. " if title else "") + (
            f"{context.get('docstitle')}: curso em português que implementa a atenção e o Transformer "
            "do zero, em NumPy.")
    if len(text) > DESCRIPTION_CHARS:
        text = text[:DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    context["metatags"] = context.get("metatags", "") + (
        f'\n<meta name="description" content="{html.escape(text, quote=True)}" />')


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _page_description)
