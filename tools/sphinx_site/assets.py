"""The site's own files: stylesheets, script and template overrides; compressed figures; the lessons'
deliverables; no dead third-party code.

- ``tools/static/site.css`` (captions readable, figures kept white in dark mode, table cells apart);
  ``tools/static/site-a11y.css`` and ``site-a11y.js`` (accessibility, validity and phone-width fixes,
  described in the files); ``tools/templates/`` overrides the theme components whose labels are
  hard-coded in English. The two generated stylesheets (the pre-rendered math's and the icon subsets')
  are written when the build finishes (mathjax.py, icons.py). The stylesheets' order here is their
  order in every page.
- Sphinx links a stylesheet with a ``?v=<checksum>`` of the file it finds in ``_static/`` when it
  writes a page. The stylesheets written when the build finishes (the two above, myst-nb's and
  sphinx-exercise's) are not there yet in a fresh build, so its pages link them bare; an incremental
  build would find the last build's copies and add their checksum (of a file about to be replaced) to
  the pages it rewrites. Those copies are removed when writing starts, so every build links them bare
  and an incremental build writes the bytes a fresh one would.
- Figures compressed: notebook PNGs become 256-colour palette PNGs (about a third of the bytes, the
  same look; only opaque images). Run when the build finishes (publish.py).
- The lessons' deliverable files: ``outputs/*.md`` published byte for byte at ``<site>/outputs/``
  (the prompt files that lessons 5.10 and 7.02 ask for; the prompt pages link them there and show
  the same files with ``literalinclude``).
- With Thebe off, sphinx-thebe's scripts and styles leave the pages. Upstream gap: sphinx-thebe 0.3.1
  (loaded by jupyter-book 1.0.4) adds its configuration script, which names an unpkg.com URL, and
  ``sphinx-thebe.js`` to every page whether Thebe is on or not.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

from .icons import ICON_CSS
from .identity import ROOT, TOOLS
from .mathjax import MATH_CSS


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


def _drop_unused_thebe(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if (app.config.html_theme_options.get("launch_buttons") or {}).get("thebe"):
        return
    context["script_files"] = [
        js for js in context.get("script_files", [])
        if "sphinx-thebe" not in str(getattr(js, "filename", "") or "")
        and "THEBE_JS_URL" not in str(getattr(js, "attributes", {}).get("body", ""))
    ]
    context["css_files"] = [
        css for css in context.get("css_files", [])
        if "sphinx-thebe" not in str(getattr(css, "filename", "") or "")
    ]


def compress_images(app: Sphinx) -> None:
    """Opaque PNG figures as 256-colour palette PNGs (notebook figures: about a third of the bytes)."""
    from PIL import Image

    for path in sorted((Path(app.outdir) / "_images").glob("*.png")):
        with Image.open(path) as image:
            if image.mode == "P":
                continue  # already done by an earlier build
            rgba = image.convert("RGBA")
        if rgba.getextrema()[3][0] < 255:
            continue  # transparency: keep as drawn
        buffer = io.BytesIO()
        rgba.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            buffer, "PNG", optimize=True)
        if buffer.tell() < path.stat().st_size:
            path.write_bytes(buffer.getvalue())


OUTPUTS = ROOT / "outputs"  # the lessons' deliverable files, published as they are


def _copy_outputs(app: Sphinx, exception: Exception | None) -> None:
    """Publish ``outputs/*.md`` at ``<site>/outputs/`` byte for byte (the pages link them there)."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "outputs"
    target.mkdir(exist_ok=True)
    for path in sorted(OUTPUTS.glob("*.md")):
        shutil.copyfile(path, target / path.name)


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _configure, priority=400)
    app.connect("write-started", _drop_last_builds_copies)
    app.add_js_file("site-a11y.js", loading_method="defer")
    app.connect("html-page-context", _drop_unused_thebe, priority=900)  # after the themes add the files
    app.connect("build-finished", _copy_outputs)
