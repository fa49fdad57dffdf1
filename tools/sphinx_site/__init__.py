"""The site's Sphinx extension: settings and fixes of the published site, one concern per module.

Loaded through ``sphinx.local_extensions`` in ``_config.yml`` (``sphinx_site: tools/``: Jupyter Book
puts ``tools/`` on the import path and loads this package). Each module registers its own config
handlers and events in its ``setup(app)``; :func:`setup` below calls them in build order. Handlers
that share an event and a priority run in the order they are connected, so the order below is part
of the behaviour: keep it. The post-processing of the written pages runs in one handler whose steps
are listed, in order, in ``publish.py``.

Neither ``tools/build_lite.py`` nor ``tools/export_executed.py`` is imported here; the in-browser
build imports what it shares with the site from this package (``downloads``).
"""

from __future__ import annotations

from sphinx.application import Sphinx

from . import (
    assets,
    bibliography,
    downloads,
    html_fixes,
    identity,
    listings,
    mathjax,
    notebook_markdown,
    publish,
    search,
    sitemap,
    translations,
)

# Third-party extensions that the modules below configure, loaded first and in this order.
THIRD_PARTY = ("sphinx.ext.mathjax", "notfound.extension", "sphinx_sitemap", "sphinx.ext.extlinks")


def setup(app: Sphinx) -> dict:
    for name in THIRD_PARTY:
        app.setup_extension(name)
    identity.setup(app)  # repository, site URL and author, derived from the run (first of all)
    sitemap.setup(app)  # the 404 page under the Pages project path; sitemap.xml; the root redirect page
    assets.setup(app)  # the site's stylesheets, script and templates; outputs/; sphinx-thebe's files dropped
    translations.setup(app)  # Portuguese theme strings and issue button
    mathjax.setup(app)  # math pre-rendered at build time, MathJax's fonts served by the site
    search.setup(app)  # the search box's placeholder, search scripts, a <meta name="description"> per page
    downloads.setup(app)  # the attn wheel, the downloads' setup cell, the "Executar no navegador" button
    bibliography.setup(app)  # the Portuguese author-year citation style; reference entries as list items
    html_fixes.setup(app)  # third-party HTML fixed by node visitors and post-transforms
    listings.setup(app)  # an included function or class of attn without its docstring
    notebook_markdown.setup(app)  # each notebook page's runnable notebook, its prose as the page shows it
    publish.setup(app)  # the published HTML's post-processing, last (see publish.py)
    # env_version: the doctrees depend on this extension's transform (listings.py); a new one re-reads
    return {"version": "1.0", "env_version": 2, "parallel_read_safe": True, "parallel_write_safe": True}
