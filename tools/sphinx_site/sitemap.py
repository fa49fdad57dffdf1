"""``sitemap.xml``, complete after an incremental build (configures sphinx-sitemap).

sphinx-sitemap writes ``sitemap.xml`` from ``html_baseurl`` (no language or version segment in the
URLs) but lists only the pages *this* build wrote; the pages an incremental build did not rewrite
are added back. Generated index pages and the 404 page are left out.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.config import Config


def _configure(app: Sphinx, config: Config) -> None:
    config.sitemap_url_scheme = "{link}"
    # _modules/*: the highlighted source pages of sphinx.ext.viewcode (reached from the API page)
    config.sitemap_excludes = [
        "404.html", "search.html", "genindex.html", "py-modindex.html", "_modules/*",
    ]


def _complete_sitemap(app: Sphinx, exception: Exception | None) -> None:
    """sphinx-sitemap lists only the pages written by *this* build; list every document."""
    links = getattr(app, "sitemap_links", None)
    if exception is not None or links is None or app.builder.format != "html":
        return
    entries = set()
    while not links.empty():
        entries.add(links.get_nowait())
    known = {link for link, _ in entries}
    excluded = set(app.config.sitemap_excludes)
    for doc in app.env.found_docs:
        link = doc + app.config.html_file_suffix if app.config.html_file_suffix else doc + ".html"
        if link not in known and link not in excluded:
            entries.add((link, None))
    for entry in sorted(entries):
        links.put(entry)


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _configure, priority=400)
    app.connect("build-finished", _complete_sitemap, priority=400)  # before sphinx-sitemap writes the file
