"""HTML the validator and axe-core accept: fixes, by regular expression, of the written pages.

pandas tables without ``<style scoped>``/``halign`` and with a ``<td>`` corner cell, API "Returns"
lists not wrapped in ``<p>``, one ``id="exercise-content"`` per page, citation list items with
``role="listitem"``, icons hidden from screen readers, dropdown titles of phrasing content, the
primary sidebar a labelled landmark, figures that load as the reader scrolls to them. Each fix names
the upstream gap it fills, so that a version bump can delete it. Run when the build finishes
(publish.py); idempotent.
"""

from __future__ import annotations

import re

# Upstream gap: pydata-sphinx-theme 0.17.1 loads the whole Font Awesome script (icons.py serves subsets).
ICON_SCRIPT = re.compile(r'\s*(<!-- So that users can add custom icons -->\s*)?'
                         r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# Upstream gap: pydata-sphinx-theme 0.17.1's components write decorative <i class="fa-..."> icons
# without aria-hidden.
ICON_ELEMENT = re.compile(r'<(i|span) class="([^"]*\bfa-[^"]*)"(?![^>]*aria-hidden)')
# Upstream gap: pandas 3.1.1 DataFrame._repr_html_ writes <style scoped> (no such attribute in HTML).
PANDAS_STYLE = re.compile(r'<style scoped>.*?</style>\s*', re.S)
# Upstream gap: pydata-sphinx-theme 0.17.1 layout.html: the primary sidebar is a <div>, no landmark.
SIDEBAR = '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">'
# Upstream gap: Sphinx 7.4.7's HTML writer gives <img> no loading attribute.
LAZY_FIGURE = re.compile(r'<img (?![^>]*\bloading=)([^>]*\bsrc="[^"]*_images/)')
# Upstream gap: myst-nb 1.4.0 writes a cell's figure as a bare <img>, shrunk to the column (a phone's
# 342 px for a 1000 px multi-panel figure) with no way to see it at full size. A link to the image
# file opens it (the img's alt text names the link). Sphinx's own scaled images are links already.
FIGURE_IMG = re.compile(r'(<a [^>]*>\s*)?(<img [^>]*\bsrc="([^"]*_images/[^"]+)"[^>]*>)')
FIGURE_LINK_TITLE = "Abrir a figura em tamanho real"
# Upstream gap: Sphinx 7.4.7's basic layout, pydata-sphinx-theme 0.17.1 and sphinx-book-theme 1.3.0
# each write a <meta name="viewport">.
VIEWPORT = re.compile(r'\s*<meta name="viewport"[^>]*>')


def _unique_ids(text: str, name: str) -> str:
    """The 2nd, 3rd... ``id="name"`` of a page become ``name-2``, ``name-3``... (nothing links to them)."""
    count = 0

    def number(_match):
        nonlocal count
        count += 1
        return f'id="{name}"' if count == 1 else f'id="{name}-{count}"'

    return re.sub(rf'id="{name}(?:-\d+)?"', number, text)


def _figure_links(text: str) -> str:
    def link(match: re.Match) -> str:
        if match.group(1):  # already inside a link
            return match.group(0)
        return (f'<a class="figure-full-size" href="{match.group(3)}" title="{FIGURE_LINK_TITLE}">'
                f"{match.group(2)}</a>")

    return FIGURE_IMG.sub(link, text)


def _one_viewport(text: str) -> str:
    """The first ``<meta name="viewport">`` of a page, without the others."""
    seen = False

    def keep_first(match: re.Match) -> str:
        nonlocal seen
        keep, seen = not seen, True
        return match.group(0) if keep else ""

    return VIEWPORT.sub(keep_first, text)


def valid_accessible_html(text: str) -> str:
    """Fixes of HTML written by pandas, napoleon, sphinx-exercise, sphinxcontrib-bibtex and the theme."""
    text = ICON_SCRIPT.sub("", text)
    text = ICON_ELEMENT.sub(r'<\1 aria-hidden="true" class="\2"', text)
    text = PANDAS_STYLE.sub("", text)  # its rules are in site.css
    # Upstream gap: pandas 3.1.1 writes halign="left" on MultiIndex headers (not an HTML attribute).
    text = re.sub(r'(<th[^>]*?) halign="[a-z]+"', r"\1", text)
    # Upstream gap: pandas 3.1.1 writes an empty <th> as the header's corner cell (axe: empty header).
    text = re.sub(r'(<table[^>]*class="dataframe[^"]*"[^>]*>\s*<thead>.*?</thead>)',
                  lambda m: re.sub(r"<th></th>", "<td></td>", m.group(1)), text, flags=re.S)
    # Upstream gap: Sphinx 7.4.7 docfields.Field.make_field wraps a field body in a paragraph, so
    # napoleon's multi-item "Returns" list lands in <p>.
    text = re.sub(r'<p>(<ul class="simple">.*?</ul>)\s*</p>', r"\1", text, flags=re.S)
    # Upstream gap: sphinx-exercise 1.2.1 gives every exercise's section id="exercise-content".
    text = _unique_ids(text, "exercise-content")
    # Upstream gap: docutils 0.21.2 writes role="doc-biblioentry" without the role="doc-bibliography"
    # parent that role requires (inside its own role="list" wrapper).
    text = text.replace('role="doc-biblioentry"', 'role="listitem"')
    # Dropdown titles (myst-nb hidden cells, sphinx-togglebutton): phrasing content only, and named by
    # their visible Portuguese text rather than an English aria-label.
    # Upstream gap: myst-nb 1.4.0 (visit_HideCellInput) writes <summary aria-label="Toggle hidden
    # content"> holding <p> titles.
    text = text.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    text = re.sub(r"<summary([^>]*)>(.*?)</summary>",
                  lambda m: f"<summary{m.group(1)}>"
                  + re.sub(r"</p>", "</span>", re.sub(r"<p\b", "<span", m.group(2))) + "</summary>",
                  text, flags=re.S)
    text = text.replace(SIDEBAR, SIDEBAR[:-1] + ' role="complementary" aria-label="Navegação do curso">')
    text = LAZY_FIGURE.sub(r'<img loading="lazy" \1', text)  # figures load as the reader scrolls to them
    text = _figure_links(text)
    text = _one_viewport(text)
    # A display formula takes keyboard focus (mathjax.py: it may scroll sideways); a focusable
    # element needs a name (its MathML inside still reads as the formula).
    text = text.replace('<mjx-container tabindex="0" class=', '<mjx-container tabindex="0" role="group" '
                        'aria-label="Fórmula" class=')
    return text
