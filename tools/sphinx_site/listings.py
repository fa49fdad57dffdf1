"""Code listings of ``attn``: an included function or class shows its signature and body, never its docstring.

Decided once for every page: a page's ``literalinclude`` of a ``:pyobject:`` shows the code that runs,
with its shape comments, and not the docstring (the shape contract, which the API page renders from
the same source, with its math and links). The docstring's reST markup (``.. math::``, ``:func:``)
would show raw in a listing. The lines are found by parsing the listing (``ast``), so an edit of the
docstring or of the body never shifts what a page shows (``:lines:`` ranges did).

A transform of the read doctree, so the page and its runnable notebook (written from the doctree)
show the same listing.
"""

from __future__ import annotations

import ast
import textwrap

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform


def without_docstring(code: str) -> str:
    """``code``, one function or class (possibly indented), without its docstring's lines."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return code
    definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    if len(tree.body) != 1 or not isinstance(tree.body[0], definition):
        return code
    body = tree.body[0].body
    first = body[0]
    if len(body) == 1 or not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return code
    lines = code.split("\n")
    return "\n".join(lines[:first.lineno - 1] + lines[first.end_lineno:])


class HideDocstrings(SphinxTransform):
    default_priority = 500

    def apply(self, **kwargs) -> None:
        for block in self.document.findall(nodes.literal_block):
            if block.get("language") == "python" and str(block.get("source", "")).endswith(".py"):
                code = block.astext()
                shown = without_docstring(code)
                if shown != code:
                    block.children = [nodes.Text(shown)]
                    block.rawsource = shown


def setup(app: Sphinx) -> None:
    app.add_transform(HideDocstrings)
