"""A notebook page's runnable notebook, with its prose as the page shows it (plain Jupyter Markdown).

The prose of a MyST notebook page is MyST: glue roles, ``literalinclude``, admonitions, dropdowns,
exercise blocks, ``(label)=`` lines and ``{doc}``/``{ref}``/``{numref}``/``{cite}`` roles. Jupyter
renders none of them. Rather than re-parse that source, the notebook's Markdown is written from the
page's *resolved* doctree (Sphinx's ``doctree-resolved`` event, in the HTML build): glue roles are
already their text, references already point to their page and carry their number ("Fig. 2"),
citations already read "Vaswani et al. (2017)", and ``literalinclude`` already holds the source.

The doctree is rendered by sphinx-markdown-builder's ``MarkdownTranslator`` (a maintained
docutils -> Markdown translator), extended below (:class:`NotebookMarkdown`); this module puts the
rendered text back into the notebook's cells and writes the notebook in the HTML build.

Cells: myst-nb records where each cell starts in the ``.md`` (``metadata.source_map``) and every
doctree node its source line, so each rendered block is put back into the cell it came from. Code
cells are the page's own (removed cells included: later cells need what they define), without
outputs. A figure caption of a code cell's output becomes a Markdown cell right after that cell.

The translator, :class:`NotebookMarkdown`: sphinx-markdown-builder's ``MarkdownTranslator`` (lists,
tables, emphasis, block quotes, escaping), extended for what its Markdown builder does not meet: the
notebook's cell boundaries (``CellStart`` nodes, written as :data:`MARK`), myst-nb's code cells,
generic admonitions and sphinx-exercise blocks (quote blocks with a bold title), sphinx-design
dropdowns (``<details>``), numbered captions, links to the published site, and images embedded as
cell attachments. ``$`` and ``<`` in text are escaped (Jupyter reads them as math and HTML); math
stays ``$...$`` / ``$$...$$``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import re
from pathlib import Path
from urllib.parse import urljoin

from docutils import nodes
from sphinx.locale import admonitionlabels
from sphinx_markdown_builder.contexts import IndentContext, SubContext, SubContextParams
from sphinx_markdown_builder.translator import MarkdownTranslator

MARK = "\x00{kind} {index}\x00"  # a cell boundary in the rendered text (never in a page's text)
MARK_RE = re.compile("\x00(markdown|code) (\\d+)\x00")
# Plain MyST syntax that must never reach a notebook: a directive fence, a role, a (label)= line.
MYST_SYNTAX = re.compile(r"^(?:`{3,}|:{3,})\{[a-z][\w:-]*\}|\{[a-z][\w:-]*\}`|^\([\w.:-]+\)=\s*$", re.M)


class CellStart(nodes.Element):
    """Where the Markdown of one notebook cell starts (inserted into a copy of the doctree)."""


class NotebookMarkdown(MarkdownTranslator):
    """sphinx-markdown-builder's translator, for a notebook's Markdown cells inside the HTML build."""

    def __init__(self, document: nodes.document, builder, docname: str, page_url: str) -> None:
        super().__init__(document, builder)
        self.docname = docname
        self.page_url = page_url  # the published page: relative links are resolved against it
        self.attachments: dict[str, tuple[str, bytes]] = {}  # name -> (MIME type, bytes)
        self.fignumbers = builder.env.toc_fignumbers.get(docname, {})

    # -- cells
    def visit_CellStart(self, node):  # noqa: N802 (docutils naming)
        self.add(MARK.format(kind="markdown", index=node["index"]), prefix_eol=2, suffix_eol=2)
        raise nodes.SkipNode

    def visit_container(self, node):
        if node.get("nb_element") == "cell_code":
            self.add(MARK.format(kind="code", index=node["cell_index"]), prefix_eol=2, suffix_eol=2)
            for figure in node.findall(nodes.figure):  # its caption: a Markdown cell after the code
                for caption in figure.findall(nodes.caption):
                    self._caption(caption, self._number("figure", figure))
            raise nodes.SkipNode
        if node.get("literal_block"):  # literalinclude / code-block with a caption
            for child in node.children:
                if isinstance(child, nodes.caption):
                    self._caption(child, self._number("code-block", node))
                else:
                    child.walkabout(self)
            raise nodes.SkipNode

    def depart_container(self, node):
        pass

    def visit_dropdown_main(self, node):
        """sphinx-design's dropdown: ``<details>``, which Jupyter renders folded, as the page does."""
        titles = [c for c in node.children if c.tagname == "dropdown_title"]
        summary = self._inline_markdown(titles[0]) if titles else "Detalhes"
        self.add(f"<details>\n<summary>{summary}</summary>", prefix_eol=2, suffix_eol=2)
        for child in node.children:
            if child.tagname != "dropdown_title":
                child.walkabout(self)
        self.add("</details>", prefix_eol=2, suffix_eol=2)
        raise nodes.SkipNode

    def visit_math_block(self, node):
        self.add(f"$$\n{node.astext().strip()}\n$$", prefix_eol=2, suffix_eol=2)
        raise nodes.SkipNode

    # -- numbered captions
    def _number(self, figtype: str, node: nodes.Element) -> str:
        for node_id in node.get("ids", []):
            number = self.fignumbers.get(figtype, {}).get(node_id)
            if number:
                label = self.config.numfig_format.get(figtype, "%s")
                return label % ".".join(map(str, number))
        return ""

    def _caption(self, caption: nodes.Element, number: str) -> None:
        text = self._inline_markdown(caption)
        self.add((f"**{number}** " if number else "") + f"*{text}*", prefix_eol=2, suffix_eol=2)

    def visit_figure(self, node):
        for child in node.children:
            if isinstance(child, nodes.caption):
                self._caption(child, self._number("figure", node))
            elif not isinstance(child, nodes.legend):
                child.walkabout(self)
        raise nodes.SkipNode

    def _inline_markdown(self, node: nodes.Element) -> str:
        """The Markdown of a node's inline content on one line (titles, captions)."""
        sub = NotebookMarkdown(self.document, self.builder, self.docname, self.page_url)
        for child in node.children:
            child.walkabout(sub)
        self.attachments.update(sub.attachments)
        return " ".join(sub.astext().split())

    # -- admonitions and exercises: quote blocks with a bold title
    def _quote(self, node, title: str) -> None:
        self._push_context(IndentContext("> ", empty=True, params=SubContextParams(2, 2)))
        if title:
            self.add(f"**{title}**", prefix_eol=1, suffix_eol=2)
        for child in node.children:
            if not isinstance(child, nodes.title):
                child.walkabout(self)
        self._pop_context()
        raise nodes.SkipNode

    def visit_admonition(self, node):
        titles = [c for c in node.children if isinstance(c, nodes.title)]
        if titles:
            title = self._inline_markdown(titles[0])
        else:
            title = str(admonitionlabels.get(node.tagname, ""))
        self._quote(node, title)

    visit_note = visit_tip = visit_hint = visit_important = visit_warning = visit_attention = \
        visit_caution = visit_danger = visit_error = visit_admonition

    def visit_seealso(self, node):
        self._quote(node, str(admonitionlabels["seealso"]))

    def unknown_visit(self, node):
        """sphinx-exercise's exercise and solution blocks are admonitions; anything else is an error."""
        if isinstance(node, nodes.Admonition):
            title = ""
            for child in node.children:
                if isinstance(child, nodes.title):
                    title = self._inline_markdown(child)
                    number = self._number("exercise", node)
                    if number and number not in title:
                        title = f"{number} {title}".strip()
            self._quote(node, title)
        super().unknown_visit(node)

    # -- links, labels, images, raw HTML, text
    def visit_reference(self, node):
        uri = node.get("refuri", "")
        if node.get("internal") or not re.match(r"^[a-z][a-z0-9+.-]*:", uri):
            uri = urljoin(self.page_url, uri) if uri else self.page_url + "#" + node.get("refid", "")
        self._push_context(_Link(uri))

    def depart_reference(self, node):
        self._pop_context()

    def visit_target(self, node):
        raise nodes.SkipNode  # labels go away (links point to the published page's anchors)

    def visit_comment(self, node):
        raise nodes.SkipNode

    def visit_toctree(self, node):
        raise nodes.SkipNode

    def visit_raw(self, node):
        if "html" in node.get("format", "").split() and node.parent.tagname != "dropdown_title":  # its icon
            self.add(node.astext(), prefix_eol=2, suffix_eol=2)
        raise nodes.SkipNode

    def visit_image(self, node):
        uri = node.get("candidates", {}).get("*", node["uri"])
        path = Path(self.builder.srcdir) / uri
        alt = node.get("alt", "")
        if path.is_file():
            data = path.read_bytes()
            name = hashlib.sha256(data).hexdigest()[:16] + path.suffix
            mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                    ".svg": "image/svg+xml", ".gif": "image/gif"}.get(path.suffix.lower(), "image/png")
            self.attachments[name] = (mime, data)
            self.add(f"![{alt}](attachment:{name})")
        else:
            self.add(f"![{alt}]({urljoin(self.page_url, uri)})")

    def visit_Text(self, node):  # noqa: N802 (docutils naming)
        if self.status.escape_text:
            text = node.astext().replace("\r", "")
            text = re.sub(r"([\\*`$]|(?:^|(?<=\s|_))_)", r"\\\1", text, flags=re.M)
            self.add(text.replace("<", "&lt;"))
        else:
            super().visit_Text(node)


class _Link(SubContext):
    """``[text](uri)``, with the link text on one line."""

    def __init__(self, uri: str):
        super().__init__()
        self.uri = uri

    def make(self):
        text = " ".join(super().make().split())
        return f"[{text}]({self.uri.replace(' ', '%20').replace(')', '%29')})"


# --------------------------------------------------------------------------- doctree -> cells

def _mark_cell_starts(doctree: nodes.document, notebook: dict) -> None:
    """Insert a CellStart before the first node of each Markdown cell (by source line)."""
    starts = notebook["metadata"].get("source_map")
    if not starts:
        raise ValueError("the notebook has no metadata.source_map (read it with add_source_map=True)")
    # myst-nb gives a cell's tokens the lines source_map[i] + 1 + offset (base 1)
    bounds = [*(s + 1 for s in starts), float("inf")]
    wanted = {i: (bounds[i], bounds[i + 1]) for i, cell in enumerate(notebook["cells"])
              if cell["cell_type"] == "markdown"}
    for node in list(doctree.findall(nodes.Element)):
        line = node.line
        if line is None or node.parent is None:
            continue
        for index, (low, high) in list(wanted.items()):
            if low <= line < high:
                node.parent.insert(node.parent.index(node), CellStart(index=index))
                del wanted[index]
                break


def notebook_from_doctree(doctree: nodes.document, notebook: dict, builder, docname: str,
                          page_url: str) -> dict:
    """The runnable notebook of a page: ``notebook`` (myst-nb's reading of the page, with its
    ``source_map``) with each Markdown cell replaced by the page's rendering of it, no outputs."""
    doctree = doctree.deepcopy()
    _mark_cell_starts(doctree, notebook)
    translator = NotebookMarkdown(doctree, builder, docname, page_url)
    doctree.walkabout(translator)
    text = translator.astext()
    pieces = MARK_RE.split(text)  # [before, kind, index, text, kind, index, text, ...]
    markdown = {("markdown", 0): pieces[0]} if pieces[0].strip() else {}
    for kind, index, body in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
        key = (kind, int(index))
        markdown[key] = markdown.get(key, "") + body

    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            cells.append({"cell_type": "code", "execution_count": None, "id": f"cell-{index}",
                          "metadata": dict(cell.get("metadata", {})), "outputs": [],
                          "source": cell["source"]})
            after = markdown.get(("code", index), "").strip()
            if after:
                cells.append(_markdown_cell(f"cell-{index}-caption", after, translator.attachments))
        elif cell["cell_type"] == "markdown":
            body = markdown.get(("markdown", index), "").strip()
            if body:
                cells.append(_markdown_cell(f"cell-{index}", body, translator.attachments))
        else:
            cells.append(dict(cell))
    metadata = {k: v for k, v in notebook["metadata"].items() if k not in ("source_map", "jupytext")}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def _markdown_cell(cell_id: str, text: str, attachments: dict[str, tuple[str, bytes]]) -> dict:
    cell = {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text + "\n"}
    used = {name: {mime: base64.b64encode(data).decode("ascii")}
            for name, (mime, data) in attachments.items() if f"attachment:{name}" in text}
    if used:
        cell["attachments"] = used
    return cell


# Fenced code blocks and inline code (not a directive's fence, not a role's content).
CODE = re.compile(r"^(`{3,})(?!\{).*?^\1\s*$|(?<!\})`[^`\n]+`", re.M | re.S)


def myst_leftovers(text: str) -> list[str]:
    """MyST directive, role or label syntax in a notebook's Markdown outside code (none should be
    left; code blocks may show any text, e.g. a docstring's reST roles)."""
    return [m.group(0) for m in MYST_SYNTAX.finditer(CODE.sub("", text))]


def page_url(site_url: str, docname: str) -> str:
    """The published URL of a page (``html_baseurl`` + ``docname.html``)."""
    return site_url.rstrip("/") + "/" + posixpath.normpath(docname) + ".html"


# --------------------------------------------------------------------------- in the HTML build

STORE = "runnable-notebooks"  # beside the doctrees: one converted notebook per notebook page


def converted_path(app, docname: str) -> Path:
    return Path(app.doctreedir).parent / STORE / f"{docname}.ipynb"


def _convert(app, doctree: nodes.document, docname: str) -> None:
    """Write the page's runnable notebook (read by downloads.py when the build finishes)."""
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(docname, {}):
        return
    from myst_nb.core.read import read_myst_markdown_notebook

    source = Path(app.env.doc2path(docname)).read_text(encoding="utf-8")
    notebook = read_myst_markdown_notebook(source, add_source_map=True)
    converted = notebook_from_doctree(doctree, notebook, app.builder, docname,
                                      page_url(app.config.html_baseurl, docname))
    path = converted_path(app, docname)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(converted, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def setup(app) -> None:
    app.setup_extension("sphinx_markdown_builder")  # its translator's config values (defaults kept)
    app.connect("doctree-resolved", _convert)
