"""Where readers and search engines land: ``sitemap.xml``, the 404 page and the root ``index.html``.

- ``sitemap.xml``, complete after an incremental build (configures sphinx-sitemap). sphinx-sitemap
  writes it from ``html_baseurl`` (no language or version segment in the URLs) but lists only the
  pages *this* build wrote; the pages an incremental build did not rewrite are added back. Generated
  index pages and the 404 page are left out.
- The 404 page, under the GitHub Pages project path (configures sphinx-notfound-page).
  sphinx-notfound-page writes absolute links; their prefix is the path of ``html.baseurl``
  (``/<repository>/``), so the page keeps its styles and navigation at any depth of a missing URL.
- The root ``index.html``: a complete redirect page (``lang``, ``<title>``, canonical URL).
  Upstream gap: sphinx-external-toc 1.1.0 writes a bare ``<meta http-equiv="Refresh">`` as the whole
  file (no ``lang``, no ``<title>``). Run when the build finishes (publish.py), after it.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import urlparse

from sphinx.application import Sphinx
from sphinx.config import Config

NOT_FOUND_TITLE = "Página não encontrada"
NOT_FOUND_BODY = (
    "<h1>Página não encontrada</h1>\n"
    "<p>O endereço pedido não existe neste site. Ele pode ter mudado de lugar ou conter um erro "
    "de digitação.</p>\n"
    '<p><a href="{prefix}">Voltar à página inicial do curso</a> ou use a busca e o índice ao '
    "lado.</p>\n"
)


def site_prefix(config: Config) -> str:
    """The URL path of the site's root (``/<repository>/``), from ``html_baseurl``."""
    path = urlparse(config.html_baseurl or "").path or "/"
    return path if path.endswith("/") else path + "/"


def _configure_not_found(app: Sphinx, config: Config) -> None:
    prefix = site_prefix(config)
    config.notfound_urls_prefix = prefix
    config.notfound_context = {
        "title": NOT_FOUND_TITLE,
        "body": NOT_FOUND_BODY.format(prefix=prefix),
    }


def _configure_sitemap(app: Sphinx, config: Config) -> None:
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


REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<meta name="description" content="{title}: página inicial do curso.">
<link rel="canonical" href="{canonical}">
<meta http-equiv="refresh" content="0; url={target}">
</head>
<body>
<p>Esta página leva à <a href="{target}">página inicial do curso</a>.</p>
</body>
</html>
"""


def write_root_redirect(app: Sphinx) -> None:
    """index.html: a complete page (lang, title, canonical) instead of sphinx-external-toc's bare
    <meta> redirect."""
    if app.config.root_doc == "index":
        return
    target = app.builder.get_target_uri(app.config.root_doc)
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    (Path(app.outdir) / "index.html").write_text(REDIRECT_PAGE.format(
        lang=(app.config.language or "en").replace("_", "-"), title=html.escape(app.config.html_title),
        canonical=html.escape(base + target), target=html.escape(target)), encoding="utf-8")


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _configure_not_found, priority=400)  # after identity.py set html_baseurl
    app.connect("config-inited", _configure_sitemap, priority=400)
    app.connect("build-finished", _complete_sitemap, priority=400)  # before sphinx-sitemap writes the file
