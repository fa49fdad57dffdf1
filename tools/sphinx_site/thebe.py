"""No dead third-party code: with Thebe off, sphinx-thebe's scripts and styles leave the pages.

Upstream gap: sphinx-thebe 0.3.1 (loaded by jupyter-book 1.0.4) adds its configuration script, which
names an unpkg.com URL, and ``sphinx-thebe.js`` to every page whether Thebe is on or not.
"""

from __future__ import annotations

from sphinx.application import Sphinx


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


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _drop_unused_thebe, priority=900)  # after the themes add the files
