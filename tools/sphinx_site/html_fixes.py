"""The theme's icons, fixed by regular expression over the written pages (publish.py; idempotent).

What stays here has no hook before the page is written:

- the Font Awesome script tag comes from pydata-sphinx-theme's webpack-generated macro
  ``head_js_preload`` (``static/webpack-macros.html``), together with the preloads that carry the
  theme build's digest: a template override would have to copy that digest, which every theme
  release changes;
- the decorative icons come from some ten theme templates of two packages (sphinx-book-theme's
  button macros and toggles, pydata-sphinx-theme's prev/next, search field and button, back-to-top
  button in its ``content`` block...): one override per template would fork each of them for one
  attribute. (Our own templates write ``aria-hidden`` themselves.)

The fixes that a Sphinx hook can make live with that hook: figures.py, dataframes.py,
bibliography.py, code_toggles.py (node visitors), api_fields.py, exercises.py (post-transforms),
``tools/templates/layout.html`` (the viewport meta, the sidebar landmark) and mathjax.py (our own
formulas' focus and name).
"""

from __future__ import annotations

import re

# Upstream gap: pydata-sphinx-theme 0.17.1 loads the whole Font Awesome script (icons.py serves subsets).
ICON_SCRIPT = re.compile(r'\s*(<!-- So that users can add custom icons -->\s*)?'
                         r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# Upstream gap: pydata-sphinx-theme 0.17.1's and sphinx-book-theme 1.3.0's components write
# decorative <i class="fa-..."> icons without aria-hidden.
ICON_ELEMENT = re.compile(r'<(i|span) class="([^"]*\bfa-[^"]*)"(?![^>]*aria-hidden)')


def theme_icon_fixes(text: str) -> str:
    """No Font Awesome script; every Font Awesome icon hidden from screen readers."""
    text = ICON_SCRIPT.sub("", text)
    return ICON_ELEMENT.sub(r'<\1 aria-hidden="true" class="\2"', text)
