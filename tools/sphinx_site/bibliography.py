"""The bibliography: Portuguese citations, and the reference list's entries as list items.

- Citations in Portuguese: sphinxcontrib-bibtex's ``author_year`` with "e" between authors, selected
  in ``_config.yml`` (``bibtex_reference_style: author_year_pt``): "Jain e Wallace (2019)".
- Upstream gap: docutils 0.21.2 writes each citation (sphinxcontrib-bibtex's bibliography entries)
  with role="doc-biblioentry", a role that requires a role="doc-bibliography" parent, inside its own
  role="list" wrapper; as role="listitem" the entries are what the wrapper says they are. Amended as
  the page is written (``html_fixes.amend_html``).
"""

from __future__ import annotations

import dataclasses

from docutils import nodes
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

from .html_fixes import amend_html


@dataclasses.dataclass
class PortugueseAuthorYearStyle(AuthorYearReferenceStyle):
    """Author-year citations joined with "e": "Jain e Wallace (2019)", "Bahdanau, Cho e Bengio"."""

    person: PersonStyle = dataclasses.field(default_factory=lambda: PersonStyle(sep2=" e ", last_sep=" e "))


def setup(app: Sphinx) -> None:
    register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_pt", PortugueseAuthorYearStyle)
    amend_html(app, nodes.citation,
               lambda node, part: part.replace('role="doc-biblioentry"', 'role="listitem"'))
