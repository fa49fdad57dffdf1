"""pandas tables the HTML validator and axe-core accept, fixed in the raw HTML of each cell output.

pandas writes a DataFrame as one HTML string (``_repr_html_``), which myst-nb puts in the doctree
as a ``raw`` node as it is; the only hook before the page is written is that node's visitor
(node_html.py), so these fixes edit that string, and only raw HTML, never the page around it.
(myst-nb's own hook, a MIME render plugin, is an installed package's entry point; this extension
is not installed.)
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

from .node_html import amend_html

# Upstream gap: pandas 3.1.1 DataFrame._repr_html_ writes <style scoped> (no such attribute in HTML);
# its rules are in site.css.
PANDAS_STYLE = re.compile(r"<style scoped>.*?</style>\s*", re.S)
# Upstream gap: pandas 3.1.1 writes halign="left" on MultiIndex headers (not an HTML attribute).
HALIGN = re.compile(r'(<th[^>]*?) halign="[a-z]+"')
# Upstream gap: pandas 3.1.1 writes an empty <th> as the header's corner cell (axe: empty header).
HEADER = re.compile(r'(<table[^>]*class="dataframe[^"]*"[^>]*>\s*<thead>.*?</thead>)', re.S)


def valid_dataframe_html(text: str) -> str:
    """A DataFrame's ``_repr_html_`` without ``<style scoped>``, ``halign`` or an empty header cell."""
    text = PANDAS_STYLE.sub("", text)
    text = HALIGN.sub(r"\1", text)
    return HEADER.sub(lambda m: m.group(1).replace("<th></th>", "<td></td>"), text)


def setup(app: Sphinx) -> None:
    amend_html(app, nodes.raw, lambda node, part: valid_dataframe_html(part))
