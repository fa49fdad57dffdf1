"""Search: the search box's Portuguese placeholder, the search scripts on the search page only, and
the description search engines show under each page's title.

- Jupyter Book 1.0.4 sets ``html_theme_options.search_bar_text`` to an English default, which no
  catalog translates.
- Upstream gap: pydata-sphinx-theme 0.17.1 loads Sphinx's search index and tools on every page for a
  search-as-you-type that this site does not enable (``search_as_you_type`` off). They are dropped
  from the other pages by a regular expression when the build finishes (publish.py): the tags come
  from the theme's ``layout.html`` together with Sphinx's own script files.
- A Portuguese ``<meta name="description">`` on every page: its first paragraph of prose.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config


def _search_bar_text(app: Sphinx, config: Config) -> None:
    if config.html_theme_options.get("search_bar_text") in (None, "Search this book..."):
        config.html_theme_options["search_bar_text"] = "Buscar neste livro..."


SEARCH_SCRIPTS = re.compile(r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|'
                            r'searchindex\.js)"></script>')


def drop_search_scripts(app: Sphinx, pages: dict[Path, str]) -> None:
    """pydata-sphinx-theme loads the search index (80 KB) and tools on every page for its
    search-as-you-type; with that off, only the search page (which loads its own) needs them."""
    if app.config.html_theme_options.get("search_as_you_type"):
        return
    search = Path(app.outdir) / "search.html"
    for path, text in pages.items():
        if path != search:
            pages[path] = SEARCH_SCRIPTS.sub("", text)


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
    app.connect("config-inited", _search_bar_text, priority=400)
    app.connect("html-page-context", _page_description)
