"""Cross-page static checks over every notebook page in the TOC (no re-execution).

1. Visible code never uses a name that only a removed cell defines: the reader would see code that
   cannot be run from what the page shows (issue 10, item 5: lesson 7.02 used ``n`` from a hidden
   cell). Read with jupytext, analysed with ``ast`` and ``symtable``.
2. Every number glued into prose follows the site's decimal rule (decimal comma, see
   ``attn/prose.py`` and the intro): the glue roles of each page's Markdown are matched with the
   glued values stored in the executed notebook ``_build/jupyter_execute/**.ipynb``.
3. pandas tables shown to readers have a named index and named columns (not the default ``0..n``),
   checked on the HTML of the executed outputs.

Each check is a plain function, and a small fixture proves that each one can fail.
"""
from __future__ import annotations

import ast
import builtins
import html.parser
import re
import symtable

import jupytext
import nbformat
import pytest
from export_executed import toc_pages  # one TOC reader for the build and the tests
from helpers import EXECUTED, ROOT, glue_roles, page_glue_values, rendered_glue
from IPython.core.inputtransformer2 import TransformerManager

PAGES = toc_pages()
IDS = [str(p.relative_to(ROOT)) for p in PAGES]

# --------------------------------------------------------------------------------------------------
# 1. Names that visible code takes from removed cells
# --------------------------------------------------------------------------------------------------

# Tags whose cell source does not appear on the page (hide-* only collapse it, so it stays visible).
HIDDEN_TAGS = {"remove-cell", "remove-input"}
KNOWN = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "_", "__", "___", "exit", "quit"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound(node: ast.AST) -> set[str]:
    """Names that ``node`` binds in the module (cell) namespace."""
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".")[0]) for a in n.names if a.name != "*")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.NamedExpr):  # a walrus binds in the enclosing scope, even in a comprehension
            names.add(n.target.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            # a `global` declaration inside a function binds the module name
            names.update(g for sub in ast.walk(n) if isinstance(sub, ast.Global) for g in sub.names)
            continue
        if isinstance(n, _SCOPES):
            names.update(sub.target.id for sub in ast.walk(n) if isinstance(sub, ast.NamedExpr))
            continue
        stack.extend(ast.iter_child_nodes(n))
    return names


def _used(statement: ast.stmt) -> set[str]:
    """Names one top-level statement reads from the module namespace (symtable resolves scopes)."""
    used: set[str] = set()

    def walk(table: symtable.SymbolTable, top: bool) -> None:
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (top or symbol.is_global()):
                used.add(symbol.get_name())
        for child in table.get_children():
            walk(child, False)

    walk(symtable.symtable(ast.unparse(statement), "<cell>", "exec"), True)
    # `x += 1` reads x, but symtable records only the store
    used.update(n.target.id for n in ast.walk(statement)
                if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name))
    return used


def _cell_names(source: str) -> tuple[set[str], set[str]]:
    """(names the cell needs from earlier cells, names the cell defines)."""
    tree = ast.parse(TransformerManager().transform_cell(source))  # IPython magics become calls
    needed: set[str] = set()
    defined: set[str] = set()
    for statement in tree.body:
        own = _bound(statement)
        used = _used(statement)
        if not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            used -= own  # a for target, a def name, an import: bound before (or while) it is used
        needed |= used - defined
        defined |= own
    return needed, defined


def names_from_removed_cells(cells: list[tuple[str, list[str]]]) -> list[tuple[int, str]]:
    """(cell index, name) for each name visible code uses that only removed cells defined before it.

    ``cells`` are the page's code cells in order, as (source, tags).
    """
    shown: set[str] = set()
    removed: set[str] = set()
    problems = []
    for index, (source, tags) in enumerate(cells):
        needed, defined = _cell_names(source)
        hidden = bool(HIDDEN_TAGS & set(tags))
        if not hidden:
            problems += [(index, name) for name in sorted(needed)
                         if name in removed and name not in shown and name not in KNOWN]
        (removed if hidden else shown).update(defined)
    return problems


def _code_cells(nb) -> list[tuple[str, list[str]]]:
    return [(c.source, list(c.metadata.get("tags", []))) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_visible_code_uses_no_name_defined_only_in_a_removed_cell(page):
    cells = _code_cells(jupytext.read(page))
    problems = names_from_removed_cells(cells)
    assert not problems, "visible code uses names defined only in removed cells:\n" + "\n".join(
        f"  code cell {i}: `{name}` in: {cells[i][0].splitlines()[0][:80]}" for i, name in problems)


_HIDDEN_N = ("n = 6\nX = 1.0", ["remove-cell"])


@pytest.mark.parametrize("visible, expected", [
    ("mask = attn.causal_mask(n)", ["n"]),                        # issue 10, item 5
    ("total = 0\ntotal += n", ["n"]),
    ("X += 1", ["X"]),                                            # augmented assignment reads X
    ("def f():\n    return n", ["n"]),                            # used inside a function body
    ("rows = [n * i for i in range(3)]", ["n"]),                  # used inside a comprehension
    ("class C:\n    size = n", ["n"]),
    ("n = n + 1", ["n"]),                                         # the value is read before the store
    ("import numpy as np\nn = 3\nprint(n, X)", ["X"]),
    ("rows = [i for i in range(3)]\nprint(rows)", []),            # comprehension variable is local
    ("def g(n):\n    return n\nprint(g(2))", []),                 # parameter is local
    ("for n in range(3):\n    print(n)", []),                     # for target
    ("with open(__file__) as n:\n    pass\nprint(n)", []),       # with-as target
    ("import math as n\nprint(n.pi)", []),                        # import alias
    ("if (n := 2):\n    print(n)", []),                           # walrus
    ("def n():\n    return 1\nprint(n(), len([]))", []),          # function def, builtins
    ("%matplotlib inline\nprint(len([]))", []),                   # IPython magic
])
def test_removed_cell_check_can_fail(visible, expected):
    assert [name for _, name in names_from_removed_cells([_HIDDEN_N, (visible, [])])] == expected


def test_removed_cell_check_reads_a_myst_page():
    page = ("---\njupytext:\n  text_representation:\n    format_name: myst\n"
            "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
            "```{code-cell} ipython3\n:tags: [remove-cell]\n\nn = 6\n```\n\nTexto.\n\n"
            "```{code-cell} ipython3\n:tags: [hide-input]\n\nm = n + 1\n```\n\n"
            "```{code-cell} ipython3\nprint(m)\n```\n")
    cells = _code_cells(jupytext.reads(page, fmt="md:myst"))
    assert names_from_removed_cells(cells) == [(1, "n")]  # hide-input is still visible, so m is fine


# --------------------------------------------------------------------------------------------------
# 2. Glued numbers in prose follow the decimal rule
# --------------------------------------------------------------------------------------------------

_PY_DECIMAL = re.compile(r"\d\.\d")                    # 0.5065
_PY_EXPONENT = re.compile(r"\d[eE][-+]?\d")           # 4.5e-05
_PY_THOUSANDS = re.compile(r"\d,\d{3}(?!\d)")         # 1,234 from format(x, ",")
_PT_THOUSANDS = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3})+(?![\d.])")  # 1.234 and 12.345.678


def breaks_decimal_rule(text: str, is_str: bool) -> bool:
    """True if ``text`` shows a number in Python notation (``0.5``, ``4.5e-05``, ``1,234``).

    A string glued by attn.prose may hold a Portuguese thousands group (``1.680``); a number glued
    as a number cannot, so there ``1.680`` is a decimal point.
    """
    if is_str:
        text = _PT_THOUSANDS.sub("N", text)
    elif _PY_THOUSANDS.search(text):
        return True
    return bool(_PY_DECIMAL.search(text) or _PY_EXPONENT.search(text))


def decimal_rule_problems(markdown_cells: list[str], values: dict[str, dict]) -> list[str]:
    problems = []
    for markdown in markdown_cells:
        for role, content in glue_roles(markdown):
            shown = rendered_glue(role, content, values)
            if shown is None:
                continue
            text, is_str = shown
            if breaks_decimal_rule(text, is_str):
                problems.append(f"{{{role}}}`{content}` shows {text!r}")
            elif is_str and text[:1] in "'\"":
                problems.append(f"{{{role}}}`{content}` shows the quotes of {text}: use {{glue:text}}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_glued_numbers_in_prose_follow_the_decimal_rule(page):
    executed = EXECUTED / page.relative_to(ROOT).with_suffix(".ipynb")
    assert executed.exists(), f"{executed} missing: run `make book` first"
    values = page_glue_values(executed)
    assert values, f"{executed} has no glue values (stale build?)"
    markdown = [c.source for c in jupytext.read(page).cells if c.cell_type == "markdown"]
    problems = decimal_rule_problems(markdown, values)
    assert not problems, ("glued numbers in prose must use a decimal comma (format them with "
                          "attn.prose.num/pct/sci and glue the string):\n  " + "\n  ".join(problems))


def _bundle(text_plain: str) -> dict:
    return {"text/plain": text_plain}


@pytest.mark.parametrize("markdown, text_plain, fails", [
    ("o peso é {glue:text}`k:.4f`.", "0.50652", True),        # float formatted with a point
    ("o peso é {glue}`k`.", "0.50652", True),
    ("o peso é {glue:}`k`.", "np.float64(0.5)", True),
    ("o erro é {glue:text}`k:.1e`.", "4.5e-05", True),
    ("são {glue:text}`k:,d` passos.", "1234", True),
    (":::{dropdown} Pergunta {glue}`k`\nTexto.\n:::", "0.5", True),   # a directive title is prose
    (":::{admonition} Resposta\n:class: resposta\nÉ {glue}`k`.\n:::", "0.5", True),
    ("o peso é {glue}`k`.", "'0,5065'", True),                # {glue} shows a string with its quotes
    ("o peso é {glue:text}`k`.", "'0,5065'", False),          # attn.prose.num
    ("são {glue:text}`k` passos.", "'1.680'", False),        # Portuguese thousands
    ("são {glue:text}`k` passos.", "'12.345.678'", False),
    ("o erro é {glue:text}`k`.", "'4,5 × 10⁻⁵'", False),
    ("o peso é {glue:text}`k`.", "'0.5065'", True),           # a string in Python notation
    ("$d_k$ = {glue:text}`k:.0f`.", "2.0", False),           # no decimal shown
    ("são {glue}`k` tokens.", "5", False),
    ("a forma é {glue:text}`k`.", "'(5, 8)'", False),
    ("código: `{glue}`k``, e $x = 0.5$.", "0.5", False),     # code spans and math are not prose
    ("```python\nprint({glue}`k`)\n```", "0.5", False),
])
def test_decimal_rule_check_can_fail(markdown, text_plain, fails):
    assert bool(decimal_rule_problems([markdown], {"k": _bundle(text_plain)})) == fails


# --------------------------------------------------------------------------------------------------
# 3. Tables shown to readers have named index and columns
# --------------------------------------------------------------------------------------------------

class _TableHeaders(html.parser.HTMLParser):
    """Header cells of each ``<table class="dataframe">``: thead rows and the row labels of tbody."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._section = self._cell = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and "dataframe" in (dict(attrs).get("class") or ""):
            self.tables.append({"thead": [], "labels": []})
        elif not self.tables:
            return
        elif tag in ("thead", "tbody"):
            self._section = tag
        elif tag == "tr" and self._section == "thead":
            self.tables[-1]["thead"].append([])
        elif tag == "tr" and self._section == "tbody":
            self._row_started = True
        elif tag == "th":
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag == "th" and self._cell is not None and self.tables:
            text = self._cell.strip()
            if self._section == "thead":
                self.tables[-1]["thead"][-1].append(text)
            elif self._section == "tbody" and getattr(self, "_row_started", False):
                self.tables[-1]["labels"].append(text)
                self._row_started = False
            self._cell = None
        elif tag in ("thead", "tbody"):
            self._section = None


def unnamed_table_axes(html_text: str) -> list[str]:
    """'index' / 'columns' for each DataFrame in ``html_text`` that shows a default, unnamed 0..n axis."""
    parser = _TableHeaders()
    parser.feed(html_text)
    problems = []
    for table in parser.tables:
        head = table["thead"]
        index_named = any(row and row[0] and not any(row[1:]) for row in head[1:])
        labels = table["labels"]
        if labels and labels == [str(i) for i in range(len(labels))] and not index_named:
            problems.append("index")
        if head and not head[0][0] and head[0][1:] == [str(i) for i in range(len(head[0]) - 1)]:
            problems.append("columns")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_dataframes_have_named_index_and_columns(page):
    executed = EXECUTED / page.relative_to(ROOT).with_suffix(".ipynb")
    assert executed.exists(), f"{executed} missing: run `make book` first"
    nb = nbformat.read(executed, as_version=4)
    problems = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        for output in cell.get("outputs", []):
            html_text = output.get("data", {}).get("text/html", "")
            problems += [f"code cell {i}: default {axis} 0..n" for axis in unnamed_table_axes(html_text)]
    assert not problems, "tables need a named index and named columns:\n  " + "\n  ".join(problems)


def test_table_check_can_fail():
    import pandas as pd
    assert unnamed_table_axes(pd.DataFrame([[1, 2], [3, 4]])._repr_html_()) == ["index", "columns"]
    assert unnamed_table_axes(pd.DataFrame({"a": [1, 2]})._repr_html_()) == ["index"]
    named = pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="token"))
    assert unnamed_table_axes(named._repr_html_()) == []
    counted = pd.DataFrame({"peso": [1, 2]}).rename_axis("posição")  # 0..n, but named
    assert unnamed_table_axes(counted._repr_html_()) == []
