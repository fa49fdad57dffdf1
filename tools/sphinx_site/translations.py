"""Portuguese theme strings: the gaps of the themes' own catalogs, and the issue button's text.

``tools/locale/pt_BR/LC_MESSAGES/*.po`` are compiled at build time into the build directory (never
committed) and registered as fallback catalogs.

The "open an issue" button pre-fills a Portuguese title and body, not the theme's English text.
Upstream gap: sphinx-book-theme 1.3.0 hard-codes ``title=Issue on page …&body=Your issue content
here.`` in ``header_buttons/source.py`` (no option sets them); that handler, run after the theme's
buttons exist, rewrites that one URL.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from sphinx.application import Sphinx

from .identity import TOOLS

LOCALE = TOOLS / "locale"


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


ISSUE_TITLE = "Problema na página /{page}.html"
ISSUE_BODY = "Descreva o problema aqui."


def _buttons(buttons: list[dict]):
    for button in buttons:
        yield button
        yield from _buttons(button.get("buttons", []))


def _portuguese_issue_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    for button in _buttons(context.get("header_buttons", [])):
        if button.get("label") == "source-issues-button" and "/issues/new?" in button.get("url", ""):
            base = button["url"].split("?", 1)[0]
            title = quote(ISSUE_TITLE.format(page=pagename), safe="")
            button["url"] = f"{base}?title={title}&body={quote(ISSUE_BODY, safe='')}"


def setup(app: Sphinx) -> None:
    _compile_catalogs(app)
    app.connect("html-page-context", _portuguese_issue_button, priority=510)  # after the theme's buttons
