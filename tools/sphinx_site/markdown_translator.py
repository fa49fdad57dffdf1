"""The Markdown translator of the runnable notebooks: a page's resolved doctree as Jupyter Markdown.

sphinx-markdown-builder's ``MarkdownTranslator`` (lists, tables, emphasis, block quotes, escaping),
extended for what its Markdown builder does not meet: the notebook's cell boundaries (``CellStart``
nodes, written as :data:`MARK`), myst-nb's code cells, generic admonitions and sphinx-exercise
blocks (quote blocks with a bold title), sphinx-design dropdowns (``<details>``), numbered captions,
links to the published site, and images embedded as cell attachments. ``$`` and ``<`` in text are
escaped (Jupyter reads them as math and HTML); math stays ``$...$`` / ``$$...$$``.
``jupyter_markdown.py`` puts the rendered text back into the notebook's cells.
"""

from __future__ import annotations

import hashlib
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
