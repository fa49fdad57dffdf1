"""The site's own stylesheets, script and template overrides, added to every page.

``tools/static/site.css`` (captions readable, figures kept white in dark mode, table cells apart);
``tools/static/site-a11y.css`` and ``site-a11y.js`` (accessibility, validity and phone-width fixes,
described in the files); ``tools/templates/`` overrides the theme components whose labels are
hard-coded in English. The two generated stylesheets (the pre-rendered math's and the icon subsets')
are written when the build finishes (mathjax.py, icons.py). The stylesheets' order here is their
order in every page.

Sphinx links a stylesheet with a ``?v=<checksum>`` of the file it finds in ``_static/`` when it writes
a page. The stylesheets written when the build finishes (the two above, myst-nb's and
sphinx-exercise's) are not there yet in a fresh build, so its pages link them bare; an incremental
build would find the last build's copies and add their checksum (of a file about to be replaced) to
the pages it rewrites. Those copies are removed when writing starts, so every build links them bare
and an incremental build writes the bytes a fresh one would.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

from .icons import ICON_CSS
from .mathjax import MATH_CSS
from .paths import TOOLS


def _configure(app: Sphinx, config: Config) -> None:
    config.html_static_path = [*config.html_static_path, str(TOOLS / "static")]
    config.html_css_files = [*config.html_css_files, "site.css", "site-a11y.css", MATH_CSS, ICON_CSS]
    config.templates_path = [str(TOOLS / "templates"), *config.templates_path]  # before the themes
    config.html_context = {"default_mode": "auto", **config.html_context}  # pydata theme: no console error


# In _static/, written when the build finishes: by mathjax.py, icons.py, myst-nb and sphinx-exercise.
WRITTEN_LAST = (MATH_CSS, ICON_CSS, "mystnb.*.css", "exercise.css")


def _drop_last_builds_copies(app: Sphinx, builder) -> None:
    static = Path(app.outdir) / "_static"
    for pattern in WRITTEN_LAST:
        for path in static.glob(pattern):
            path.unlink()


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _configure, priority=400)
    app.connect("write-started", _drop_last_builds_copies)
    app.add_js_file("site-a11y.js", loading_method="defer")
