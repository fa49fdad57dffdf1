"""Run in the browser: an "Executar no navegador" button in every notebook page's header.

Next to the download and Binder menus, it opens the page's notebook in the site's own JupyterLite
app (``lite/``, built by ``tools/build_lite.py``), where it runs on Pyodide with nothing fetched from
elsewhere. Pages with a short in-browser variant (``lite.HEAVY``) say so on the button.
"""

from __future__ import annotations

from sphinx.application import Sphinx

from .lite import HEAVY, LITE_DIR

RUN_LABEL = "Executar no navegador"
RUN_TOOLTIP = "Abrir este notebook no JupyterLite do site e executá-lo no navegador (Python via Pyodide)"
RUN_SHORT_SUFFIX = " (versão curta)"
RUN_SHORT_TOOLTIP = ("O treinamento desta página é pesado demais para o navegador: abre uma versão curta "
                     "(menos passos), cujos números diferem dos da página")


def _run_in_browser_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    url = context["pathto"](f"{LITE_DIR}/notebooks/index.html", 1) + f"?path={pagename}.ipynb"
    short = pagename in HEAVY
    button = {"type": "link", "text": RUN_LABEL + (RUN_SHORT_SUFFIX if short else ""),
              "tooltip": RUN_SHORT_TOOLTIP if short else RUN_TOOLTIP, "icon": "fa-solid fa-play",
              "url": url, "label": "run-in-browser"}
    buttons = context.setdefault("header_buttons", [])
    groups = [i for i, b in enumerate(buttons) if b.get("label") == "launch-buttons"]
    buttons.insert(groups[0] if groups else len(buttons), button)


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _run_in_browser_button, priority=510)  # after the theme's buttons
