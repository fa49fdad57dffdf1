"""The "open an issue" button pre-fills a Portuguese title and body, not the theme's English text.

Upstream gap: sphinx-book-theme 1.3.0 hard-codes ``title=Issue on page …&body=Your issue content
here.`` in ``header_buttons/source.py`` (no option sets them); this handler, run after the theme's
buttons exist, rewrites that one URL.
"""

from __future__ import annotations

from urllib.parse import quote

from sphinx.application import Sphinx

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
    app.connect("html-page-context", _portuguese_issue_button, priority=510)  # after the theme's buttons
