"""Published HTML: the post-processing of the written pages when the build finishes, in one place.

Light, accessible, valid pages. The steps below run in this order, each idempotent, so an
incremental build leaves already-processed pages as they are. Each page is read once, handed
through the text steps, and written back only if it changed. Only what has no earlier hook is
here: the fixes a Sphinx hook can make run as each page is written (html_fixes.py and the modules
listed in __init__.py; the theme's templates are overridden in ``tools/templates/``). The modules
whose only work is a step below (icons.py) have no ``setup()`` of their own.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from .assets import compress_images
from .icons import subset_icons, theme_icon_fixes
from .mathjax import prerender_math
from .search import drop_search_scripts
from .sitemap import write_root_redirect


def _content_pages(outdir: Path) -> list[Path]:
    return sorted(
        p for p in outdir.rglob("*.html")
        if not p.relative_to(outdir).parts[0].startswith(("_static", "_sources", "_images", "lite"))
    )  # lite/: the JupyterLite app (tools/build_lite.py), not pages of the book


def _publish_html(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    write_root_redirect(app)  # index.html: a complete redirect page (sitemap.py)
    outdir = Path(app.outdir)
    pages = {path: path.read_text(encoding="utf-8") for path in _content_pages(outdir)}
    before = dict(pages)
    prerender_math(app, pages)  # math rendered at build time (mathjax.py)
    for path, text in pages.items():
        pages[path] = theme_icon_fixes(text)  # the theme's icons: no script, aria-hidden (icons.py)
    subset_icons(app, pages)  # icon font subsets, trimmed theme stylesheet (icons.py)
    drop_search_scripts(app, pages)  # search scripts on the search page only (search.py)
    compress_images(app)  # palette PNGs (assets.py)
    for path, text in pages.items():
        if text != before[path]:
            path.write_text(text, encoding="utf-8")


def setup(app: Sphinx) -> None:
    app.connect("build-finished", _publish_html, priority=900)  # after sphinx-external-toc's index.html
