"""The root ``index.html``: a complete redirect page (``lang``, ``<title>``, canonical URL).

Upstream gap: sphinx-external-toc 1.1.0 writes a bare ``<meta http-equiv="Refresh">`` as the whole
file (no ``lang``, no ``<title>``). Run when the build finishes (publish.py), after it.
"""

from __future__ import annotations

import html
from pathlib import Path

from sphinx.application import Sphinx

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
