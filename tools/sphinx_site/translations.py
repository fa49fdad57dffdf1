"""Portuguese theme strings: the gaps of the themes' own catalogs.

``tools/locale/pt_BR/LC_MESSAGES/*.po`` are compiled at build time into the build directory (never
committed) and registered as fallback catalogs. The search box's placeholder is set here: Jupyter
Book 1.0.4 sets ``html_theme_options.search_bar_text`` to an English default, which no catalog
translates.
"""

from __future__ import annotations

from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from sphinx.application import Sphinx
from sphinx.config import Config

from .paths import TOOLS

LOCALE = TOOLS / "locale"


def _search_bar_text(app: Sphinx, config: Config) -> None:
    if config.html_theme_options.get("search_bar_text") in (None, "Search this book..."):
        config.html_theme_options["search_bar_text"] = "Buscar neste livro..."


def _compile_catalogs(app: Sphinx) -> None:
    """Compile tools/locale/*/LC_MESSAGES/*.po into the build dir and register them as fallbacks."""
    target = Path(app.doctreedir).parent / "site-locale"
    for po_path in sorted(LOCALE.glob("*/LC_MESSAGES/*.po")):
        mo_path = target / po_path.relative_to(LOCALE).with_suffix(".mo")
        mo_path.parent.mkdir(parents=True, exist_ok=True)
        with po_path.open("rb") as po_file:
            catalog = read_po(po_file)
        with mo_path.open("wb") as mo_file:
            write_mo(mo_file, catalog)
    for domain in sorted({p.stem for p in LOCALE.glob("*/LC_MESSAGES/*.po")}):
        app.add_message_catalog(domain, str(target))


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _search_bar_text, priority=400)
    _compile_catalogs(app)
