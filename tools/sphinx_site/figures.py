"""Figures that load as the reader scrolls to them, each a link to its full-size file.

Amends each image's ``<img>`` as the page is written (node_html.py), for the images the build
copies to ``_images/`` (the notebooks' figures and the pages' own images):

- Upstream gap: Sphinx 7.4.7's HTML writer gives <img> no ``loading`` attribute (docutils 0.21.2
  writes one only for its ``image_loading`` setting, site-wide, which would also lazy-load inline
  icons; Sphinx passes no per-image option through myst-nb's figures).
- Upstream gap: myst-nb 1.4.0 writes a cell's figure as a bare <img>, shrunk to the column (a
  phone's 342 px for a 1000 px multi-panel figure) with no way to see it at full size. A link to
  the image file opens it (the img's alt text names the link). Sphinx's own scaled images are
  links already (their image node sits in a reference), and keep their link.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

from .node_html import amend_html

FIGURE_IMG = re.compile(r'<img (?P<attrs>[^>]*\bsrc="(?P<src>[^"]*_images/[^"]+)"[^>]*>)')
FIGURE_LINK_TITLE = "Abrir a figura em tamanho real"


def _figure_html(node: nodes.Element, part: str) -> str:
    match = FIGURE_IMG.search(part)
    if match is None:  # not the <img> (a message the visitor reported), or not a copied image
        return part
    img = match.group(0) if "loading=" in match["attrs"] else f'<img loading="lazy" {match["attrs"]}'
    if not isinstance(node.parent, nodes.reference):
        img = f'<a class="figure-full-size" href="{match["src"]}" title="{FIGURE_LINK_TITLE}">{img}</a>'
    return part[:match.start()] + img + part[match.end():]


def setup(app: Sphinx) -> None:
    amend_html(app, nodes.image, _figure_html)
