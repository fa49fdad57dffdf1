"""Citations in Portuguese: sphinxcontrib-bibtex's ``author_year`` with "e" between authors.

Selected in ``_config.yml`` (``bibtex_reference_style: author_year_pt``): "Jain e Wallace (2019)".
"""

from __future__ import annotations

import dataclasses

from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


@dataclasses.dataclass
class PortugueseAuthorYearStyle(AuthorYearReferenceStyle):
    """Author-year citations joined with "e": "Jain e Wallace (2019)", "Bahdanau, Cho e Bengio"."""

    person: PersonStyle = dataclasses.field(default_factory=lambda: PersonStyle(sep2=" e ", last_sep=" e "))


def setup(app: Sphinx) -> None:
    register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_pt", PortugueseAuthorYearStyle)
