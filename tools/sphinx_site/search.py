"""No dead scripts: Sphinx's search index and tools load only on the search page.

Upstream gap: pydata-sphinx-theme 0.17.1 loads them on every page for a search-as-you-type that
this site does not enable (``search_as_you_type`` off). Run when the build finishes (publish.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

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
