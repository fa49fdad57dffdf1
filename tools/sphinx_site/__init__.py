"""The site's Sphinx extension: settings and fixes of the published site, one concern per module.

Loaded through ``sphinx.local_extensions`` in ``_config.yml`` (``sphinx_site: tools/``: Jupyter Book
puts ``tools/`` on the import path and loads this package). Each module registers its own config
handlers and events in its ``setup(app)``; :func:`setup` below calls them in build order. Handlers
that share an event and a priority run in the order they are connected, so the order below is part
of the behaviour: keep it. The post-processing of the written pages runs in one handler whose steps
are listed, in order, in ``publish.py``.

Neither ``tools/build_lite.py`` nor ``tools/export_executed.py`` is imported here; the in-browser
build imports what it shares with the site from this package (``downloads``, ``lite``).
"""

from __future__ import annotations

from sphinx.application import Sphinx

from . import (
    api_fields,
    assets,
    bibliography,
    citations,
    code_toggles,
    dataframes,
    descriptions,
    downloads,
    exercises,
    figures,
    identity,
    issue_button,
    jupyter_markdown,
    mathjax,
    not_found,
    outputs,
    publish,
    run_button,
    sitemap,
    thebe,
    translations,
)

# Third-party extensions that the modules below configure, loaded first and in this order.
THIRD_PARTY = ("sphinx.ext.mathjax", "notfound.extension", "sphinx_sitemap", "sphinx.ext.extlinks")


def setup(app: Sphinx) -> dict:
    for name in THIRD_PARTY:
        app.setup_extension(name)
    identity.setup(app)  # repository, site URL and author, derived from the run (first of all)
    not_found.setup(app)  # the 404 page under the Pages project path
    sitemap.setup(app)  # sitemap.xml settings, completed after incremental builds
    assets.setup(app)  # the site's stylesheets, script and template overrides
    translations.setup(app)  # Portuguese theme strings
    thebe.setup(app)  # sphinx-thebe's files dropped while Thebe is off
    mathjax.setup(app)  # MathJax's fonts served by the site, no MathJax in the browser
    descriptions.setup(app)  # a Portuguese <meta name="description"> per page
    run_button.setup(app)  # the "Executar no navegador" button on notebook pages
    issue_button.setup(app)  # the issue button's Portuguese title and body
    citations.setup(app)  # the Portuguese author-year citation style
    bibliography.setup(app)  # the reference list's entries as list items (citation visitor)
    code_toggles.setup(app)  # hidden cells' toggles: no English label, phrasing titles (myst-nb's node)
    dataframes.setup(app)  # pandas tables in cell outputs: valid HTML (raw-node visitor)
    figures.setup(app)  # figures: lazy loading, a link to the full-size file (image visitor)
    api_fields.setup(app)  # API "Returns" lists not wrapped in a paragraph (post-transform)
    exercises.setup(app)  # one id per exercise body (post-transform)
    outputs.setup(app)  # the lessons' deliverable files under outputs/
    jupyter_markdown.setup(app)  # each notebook page's runnable notebook, its prose as the page shows it
    downloads.setup(app)  # the attn wheel and the downloads' setup cell
    publish.setup(app)  # the published HTML's post-processing, last (see publish.py)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
