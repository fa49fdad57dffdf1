"""Third-party HTML fixed where Sphinx writes it: node visitors and post-transforms (HTML build only).

Each fix runs at the earliest hook Sphinx offers for the markup it fixes and names the upstream gap
it fills; tools/README.md's patch table lists them with the regular expressions over written pages
(icons.py, search.py, mathjax.py), which are left only where no hook writes the markup.

- :func:`amend_html`: one node's HTML, amended as the page is written. The translator's own visitor
  writes the node, then a rewrite runs over the few strings that visitor appended, and over nothing
  else of the page: the hook for third-party HTML that is right but for an attribute or a wrapper
  (figures and pandas tables here, citations in bibliography.py). The doctree is left as it is (the
  runnable notebooks are written from it).
- Figures that load as the reader scrolls to them, each a link to its full-size file: each image's
  ``<img>``, for the images the build copies to ``_images/`` (the notebooks' figures and the pages'
  own images).

  - Upstream gap: Sphinx 7.4.7's HTML writer gives <img> no ``loading`` attribute (docutils 0.21.2
    writes one only for its ``image_loading`` setting, site-wide, which would also lazy-load inline
    icons; Sphinx passes no per-image option through myst-nb's figures).
  - Upstream gap: myst-nb 1.4.0 writes a cell's figure as a bare <img>, shrunk to the column (a
    phone's 342 px for a 1000 px multi-panel figure) with no way to see it at full size. A link to
    the image file opens it (the img's alt text names the link). Sphinx's own scaled images are
    links already (their image node sits in a reference), and keep their link.
- pandas tables the HTML validator and axe-core accept, fixed in the raw HTML of each cell output.
  pandas writes a DataFrame as one HTML string (``_repr_html_``), which myst-nb puts in the doctree
  as a ``raw`` node as it is; the only hook before the page is written is that node's visitor, so
  these fixes edit that string, and only raw HTML, never the page around it. (myst-nb's own hook, a
  MIME render plugin, is an installed package's entry point; this extension is not installed.)
- The "Mostrar o código" toggles of hidden cells, written by our own visitor of myst-nb's node.
  Upstream gap: myst-nb 1.4.0 (visit_HideCellInput) writes <summary aria-label="Toggle hidden
  content"> holding two <p> titles: a summary takes phrasing content only, and an English label
  overrides the visible Portuguese text as its name. This visitor writes the same element with no
  aria-label and <span> titles (site.css styles them by class, as before).
- API field lists whose body is a list hold the list itself, not a paragraph around it. Upstream
  gap: Sphinx 7.4.7 docfields.Field.make_field wraps every field body in a paragraph, so napoleon's
  multi-item "Returns" list lands in <p> (a <ul> is no paragraph content). A post-transform lifts
  such a list out of its paragraph.
- One ``id`` per exercise body: the 2nd, 3rd... exercise of a page gets ``exercise-content-2``...
  Upstream gap: sphinx-exercise 1.2.1 (ExerciseDirective.run) gives every exercise's body section
  ids=["exercise-content"], so a page with two exercises repeats an id. Nothing links to these ids
  (each exercise has its own label); a post-transform numbers them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

Rewrite = Callable[[nodes.Element, str], str]


def amend_html(app: Sphinx, node_class: type[nodes.Element], rewrite: Rewrite) -> None:
    """After the HTML translator's ``visit_<node>``, ``rewrite(node, part)`` each string it appended.

    The translator's class method runs (the theme's translator keeps its own), so one node class
    takes one rewrite; ``nodes.SkipNode`` from the visitor still skips the children.
    """
    name = node_class.__name__

    def visit(self, node: nodes.Element) -> None:
        start = len(self.body)
        try:
            getattr(type(self), f"visit_{name}")(self, node)
        finally:
            self.body[start:] = [rewrite(node, part) for part in self.body[start:]]

    def depart(self, node: nodes.Element) -> None:
        getattr(type(self), f"depart_{name}")(self, node)

    app.add_node(node_class, override=True, html=(visit, depart))


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


def visit_hidden_cell(self, node: nodes.Element) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append("<summary>\n")
    self.body.append(f'<span class="collapsed admonition-title">{escape(node["prompt_show"])}</span>\n')
    self.body.append(f'<span class="expanded admonition-title">{escape(node["prompt_hide"])}</span>\n')
    self.body.append("</summary>\n")


class UnwrapFieldLists(SphinxPostTransform):
    default_priority = 900  # after the references in the list are resolved
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for paragraph in list(self.document.findall(nodes.paragraph)):
            if (isinstance(paragraph.parent, nodes.field_body) and len(paragraph.children) == 1
                    and isinstance(paragraph[0], nodes.bullet_list)):
                paragraph.replace_self(paragraph[0])


EXERCISE_ID = "exercise-content"


class NumberExerciseIds(SphinxPostTransform):
    default_priority = 900  # after sphinx-exercise's own post-transforms (priorities 5 to 22)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        sections = [s for s in self.document.findall(nodes.section) if EXERCISE_ID in s["ids"]]
        for count, section in enumerate(sections[1:], start=2):
            section["ids"] = [f"{EXERCISE_ID}-{count}" if i == EXERCISE_ID else i for i in section["ids"]]


def setup(app: Sphinx) -> None:
    # After myst_nb's setup (Jupyter Book loads it before the local extensions): this one wins.
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_HideCellInput))
    amend_html(app, nodes.raw, lambda node, part: valid_dataframe_html(part))
    amend_html(app, nodes.image, _figure_html)
    app.add_post_transform(UnwrapFieldLists)
    app.add_post_transform(NumberExerciseIds)
